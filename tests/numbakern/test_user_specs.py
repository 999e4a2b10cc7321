"""``numbakern.declare``: a user's kernel declared in a few lines, with the rest derived and checked."""

import dataclasses
import json
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import numbakern
from numbakern import registry
from numbakern.declare import derive_test_sizes, derive_verify_sizes, signature_of
from numbakern.registry import DISTRIBUTIONS, AmbiguousKernelName

from . import user_kernels as uk


@pytest.fixture(autouse=True)
def scratch_registry():
    """Declarations made by a test disappear after it (the library's namespace is never touched)."""
    saved = dict(registry._PROJECT)
    yield
    registry._PROJECT.clear()
    registry._PROJECT.update(saved)


def scale_args(rand, rows=300, cols=500):
    return rand((rows, cols), np.float32), np.float32(2.5), np.empty((rows, cols), np.float32)


def scale_launch(x, factor, out):
    return numbakern.launch_config((x.shape[0], x.shape[1]), (8, 32))


def scale_reference(x, factor, out):
    return x.astype(np.float64) * float(factor)


def declare_scale(kernel=uk.scale_rows, **overrides):
    options = dict(args=scale_args, launch=scale_launch, reference=scale_reference, rtol=1e-6)
    return numbakern.declare(kernel, **{**options, **overrides})


def test_what_a_declaration_derives():
    spec = declare_scale()
    assert spec.name == "scale_rows" and spec.namespace == "project" and spec.module == __name__
    assert spec.arg_names() == ("x", "factor", "out")
    assert spec.outputs == (2,) and spec.accumulates == ()
    assert spec.signatures == ("void(float32[:, ::1], float32, float32[:, ::1])",)
    assert spec.bench_sizes == ({"rows": 300, "cols": 500},)
    # simulator sizes: 1 everywhere, then distinct primes just above the block's 32 threads
    assert spec.test_sizes == ({"rows": 1, "cols": 1}, {"rows": 37, "cols": 41})
    # GPU sizes add primes near the example, then the example itself
    assert spec.verify_sizes == (*spec.test_sizes, {"rows": 293, "cols": 499}, {"rows": 300, "cols": 500})
    assert registry.get("scale_rows") is spec and registry.get(f"{__name__}:scale_rows") is spec


@pytest.mark.parametrize("dist", DISTRIBUTIONS)
def test_cases_follow_the_distribution_and_poison_the_outputs(dist):
    spec = declare_scale()
    case = spec.make_case({"rows": 37, "cols": 41}, np.random.default_rng(0), dist)
    x, factor, out = case.args
    assert x.shape == (37, 41) and x.dtype == np.float32 and np.count_nonzero(x) > 0
    assert np.isnan(out).all(), "an output the kernel must write starts as NaN"
    if dist == "negative":
        assert (x < 0).all()
    if dist == "large":
        assert np.abs(x).max() > 1e3
    assert case.launch.block == (8, 32) and case.launch.grid == (5, 2)


@pytest.mark.parametrize("size", [{"rows": 1, "cols": 1}, {"rows": 37, "cols": 41}])
@pytest.mark.parametrize("dist", DISTRIBUTIONS)
def test_a_declared_kernel_matches_its_reference(size, dist):
    spec = declare_scale()
    seed = int(np.random.SeedSequence().entropy % 2**32)
    case = spec.make_case(size, np.random.default_rng(seed), dist)
    (result,) = spec.check(case, numbakern.run_case(spec, case)).values()
    assert result.ok, f"seed {seed}: {result}"


@pytest.mark.parametrize("kernel", [uk.scale_rows_wrong, uk.scale_rows_partial], ids=["wrong", "unwritten"])
def test_a_wrong_kernel_fails_its_declaration(kernel):
    spec = declare_scale(kernel)
    case = spec.make_case({"rows": 37, "cols": 41}, np.random.default_rng(4), "normal")
    (result,) = spec.check(case, numbakern.run_case(spec, case)).values()
    assert not result.ok and result.mismatches >= 37


