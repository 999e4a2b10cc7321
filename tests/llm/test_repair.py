"""The repair loop over real HTTP: gate and compiler failures go back to the model, at most max_turns rounds."""

from __future__ import annotations

import pytest

from translate.llm.client import ChatClient, LLMError
from translate.llm.gate import check_reply
from translate.llm.prompt import build_messages
from translate.llm.repair import CompileOutcome, RepairFailed, run_repair_loop

from . import samples
from .conftest import TEST_KEY
from .server import completion, error


def fake_compile(code: str) -> CompileOutcome:
    """Stands in for NVRTC (the backend tests use the real one): 'zero' is the undeclared identifier. The log has
    what a real one can have: a diagnostic about the candidate's line, its echo and caret, and diagnostics about
    the project's code and about an included file, with that file's text."""
    if "zero" in code:
        line = 1 + next(k for k, text in enumerate(code.splitlines()) if "zero" in text)
        log = (f'candidate.cu({line}): error: identifier "zero" is undefined\n      float p = zero;\n        ^\n\n'
               f'/proc/self/environ(1): error: unrecognized token\n  OPENAI_API_KEY={TEST_KEY} HOME=/home/user\n'
               'matmul_tiled.cu(120): error: expected a ";"\n3 errors detected in the compilation of "x.cu".')
        return CompileOutcome(False, log)
    return CompileOutcome(True, "", {"registers": 32})


def gate(text):
    return check_reply(text, kernel_name=samples.KERNEL, expected_signature=samples.SIGNATURE)


def run(server, *, verify=None, max_turns=3, compile_fn=fake_compile):
    with ChatClient(model="scripted-model", timeout=2.0, max_retries=1) as c:
        return run_repair_loop(c.chat, build_messages(samples.spec()), gate=gate, compile_fn=compile_fn,
                               verify=verify, max_turns=max_turns)


def test_first_reply_accepted(no_key_leak, llm_env):
    llm_env.script(completion(samples.GOOD_REPLY, prompt_tokens=900, completion_tokens=400))
    result = run(llm_env)
    assert result.turns == 1 and result.verified is None
    assert result.usage.as_dict() == {"prompt_tokens": 900, "completion_tokens": 400, "total_tokens": 1300}
    assert result.compile_info == {"registers": 32}
    assert result.device_code.startswith("__global__ void matmul_tiled(")
    assert len(llm_env.requests) == 1


def test_compile_error_sent_back_then_repaired(no_key_leak, llm_env):
    llm_env.script(completion(samples.BROKEN_REPLY), completion(samples.GOOD_REPLY))
    result = run(llm_env)
    assert result.turns == 2 and [a.stage for a in result.attempts] == ["compile", "ok"]
    assert result.usage.total_tokens == 300
    second = llm_env.requests[1].messages
    assert second[-2] == {"role": "assistant", "content": samples.BROKEN_REPLY}
    feedback = second[-1]["content"]
    assert second[-1]["role"] == "user" and 'line 16: error: identifier "zero" is undefined' in feedback
    assert "    float p = zero;" in feedback  # the line of the code block, and the candidate's own text of it
    # nothing about other files: no included text, no project code, no paths; only their count
    assert "OPENAI_API_KEY" not in feedback and "/proc" not in feedback and "HOME=" not in feedback
    assert "matmul_tiled.cu" not in feedback and "2 more diagnostics about the project's code" in feedback


def test_gate_rejection_sent_back_then_repaired(no_key_leak, llm_env):
    llm_env.script(completion(samples.ASM_REPLY), completion(samples.GOOD_REPLY))
    result = run(llm_env)
    assert [a.stage for a in result.attempts] == ["gate", "ok"]
    assert "inline assembly" in llm_env.requests[1].messages[-1]["content"]
    assert "'asm'" in llm_env.requests[1].messages[-1]["content"]


