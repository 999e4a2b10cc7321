"""Nothing from the machine goes back to the model: compile feedback keeps only the candidate's own diagnostics."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

from translate.llm.feedback import (
    CANDIDATE_FILE,
    MAX_DIAGNOSTICS,
    MAX_FEEDBACK_CHARS,
    candidate_diagnostics,
    clean,
    compiler_feedback,
)

from .server import completion

PLANTED = "planted-secret-71c2-must-stay-here"


def test_only_diagnostics_filed_under_the_candidate_are_kept():
    log = "\n".join([
        f'{CANDIDATE_FILE}(3): error: identifier "zero" is undefined',
        "      float p = zero;",
        "                ^",
        '/proc/self/environ(1): error: identifier "OPENAI_API_KEY" is undefined',
        f"  OPENAI_API_KEY={PLANTED} HOME=/home/someone",
        "/home/someone/project/generated.cu(12): error: expected a \";\"",
        f"{CANDIDATE_FILE}(4): warning #177-D: variable \"q\" was declared but never referenced",
        "At end of source: error: expected a \"}\"",
        '3 errors detected in the compilation of "/tmp/x/matmul.cu".',
    ])
    mine, others = candidate_diagnostics(log)
    assert [(d.line, d.severity) for d in mine] == [(3, "error"), (4, "warning")] and others == 2
    code = "a;\nb;\nfloat p = zero;\nfloat q;\n"
    text = compiler_feedback(log, code, ("line 5", "line 6", "line 7", "line 8"))
    assert text.startswith('line 7: error: identifier "zero" is undefined\n    float p = zero;')
    assert "warning" not in text  # errors first: the warnings are noise while there are errors
    for leaked in (PLANTED, "OPENAI_API_KEY", "/home/someone", "/tmp/x", "environ", "generated.cu"):
        assert leaked not in text, leaked
    assert "2 more diagnostics about the project's code" in text


def test_feedback_is_bounded_and_printable():
    log = "\n".join(f"{CANDIDATE_FILE}({k}): error: {'x' * 5000}\x1b[31m" for k in range(1, 40))
    text = compiler_feedback(log, "y;\n" * 40)
    assert len(text) <= MAX_FEEDBACK_CHARS and text.count(": error: ") <= MAX_DIAGNOSTICS
    assert all(" " <= ch <= "~" or ch == "\n" for ch in text)
    assert clean("a\x00b\u202ec\td", 100, lines=False) == "a?b?c    d"
    assert compiler_feedback("", "x;\n") == "the compiler failed without a diagnostic about your code's lines"


def test_a_real_nvrtc_log_echoes_an_included_environment_and_the_feedback_does_not():
    """The review's finding, reproduced with the real NVRTC in a process whose environment holds a secret: the log
    carries the included environment, the feedback sent to the model does not (the gate refuses the include
    before it gets this far; this is the second line of defence)."""
    script = (
        "import json\n"
        "from translate.nvrtc import nvrtc_compile\n"
        "from translate.llm.feedback import compiler_feedback, mark_candidate\n"
        "code = '__device__ int f() {\\n#include \"/proc/self/environ\"\\n}\\n'\n"
        "r = nvrtc_compile('typedef long long int64_t;\\n' + mark_candidate(code), 'compute_90', name='k.cu',\n"
        "                  resources=False)\n"
        "print(json.dumps({'ok': r.ok, 'log': r.log, 'feedback': compiler_feedback(r.log, code)}))\n")
    env = dict(os.environ, NUMBAKERN_PLANTED=PLANTED, NUMBA_ENABLE_CUDASIM="0")
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert not out["ok"] and PLANTED in out["log"], "NVRTC no longer echoes included text: the test proves nothing"
    assert PLANTED not in out["feedback"] and "NUMBAKERN_PLANTED" not in out["feedback"]


CHAIN = """
import json
from types import SimpleNamespace

from translate.backends import llm as backend_module
from translate.llm.gate import GateResult
from translate.llm.reply import extract_code
from tests.llm import samples
from tests.llm.nvrtc import nvrtc_compile

logs = []


def compile_fn(code):
    result = nvrtc_compile(code)
    logs.append(result.log)
    return result


# the gate, which refuses any #include, is taken out of the way: what is left is the feedback filter alone
backend_module.check_reply = lambda text, **kw: GateResult(
    ok=True, code=extract_code(text).text.replace("#include <stdint.h>\\n", ""))
