"""Generated files: NVRTC compiles each, nvcc builds each into a shared library with the contract's symbols,
re-translation is byte-identical, and ``translate --check`` passes on the committed generated_cuda/ and fails
after a kernel edit or a hand edit."""

import ctypes
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests import forked
from translate.api import check, translate_kernel
from translate.manifest import load

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
GENERATED = os.path.join(ROOT, "generated_cuda")


def _registered():
    data = load(GENERATED)
    return sorted(data["files"])


@pytest.mark.parametrize("filename", _registered())
def test_nvrtc_compiles_committed_file(filename):
    from translate.nvrtc import nvrtc_compile

    arch = load(GENERATED)["files"][filename]["compile"]["arch"]  # sm_90, or sm_90a (wgmma and TMA)
    with open(os.path.join(GENERATED, filename)) as f:
        result = nvrtc_compile(f.read(), arch, name=filename, resources=False)
    assert result.ok, result.log
    assert ".entry" in result.ptx


def _nvcc_arch(entry: dict) -> list[str]:
    """The file's own target where it needs one (sm_90a for wgmma and TMA), else sm_90."""
    return [f for f in entry["build"].get("nvcc_flags", []) if f.startswith("-gencode")] or ["-arch=sm_90"]


def _by_target() -> dict[tuple, list[str]]:
    """The files by their nvcc target, each target's files smallest first."""
    files = load(GENERATED)["files"]
    targets: dict[tuple, list[str]] = {}
    for name in sorted(files, key=lambda n: (os.path.getsize(os.path.join(GENERATED, n)), n)):
        targets.setdefault(tuple(_nvcc_arch(files[name])), []).append(name)
    return targets


def _assert_exports_launchers(so, filenames) -> None:
    lib = ctypes.CDLL(str(so))
    files = load(GENERATED)["files"]
    missing = [launcher["symbol"] for name in filenames for launcher in files[name]["launchers"]
               if not hasattr(lib, launcher["symbol"])]
    assert not missing, f"launchers not exported: {missing}"


def _nvcc(source, so, arch) -> None:
    r = subprocess.run(["nvcc", "-shared", "-Xcompiler", "-fPIC", *arch, "-o", str(so), str(source)],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-4000:]


needs_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")


@needs_nvcc
@pytest.mark.parametrize("filename", [names[0] for names in _by_target().values()])
def test_nvcc_builds_a_file_alone_into_a_shared_library(filename, tmp_path):
    """The smallest file of each target, as a user builds one: its own includes are all it needs (the host side's
    come from one emitter; NVRTC compiles every file alone, the device side's includes with it)."""
    so = tmp_path / (filename[:-3] + ".so")
    _nvcc(os.path.join(GENERATED, filename), so, _nvcc_arch(load(GENERATED)["files"][filename]))
    _assert_exports_launchers(so, [filename])


@needs_nvcc
@pytest.mark.parametrize("arch", list(_by_target()), ids=lambda arch: arch[0].rsplit("=", 1)[-1])
def test_nvcc_builds_every_file_of_a_target_into_one_shared_library(arch, tmp_path):
    """Every file, built by nvcc with its launchers exported: one translation unit per target, each file in a
    namespace of its own so that their helpers' names do not meet, and the headers they include parsed once (a
    build of each file alone cost some 70 s of CPU, most of it parsing the CUDA runtime's headers again)."""
    names = sorted(_by_target()[arch])
    headers = sorted({line.strip() for name in names
                      for line in Path(GENERATED, name).read_text().splitlines() if line.startswith("#include <")})
    unit = tmp_path / "all.cu"
    unit.write_text("\n".join([*headers, *(f'namespace file{i} {{\n#include "{os.path.join(GENERATED, name)}"\n}}'
                                           for i, name in enumerate(names))]) + "\n")
    so = tmp_path / "all.so"
    _nvcc(unit, so, list(arch))
    _assert_exports_launchers(so, names)


