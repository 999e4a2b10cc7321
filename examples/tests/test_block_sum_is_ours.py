"""Our ``block_sum`` shares its name with numbakern's library kernel; the project keeps them apart."""

import numpy as np
import pytest

import numbakern
import numbakern.project
from numbakern.registry import AmbiguousKernelName

PROJECT = numbakern.project.find(__file__)


def test_the_project_finds_its_own_block_sum():
    spec = PROJECT.spec("block_sum")
    assert spec.qualified_name == "mykernels.reduce:block_sum"
    assert spec.signatures == ("void(float32[::1], float64[::1])",)  # the library's adds float32 into float32


def test_a_bare_name_shared_with_the_library_is_a_clear_error():
    with pytest.raises(AmbiguousKernelName, match="numbakern.kernels.reduce:block_sum .*mykernels.reduce:block_sum"):
        numbakern.get("block_sum")
    assert numbakern.get("mykernels.reduce:block_sum") is PROJECT.spec("block_sum")


def test_our_block_sum_runs_our_spec():
    spec = PROJECT.spec("block_sum")
    case = spec.make_case({"n": 1000}, np.random.default_rng(3), "normal")
    (result,) = spec.check(case, numbakern.run_case(spec, case)).values()
    assert result.ok, result
    # float64 accumulation: far tighter than the library kernel's float32 total could be
    assert result.max_rel_error < 1e-12
