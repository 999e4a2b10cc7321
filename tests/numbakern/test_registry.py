import numpy as np
import pytest

import numbakern
from numbakern.registry import DISTRIBUTIONS, KernelSpec, random_array, register

LECTURE_KERNELS = {"matmul_naive", "matmul_tiled", "matmul_tiled_static", "vector_add", "block_sum", "transpose"}


def test_library_kernels_are_registered():
    names = {spec.name for spec in numbakern.all_specs()}
    assert LECTURE_KERNELS <= names


def test_unknown_name_lists_the_known_ones():
    with pytest.raises(KeyError, match="no registered kernel named 'matmull'; registered kernels: .*matmul_tiled"):
        numbakern.get("matmull")


@pytest.mark.parametrize("spec", numbakern.all_specs(), ids=lambda s: s.name)
def test_specs_are_consistent(spec, rng):
    args = spec.arg_names()
    assert spec.outputs and all(0 <= i < len(args) for i in spec.outputs)
    assert set(spec.accumulates) <= set(spec.outputs)
    assert spec.signatures and all(sig.startswith("void(") for sig in spec.signatures)
    sizes = spec.verify_sizes
    smallest = spec.smallest_size(sizes[0])
    assert smallest in list(sizes), f"verification must include the smallest size the kernel accepts, {smallest}"
    assert all(spec.accepts(s) for s in (*sizes, *spec.test_sizes, *spec.bench_sizes)), "sizes break size_multiples"
    for dist in DISTRIBUTIONS:
        case = spec.make_case(spec.test_sizes[0], rng, dist)
        assert len(case.args) == len(args)
        for i, a in enumerate(case.args):
            if i in spec.workspace:
                assert isinstance(a, np.ndarray) and not a.any(), f"{spec.name}: workspace {args[i]} must be zeros"
            elif isinstance(a, np.ndarray) and i not in spec.outputs and a.size > 1:
                assert np.count_nonzero(a) > 0, f"{spec.name}: input {args[i]} is all zeros"


@pytest.mark.parametrize("dist", DISTRIBUTIONS)
@pytest.mark.parametrize("dtype", [np.float32, np.int32])
def test_random_arrays_follow_their_distribution(dist, dtype, rng):
    x = random_array(rng, (4000,), dtype, dist)
    assert x.dtype == dtype and x.flags.c_contiguous and np.unique(x).size > 10
    if dist == "negative":
        assert (x <= 0).all()
    if dist == "normal":
        assert (x < 0).any() and (x > 0).any()
    if dist == "large" and dtype == np.float32:
        assert np.abs(x).max() > 1e4


def test_unknown_distribution(rng):
    with pytest.raises(ValueError, match="unknown distribution 'gaussian'; expected one of uniform"):
        random_array(rng, (3,), np.float32, "gaussian")


def test_duplicate_names_are_refused():
    spec = numbakern.get("vector_add")
    clone = KernelSpec(**spec.__dict__)
    with pytest.raises(ValueError, match="already registered"):
        register(clone)


def test_fresh_arguments_keep_each_arrays_memory_order(rng):
    """A kernel typed for a Fortran-order array must get one: copies keep the layout they were made with."""
    import numpy as np

    from numbakern.launch import LaunchConfig
    from numbakern.registry import Case

    f = np.asfortranarray(rng.random((4, 5, 6), dtype=np.float32))
    c = rng.random((3, 2), dtype=np.float32)
    fresh = Case((f, c, 7), LaunchConfig((1,), (32,)), {"n": 4}).fresh_args()
    assert fresh[0].flags.f_contiguous and not fresh[0].flags.c_contiguous and fresh[1].flags.c_contiguous
    np.testing.assert_array_equal(fresh[0], f)
    assert fresh[0] is not f and fresh[2] == 7


def test_special_inputs_hold_every_special_value(rng):
    from numbakern.registry import SPECIAL

    x = random_array(rng, (1000,), np.float32, SPECIAL)
    assert x.dtype == np.float32 and x.flags.c_contiguous
    tiny = np.finfo(np.float32).tiny
    assert np.isposinf(x).any() and np.isneginf(x).any() and np.isnan(x).any()
    assert ((x == 0) & np.signbit(x)).any(), "no -0.0"
    assert ((np.abs(x) < tiny) & (x != 0) & (x > 0)).any() and ((np.abs(x) < tiny) & (x < 0)).any(), "no subnormals"
    normal = np.isfinite(x) & (np.abs(x) >= tiny)
    assert 0.5 < normal.mean() < 0.8  # mostly ordinary numbers around them
    ints = random_array(rng, (100,), np.int32, SPECIAL)  # integers have no special values
    assert ints.dtype == np.int32 and np.unique(ints).size > 10


def test_only_kernels_whose_reference_defines_special_values_are_verified_on_them():
    from numbakern.registry import SPECIAL
    from translate.verify.cases import cases_for

    add = numbakern.get("vector_add")
    assert add.special_values and add.distributions == (*DISTRIBUTIONS, SPECIAL)
    dists = {dist for _, _, dist, _ in cases_for(add, seeds=(0,), sizes=[{"n": 5}])}
    assert dists == {*DISTRIBUTIONS, SPECIAL}
    matmul = numbakern.get("matmul_naive")
    assert not matmul.special_values
    assert {d for *_, d, _ in cases_for(matmul, seeds=(0,), sizes=[{"h": 2, "k": 3, "w": 2}])} == set(DISTRIBUTIONS)


@pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning")  # inf - inf in the simulator
@pytest.mark.parametrize("spec", [s for s in numbakern.all_specs() if s.special_values], ids=lambda s: s.name)
def test_kernels_that_take_special_values_match_their_reference_on_them(spec, rng):
    """The reference defines the special cases, and the kernel (the simulator here, the GPU with --gpu) computes
    them: equal infinities and NaNs compare equal, a NaN or inf anywhere else is a mismatch."""
    from numbakern import run_case
    from numbakern.registry import SPECIAL

    for size in spec.test_sizes:
        case = spec.make_case(size, rng, SPECIAL)
        for result in spec.check(case, run_case(spec, case)).values():
            assert result.ok, f"special inputs: {result}"
        expected = spec.reference(*case.args)
        if max(size.values()) >= 12:
            assert any(not np.isfinite(e).all() for e in expected.values()), "no special value reached the outputs"
