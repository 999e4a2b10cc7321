"""The launcher ABI in ctypes, from manifest-style descriptions (CPU only)."""

from __future__ import annotations

import ctypes
import re

import numpy as np
import pytest

from translate.verify import abi

from .conftest import DEFECTS_DIR


def test_argtypes_follow_the_contract(fixture_launchers):
    types = abi.argtypes(fixture_launchers["matmul_tiled"])
    arrays = [ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64] * 3
    launch = [ctypes.c_uint] * 6 + [ctypes.c_size_t, ctypes.c_void_p]
    assert types == arrays + [ctypes.c_int64] + launch


@pytest.mark.parametrize("kernel", ["matmul_tiled", "vector_add", "block_sum"])
def test_c_declaration_matches_the_fixture_source(fixture_launchers, kernel):
    decl = abi.c_declaration(fixture_launchers[kernel])
    source = (DEFECTS_DIR / f"{kernel}.cu").read_text()
    m = re.search(r'extern "C" cudaError_t (\w+)\((.*?)\)\s*\{', source, re.S)
    assert m, "fixture has no launcher"
    def normalise(s):
        return re.sub(r"\s+", " ", s).strip()

    assert normalise(decl) == normalise(f'extern "C" cudaError_t {m.group(1)}({m.group(2)})')


def test_call_args_in_python_order(fixture_launchers):
    launcher = fixture_launchers["matmul_tiled"]
    f32 = np.dtype(np.float32)
    args = [(0x1000, (3, 5), f32), abi.ArrayArg(0x2000, (5, 7), f32), (0x3000, (3, 7), f32), 16]
    out = abi.call_args(launcher, args, grid=(1, 1), block=(16, 16), shared_bytes=2048, stream=0)
    assert [a.value if isinstance(a, ctypes.c_void_p) else a for a in out] == [
        0x1000, 3, 5, 0x2000, 5, 7, 0x3000, 3, 7, 16, 1, 1, 1, 16, 16, 1, 2048, None]


def test_call_args_reject_mismatches(fixture_launchers):
    launcher = fixture_launchers["vector_add"]
    f32, f64 = np.dtype(np.float32), np.dtype(np.float64)
    good = (0x10, (4,), f32)
    with pytest.raises(abi.AbiError, match="takes 3 arguments"):
        abi.call_args(launcher, [good, good], (1,), (32,))
    with pytest.raises(abi.AbiError, match="dtype float32"):
        abi.call_args(launcher, [good, (0x10, (4,), f64), good], (1,), (32,))
    with pytest.raises(abi.AbiError, match="1-D"):
        abi.call_args(launcher, [good, good, (0x10, (2, 2), f32)], (1,), (32,))
    with pytest.raises(abi.AbiError, match="1 to 3"):
        abi.call_args(launcher, [good] * 3, (1, 1, 1, 1), (32,))


def test_select_launcher_by_constants():
    plain = {"symbol": "launch_k", "constants": {}, "params": []}
    tw16 = {"symbol": "launch_k_tw16", "constants": {"tw": 16}, "params": []}
    tw32 = {"symbol": "launch_k_tw32", "constants": {"tw": 32}, "params": []}
    assert abi.select_launcher([plain], {}) is plain
    assert abi.select_launcher([tw16, tw32], {"tw": 32}) is tw32
    with pytest.raises(abi.AbiError, match="no launcher is instantiated"):
        abi.select_launcher([tw16], {"tw": 8})


def test_bad_descriptions_are_rejected():
    with pytest.raises(abi.AbiError, match="unsupported dtype"):
        abi.argtypes({"symbol": "s", "params": [{"name": "x", "kind": "scalar", "dtype": "complex64"}]})
    with pytest.raises(abi.AbiError, match="unsupported dtype"):
        abi.argtypes({"symbol": "s", "params": [{"name": "x", "kind": "array", "dtype": "complex32", "ndim": 1}]})


