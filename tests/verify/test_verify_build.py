"""Building fixtures with plain ``nvcc -shared`` (compile only: no GPU needed) and loading them with ctypes."""

from __future__ import annotations

import ctypes
import subprocess
import sys

import pytest

from translate.verify import abi
from translate.verify.build import BuildError, build_many, build_shared_library, nvcc_path

from .conftest import DEFECTS_DIR

needs_nvcc = pytest.mark.skipif(nvcc_path() is None, reason="nvcc is not installed")


@needs_nvcc
def test_every_fixture_builds_and_exports_its_launcher(tmp_path, fixture_launchers):
    cus = sorted(DEFECTS_DIR.glob("*.cu"))
    built = build_many(cus, cache_dir=tmp_path)
    for cu, so in built.items():
        assert not isinstance(so, BuildError), so
        kernel = next(k for k in fixture_launchers if cu.stem.startswith(k))
        lib = ctypes.CDLL(str(so))  # loading needs no GPU: the runtime initialises on the first call
        fn = abi.bind(lib, fixture_launchers[kernel])
        assert fn.restype is ctypes.c_int


@needs_nvcc
def test_build_is_cached_and_keyed_by_content(tmp_path):
    cu = tmp_path / "k.cu"
    cu.write_text('#include <cuda_runtime.h>\nextern "C" int f(void) { return 1; }\n')
    first = build_shared_library(cu, cache_dir=tmp_path / "c")
    assert build_shared_library(cu, cache_dir=tmp_path / "c") == first
    cu.write_text('#include <cuda_runtime.h>\nextern "C" int f(void) { return 2; }\n')
    second = build_shared_library(cu, cache_dir=tmp_path / "c")
    assert second != first and ctypes.CDLL(str(second)).f() == 2


@needs_nvcc
def test_build_errors_carry_nvcc_output(tmp_path):
    cu = tmp_path / "broken.cu"
    cu.write_text("this is not CUDA\n")
    with pytest.raises(BuildError, match="broken.cu"):
        build_shared_library(cu, cache_dir=tmp_path)


def test_the_deployable_path_imports_no_numba():
    code = ("import sys; import translate.verify, translate.verify.abi, translate.verify.build, "
            "translate.verify.driver, translate.verify.standalone, translate.verify.torch_binding; "
            "assert 'numba' not in sys.modules, 'numba was imported'")
    subprocess.run([sys.executable, "-c", code], check=True)