def test_byte_identical_retranslation(tmp_path):
    a = translate_kernel("matmul_tiled", out_dir=str(tmp_path / "a"))
    b = translate_kernel("matmul_tiled", out_dir=str(tmp_path / "b"))
    assert a.code == b.code
    with open(os.path.join(GENERATED, "matmul_tiled.cu")) as f:
        assert f.read() == a.code


def test_manifest_entry_schema():
    entry = load(GENERATED)["files"]["matmul_tiled.cu"]
    for key in ("kernel", "registry_name", "source_sha256", "file_sha256", "signature", "constants", "backend",
                "launchers", "compile", "verification", "created", "updated"):
        assert key in entry
    params = entry["launchers"][0]["params"]
    assert params[0] == {"name": "m", "kind": "array", "dtype": "float32", "ndim": 2, "const": True}
    assert params[2]["const"] is False
    assert params[3] == {"name": "tw", "kind": "scalar", "dtype": "int64"}
    assert entry["compile"]["ok"] and entry["compile"]["arch"] == "sm_90"


def _cli(*args, cwd=ROOT):
    env = dict(os.environ)
    env.pop("NUMBA_ENABLE_CUDASIM", None)
    return forked.run([sys.executable, "-m", "translate.cli", *args], cwd=cwd, env=env)


