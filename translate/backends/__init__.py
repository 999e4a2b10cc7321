"""Backends produce the *device code* of a generated file; the project's emitter (``translate.emit``) adds the
preamble, helpers, constants, explicit instantiations and the host launchers of the contract
(docs/design/translate-contract.md).

A backend is a module with ``NAME`` and one function::

    def generate(request: KernelRequest, checks: CandidateChecks) -> DeviceCode

``request`` (``translate.request``) carries everything a backend may use, its options included. ``DeviceCode`` is
C++ text with the device functions and exactly one ``__global__`` kernel named ``request.name`` whose declaration is
``kernel_declaration(request)`` (a ``template<int NAME...>`` kernel when ``request.template_params`` is not empty).

``TRUSTED`` (default False) says whether the backend's code may be compiled in the translating process: the
deterministic ``ast`` backend's is the project's own; any other backend's is compiled in a sandboxed child with time
and memory limits (``translate.verify.sandboxed_compile``).

``checks`` is what the pipeline offers to check candidate device code as the file it would become, so that a
backend never imports the stages after it: ``compile`` (the file compiled by NVRTC in the sandboxed child, stopped
after ``seconds`` if given) and, when ``verifies`` (``--verify``), ``verify`` (the file built, loaded and run against
the Numba kernel on the GPU, in a sandboxed child process: on every verification size and seed, or with ``quick``
on the smallest sizes and one seed). ``ready()`` raises when those checks cannot run here (a sandbox that cannot
work, ``--verify`` without a GPU): a backend that sends work out (the model's prompt) calls it first, so nothing is
sent for a run that could only fail. The deterministic ``ast`` backend needs none of it; the ``llm`` backend's repair
loop uses them all.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Protocol

from ..request import DeviceCode, KernelRequest

if TYPE_CHECKING:  # the result type only: a backend receives verification results, it never runs verification
    from ..verify.harness import VerifyResult


class CompileReport(Protocol):
    ok: bool
    log: str


class CandidateChecks(Protocol):
    #: True when ``verify`` may be called (``--verify`` on a GPU)
    verifies: bool

    def ready(self) -> None: ...

    def compile(self, device: DeviceCode, seconds: float | None = None) -> CompileReport: ...

    def verify(self, device: DeviceCode, quick: bool = False) -> VerifyResult: ...


class Backend(Protocol):
    NAME: str

    def generate(self, request: KernelRequest, checks: CandidateChecks) -> DeviceCode: ...


BACKENDS = {"ast": "translate.backends.ast_backend", "llm": "translate.backends.llm"}


def get_backend(name: str) -> Backend:
    """The backend module for ``name``."""
    if name not in BACKENDS:
        raise ValueError(f"unknown backend '{name}'; available: {', '.join(sorted(BACKENDS))}")
    return importlib.import_module(BACKENDS[name])
