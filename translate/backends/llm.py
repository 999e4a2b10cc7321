"""Backend ``llm``: device code from a model behind any OpenAI-compatible endpoint, gated, compiled and (with
``--verify``) verified before it is accepted.

The pipeline's interface is ``generate(request, checks) -> DeviceCode``: the backend is made from
``request.options.backend_options`` (model, base_url, max_turns, timeout, max_retries; the key comes from the
environment only), and every candidate reply is compiled, and with ``--verify`` verified, through the pipeline's
``checks`` (``translate.backends``), never by importing the later stages. ``LLMBackend`` is the backend itself:

    backend = LLMBackend(model="gpt-4.1", base_url=None, max_turns=3)
    result = backend.generate(
        request,                       # the KernelRequest (source, Numba types, constants, ...)
        signature=...,                 # the emitter's exact __global__ declaration (with template<...> if any)
        compile_fn=...,                # device code -> NVRTC result with .ok/.log (emitter's file around it)
        verify=None,                   # --verify on a GPU: device code -> None if outputs match, else a report
        launcher=...,                  # optional: the launcher C text, shown to the model for context
    )
    result.device_code                 # goes to the emitter, like the ast backend's
    result.helpers                     # the project helpers the code calls (the emitter must include them)
    result.backend                     # {"name": "llm", "tool_version", "model", "endpoint_host", "turns", "usage"}

``generate`` raises ``LLMError`` (endpoint trouble, or no acceptable reply in ``max_turns``); nothing is written
by the backend, so a failure can never replace a file. The API key is never part of any result.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from importlib.metadata import PackageNotFoundError, version
from typing import TYPE_CHECKING, Any

from ..llm import helpers as project_helpers
from ..llm.client import DEFAULT_MAX_RETRIES, DEFAULT_TIMEOUT, ChatClient, LLMError, Usage
from ..llm.feedback import compiler_feedback, mark_candidate
from ..llm.gate import check_reply
from ..llm.prompt import build_messages
from ..llm.repair import DEFAULT_MAX_TURNS, Attempt, RepairResult, run_repair_loop
from ..llm.request import kernel_name, spec_from_request
from ..request import DeviceCode, KernelRequest, kernel_declaration
from . import CandidateChecks, CompileReport

if TYPE_CHECKING:  # the result type only: the backend reads verification results, the pipeline runs verification
    from ..verify.harness import VerifyResult

__all__ = ["LLMBackend", "LLMResult", "LLMError", "NAME", "VERSION", "generate", "observe_turns", "prompt_messages",
           "tool_version"]


def tool_version() -> str:
    try:
        return version("numbakern")
    except PackageNotFoundError:  # running from a source tree that was never installed
        return "0.0.0"


@dataclass
class LLMResult:
    device_code: str
    helpers: set[str]
    backend: dict[str, Any]  # the manifest's "backend" record
    verified: bool | None
    compile_info: CompileReport | None = None
    turns: int = 0
    usage: Usage = field(default_factory=Usage)
    messages: list[dict[str, str]] = field(default_factory=list)


class LLMBackend:
    name = "llm"

    def __init__(self, *, model: str, base_url: str | None = None, max_turns: int = DEFAULT_MAX_TURNS,
                 timeout: float = DEFAULT_TIMEOUT, max_retries: int = DEFAULT_MAX_RETRIES,
                 allow_printf: bool = False, temperature: float | None = 0.0,
                 environ: Mapping[str, str] | None = None, on_turn: Callable[[Attempt], None] | None = None):
        if max_turns < 1:
            raise LLMError(f"--max-turns must be at least 1, got {max_turns}")
        self.model = model
        self.max_turns = max_turns
        self.allow_printf = allow_printf
        self.on_turn = on_turn
        # the client checks model, endpoint and key now: a missing key fails before any work or request
        self.client = ChatClient(model=model, base_url=base_url, timeout=timeout, max_retries=max_retries,
                                 temperature=temperature, environ=environ)

    @property
    def endpoint_host(self) -> str:
        return self.client.endpoint_host

    def __repr__(self) -> str:
        return f"LLMBackend(model={self.model!r}, endpoint_host={self.endpoint_host!r}, max_turns={self.max_turns})"

    def close(self) -> None:
        self.client.close()

    def __enter__(self) -> LLMBackend:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def generate(self, request: KernelRequest, *, signature: str, compile_fn: Callable[..., CompileReport],
                 verify: Callable[[str], str | None] | None = None, launcher: str | None = None,
                 turn_seconds: float | None = None) -> LLMResult:
        messages = prompt_messages(request, signature=signature, launcher=launcher, allow_printf=self.allow_printf)
        name = kernel_name(request)
        # an endpoint that takes no connection fails here, in one line, not after the client's retries back off
        self.client.probe()
        reserved = project_helpers.reserved_names()

        def gate(text: str):
            return check_reply(text, kernel_name=name, expected_signature=signature,
                               allow_printf=self.allow_printf, reserved_names=reserved)

        result: RepairResult = run_repair_loop(
            self.client.chat, messages, gate=gate, compile_fn=compile_fn, verify=verify,
            max_turns=self.max_turns, on_turn=self.on_turn, turn_seconds=turn_seconds,
        )
        return LLMResult(
            device_code=result.device_code,
            helpers=project_helpers.used_helpers(result.device_code),
            backend=self.manifest_record(result.turns, result.usage, result.attempts),
            verified=result.verified,
            compile_info=result.compile_info,
            turns=result.turns,
            usage=result.usage,
            messages=result.messages,
        )

    def manifest_record(self, turns: int, usage: Usage, attempts: list[Attempt] = ()) -> dict[str, Any]:
        """The manifest entry's ``backend`` value: model and endpoint host, never the key or the URL path; how each
        turn ended (``gate``, ``compile``, ``verify``: the reply was rejected there; ``ok``), never the reply."""
        return {"name": self.name, "tool_version": tool_version(), "model": self.model,
                "endpoint_host": self.endpoint_host, "turns": turns, "usage": usage.as_dict(),
                "turn_outcomes": [a.stage for a in attempts]}


def prompt_messages(request: KernelRequest, *, signature: str | None = None, launcher: str | None = None,
                    allow_printf: bool = False) -> list[dict[str, str]]:
    """The messages the backend sends first for ``request`` (``translate --show-prompt`` prints them)."""
    spec = spec_from_request(request, signature=signature or expected_signature(request), launcher=launcher,
                             helpers=project_helpers.offered(), allow_printf=allow_printf)
    return build_messages(spec)


#: who hears of each turn as it ends (the translate command, which says on the terminal what happened)
_turn_listeners: list[Callable[[str, Attempt], None]] = []


@contextmanager
def observe_turns(listener: Callable[[str, Attempt], None]) -> Iterator[None]:
    """Within the block, ``listener(kernel name, attempt)`` is called after each turn of every translation with this
    backend in this process (a translation in a helper process reports its turns in the manifest record only)."""
    _turn_listeners.append(listener)
    try:
        yield
    finally:
        _turn_listeners.remove(listener)


def _tell_listeners(name: str, attempt: Attempt) -> None:
    for listener in list(_turn_listeners):
        listener(name, attempt)


# ---------------------------------------------------------------------------------------------------------------
# the pipeline's backend interface (translate/backends/__init__.py)

NAME = "llm"
VERSION = tool_version()
#: the model's code is compiled in a sandboxed child (translate.verify.sandboxed_compile), never in this process
TRUSTED = False


def generate(request: KernelRequest, checks: CandidateChecks) -> DeviceCode:
    """``DeviceCode`` for ``request`` from the model made of ``request.options.backend_options``; ``LLMError`` if no
    reply passes in ``max_turns``. Each reply that passes the gate is compiled through ``checks``, and verified
    through them when they verify (``--verify``)."""
    options = dict(request.options.backend_options)
    if not options.get("model"):
        raise LLMError("the llm backend needs a model: pass --model NAME (and --base-url or OPENAI_BASE_URL)")

    def compile_fn(code: str, seconds: float | None = None) -> CompileReport:
        return checks.compile(candidate(code), seconds=seconds)

    def verify(code: str) -> str | None:
        # the smallest sizes with one seed gate each repair turn; a reply that passes them is verified on every
        # size and seed before it can be written (a kernel wrong only on large inputs is caught before the write)
        result = checks.verify(candidate(code), quick=True)
        if result.ok:
            result = checks.verify(candidate(code))
        return None if result.ok else model_report(result, code)

    checks.ready()  # a run that could only fail sends nothing to the model
    name = kernel_name(request)
    with LLMBackend(**options, on_turn=lambda attempt: _tell_listeners(name, attempt)) as backend:
        # --timeout bounds a turn's request and the compile of its reply together
        result = backend.generate(request, signature=expected_signature(request), compile_fn=compile_fn,
                                  verify=verify if checks.verifies else None, turn_seconds=backend.client.timeout)
    notes = {k: v for k, v in result.backend.items() if k not in ("name", "tool_version")}
    return DeviceCode(code=result.device_code, helpers=tuple(sorted(result.helpers)), notes=notes)


def candidate(code: str) -> DeviceCode:
    """A reply's checked code as the device code of a candidate file: behind a ``#line`` marker, so that the repair
    loop can tell the compiler's diagnostics about the candidate's own lines from the rest of the file."""
    return DeviceCode(code=mark_candidate(code), helpers=tuple(sorted(project_helpers.used_helpers(code))))


def expected_signature(request: KernelRequest) -> str:
    """The emitter's kernel declaration for ``request`` (with its ``template <int ...>`` line), on one line."""
    decl = " ".join(kernel_declaration(request).split())
    if request.template_params:
        decl = "template <" + ", ".join(f"int {t}" for t in request.template_params) + "> " + decl
    return decl