def test_atomic_accumulators_are_detected_and_start_from_the_cases_values():
    spec = numbakern.declare(
        uk.count_positive,
        args=lambda rand, n=1000: (rand(n, np.float32), rand(1, np.int32), np.empty(n, np.int32)),
        launch=lambda x, count, flags: numbakern.launch_config(x.shape[0], 128),
        reference=lambda x, count, flags: {"count": count + (x > 0).sum(), "flags": (x > 0).astype(np.int32)},
    )
    assert spec.outputs == (1, 2) and spec.accumulates == (1,)
    for dist in DISTRIBUTIONS:
        case = spec.make_case({"n": 131}, np.random.default_rng(7), dist)
        assert (case.args[2] == np.iinfo(np.int32).min + 0x5A).all()  # the plain output: a sentinel
        assert case.args[1][0] != np.iinfo(np.int32).min + 0x5A  # the accumulator: the case's own start value
        results = spec.check(case, numbakern.run_case(spec, case))
        assert all(r.ok for r in results.values()), (dist, [str(r) for r in results.values()])


def test_augmented_assignment_is_an_accumulator_too():
    spec = numbakern.declare(
        uk.add_into,
        args=lambda rand, n=100: (rand(n, np.float32), rand(n, np.float32)),
        launch=lambda x, acc: numbakern.launch_config(x.shape[0], 64),
        reference=lambda x, acc: acc.astype(np.float64) + x,
    )
    assert spec.accumulates == (1,)
    case = spec.make_case({"n": 67}, np.random.default_rng(1), "uniform")
    assert np.isfinite(case.args[1]).all()
    (result,) = spec.check(case, numbakern.run_case(spec, case)).values()
    assert result.ok, result


def test_an_array_updated_in_place_is_not_poisoned():
    spec = numbakern.declare(
        uk.double_in_place,
        args=lambda rand, n=100: (rand(n, np.float32),),
        launch=lambda x: numbakern.launch_config(x.shape[0], 64),
        reference=lambda x: 2 * x.astype(np.float64),
    )
    assert spec.outputs == spec.accumulates == (0,)
    case = spec.make_case({"n": 67}, np.random.default_rng(2), "normal")
    (result,) = spec.check(case, numbakern.run_case(spec, case)).values()
    assert result.ok, result


def test_a_two_dimensional_block_given_as_a_tuple():
    spec = numbakern.declare(
        uk.outer,
        args=lambda rand, h=50, w=60: (rand(h), rand(w), np.empty((h, w), np.float32)),
        launch=lambda a, b, out: ((numbakern.cdiv(out.shape[0], 16), numbakern.cdiv(out.shape[1], 16)), (16, 16)),
        reference=lambda a, b, out: np.outer(a.astype(np.float64), b),
        rtol=1e-6,
    )
    assert spec.test_sizes == ({"h": 1, "w": 1}, {"h": 17, "w": 19})
    for size in spec.test_sizes:
        case = spec.make_case(size, np.random.default_rng(3), "large")
        (result,) = spec.check(case, numbakern.run_case(spec, case)).values()
        assert result.ok, result
    with pytest.raises(ValueError, match=r"declare\(outer\): launch\(\): .*a block of 64 x 32 = 2048 threads"):
        numbakern.declare(uk.outer, args=lambda rand, h=5, w=6: (rand(h), rand(w), np.empty((h, w), np.float32)),
                          launch=lambda a, b, out: ((1, 1), (64, 32)), reference=lambda a, b, out: np.outer(a, b))


def test_an_accumulator_left_uninitialised_is_refused():
    with pytest.raises(ValueError, match="'acc' is an accumulator .* not np.empty"):
        numbakern.declare(
            uk.add_into,
            args=lambda rand, n=100: (rand(n, np.float32), np.full(n, np.nan, np.float32)),
            launch=lambda x, acc: numbakern.launch_config(x.shape[0], 64),
            reference=lambda x, acc: acc + x,
        )


def test_explicit_outputs_and_sizes_win():
    spec = declare_scale(outputs=["out"], test_sizes=[{"rows": 2, "cols": 3}], verify_sizes=[{"rows": 5, "cols": 7}],
                         bench_sizes=[{"rows": 64, "cols": 64}], name="scaled", family="scaling")
    assert (spec.name, spec.family, spec.outputs) == ("scaled", "scaling", (2,))
    assert spec.test_sizes == ({"rows": 2, "cols": 3},) and spec.verify_sizes == ({"rows": 5, "cols": 7},)
    assert spec.bench_sizes == ({"rows": 64, "cols": 64},)


