"""The kernel's code-generation options (``@cuda.jit(fastmath=..., launch_bounds=..., max_registers=...,
lineinfo=...)``), read from the dispatcher's ``targetoptions`` and carried into the generated C.

Numba's meaning, and its C equivalent:

- ``launch_bounds=T`` / ``(T,)`` / ``(T, B)`` / ``(T, B, C)`` (numba: the ``maxntid``, ``minctasm`` and
  ``cluster_max_blocks`` NVVM annotations) -> ``__launch_bounds__(T[, B[, C]])`` on the ``__global__``.
- ``max_registers=N`` (numba: ``-maxrregcount`` for the kernel) -> ``__maxnreg__(N)`` on the ``__global__``;
  with ``launch_bounds`` as well (CUDA allows only one of the two attributes) -> the build flag
  ``-maxrregcount=N`` (one kernel per file, so the flag applies to this kernel alone).
- ``fastmath`` (any true value: numba then compiles with the NVVM options ``-ftz=1 -prec-div=0 -prec-sqrt=0
  -fma=1``) -> the build flags ``-ftz=true -prec-div=false -prec-sqrt=false -fmad=true`` (nvcc) /
  ``--ftz=true --prec-div=false --prec-sqrt=false --fmad=true`` (NVRTC). Not ``--use_fast_math``: that also
  swaps math functions for intrinsics, which the generated C does itself, exactly where numba does
  (``codegen.builtins``: float32 ``/``, ``sin cos tan exp log log2 log10 pow tanh``).
  Numba's LLVM fast-math instruction flags (``reassoc``, ``arcp``, ...) have no nvcc equivalent: nvcc never
  reassociates; the GPU verification compares bit for bit and would show a difference.
- ``lineinfo=True`` -> ``-lineinfo`` / ``--generate-line-info`` (no effect on the code).

Each specialization of a ``@specialize`` kernel is its own dispatcher, so the options are read per template
instantiation (``threads=tw*tw`` gives a different bound per ``tw``); differing bounds become a table of
explicit specializations indexed by the template parameters.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass

from numbakern.frontend.source import NoSource, function_source

from .errors import TranslationError
from .targets import KernelTarget

FASTMATH_NVCC = ("-ftz=true", "-prec-div=false", "-prec-sqrt=false", "-fmad=true")
FASTMATH_NVRTC = ("--ftz=true", "--prec-div=false", "--prec-sqrt=false", "--fmad=true")

#: targetoptions that change nothing in the generated code (or are the defaults we assume)
_IGNORED = {"link", "device", "inline", "forceinline", "extensions", "lto", "shared_memory_carveout", "debug",
            "opt", "cache"}


@dataclass(frozen=True)
class CodegenOptions:
    fastmath: bool = False
    lineinfo: bool = False
    launch_bounds: tuple[tuple[int, ...] | None, ...] = ()   # per instantiation
    max_registers: tuple[int | None, ...] = ()               # per instantiation

    def fingerprint(self) -> dict | None:
        """What ``source_sha256`` hashes (None when no option is set: the hash of a plain kernel is unchanged),
        so that ``translate --check`` sees a changed ``launch_bounds`` or ``fastmath`` as stale."""
        if not (self.fastmath or self.lineinfo or any(self.launch_bounds)
                or any(r is not None for r in self.max_registers)):
            return None
        return {"fastmath": self.fastmath, "lineinfo": self.lineinfo,
                "launch_bounds": [list(b) if b else None for b in self.launch_bounds],
                "max_registers": list(self.max_registers)}

    # -- derived ---------------------------------------------------------------------------------------------
    def _maxreg_flag(self) -> int | None:
        """max_registers that must go to the build flags (a kernel with launch bounds cannot take __maxnreg__)."""
        if any(self.launch_bounds) and any(r is not None for r in self.max_registers):
            vals = {r for r in self.max_registers if r is not None}
            return min(vals)
        return None

    def nvcc_flags(self) -> list[str]:
        flags: list[str] = list(FASTMATH_NVCC) if self.fastmath else []
        r = self._maxreg_flag()
        if r is not None:
            flags.append(f"-maxrregcount={r}")
        if self.lineinfo:
            flags.append("-lineinfo")
        return flags

    def nvrtc_options(self) -> list[str]:
        opts: list[str] = list(FASTMATH_NVRTC) if self.fastmath else []
        r = self._maxreg_flag()
        if r is not None:
            opts.append(f"--maxrregcount={r}")
        if self.lineinfo:
            opts.append("--generate-line-info")
        return opts

    def manifest(self) -> dict:
        return {"nvcc_flags": self.nvcc_flags(), "nvrtc_options": self.nvrtc_options(),
                "fastmath": self.fastmath}

    def launcher_manifest(self, index: int) -> dict:
        out = {}
        lb = self.launch_bounds[index] if index < len(self.launch_bounds) else None
        if lb:
            out["launch_bounds"] = list(lb)
        r = self.max_registers[index] if index < len(self.max_registers) else None
        if r is not None:
            out["max_registers"] = r
        return out

    def header_lines(self) -> list[str]:
        lines = []
        nvcc, nvrtc = self.nvcc_flags(), self.nvrtc_options()
        why = []
        if self.fastmath:
            why.append("fastmath=True")
        if self._maxreg_flag() is not None:
            why.append(f"max_registers={self._maxreg_flag()}")
        if self.lineinfo:
            why.append("lineinfo=True")
        if nvcc:
            lines.append(f"// BUILD FLAGS (required: numba compiled the kernel with {', '.join(why)}):")
            lines.append(f"//   nvcc:  {' '.join(nvcc)}")
            lines.append(f"//   NVRTC: {' '.join(nvrtc)}")
        return lines

    # -- the __global__ attributes ---------------------------------------------------------------------------
    def attributes(self, request) -> tuple[str, str]:
        """(``prelude``: C declarations the attributes refer to, ``attrs``: the attribute text, or '')."""
        prelude, attrs = [], []
        n = len(request.instantiations)
        if any(self.launch_bounds):
            if not all(self.launch_bounds):
                raise TranslationError(f"{request.name}: some specializations have launch_bounds and some do not; "
                                       "C++ cannot express that in one template", filename=f"{request.name}.cu")
            bounds = [b for b in self.launch_bounds if b]
            arity = {len(b) for b in bounds}
            if len(arity) != 1:
                raise TranslationError(f"{request.name}: the specializations' launch_bounds have different lengths",
                                       filename=f"{request.name}.cu")
            args = []
            for pos in range(arity.pop()):
                vals = [b[pos] for b in bounds]
                if len(set(vals)) == 1 or n == 1:
                    args.append(str(vals[0]))
                else:
                    what = ("max_threads", "min_blocks", "max_blocks_per_cluster")[pos]
                    var, decl = _table(request, f"nk_{what}", vals)
                    prelude.append(decl)
                    args.append(var)
            attrs.append(f"__launch_bounds__({', '.join(args)})")
        elif any(r is not None for r in self.max_registers):
            if not all(r is not None for r in self.max_registers):
                raise TranslationError(f"{request.name}: some specializations have max_registers and some do not",
                                       filename=f"{request.name}.cu")
            if len(set(self.max_registers)) == 1 or n == 1:
                attrs.append(f"__maxnreg__({self.max_registers[0]})")
            else:
                var, decl = _table(request, "nk_max_registers", self.max_registers)
                prelude.append(decl)
                attrs.append(f"__maxnreg__({var})")
        return "\n".join(prelude), " ".join(attrs)


def _table(request, name, values) -> tuple[str, str]:
    """A variable template indexed by the template parameters, explicitly specialized per instantiation."""
    params = request.template_params
    lines = ["template <" + ", ".join(f"int {t}" for t in params) + f"> constexpr int {name} = 0;"]
    for inst, v in zip(request.instantiations, values):
        args = ", ".join(str(int(inst[t])) for t in params)
        lines.append(f"template <> constexpr int {name}<{args}> = {int(v)};")
    return f"{name}<{', '.join(params)}>", "\n".join(lines) + "\n"


def apply(code: str, name: str, attrs: str) -> str:
    """Put ``attrs`` on the ``__global__`` kernel ``name`` in ``code``."""
    if not attrs:
        return code
    pat = re.compile(r"__global__\s+void\s+" + re.escape(name) + r"\s*\(")
    m = pat.search(code)
    if m is None:
        raise TranslationError(f"the device code has no '__global__ void {name}(' to put {attrs} on",
                               filename=f"{name}.cu")
    return code[:m.start()] + f"__global__ void {attrs} {name}(" + code[m.end():]


def _normal_bounds(lb):
    if lb is None:
        return None
    if isinstance(lb, int):
        lb = (lb,)
    return tuple(int(x) for x in lb)


def kernel_options(tgt: KernelTarget, instantiations) -> list[dict]:
    """``targetoptions`` of the dispatcher of each instantiation (the registered kernel for the first)."""
    base = dict(getattr(tgt.kernel, "targetoptions", {}) or {})
    out = []
    for inst in instantiations or ({},):
        consts = {**tgt.constants, **inst}
        if consts == tgt.constants:
            out.append(base)
            continue
        if tgt.factory is not None:
            out.append(dict(getattr(tgt.factory(**consts), "targetoptions", {}) or {}))
        elif base.get("launch_bounds") is not None or base.get("max_registers") is not None:
            raise TranslationError(
                f"{tgt.qualname}: cannot read the codegen options of each specialization (no @specialize "
                "factory found) and the kernel has launch_bounds/max_registers, which may depend on them",
                filename=f"{tgt.name}.cu")
        else:
            out.append(base)
    return out


def from_target(tgt: KernelTarget, instantiations) -> CodegenOptions:
    opts = kernel_options(tgt, instantiations)
    if any(o.get("debug") for o in opts) and _raises(tgt.pyfunc):
        raise TranslationError(f"{tgt.qualname}: compiled with debug=True, numba reports the kernel's exceptions "
                               "(raise, assert) to the host, which the C cannot; translate it without debug=True, "
                               "where numba ends the thread, as the C does", filename=f"{tgt.name}.cu")
    fm = {bool(o.get("fastmath")) for o in opts}
    if len(fm) > 1:
        raise TranslationError(f"{tgt.qualname}: fastmath differs between the specializations; one file is "
                               "built with one set of flags (translate them separately)", filename=f"{tgt.name}.cu")
    li = {bool(o.get("lineinfo")) for o in opts}
    return CodegenOptions(
        fastmath=fm.pop(), lineinfo=any(li),
        launch_bounds=tuple(_normal_bounds(o.get("launch_bounds")) for o in opts),
        max_registers=tuple((int(o["max_registers"]) if o.get("max_registers") is not None else None) for o in opts),
    )


def _raises(pyfunc) -> bool:
    """Whether the kernel's own text has a ``raise`` or an ``assert``."""
    try:
        tree = function_source(pyfunc).tree
    except NoSource:  # (the translation says so where it needs the text)
        return False
    return any(isinstance(n, (ast.Raise, ast.Assert)) for n in ast.walk(tree))