def test_complex_arrays_travel_as_pointers():
    launcher = {"symbol": "launch_c", "params": [{"name": "z", "kind": "array", "dtype": "complex128", "ndim": 2}]}
    assert abi.argtypes(launcher)[:3] == [ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64]
    out = abi.call_args(launcher, [(0x40, (2, 3), np.dtype(np.complex128))], (1,), (32,))
    assert out[0].value == 0x40 and out[1:3] == [2, 3]
    with pytest.raises(abi.AbiError, match="dtype complex128"):
        abi.call_args(launcher, [(0x40, (2, 3), np.dtype(np.complex64))], (1,), (32,))
    with pytest.raises(abi.AbiError, match="kind"):
        abi.argtypes({"symbol": "s", "params": [{"name": "x", "kind": "list", "dtype": "int64"}]})


def test_a_tuple_travels_as_one_parameter_per_item():
    """A ``UniTuple(int64 x 2)`` kernel argument: the launcher takes ``shape_0, shape_1``; the caller passes the
    Python tuple."""
    launcher = {"symbol": "launch_t", "params": [{"name": "shape", "kind": "tuple", "dtype": "tuple",
                                                  "items": ["int64", "float32"]}]}
    assert abi.argtypes(launcher)[:2] == [ctypes.c_int64, ctypes.c_float]
    assert abi.call_args(launcher, [(7, 2.5)], (1,), (32,))[:2] == [7, 2.5]
    assert "int64_t shape_0, float shape_1" in abi.c_declaration(launcher)
    with pytest.raises(abi.AbiError, match="tuple of 2 numbers"):
        abi.call_args(launcher, [(7,)], (1,), (32,))
    with pytest.raises(abi.AbiError, match="items"):
        abi.argtypes({"symbol": "s", "params": [{"name": "x", "kind": "tuple", "dtype": "tuple"}]})


def test_a_tuple_of_arrays_travels_as_its_arrays():
    """A ``UniTuple(array, 2)`` kernel argument: the launcher takes each array's pointer and extents; the caller
    passes a Python tuple of arrays, each checked as an array parameter is."""
    item = {"kind": "array", "dtype": "float64", "ndim": 2, "const": False}
    launcher = {"symbol": "launch_t", "params": [{"name": "pair", "kind": "tuple", "dtype": "tuple",
                                                  "items": [{**item, "name": "pair[0]"}, {**item, "name": "pair[1]"}]}]}
    assert abi.argtypes(launcher)[:6] == [ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64] * 2
    args = abi.call_args(launcher, [((4096, (3, 5), np.float64), (8192, (2, 7), np.float64))], (1,), (32,))
    assert [a.value if isinstance(a, ctypes.c_void_p) else a for a in args[:6]] == [4096, 3, 5, 8192, 2, 7]
    assert "double* pair_0, int64_t pair_0_shape0, int64_t pair_0_shape1, double* pair_1" in \
        abi.c_declaration(launcher)
    with pytest.raises(abi.AbiError, match="tuple of 2 arrays"):
        abi.call_args(launcher, [((4096, (3, 5), np.float64),)], (1,), (32,))
    with pytest.raises(abi.AbiError, match=r"'pair\[1\]' must have dtype float64"):
        abi.call_args(launcher, [((4096, (3, 5), np.float64), (8192, (2, 7), np.float32))], (1,), (32,))


def test_a_launcher_is_selected_by_its_own_constants():
    # a factory parameter the kernel body never reads (here nt) is no template parameter, so no launcher names it
    from translate.verify.abi import AbiError, select_launcher

    launchers = [{"symbol": "launch_k_cache8_vec1", "constants": {"cache": 8, "vec": True}},
                 {"symbol": "launch_k_cache4_vec1", "constants": {"cache": 4, "vec": True}}]
    assert select_launcher(launchers, {"nt": 256, "cache": 4, "vec": 1})["symbol"] == "launch_k_cache4_vec1"
    with pytest.raises(AbiError, match="no launcher is instantiated"):
        select_launcher(launchers, {"nt": 256, "cache": 2, "vec": 1})
