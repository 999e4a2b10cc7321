"""A GPU-verified file is never replaced by an unverified translation of the same kernel (unless forced), and the
kernel's source hash, which decides that, is the same whichever backend wrote the file."""

from __future__ import annotations

import json

import pytest

from numbakern.frontend import client
from numbakern.registry import all_specs
from translate import api, manifest
from translate.api import check
from translate.errors import TranslationError

from . import samples
from .server import completion

LLM = {"model": "scripted-model", "base_url": None, "max_turns": 1, "timeout": 5.0, "max_retries": 0}


def _entry(out):
    return json.loads((out / "manifest.json").read_text())["files"]["matmul_tiled.cu"]


def test_verified_file_survives_an_unverified_llm_translation(tmp_path, llm_env):
    out = tmp_path / "gen"
    first = api.translate_kernel("matmul_tiled", out_dir=str(out))
    record = {"ok": True, "device": "scripted", "file_sha256": first.entry["file_sha256"]}
    manifest.set_verification(str(out), "matmul_tiled.cu", record)
    verified_text = (out / "matmul_tiled.cu").read_text()

    # the same deterministic translation again: same bytes, so the verification still holds
    api.translate_kernel("matmul_tiled", out_dir=str(out))
    assert _entry(out)["verification"] == record

    llm_env.script(completion(samples.GOOD_REPLY))
    with pytest.raises(TranslationError, match="was verified on a GPU .* not written .*--force"):
        api.translate_kernel("matmul_tiled", backend="llm", out_dir=str(out), backend_options=LLM)
    assert (out / "matmul_tiled.cu").read_text() == verified_text
    assert _entry(out)["verification"] == record and _entry(out)["backend"]["name"] == "ast"

    llm_env.script(completion(samples.GOOD_REPLY))
    api.translate_kernel("matmul_tiled", backend="llm", out_dir=str(out), backend_options=LLM, force=True)
    assert (out / "matmul_tiled.cu").read_text() != verified_text
    assert _entry(out)["verification"] is None and _entry(out)["backend"]["name"] == "llm"


# ---------------------------------------------------------------------------------------------------------------
# one source hash, whatever the backend


def one_kernel_per_module() -> list[str]:
    """The first registered kernel of each module of the library (18 of 63 kernels): every family, every way a kernel
    gets its dependencies (module constants, closures of kernel factories, device functions of other modules,
    template constants, Hopper's instructions). The hash's inputs come from the kernel's Python for every backend
    alike (translate/pipeline.py: the entry's ``depends`` and ``source_sha256`` from the request, not from the
    backend's code); ``check_dependencies`` holds the ast backend's own record to them in every translation, and
    test_files's ``translate --check`` derives all 63."""
    first: dict[str, str] = {}
    for spec in all_specs():
        first.setdefault(getattr(spec.kernel, "py_func", spec.kernel).__module__, spec.name)
    return sorted(first.values())


def _ast_translations() -> dict[str, dict]:
    # in the helper process, where numba-cuda is not in simulator mode (the mode is chosen at import)
    return client.call("tests.llm.ast_translations:ast_translations", names=one_kernel_per_module())


@pytest.fixture
def ast_translations(run_store) -> dict[str, dict]:
    """The ast backend's translation of one kernel per library module: its device code with its constants (a model
    reply that is right), its entry's dependencies and source hash (``ast_translations.py``). Made in the worker's
    helper process, whose typed records the llm translations then reuse; once per run, whichever workers run this
    file's tests."""
    return run_store.once("ast-translations", _ast_translations)


def test_every_library_module_gets_the_same_source_hash_from_both_backends(module_llm_env, ast_translations):
    """One test on one worker, not one per kernel: the translations it reads take a while to make, and a second
    worker would wait for them. The llm environment first: the helper that a change of it replaces
    (``numbakern.frontend.helper_env``) then makes both backends' translations, typing each kernel once."""
    names = one_kernel_per_module()
    assert sorted(names) == sorted(ast_translations) and len(names) >= 10
    # the kernels whose constants the llm backend's hash used to leave out
    assert sum(bool(t["depends"]["constants"]) for t in ast_translations.values()) >= 5
    differ = []
    for name in names:
        ast = ast_translations[name]
        module_llm_env.script(completion(f"```cuda\n{ast['device_code']}```"))
        llm = api.translate_kernel(name, backend="llm", write=False, backend_options=LLM)
        assert llm.entry["backend"]["name"] == "llm"
        if (llm.entry["depends"], llm.entry["source_sha256"]) != (ast["depends"], ast["source_sha256"]):
            differ.append(name)
    assert not differ, f"the llm backend's entry has other dependencies or another source hash: {differ}"


