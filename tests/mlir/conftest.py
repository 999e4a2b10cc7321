"""Kernels written with ``from numba_cuda_mlir import cuda`` in numbakern's simulator. Everything here needs
numba-cuda-mlir (``pip install numbakern[mlir]``) and skips without it; the CI's second job runs these tests in an
environment that has numba-cuda-mlir and no numba at all."""

from pathlib import Path

import pytest

from numbakern.frontend.choice import mlir_installed

HERE = Path(__file__).parent


def pytest_collection_modifyitems(items):
    for item in items:
        if HERE in Path(str(item.fspath)).parents:
            if item.get_closest_marker("gpu") is None:
                item.add_marker(pytest.mark.sim)
            if not mlir_installed():
                item.add_marker(pytest.mark.skip(reason="numba-cuda-mlir is not installed (numbakern[mlir])"))
