"""The parts of the corpus's GPU verification that need no GPU: the comparison, and the launcher arguments for
strided, record and float16 parameters."""

import ctypes

import numpy as np

from translate.verify import abi

from .corpus.gpu import compare
from .corpus.spec import Entry, Launch


def _entry(rtol=None):
    return Entry("x.py", "k", "void()", Launch.of(1, 1), (), rtol=rtol)


def test_compare_is_exact_for_integers_and_records_and_tolerant_for_floats():
    rng = np.random.default_rng(0)
    a = rng.integers(-9, 9, 10)
    assert compare(_entry(), [a.copy()], [a])[0]
    b = a.copy()
    b[3] += 1
    ok, why, _ = compare(_entry(), [b], [a])
    assert not ok and "[[3]]" in why
    f = rng.random(10).astype(np.float32)
    assert compare(_entry(), [f * (1 + 1e-7)], [f])[0]
    assert not compare(_entry(), [f * (1 + 1e-3)], [f])[0]
    g = f.copy()
    g[0] = np.nan
    assert not compare(_entry(), [g], [f])[0]          # a NaN where Numba has a number
    assert compare(_entry(), [g.copy()], [g])[0]        # NaN where Numba has NaN
    rec = np.zeros(3, dtype=[("s0", np.uint64), ("s1", np.uint64)])
    other = rec.copy()
    other["s1"][2] = 5
    assert not compare(_entry(), [other], [rec])[0]
    assert not compare(_entry(), [a.astype(np.int32)], [a])[0]   # dtype
    fort = np.asfortranarray(rng.integers(0, 9, (4, 5, 6), dtype=np.int32))   # Fortran-ordered outputs ([F] entries)
    assert compare(_entry(), [fort.copy(order="F")], [fort])[0]
    off = fort.copy(order="F")
    off[1, 2, 3] += 1
    ok, why, _ = compare(_entry(), [off], [fort])
    assert not ok and "[[1, 2, 3]]" in why



def test_compare_reads_records_by_field_and_bfloat16_as_numbers():
    import ml_dtypes

    rng = np.random.default_rng(1)
    padded = np.dtype([("a", np.float64), ("b", np.int32)], align=True)   # 4 bytes of padding after b
    rec = np.zeros(7, padded)
    rec["a"], rec["b"] = rng.standard_normal(7), rng.integers(-9, 9, 7)
    garbage = rec.copy()
    garbage.view(np.uint8).reshape(7, 16)[:, 12:] = rng.integers(1, 255, (7, 4))   # only the padding differs
    assert compare(_entry(), [garbage], [rec])[0]
    wrong = garbage.copy()
    wrong["b"][4] += 1
    ok, why, _ = compare(_entry(), [wrong], [rec])
    assert not ok and "'b'" in why and "[[4]]" in why
    x = rng.uniform(-2, 2, 50).astype(ml_dtypes.bfloat16)
    one_ulp = (x.view(np.uint16) + 1).view(ml_dtypes.bfloat16)   # bf16's unit in the last place: 2**-8 relative
    assert compare(_entry(rtol=1e-2), [one_ulp], [x])[0]
    assert not compare(_entry(rtol=1e-3), [one_ulp], [x])[0]

def test_launcher_arguments_with_strides_records_and_half():
    launcher = {"symbol": "launch_k", "params": [
        {"name": "x", "kind": "array", "dtype": "float32", "ndim": 2, "const": True, "layout": "A"},
        {"name": "s", "kind": "array", "dtype": "record", "ndim": 1,
         "record": {"itemsize": 16, "fields": [["s0", "uint64", 0], ["s1", "uint64", 8]]}},
        {"name": "h", "kind": "scalar", "dtype": "float16"},
        {"name": "c", "kind": "array", "dtype": "int32", "ndim": 1}]}
    assert len(abi.argtypes(launcher)) == (1 + 2 + 2) + (1 + 1) + 1 + (1 + 1) + 8
    f = np.asfortranarray(np.zeros((3, 4), np.float32))
    states = np.zeros(5, dtype=[("s0", np.uint64), ("s1", np.uint64)])
    args = [abi.ArrayArg(100, f.shape, f.dtype, abi.element_strides(f)), (200, states.shape, states.dtype),
            np.float16(1.5), (300, (7,), np.int32)]
    out = abi.call_args(launcher, args, (1,), (32,))
    assert [v.value if isinstance(v, ctypes.c_void_p) else v for v in out[:10]] == [
        100, 3, 4, 1, 3, 200, 5, int(np.float16(1.5).view(np.uint16)), 300, 7]
    bad = np.zeros(5, dtype=[("s0", np.uint64), ("t", np.uint64)])
    try:
        abi.call_args(launcher, [args[0], (200, bad.shape, bad.dtype), args[2], args[3]], (1,), (32,))
    except abi.AbiError as e:
        assert "record" in str(e)
    else:
        raise AssertionError("a record array of another layout was accepted")
    try:  # a C-contiguous parameter given a strided array
        abi.call_args(launcher, args[:3] + [(300, (7,), np.int32, (2,))], (1,), (32,))
    except abi.AbiError as e:
        assert "C-contiguous" in str(e)
    else:
        raise AssertionError("a strided array was accepted for a C-contiguous parameter")