def test_an_unverified_llm_block_sum_does_not_replace_the_verified_one(tmp_path, llm_env):
    """The review's case: block_sum reads the module constant BLOCK; a wrong llm translation was written over the
    GPU-verified file with exit 0 because its source hash left the constant out."""
    out = tmp_path / "gen"
    first = api.translate_kernel("block_sum", out_dir=str(out))
    manifest.set_verification(str(out), "block_sum.cu", {"ok": True, "device": "scripted",
                                                         "file_sha256": first.entry["file_sha256"]})
    verified = (out / "block_sum.cu").read_text()
    # the reply: the file's constant and kernel (block_sum needs no helpers), with its sum turned into a difference
    right = verified[verified.index("constexpr int64_t BLOCK"):verified.index("#ifndef __CUDACC_RTC__")]
    wrong = right.replace("+=", "-=", 1)
    assert wrong != right and "__global__ void block_sum" in wrong
    llm_env.script(completion(f"```cuda\n{wrong}```"))
    with pytest.raises(TranslationError, match="was verified on a GPU .* not written"):
        api.translate_kernel("block_sum", backend="llm", out_dir=str(out), backend_options=LLM)
    assert (out / "block_sum.cu").read_text() == verified
    assert json.loads((out / "manifest.json").read_text())["files"]["block_sum.cu"]["verification"]["ok"] is True


USER_KERNEL = '''\
import numpy as np
from numba import cuda

SCALE = 2.5
OFFSET = 3


@cuda.jit
def scale_add(x, out):
    i = cuda.grid(1)
    if i < out.shape[0]:
        out[i] = x[i] * SCALE + OFFSET
'''

USER_REPLY = """```cuda
constexpr double SCALE = 2.5;
constexpr int64_t OFFSET = 3;

__global__ void scale_add(const float* x, int64_t x_shape0, float* out, int64_t out_shape0)
{
    int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < out_shape0) {
        out[i] = (float)((double)x[i] * SCALE + (double)OFFSET);
    }
}
```"""


def test_a_user_kernel_with_module_constants(tmp_path, llm_env):
    source = tmp_path / "user_kernels.py"
    source.write_text(USER_KERNEL)
    # a project: --check imports a file's kernel only when it is one of the project's kernel modules
    (tmp_path / "pyproject.toml").write_text('[tool.numbakern]\nkernels = ["user_kernels"]\n')
    target, signature, out = f"{source}:scale_add", "void(float32[::1], float32[::1])", tmp_path / "gen"
    ast = api.translate_kernel(target, signature=signature, out_dir=str(out))
    assert ast.entry["depends"] == {"device_functions": [], "constants": {"SCALE": 2.5, "OFFSET": 3}}
    manifest.set_verification(str(out), "scale_add.cu", {"ok": True, "device": "scripted",
                                                         "file_sha256": ast.entry["file_sha256"]})
    llm_env.script(completion(USER_REPLY))
    with pytest.raises(TranslationError, match="was verified on a GPU"):
        api.translate_kernel(target, signature=signature, backend="llm", out_dir=str(out), backend_options=LLM)
    prompt = llm_env.requests[-1].messages[1]["content"]
    assert "- `SCALE` = 2.5 (float64)" in prompt and "- `OFFSET` = 3 (int64)" in prompt

    llm_env.script(completion(USER_REPLY))
    llm = api.translate_kernel(target, signature=signature, backend="llm", out_dir=str(out),
                                    backend_options=LLM, force=True)
    assert llm.entry["source_sha256"] == ast.entry["source_sha256"] and llm.entry["depends"] == ast.entry["depends"]
    # a model's file cannot be derived again: only a claim (issue 38); a changed constant makes it stale all the same
    assert [p["problem"] for p in check(str(out), registry=False, project_dir=str(tmp_path))] == ["unverifiable"]
    source.write_text(USER_KERNEL.replace("SCALE = 2.5", "SCALE = 4.0"))
    assert [p["problem"] for p in check(str(out), registry=False, project_dir=str(tmp_path))] == ["stale"]
