"""The repair loop: ask, gate, compile, verify; feed each failure back to the model; at most ``max_turns`` rounds.

Compilation and verification are injected, so the loop knows nothing of NVRTC or GPUs:

- ``compile_fn(device_code)`` builds the device code as the project will ship it (the emitter's includes, helpers
  and launchers around it, the code behind ``feedback.mark_candidate``'s ``#line`` marker). It returns an object
  with ``ok`` and ``log`` (and anything else, kept as ``info``; ``stopped``: why a compile was cut off at a limit).
  An exception is not a verdict on the reply (the sandbox cannot run, a limit cannot be set): the loop stops at once
  with ``RepairFailed`` naming it, and the model is not asked again. With ``turn_seconds`` the loop calls
  ``compile_fn(device_code, seconds=...)``: what is left of the turn's deadline after the request, so that a turn
  (request and compile) ends within ``turn_seconds``.
- ``verify(device_code)`` (optional, with ``--verify`` on a GPU) returns ``None`` when the outputs match, else a
  report (text, mapping or object: case, max error, first differing indices), which is sent back to the model.

Nothing from the machine goes back to the model: of a compiler log only the diagnostics about the candidate's own
lines (``translate.llm.feedback``), and every message is cut to printable ASCII and a bounded length. The result
says whether the code passed everything asked of it; nothing is written here.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from . import feedback
from . import prompt as prompts
from .client import LLMError, Reply, Usage
from .gate import GateResult

DEFAULT_MAX_TURNS = 3


@dataclass(frozen=True)
class Attempt:
    turn: int
    stage: str  # "gate" | "compile" | "verify" | "ok"
    detail: str = ""  # the reason, compiler log or verification report


@dataclass
class RepairResult:
    device_code: str
    turns: int
    usage: Usage
    attempts: list[Attempt]
    compile_info: Any = None
    verified: bool | None = None  # None: verification was not asked for
    messages: list[dict[str, str]] = field(default_factory=list)  # the conversation, for --debug output


class RepairFailed(LLMError):
    """No reply passed within the turn budget; ``attempts`` says what went wrong each round."""

    def __init__(self, message: str, attempts: list[Attempt], turns: int, usage: Usage):
        super().__init__(message)
        self.attempts, self.turns, self.usage = attempts, turns, usage


@dataclass(frozen=True)
class CompileOutcome:
    ok: bool
    log: str = ""
    info: Any = None
    stopped: str = ""  # why the compile was cut off at a limit (time, memory), one line; "" when it finished


def run_repair_loop(
    chat: Callable[[Sequence[Mapping[str, str]]], Reply],
    messages: Sequence[Mapping[str, str]],
    *,
    gate: Callable[[str], GateResult],
    compile_fn: Callable[[str], Any],
    verify: Callable[[str], Any] | None = None,
    max_turns: int = DEFAULT_MAX_TURNS,
    on_turn: Callable[[Attempt], None] | None = None,
    turn_seconds: float | None = None,
) -> RepairResult:
    """Run up to ``max_turns`` request/check rounds; return the first reply that passes, else raise
    ``RepairFailed``. ``LLMError`` from ``chat`` (endpoint trouble) propagates at once. ``turn_seconds``: the
    deadline of a turn's request and compile together (``compile_fn`` gets what the request left)."""
    if max_turns < 1:
        raise ValueError(f"max_turns must be at least 1, got {max_turns}")
    conversation = [dict(m) for m in messages]
    usage = Usage()
    attempts: list[Attempt] = []

    def record(a: Attempt) -> None:
        attempts.append(a)
        if on_turn is not None:
            on_turn(a)

    for turn in range(1, max_turns + 1):
        started = time.monotonic()
        try:
            reply = chat(conversation)
        except LLMError as e:
            raise RepairFailed(f"{e} (turn {turn} of {max_turns})", attempts, turn, usage) from None
        usage = usage + reply.usage
        conversation.append({"role": "assistant", "content": reply.content})

        checked = gate(reply.content)
        if not checked.ok:
            reason = feedback.clean(checked.reason, feedback.MAX_FEEDBACK_CHARS)
            if reply.finish_reason == "length":
                reason += " (the reply was cut off at the server's token limit)"
            record(Attempt(turn, "gate", reason))
            conversation.append({"role": "user", "content": prompts.gate_feedback(reason)})
            continue

        left = None if turn_seconds is None else turn_seconds - (time.monotonic() - started)
        try:
            outcome = _compile(compile_fn, checked.code, left)
        except LLMError:
            raise
        except Exception as e:  # noqa: BLE001 - the machinery, not the reply: no turn can do better
            raise RepairFailed(f"compiling the reply of turn {turn} could not run ({type(e).__name__}: {e}); "
                               "this is not about the reply, so the model was not asked again", attempts, turn,
                               usage) from None
        if not outcome.ok:
            diagnostics = (feedback.clean(f"{outcome.stopped}. {STOPPED_ADVICE}", feedback.MAX_FEEDBACK_CHARS)
                           if outcome.stopped else
                           feedback.compiler_feedback(outcome.log, checked.code, checked.origin))
            record(Attempt(turn, "compile", diagnostics))
            conversation.append({"role": "user", "content": prompts.compile_feedback(diagnostics)})
            continue

        verified = None
        if verify is not None:
            report = verify(checked.code)
            if report is not None:
                text = feedback.clean(prompts.format_verify_report(report), feedback.MAX_FEEDBACK_CHARS)
                record(Attempt(turn, "verify", text))
                conversation.append({"role": "user", "content": prompts.verify_feedback(text)})
                continue
            verified = True

        record(Attempt(turn, "ok"))
        return RepairResult(checked.code, turn, usage, attempts, outcome.info, verified, conversation)

    raise RepairFailed(_failure_message(attempts, max_turns), attempts, max_turns, usage)


#: what the model is told when its code made the compiler run into a limit
STOPPED_ADVICE = ("The code makes the compiler work without end (deep or exponential template instantiation, a huge "
                  "array initialiser, a huge unroll count); write it so that it compiles in a second or two")


def _compile(compile_fn: Callable[..., Any], code: str, seconds: float | None) -> CompileOutcome:
    result = compile_fn(code) if seconds is None else compile_fn(code, seconds=seconds)
    if isinstance(result, CompileOutcome):
        return result
    ok = bool(getattr(result, "ok", True))
    log = getattr(result, "log", "") or ""
    return CompileOutcome(ok, str(log), result, str(getattr(result, "stopped", "") or ""))


_STAGE_WORDS = {"gate": "rejected by the static gate", "compile": "did not compile", "verify": "failed verification"}


def describe(attempt: Attempt) -> str:
    """One line for one turn: ``turn 1: rejected by the static gate: <the reason's first line> (+3 more lines)``."""
    if attempt.stage == "ok":
        return f"turn {attempt.turn}: accepted"
    detail = attempt.detail.strip().splitlines()
    first = detail[0] if detail else ""
    more = f" (+{len(detail) - 1} more lines)" if len(detail) > 1 else ""
    return f"turn {attempt.turn}: {_STAGE_WORDS.get(attempt.stage, attempt.stage)}: {first}{more}"


def _failure_message(attempts: list[Attempt], max_turns: int) -> str:
    lines = [f"the model produced no acceptable kernel in {max_turns} turn{'s' if max_turns != 1 else ''} "
             "(raise --max-turns, or try another model):"]
    lines += [f"  {describe(a)}" for a in attempts]
    return "\n".join(lines)