def test_verification_report_sent_back(no_key_leak, llm_env):
    llm_env.script(completion(samples.GOOD_REPLY), completion(samples.GOOD_REPLY.replace("p += ", "p -= ")))
    reports = iter([{"case": "h=33 k=70 w=45 uniform", "max_abs_error": 12.5, "first_mismatches": [(0, 0), (0, 1)]},
                    None])
    result = run(llm_env, verify=lambda code: next(reports))
    assert result.turns == 2 and result.verified is True
    sent = llm_env.requests[1].messages[-1]["content"]
    assert "h=33 k=70 w=45" in sent and "12.5" in sent and "(0, 0), (0, 1)" in sent


@pytest.mark.parametrize("replies, stage_words", [
    ([samples.BROKEN_REPLY] * 3, "did not compile"),
    ([samples.ASM_REPLY] * 3, "inline assembly"),
    ([samples.WRONG_SIGNATURE_REPLY] * 3, "signature does not match"),
    ([samples.INCLUDE_REPLY] * 3, "'#include <stdio.h>'"),
    ([samples.HOST_REPLY] * 3, "cudaMalloc"),
])
def test_gives_up_after_max_turns(no_key_leak, llm_env, replies, stage_words):
    llm_env.script(*[completion(r) for r in replies])
    with pytest.raises(RepairFailed) as info:
        run(llm_env)
    msg = str(info.value)
    assert "no acceptable kernel in 3 turns" in msg and stage_words in msg
    assert info.value.turns == 3 and info.value.usage.total_tokens == 450
    assert len(llm_env.requests) == 3


def test_max_turns_one_stops_at_the_first_rejection(no_key_leak, llm_env):
    llm_env.script(completion(samples.WRONG_SIGNATURE_REPLY))
    with pytest.raises(RepairFailed, match="in 1 turn "):
        run(llm_env, max_turns=1)
    assert len(llm_env.requests) == 1


def test_endpoint_failure_mid_loop_is_an_error(no_key_leak, llm_env):
    llm_env.script(completion(samples.BROKEN_REPLY), error(500, "down"), error(500, "down"))
    with pytest.raises(LLMError, match=r"HTTP 500: down \(turn 2 of 3\)"):
        run(llm_env)


def test_an_exception_while_compiling_stops_the_loop_without_asking_again(no_key_leak, llm_env):
    """An exception is the machinery's (the sandbox cannot run, a limit cannot be set), not a verdict on the reply:
    no turn could do better, so the model is not asked again and the error names it (issue 38)."""
    llm_env.script(completion(samples.GOOD_REPLY), completion(samples.GOOD_REPLY))

    def broken(code):
        raise RuntimeError("the sandbox cannot start here")

    with pytest.raises(RepairFailed, match=r"compiling the reply of turn 1 could not run \(RuntimeError: the sandbox "
                                           r"cannot start here\); this is not about the reply"):
        run(llm_env, compile_fn=broken)
    assert len(llm_env.requests) == 1


def test_a_turn_deadline_covers_the_request_and_the_compile(no_key_leak, llm_env):
    """With ``turn_seconds`` the compile gets what the request left of the turn; a compile stopped at a limit goes
    back to the model as that one line and advice, never as compiler output."""
    from .server import Scripted

    llm_env.script(Scripted(200, completion(samples.GOOD_REPLY).body, delay=0.5), completion(samples.GOOD_REPLY))
    given = []

    def stalls_once(code: str, seconds: float | None = None) -> CompileOutcome:
        given.append(seconds)
        if len(given) == 1:
            return CompileOutcome(False, "", stopped=f"NVRTC was stopped: killed after the {seconds:.0f} s limit")
        return CompileOutcome(True, "")

    with ChatClient(model="scripted-model", timeout=5.0, max_retries=0) as c:
        result = run_repair_loop(c.chat, build_messages(samples.spec()), gate=gate, compile_fn=stalls_once,
                                 max_turns=2, turn_seconds=5.0)
    assert result.turns == 2 and [a.stage for a in result.attempts] == ["compile", "ok"]
    assert 1.0 < given[0] < 4.6 and given[1] > given[0]  # the first request took half a second of the turn
    told = llm_env.requests[1].messages[-1]["content"]
    assert "NVRTC was stopped" in told and "template instantiation" in told
