"""Backend ``llm``: device code from a model behind any OpenAI-compatible endpoint, gated, compiled and (with
``--verify``) verified by the project before it is accepted.

The pipeline gives the backend what only the translator knows, and the backend gives back device code plus the
manifest's ``backend`` record:

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

from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

from translate.llm import helpers as project_helpers
from translate.llm.client import DEFAULT_MAX_RETRIES, DEFAULT_TIMEOUT, ChatClient, LLMError, Usage
from translate.llm.feedback import compiler_feedback, mark_candidate
from translate.llm.gate import check_reply
from translate.llm.prompt import build_messages
from translate.llm.repair import DEFAULT_MAX_TURNS, Attempt, RepairResult, run_repair_loop
from translate.llm.request import kernel_name, spec_from_request

__all__ = ["LLMBackend", "LLMResult", "LLMError", "NAME", "VERSION", "configure", "generate", "tool_version"]


def tool_version() -> str:
    try:
        from importlib.metadata import version

        return version("numbakern")
    except Exception:
        return "0.0.0"


@dataclass
class LLMResult:
    device_code: str
    helpers: set[str]
    backend: dict[str, Any]  # the manifest's "backend" record
    verified: bool | None
    compile_info: Any = None
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

    def __enter__(self) -> "LLMBackend":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def generate(self, request: Any, *, signature: str, compile_fn: Callable[[str], Any],
                 verify: Callable[[str], Any] | None = None, launcher: str | None = None) -> LLMResult:
        spec = spec_from_request(request, signature=signature, launcher=launcher,
                                 helpers=project_helpers.offered(), allow_printf=self.allow_printf)
        name = kernel_name(request)
        reserved = project_helpers.reserved_names()

        def gate(text: str):
            return check_reply(text, kernel_name=name, expected_signature=signature,
                               allow_printf=self.allow_printf, reserved_names=reserved)

        result: RepairResult = run_repair_loop(
            self.client.chat, build_messages(spec), gate=gate, compile_fn=compile_fn, verify=verify,
            max_turns=self.max_turns, on_turn=self.on_turn,
        )
        return LLMResult(
            device_code=result.device_code,
            helpers=project_helpers.used_helpers(result.device_code),
            backend=self.manifest_record(result.turns, result.usage),
            verified=result.verified,
            compile_info=result.compile_info,
            turns=result.turns,
            usage=result.usage,
            messages=result.messages,
        )

    def manifest_record(self, turns: int, usage: Usage) -> dict[str, Any]:
        """The manifest entry's ``backend`` value: model and endpoint host, never the key or the URL path."""
        return {"name": self.name, "tool_version": tool_version(), "model": self.model,
                "endpoint_host": self.endpoint_host, "turns": turns, "usage": usage.as_dict()}


# ---------------------------------------------------------------------------------------------------------------
# the pipeline's backend interface (translate/backends/__init__.py): a module with NAME, VERSION and
# generate(request) -> DeviceCode. The CLI configures it once (translate.llm.cli_args.make_backend -> configure).

NAME = "llm"
VERSION = tool_version()

_configured: LLMBackend | None = None
_verify_factory: Callable[[Any], Callable[[str], Any] | None] | None = None


def configure(backend: LLMBackend | None, verify_factory: Callable[[Any], Callable[[str], Any] | None] | None = None
              ) -> None:
    """Set the backend ``generate(request)`` uses; ``verify_factory(request)`` gives the ``--verify`` callback."""
    global _configured, _verify_factory
    _configured, _verify_factory = backend, verify_factory


def expected_signature(request: Any) -> str:
    """The emitter's kernel declaration for ``request`` (with its ``template <int ...>`` line), on one line."""
    from translate.backends import kernel_declaration

    decl = " ".join(kernel_declaration(request).split())
    if getattr(request, "template_params", ()):
        decl = "template <" + ", ".join(f"int {t}" for t in request.template_params) + "> " + decl
    return decl