def test_size_multiples_round_the_derived_sizes_up():
    spec = declare_scale(size_multiples={"cols": 4})
    assert all(s["cols"] % 4 == 0 for s in (*spec.test_sizes, *spec.verify_sizes))
    assert spec.verify_sizes[0] == {"rows": 1, "cols": 4}


@pytest.mark.parametrize("overrides, message", [
    (dict(outputs=["result"]), r"outputs \['result'\] are not parameters of the kernel \(x, factor, out\)"),
    (dict(example={"rows": 3}, args=lambda rand, rows, cols: None), r"missing \['cols'\]"),
    (dict(example={"depth": 3}), r"unknown \['depth'\]"),
    (dict(args=lambda rand: ()), "names no size dimension"),
    (dict(args=lambda rand, n=4: (rand(n),)), r"args\(\) returned 1 value\(s\); the kernel takes 3"),
    (dict(launch=lambda x, factor, out: 256), "launch.. must return a LaunchConfig"),
    (dict(reference=lambda x, factor, out: {"y": x}), r"reference\(\) returned \['y'\]; the outputs are out"),
    (dict(example={"rows": 0, "cols": 4}), "positive integers"),
])
def test_mistakes_in_a_declaration_are_named(overrides, message):
    with pytest.raises((TypeError, ValueError), match=message):
        declare_scale(**overrides)


def test_declaring_a_plain_function_is_refused():
    with pytest.raises(TypeError, match="'kernel' must be a @cuda.jit kernel"):
        numbakern.declare(scale_reference, args=scale_args, launch=scale_launch, reference=scale_reference)


def test_derived_sizes_for_other_shapes():
    # 1-D, block of 256: a prime just past one block; near the example: the largest prime not above it
    assert derive_test_sizes(["n"], {"n": 1 << 20}, 256) == ({"n": 1}, {"n": 257})
    assert derive_verify_sizes(["n"], {"n": 1 << 20}, 256)[-2:] == ({"n": 1048573}, {"n": 1 << 20})
    # an example dimension smaller than the block is kept as it is
    assert derive_test_sizes(["h", "c"], {"h": 100, "c": 3}, 32) == ({"h": 1, "c": 1}, {"h": 37, "c": 3})
    # a huge example: the derived GPU size stays near 2**22 elements
    big = derive_verify_sizes(["h", "w"], {"h": 1 << 14, "w": 1 << 14}, 16)[-2]
    assert big["h"] * big["w"] <= 1 << 22 and big["h"] != big["w"]


@pytest.mark.parametrize("args, expected", [
    ((np.zeros((2, 3), np.float32, order="F"), np.zeros(4, np.int64), 7, 2.0, np.float32(1)),
     "void(float32[::1, :], int64[::1], int64, float64, float32)"),
    ((np.zeros((2, 3, 4), np.uint8)[:, ::2],), "void(uint8[:, :, :])"),
])
def test_signatures_from_arguments(args, expected):
    assert signature_of(args) == expected


def test_a_user_kernel_may_share_a_library_kernels_name():
    mine = numbakern.declare(
        uk.block_sum,
        args=lambda rand, n=1000: (rand(n, np.float32), rand(1, np.float32)),
        launch=lambda x, out: numbakern.launch_config(x.shape[0], 256),
        reference=lambda x, out: out.astype(np.float64) + x.astype(np.float64).sum(),
        error_scale=lambda x, out: np.abs(out.astype(np.float64)) + np.abs(x.astype(np.float64)).sum(),
    )
    library = registry.all_specs()
    assert mine not in library and any(s.name == "block_sum" for s in library)
    with pytest.raises(AmbiguousKernelName, match=f"numbakern.kernels.reduce:block_sum .*; {__name__}:block_sum"):
        registry.get("block_sum")
    assert registry.get(f"{__name__}:block_sum") is mine
    assert registry.get("numbakern:block_sum").module == "numbakern.kernels.reduce"
    assert registry.spec_for_kernel(uk.block_sum) is mine
    assert registry.project_specs([__name__]) == [mine]