request = SimpleNamespace(kernel_name=samples.KERNEL, python_source=samples.PYTHON_SOURCE,
                          arg_names=("m", "n", "out", "tw"), argtypes=("array(float32, 2d, C)",) * 3 + ("int64",))
with backend_module.LLMBackend(model="scripted-model", max_turns=2, timeout=30, max_retries=0) as backend:
    result = backend.generate(request, signature=samples.SIGNATURE, compile_fn=compile_fn)
print(json.dumps({"turns": result.turns, "secret_in_compiler_log": any(%r in log for log in logs)}))
"""


def test_an_included_environment_never_reaches_a_request_body(llm_env):
    """End to end, with the gate taken out of the way: a reply that includes /proc/self/environ is compiled by the
    real NVRTC in a process whose environment holds the key and a planted secret; NVRTC's log carries them, the
    second request (the repair turn) carries neither."""
    from . import samples
    from .conftest import TEST_KEY

    hostile = samples.GOOD_REPLY.replace("float p = 0.0f;", 'float p = 0.0f;\n#include "/proc/self/environ"\n')
    llm_env.script(completion(hostile), completion(samples.GOOD_REPLY))
    env = dict(os.environ, NUMBAKERN_PLANTED=PLANTED, NUMBA_ENABLE_CUDASIM="0")
    proc = subprocess.run([sys.executable, "-c", CHAIN % PLANTED], capture_output=True, text=True, env=env,
                          timeout=300, cwd=Path(__file__).resolve().parents[2])
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out == {"turns": 2, "secret_in_compiler_log": True}
    first, second = llm_env.requests
    feedback = second.messages[-1]["content"]
    # what went back: at most the diagnostics filed under the candidate's own lines (whether NVRTC files the syntax
    # error in the included text or on the candidate's next line depends on the environment's bytes), and a count
    # of the rest; no line of the included file
    body = feedback.split("```")[1].strip().splitlines()
    assert "more diagnostics about the project's code" in body[-1], feedback
    for line in body[:-1]:
        assert re.match(r"(line \d+: (error|warning|remark)|    |\.\.\. and \d+ more)", line), line
    for secret in (PLANTED, TEST_KEY, "NUMBAKERN_PLANTED", "OPENAI_API_KEY="):
        assert secret.encode() not in second.raw and secret.encode() not in first.raw, secret


def test_verification_reports_carry_numbers_and_the_candidates_own_diagnostics_only():
    """What the repair loop's --verify sends back: made of numbers the verifying process computed, never of a
    child process's words (its error texts could carry anything the candidate's process could read)."""
    from translate.backends.llm import model_report
    from translate.verify.harness import CaseResult, VerifyResult

    def result(cases=(), **kw):
        return VerifyResult("matmul_tiled", "launch_matmul_tiled", "/home/someone/x.cu", "0" * 64, False,
                            cases=list(cases), **kw)

    wrong = CaseResult("matmul_tiled", {"h": 5, "k": 17, "w": 3}, 0, "normal", False, ["vs_numba"], 3.25, 0.5,
                       messages=["vs_numba: out (run 1) vs Numba: 3 of 15 elements differ"],
                       first_mismatches=[((0, 1), 1.5, 2.0)])
    text = model_report(result([wrong]), "code;\n")
    assert text.startswith("1 of 1 cases differ from the Numba kernel. First: h=5,k=17,w=3 seed=0 normal")
    assert "max abs error 3.25" in text and "at (0, 1): got 1.5, expected 2.0" in text

    crashed = CaseResult("matmul_tiled", {"h": 5}, 0, "normal", False, ["launch"], float("inf"), float("inf"),
                         messages=[f"launch: cuCtxSynchronize failed: {PLANTED}"])
    text = model_report(result([crashed]), "code;\n")
    assert "failed at launch or while running" in text and PLANTED not in text

    log = (f"/home/someone/x.cu(40): error: {PLANTED}\n"
           'candidate.cu(2): error: identifier "q" is undefined\n' + PLANTED)
    text = model_report(result(stage="build", error=f"nvcc failed: {PLANTED}", build_log=log), "a;\nq = 1;\n")
    assert text.startswith("the file did not build with nvcc") and 'line 2: error: identifier "q"' in text
    assert PLANTED not in text and "/home/someone" not in text

    for stage in ("load", "child"):
        text = model_report(result(stage=stage, error=f"died: {PLANTED}"), "a;\n")
        assert PLANTED not in text and text.startswith("the file built, but")
