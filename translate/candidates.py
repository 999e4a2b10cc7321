"""The checks the pipeline gives a backend for its candidate device code (``translate.backends.CandidateChecks``):
each candidate is judged as the file it would become.

- ``compile``: the emitter's file around the candidate, compiled by NVRTC with the file's build options (what the
  pipeline does with the code it accepts; no resource report, which only the accepted file needs), in a sandboxed
  child with time and memory limits (``translate.verify.sandboxed_compile``): a backend's candidates are code
  nobody has vouched for;
- ``verify`` (``--verify``, on a GPU): that file built, loaded and run against the Numba kernel, in a sandboxed
  child process (``translate.verify.isolated``): on every verification size, seed and input distribution of the
  kernel's spec, as ``translate --verify`` verifies a file; with ``quick``, on its smallest sizes and one seed only,
  under a shorter wall-clock limit (what may gate a repair turn, never the write).

A backend gets these as callbacks, so it never imports the stages after it.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from numbakern import registry

from .emit import assemble, launcher_descriptions
from .errors import TranslationError
from .nvrtc import CompileResult
from .request import DeviceCode, KernelRequest
from .verify.abi import select_launcher
from .verify.cases import DEFAULT_SEEDS, smallest_sizes
from .verify.cli import preflight as verification_problem
from .verify.harness import Candidate, VerifyResult, verify
from .verify.sandbox import Limits, isolation
from .verify.sandboxed_compile import compile_untrusted

#: a quick verification builds and runs the candidate on small sizes: a hang is cut off long before a full
#: verification's limit (``translate.verify.isolated.RUN_LIMITS``)
QUICK_LIMITS = Limits(wall_seconds=300, cpu_seconds=300)
#: the seeds and how many of the spec's smallest sizes a quick verification runs
QUICK_SEEDS = (0,)
QUICK_SIZES = 3


class PipelineChecks:
    """``CandidateChecks`` for one request; ``verify_on_gpu`` makes ``verify`` available (it needs the kernel's
    registered spec, which makes the inputs and knows the reference: looked up now, before any work)."""

    def __init__(self, request: KernelRequest, *, verify_on_gpu: bool = False, spec: registry.KernelSpec | None = None):
        self.request = request
        self.verifies = verify_on_gpu
        self._spec = spec  # the spec whose kernel this is (a user's block_sum, never the library's of that name)
        if verify_on_gpu and spec is None:
            try:
                self._spec = registry.get(request.name)
            except KeyError:
                raise TranslationError(f"--verify needs a registered kernel (its spec makes the inputs); "
                                       f"'{request.name}' is not one", filename=request.filename) from None

    def ready(self) -> None:
        """Raise, before a backend sends anything out, when its candidates could not be checked here: the sandbox's
        setting (``NUMBAKERN_SANDBOX``) cannot work (``SandboxError``), or ``--verify`` has no GPU or nvcc
        (``TranslationError``)."""
        isolation()
        if self.verifies:
            problem = verification_problem()
            if problem:
                raise TranslationError(f"--verify: {problem}; nothing was sent to the model",
                                       filename=self.request.filename)

    def _file(self, device: DeviceCode) -> str:
        return assemble(self.request, device, f"// {self.request.filename} (a backend's candidate)")

    def compile(self, device: DeviceCode, seconds: float | None = None) -> CompileResult:
        """The candidate's file compiled in the sandbox, stopped after ``seconds`` (if given)."""
        request = self.request
        return compile_untrusted(self._file(device), request.options.arch, name=request.filename, resources=False,
                                 options=request.build.nvrtc_options(), seconds=seconds)

    def verify(self, device: DeviceCode, quick: bool = False) -> VerifyResult:
        """The candidate's file verified on the GPU: every size, seed and distribution, or ``quick``ly."""
        if self._spec is None:
            raise RuntimeError("verification was not asked for (--verify)")
        spec = self._spec
        launcher = select_launcher(launcher_descriptions(self.request, device), spec.constants)
        with tempfile.TemporaryDirectory(prefix="numbakern-candidate-") as tmp:
            cu = Path(tmp) / self.request.filename
            cu.write_text(self._file(device))
            candidate = Candidate(cu, launcher, nvcc_flags=tuple(self.request.build.nvcc_flags()))
            if quick:
                return verify(spec, candidate, seeds=QUICK_SEEDS, sizes=smallest_sizes(spec, QUICK_SIZES),
                              limits=QUICK_LIMITS)
            return verify(spec, candidate, seeds=DEFAULT_SEEDS)