def test_where_a_kernel_can_be_imported_again():
    spec = declare_scale()
    assert registry.kernel_target(spec) == "tests.numbakern.user_kernels:scale_rows"
    assert registry.kernel_target(registry.get("block_sum")) == "numbakern.kernels.reduce:block_sum"
    assert registry.kernel_target(registry.get("matmul_tiled_static")) is None  # a specialize variant


def test_library_names_stay_unique():
    spec = registry.get("vector_add")
    with pytest.raises(ValueError, match="already registered"):
        registry.register(registry.KernelSpec(**{**spec.__dict__}))


CHILD = """
import json, sys
import numpy as np
from numbakern import registry, run_case
spec = registry.from_ref(json.loads(sys.argv[1]))
case = spec.make_case({"n": 200}, np.random.default_rng(0), "normal")
(result,) = spec.check(case, run_case(spec, case)).values()
print(spec.qualified_name, spec.signatures[0], result.ok)
"""


def write_user_module(folder):
    (folder / "userpkg").mkdir()
    (folder / "userpkg" / "__init__.py").write_text("")
    (folder / "userpkg" / "sums.py").write_text(textwrap.dedent('''
        import numpy as np
        from numba import cuda

        import numbakern


        @cuda.jit
        def block_sum(x, out):
            i = cuda.grid(1)
            if i < x.shape[0]:
                cuda.atomic.add(out, 0, np.float64(x[i]))


        numbakern.declare(
            block_sum,
            args=lambda rand, n=1000: (rand(n, np.float32), rand(1, np.float64)),
            launch=lambda x, out: numbakern.launch_config(x.shape[0], 128),
            reference=lambda x, out: out + x.astype(np.float64).sum(),
            error_scale=lambda x, out: np.abs(out) + np.abs(x.astype(np.float64)).sum(),
            rtol=1e-12,
        )
    '''))


def run_child(ref, cwd):
    result = subprocess.run([sys.executable, "-c", CHILD, json.dumps(ref)], cwd=cwd, capture_output=True, text=True,
                            timeout=300)
    assert result.returncode == 0, result.stderr
    return result.stdout.split()


