import os
import shutil

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
KERNELS = os.path.join(HERE, "construct_kernels.py")


@pytest.fixture
def kernels_file():
    return KERNELS


def nvcc_available():
    return shutil.which("nvcc") is not None
