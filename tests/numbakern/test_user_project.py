"""``numbakern.project``: a user's project read from its pyproject.toml, its kernels kept apart from the library's."""

import sys
import textwrap

import pytest

from numbakern import project, registry
from numbakern.project import ProjectError

KERNELS = '''
import numpy as np
from numba import cuda

import numbakern


@cuda.jit
def block_sum(x, out):
    i = cuda.grid(1)
    if i < x.shape[0]:
        cuda.atomic.add(out, 0, np.float64(x[i]))


@cuda.jit
def negate(x, out):
    i = cuda.grid(1)
    if i < x.shape[0]:
        out[i] = -x[i]


def vector(rand, n=5000):
    return rand(n, np.float32), rand(1, np.float64)


numbakern.declare(block_sum, args=vector, launch=lambda x, out: numbakern.launch_config(x.shape[0], 128),
                  reference=lambda x, out: out + x.astype(np.float64).sum(), rtol=1e-12,
                  error_scale=lambda x, out: np.abs(out) + np.abs(x.astype(np.float64)).sum())
numbakern.declare(negate, args=lambda rand, n=5000: (rand(n, np.float32), np.empty(n, np.float32)),
                  launch=lambda x, out: numbakern.launch_config(x.shape[0], 128), reference=lambda x, out: -x)
'''


@pytest.fixture
def make_project(tmp_path, monkeypatch):
    """A project folder with package ``tinykernels`` and the given [tool.numbakern] table; cleaned up after."""
    saved = dict(registry._PROJECT)

    def make(table, name="tiny"):
        root = tmp_path / name
        (root / "tinykernels").mkdir(parents=True)
        (root / "tinykernels" / "__init__.py").write_text("")
        (root / "tinykernels" / "sums.py").write_text(KERNELS)
        (root / "pyproject.toml").write_text(f'[project]\nname = "{name}"\n\n[tool.numbakern]\n'
                                             + textwrap.dedent(table))
        return root

    yield make
    registry._PROJECT.clear()
    registry._PROJECT.update(saved)
    for module in [m for m in sys.modules if m == "tinykernels" or m.startswith("tinykernels.")]:
        del sys.modules[module]
    sys.path[:] = [p for p in sys.path if not p.startswith(str(tmp_path))]


def test_a_project_and_its_kernels(make_project):
    root = make_project('kernels = ["tinykernels.sums"]\narch = "sm_80"\n')
    p = project.load(root)
    assert (p.name, p.kernel_modules, p.arch, p.include_library) == ("tiny", ("tinykernels.sums",), "sm_80", False)
    assert p.out_dir == root / "generated_cuda" and p.pyproject == root / "pyproject.toml" and not p.is_library
    # not installed: imported from the project's root, as python -m would from there
    assert [s.qualified_name for s in p.specs()] == ["tinykernels.sums:block_sum", "tinykernels.sums:negate"]
    mine = p.spec("block_sum")
    assert mine.signatures == ("void(float32[::1], float64[::1])",)
    assert registry.from_ref(p.ref("block_sum")) is mine


def test_a_project_never_confuses_its_kernel_with_the_librarys(make_project):
    p = project.load(make_project('kernels = ["tinykernels"]\n'))
    assert p.spec("block_sum").module == "tinykernels.sums"  # a package covers its submodules (once imported)
    assert "matmul_tiled" not in [s.name for s in p.specs()]


def test_including_the_library_makes_a_name_clash_an_error(make_project):
    p = project.load(make_project('kernels = ["tinykernels.sums"]\ninclude-library = true\n'))
    with pytest.raises(ProjectError, match="two kernels named 'block_sum' .*numbakern.kernels.reduce:block_sum and "
                                           "tinykernels.sums:block_sum.* rename one"):
        p.specs()


def test_including_the_library_without_a_clash(make_project):
    root = make_project('include-library = true\nout = "build/cuda"\n')
    p = project.load(root)
    names = [s.name for s in p.specs()]
    assert "matmul_tiled" in names and "negate" not in names
    assert p.out_dir == root / "build" / "cuda"


def test_unknown_kernel_lists_the_projects_kernels(make_project):
    p = project.load(make_project('kernels = ["tinykernels.sums"]\n'))
    with pytest.raises(KeyError, match="project tiny .* has no kernel named 'matmul_tiled'; its kernels: block_sum, "
                                       "negate"):
        p.spec("matmul_tiled")


def test_find_walks_up_to_the_nearest_numbakern_table(make_project, tmp_path):
    root = make_project('kernels = ["tinykernels.sums"]\n')
    nested = root / "tinykernels" / "deeper"
    nested.mkdir()
    (nested / "pyproject.toml").write_text('[project]\nname = "not-numbakern"\n')  # no table: keep going up
    assert project.find(nested).pyproject == root / "pyproject.toml"
    elsewhere = tmp_path / "plain"
    elsewhere.mkdir()
    lib = project.find(elsewhere)
    assert lib.is_library and lib.out_dir == elsewhere / "generated_cuda" and lib.include_library
    assert {s.name for s in lib.specs()} == {s.name for s in registry.all_specs()}


@pytest.mark.parametrize("table, message", [
    ('kernel = ["x"]\n', r"unknown key\(s\) kernel; the keys are kernels, out, arch, include-library"),
    ('kernels = "tinykernels"\n', "'kernels' must be a list, got str"),
    ('kernels = ["tiny-kernels"]\n', "'kernels' must list module names"),
    ('out = "x"\n', "'kernels' must list the modules that declare your kernels"),
    ('kernels = ["tinykernels"]\narch = "90"\n', "'arch' must look like \"sm_90\", got '90'"),
    ('kernels = ["tinykernels"]\ninclude-library = "yes"\n', "'include-library' must be a bool"),
])
def test_a_bad_table_names_the_file_and_the_key(make_project, table, message):
    root = make_project(table)
    with pytest.raises(ProjectError, match=message) as caught:
        project.load(root)
    assert str(root / "pyproject.toml") in str(caught.value)


def test_a_kernel_module_that_does_not_import(make_project):
    root = make_project('kernels = ["tinykernels.missing"]\n')
    with pytest.raises(ProjectError, match=r"kernels in .*pyproject.toml: cannot import 'tinykernels.missing'.*"
                                           r"pip install -e"):
        project.load(root).specs()


def test_load_needs_a_table(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "x"\n')
    with pytest.raises(ProjectError, match=r"has no \[tool.numbakern\] table"):
        project.load(tmp_path)
    with pytest.raises(ProjectError, match="no pyproject.toml"):
        project.load(tmp_path / "nowhere")
    (tmp_path / "pyproject.toml").write_text("[tool.numbakern\n")
    with pytest.raises(ProjectError, match="not valid TOML"):
        project.load(tmp_path)