def test_a_child_process_re_creates_the_users_spec_not_the_librarys(tmp_path, monkeypatch):
    write_user_module(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    import importlib

    module = importlib.import_module("userpkg.sums")
    try:
        ref = registry.spec_ref(registry.get("userpkg.sums:block_sum"))
        assert ref["root"] == str(tmp_path) and ref["file"] == str(module.__file__)
        # from another folder: the child finds the module through the ref's root
        assert run_child(ref, cwd="/") == ["userpkg.sums:block_sum", "void(float32[::1],", "float64[::1])", "True"]
    finally:
        for name in ("userpkg.sums", "userpkg"):
            sys.modules.pop(name, None)


def test_a_child_process_re_creates_a_spec_declared_in_a_script(tmp_path):
    write_user_module(tmp_path)
    script = tmp_path / "myscript.py"
    # run as a script, it prints its spec's ref; re-created in the child, its body under __main__ must not run
    main_part = textwrap.dedent("""
        if __name__ == "__main__":
            import json
            print(json.dumps(numbakern.registry.spec_ref(numbakern.get("__main__:block_sum"))))
    """)
    script.write_text((tmp_path / "userpkg" / "sums.py").read_text() + main_part)
    made = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert made.returncode == 0, made.stderr
    ref = json.loads(made.stdout)
    assert ref["module"] == "__main__" and ref["file"] == str(script)
    qualified, *_, ok = run_child(ref, cwd="/")
    assert qualified.startswith("_numbakern_myscript_") and qualified.endswith(":block_sum") and ok == "True"


BLOCK = 128


def declare_triple(**overrides):
    options = dict(args=lambda rand, n=1000: (rand(n, np.float32), np.empty(n, np.float32)),
                   launch=lambda src, dst: numbakern.LaunchConfig(numbakern.cdiv(src.shape[0], BLOCK), BLOCK),
                   reference=lambda src, dst: 3 * src.astype(np.float64))
    return numbakern.declare(uk.triple_1d, **{**options, **overrides})


def test_a_launch_of_plain_ints_is_one_dimensional_as_in_kernel_grid_block():
    spec = declare_triple()
    case = spec.make_case({"n": 1000}, np.random.default_rng(5), "normal")
    assert (case.launch.grid, case.launch.block) == ((8,), (BLOCK,))
    (result,) = spec.check(case, numbakern.run_case(spec, case)).values()
    assert result.ok, result


def test_a_spec_gives_the_launch_for_its_arguments():
    spec = declare_triple()
    src, dst = np.random.default_rng(6).random(300).astype(np.float32), np.zeros(300, np.float32)
    cfg = spec.launch(src, dst)
    assert (cfg.grid, cfg.block, cfg.shared_bytes) == ((3,), (BLOCK,), 0)
    spec.kernel[cfg.grid, cfg.block, 0, cfg.shared_bytes](src, dst)
    np.testing.assert_array_equal(dst, 3 * src)
    with pytest.raises(TypeError, match="kernel 'matmul_tiled' was registered without a launch function"):
        numbakern.get("matmul_tiled").launch(src, dst)


@pytest.mark.parametrize("overrides, kind, message", [
    (dict(atol=float("inf")), ValueError, r"declare\(triple_1d\): atol must be a finite number >= 0, got inf"),
    (dict(rtol=float("nan")), ValueError, r"rtol must be a finite number >= 0, got nan"),
    (dict(rtol=-1e-5), ValueError, r"rtol must be a finite number >= 0, got -1e-05"),
    (dict(atol="0.1"), TypeError, r"atol must be a number, got str '0.1'"),
    (dict(error_scale=2.0), TypeError, r"'error_scale' must be a function of the kernel's arguments, got float 2.0"),
    (dict(reference=None), TypeError, r"'reference' must be a function"),
    (dict(example={"n": -5}), ValueError, r"example sizes must be positive integers, got \{'n': -5\}"),
    (dict(test_sizes=[{"n": 0}]), ValueError, r"sizes must be positive integers, got \{'n': 0\}"),
    (dict(verify_sizes=[{"n": 7}, {"n": -1}]), ValueError, r"sizes must be positive integers, got \{'n': -1\}"),
    (dict(size_multiples={"n": 0}), ValueError, r"size_multiples must be positive integers"),
    (dict(launch=lambda src, dst: numbakern.LaunchConfig(numbakern.cdiv(src.shape[0], 32), 2048)), ValueError,
     r"declare\(triple_1d\): launch\(\): LaunchConfig\(grid=\(1,\), block=\(2048,\)\): a block of 2048 threads"),
    (dict(launch=lambda src, dst: ((0,), (32,))), ValueError, r"launch\(\): .*gridDim.x = 0"),
    (dict(launch=lambda src, dst: ("many", 32)), TypeError,
     r"declare\(triple_1d\): launch\(\): LaunchConfig: grid\[0\] must be an integer, got str 'many'"),
])
def test_a_declaration_with_impossible_values_is_refused_naming_the_kernel_and_the_argument(overrides, kind, message):
    with pytest.raises(kind, match=message):
        declare_triple(**overrides)


def test_an_infinite_tolerance_cannot_pass_a_wrong_kernel_any_more():
    """A kernel computing 3x against a 2x reference: no tolerance makes that pass."""
    with pytest.raises(ValueError, match="atol must be a finite number"):
        declare_triple(reference=lambda src, dst: 2 * src.astype(np.float64), atol=float("inf"))
    spec = declare_triple(reference=lambda src, dst: 2 * src.astype(np.float64), atol=1e3)
    case = spec.make_case({"n": 1000}, np.random.default_rng(7), "large")
    (result,) = spec.check(case, numbakern.run_case(spec, case)).values()
    assert not result.ok


def test_a_library_spec_checks_its_tolerances_too():
    spec = numbakern.get("vector_add")
    with pytest.raises(ValueError, match="kernel 'vector_add': atol must be a finite number"):
        dataclasses.replace(spec, atol=float("inf"))