@pytest.mark.slow
def test_check_detects_hand_edit_and_kernel_edit(tmp_path):
    # a project whose kernel module is my_kernel: --check imports only a project's own kernel modules
    (tmp_path / "pyproject.toml").write_text('[tool.numbakern]\nkernels = ["my_kernel"]\nout = "gen"\n')
    kernel_src = tmp_path / "my_kernel.py"
    kernel_src.write_text(
        "from numba import cuda\n\n\n@cuda.jit\ndef scale(x, out):\n    i = cuda.grid(1)\n"
        "    if i < x.shape[0]:\n        out[i] = x[i] * 2\n")
    out = tmp_path / "other"
    r = _cli("my_kernel.py:scale", "--signature", "void(float32[::1], float32[::1])", "--out", str(out),
             cwd=tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    assert (out / "scale.cu").exists()
    assert check(str(out), registry=False, project_dir=str(tmp_path)) == []
    r = _cli("--check", "--out", str(out), cwd=tmp_path)
    # a folder of its own: --check checks the files its manifest lists, not the project's kernels
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout == f"translate --check: every file in {out}/ is up to date\n"
    # a hand edit
    cu = out / "scale.cu"
    original = cu.read_text()
    cu.write_text(original.replace("* 2", "* 3"))
    assert [p["problem"] for p in check(str(out), registry=False, project_dir=str(tmp_path))] == ["edited"]
    cu.write_text(original)
    # a kernel edit
    kernel_src.write_text(kernel_src.read_text().replace("* 2", "* 4"))
    problems = check(str(out), registry=False, project_dir=str(tmp_path))
    assert [p["problem"] for p in problems] == ["stale"]
    # the same folder checked from outside the project: its kernel is not vouched for, so it is not imported
    problems = check(str(out), registry=False, project_dir=ROOT)
    assert [p["problem"] for p in problems] == ["untrusted"]


@pytest.mark.slow
def test_cli_check_passes_on_committed_files():
    """The committed generated_cuda/ is up to date, as ``translate --check`` (CI's step) finds it: the whole library
    derived again, once in the suite (the command runs ``api.check``; test_api_is_the_cli.py shows they agree)."""
    r = _cli("--check")
    assert r.returncode == 0, r.stdout + r.stderr


def test_cli_translation_error_exit_code(tmp_path):
    here = os.path.join(os.path.dirname(__file__), "construct_kernels.py")
    r = _cli(f"{here}:bad_strings", "--signature", "void(int64[::1])", "--out", str(tmp_path))
    assert r.returncode == 1
    assert "strings are not supported" in r.stdout + r.stderr


def test_identical_retranslation_leaves_the_manifest_untouched(tmp_path):
    out = tmp_path / "gen"
    translate_kernel("vector_add", out_dir=str(out))
    manifest = (out / "manifest.json").read_text()
    cu = (out / "vector_add.cu").read_text()
    time.sleep(1.1)  # the manifest's timestamps have one-second resolution
    translate_kernel("vector_add", out_dir=str(out))
    assert (out / "manifest.json").read_text() == manifest
    assert (out / "vector_add.cu").read_text() == cu


def test_nvrtc_leaves_python_bytes_objects_intact():
    """NVRTC writes its log into the buffer it is given; an empty log must not land in CPython's shared b" "."""
    from translate.nvrtc import nvrtc_compile

    result = nvrtc_compile('extern "C" __global__ void k(float* x) { x[0] = 1.0f; }', "sm_90", name="k.cu")
    assert result.ok and result.log == "" and result.ptx.startswith("//")
    assert b" "[0] == 32 and " ".encode()[0] == 32  # noqa: UP012 - the byte values: every b" " is one shared object


@pytest.mark.parametrize("source, registers", [
    ('extern "C" __global__ void k(float* x) { int unused = 3; x[0] = 1.0f; }', True),
    # the front end accepts it, ptxas refuses it (more static shared memory than a block may have): compiled, no report
    ('extern "C" __global__ void k(float* x) { __shared__ float s[100000]; s[threadIdx.x] = 1.0f; __syncthreads();'
     ' x[0] = s[5]; }', False),
], ids=["warning", "ptxas refuses"])
def test_one_nvrtc_compile_gives_the_ptx_and_the_resources(monkeypatch, source, registers):
    """A translation's compile: the SASS compile's PTX, log (without ptxas' report) and resources are what the PTX
    compile and the SASS compile gave, in one compile where ptxas accepts the file (a third of the NVRTC time of
    every translation); where it refuses, the PTX compile alone decides, as before."""
    from translate import nvrtc

    runs = []
    run = nvrtc._run
    monkeypatch.setattr(nvrtc, "_run", lambda *args, **kwargs: runs.append(args[2][0]) or run(*args, **kwargs))
    result = nvrtc.nvrtc_compile(source, "sm_90", name="k.cu")
    ok, log, ptx = run(source, "k.cu", ["--gpu-architecture=compute_90", *nvrtc.compile_options("sm_90")[1]])
    assert (result.ok, result.log, result.ptx) == (ok, log, ptx) and ok and ".entry" in ptx
    assert "unused" in log or not registers
    if registers:
        assert runs == ["--gpu-architecture=sm_90"] and result.registers and result.functions
    else:
        assert runs == ["--gpu-architecture=sm_90", "--gpu-architecture=compute_90"] and result.registers is None


def test_missing_resource_report_keeps_the_known_one(tmp_path):
    from translate import manifest

    out = str(tmp_path)
    entry = {"file_sha256": "abc", "compile": {"ok": True, "arch": "sm_90", "registers": 24, "shared_bytes": 0}}
    manifest.update_entry(out, "k.cu", entry)
    again = {"file_sha256": "abc", "compile": {"ok": True, "arch": "sm_90", "registers": None, "shared_bytes": None}}
    assert manifest.update_entry(out, "k.cu", again)["compile"]["registers"] == 24
    other_arch = {"file_sha256": "abc", "compile": {"ok": True, "arch": "sm_80", "registers": None,
                                                    "shared_bytes": None}}
    assert manifest.update_entry(out, "k.cu", other_arch)["compile"]["registers"] is None
    changed = {"file_sha256": "def", "compile": {"ok": True, "arch": "sm_90", "registers": None, "shared_bytes": None}}
    assert manifest.update_entry(out, "k.cu", changed)["compile"]["registers"] is None