def pipeline_compile_fn(request: Any, arch: str = "sm_90") -> Callable[[str], Any]:
    """Device code -> the emitter's full file compiled with NVRTC (the translator's own compile step), the code
    behind a ``#line`` marker so that the repair loop can tell the candidate's diagnostics from the rest."""
    from translate.backends import DeviceCode
    from translate.compile import nvrtc_compile
    from translate.emit import assemble

    build = getattr(request, "build", None)

    def compile_fn(code: str):
        device = DeviceCode(code=mark_candidate(code), helpers=tuple(sorted(project_helpers.used_helpers(code))))
        return nvrtc_compile(assemble(request, device, f"// {request.name}.cu (llm backend candidate)", build), arch,
                             name=f"{request.name}.cu", resources=False,
                             options=build.nvrtc_options() if build else ())

    return compile_fn


def generate(request: Any, **options: Any):
    """``DeviceCode`` for ``request`` from the model; ``LLMError`` if no reply passes in ``max_turns``.

    ``options`` (``model``, ``base_url``, ``max_turns``, ``timeout``, ``max_retries``: what ``translate_kernel``
    forwards, also into its helper process) make a backend for this call; without them the configured one is used.
    """
    gpu_verify = bool(options.pop("verify", False))
    factory = gpu_verify_factory if gpu_verify else _verify_factory
    if options:
        with LLMBackend(**options) as backend:
            return _device_code(backend, request, factory)
    if _configured is None:
        raise LLMError("the llm backend is not configured: pass --model NAME (and --base-url or OPENAI_BASE_URL)")
    return _device_code(_configured, request, factory)


def gpu_verify_factory(request: Any) -> Callable[[str], str | None]:
    """``--verify`` inside the repair loop: device code -> ``None`` when the file it makes computes what the Numba
    kernel computes on the GPU (the verification harness on its smallest sizes; the candidate is built, loaded and
    run in a sandboxed child process), else a short report for the model, made of numbers and the candidate's own
    diagnostics only. The kernel must be registered: its spec makes the inputs and knows the reference."""
    import tempfile
    from pathlib import Path

    from numbakern import registry
    from translate.backends import DeviceCode
    from translate.emit import assemble, launcher_descriptions
    from translate.verify.abi import select_launcher
    from translate.verify.harness import Candidate, smallest_sizes, verify

    try:
        spec = registry.get(request.name)
    except KeyError:
        raise LLMError(f"--verify needs a registered kernel (its spec makes the inputs); '{request.name}' is not one")

    build = getattr(request, "build", None)
    nvcc_flags = tuple(build.manifest().get("nvcc_flags", ())) if build else ()

    def verify_code(code: str) -> str | None:
        device = DeviceCode(code=mark_candidate(code), helpers=tuple(sorted(project_helpers.used_helpers(code))))
        launcher = select_launcher(launcher_descriptions(request, device), spec.constants)
        with tempfile.TemporaryDirectory(prefix="numbakern-llm-verify-") as tmp:
            cu = Path(tmp) / f"{request.name}.cu"
            cu.write_text(assemble(request, device, f"// {request.name}.cu (llm backend candidate)", build))
            candidate = Candidate(cu, launcher, nvcc_flags=nvcc_flags)
            result = verify(spec, candidate, seeds=(0,), sizes=smallest_sizes(spec, 3), limits=_repair_verify_limits())
        return None if result.ok else model_report(result, code)

    return verify_code


#: a candidate of the repair loop is built and run on small sizes: a hang is cut off long before the default limit
REPAIR_VERIFY_LIMITS_SECONDS = 300


def _repair_verify_limits():
    from translate.verify.sandbox import Limits

    return Limits(wall_seconds=REPAIR_VERIFY_LIMITS_SECONDS, cpu_seconds=REPAIR_VERIFY_LIMITS_SECONDS)


#: what the model is told when verification stopped before comparing anything (never the child's own words)
_STAGE_REPORTS = {
    "load": "the file built, but its library did not load or has no launcher symbol",
    "child": "the file built, but running it did not finish within the limits (a hang or a crash of the process)",
}


def model_report(result: Any, code: str) -> str:
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


def _device_code(backend: LLMBackend, request: Any, verify_factory) -> Any:
    from translate.backends import DeviceCode

    verify = verify_factory(request) if verify_factory is not None else None
    result = backend.generate(request, signature=expected_signature(request),
                              compile_fn=pipeline_compile_fn(request), verify=verify)
    notes = {k: v for k, v in result.backend.items() if k not in ("name", "tool_version")}
    return DeviceCode(code=result.device_code, helpers=tuple(sorted(result.helpers)), notes=notes)