#: what the model is told when verification stopped before comparing anything (never the child's own words)
_STAGE_REPORTS = {
    "load": "the file built, but its library did not load or has no launcher symbol",
    "child": "the file built, but running it did not finish within the limits (a hang or a crash of the process)",
}


def model_report(result: VerifyResult, code: str) -> str:
    """A failed ``VerifyResult`` as the model may see it: the case, the checks that failed, errors and first
    differing elements (numbers this process computed), or the build's diagnostics about the candidate's lines."""
    if result.stage == "build":
        return "the file did not build with nvcc:\n" + compiler_feedback(result.build_log, code)
    if result.stage:
        return _STAGE_REPORTS.get(result.stage, "verification could not run the file")
    bad = next(c for c in result.cases if not c.ok)
    if "launch" in bad.failed:
        return (f"{result.n_failed} of {len(result.cases)} cases failed. First: {bad.label}: the kernel failed at "
                "launch or while running (an out-of-bounds or misaligned access, or more resources than a block has)")
    first = "; ".join(f"at {tuple(int(j) for j in idx)}: got {float(got)!r}, expected {float(want)!r}"
                      for idx, got, want in bad.first_mismatches[:3])
    checks = [m for m in bad.messages if m.split(":", 1)[0] in ("vs_numba", "vs_numpy", "inputs", "repeat")]
    return (f"{result.n_failed} of {len(result.cases)} cases differ from the Numba kernel. First: {bad.label}: "
            f"failed {', '.join(bad.failed)}; max abs error {bad.max_abs_error:.3g}, max rel error "
            f"{bad.max_rel_error:.3g}; {first or '; '.join(checks[:2])}")
