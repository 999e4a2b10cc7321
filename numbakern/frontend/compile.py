"""numba-cuda's own compiler, run without a GPU (in a process with numba's real CUDA target: the helper, or the
translator's).

``compile_function`` is the one call of numba-cuda's compiler (``record`` reads its typing for the
translator); ``compile_kernel``, for the simulator's facts, also tags every IR expression with the bytecode
instruction that made it. It is what a launch on a GPU does before anything runs: numba-cuda's front end (type
inference) and lowering to LLVM IR for the kernel and every device function it calls, at a fixed compute
capability. A kernel it rejects raises numba's own error. Lowering is included because some rejections happen
there only (a Python list needs NRT, which CUDA kernels do not have); the translator's record, which reads types
only, leaves it out (``lower=False``) and compiles a kernel again, lowered, only when its translation fails
(``record.lowering_error``). NVVM (LLVM IR to PTX) is left out unless asked for: it costs about
as much again and rejects almost nothing the earlier stages accept.

Each IR expression's ``loc.col`` carries ``(code index, bytecode offset)`` packed into one int: numba records
only lines, and the simulator needs to know which AST node (down to the column) each typed operation is.
"""

from __future__ import annotations

import contextlib
import functools

from . import typer
from .liveness import faster_liveness
from .target import TYPING_CC, cuda_typing
from .typed_result import typing_only

#: col = code index * CODE_STRIDE + numba's bytecode offset
CODE_STRIDE = 1 << 24


class CodeRegistry:
    """The code objects whose instructions tagged the IR (a kernel, its device functions, inlined closures)."""

    def __init__(self):
        self.codes: list = []
        self._index: dict[int, int] = {}

    def index(self, code) -> int:
        i = self._index.get(id(code))
        if i is None:
            i = self._index[id(code)] = len(self.codes)
            self.codes.append(code)
        return i

    def position(self, col):
        """The source span ``(line, col, end line, end col)`` of the instruction that ``col`` names, or None."""
        if col is None or col < 0:
            return None
        _FIXED_OFFSET = typer.module("core.bytecode")._FIXED_OFFSET
        code_index, offset = divmod(col, CODE_STRIDE)
        if code_index >= len(self.codes):
            return None
        positions = _positions(self.codes[code_index])
        i = (offset - _FIXED_OFFSET) // 2
        if not 0 <= i < len(positions):
            return None
        pos = positions[i]
        return None if None in pos else (pos[0], pos[2], pos[1], pos[3])


_position_cache: dict[int, tuple] = {}


def _positions(code) -> list:
    cached = _position_cache.get(id(code))
    if cached is None or cached[0] is not code:
        cached = _position_cache[id(code)] = (code, list(code.co_positions()))
    return cached[1]


@contextlib.contextmanager
def tagged_locations(registry: CodeRegistry):
    """Numba's bytecode interpreter tags each IR node's location with its instruction (see the module doc), and
    type inference keeps the error it caught as the ``__cause__`` of the one it raises (numba does that only in its
    developer mode): the caught error's traceback holds the location of the failing operation."""
    interpreter, ir, typeinfer = (typer.module(f"core.{m}") for m in ("interpreter", "ir", "typeinfer"))

    original = interpreter.Interpreter._dispatch
    chain = typeinfer.utils.chain_exception

    def _dispatch(self, inst, kws):
        col = registry.index(self.func_id.code) * CODE_STRIDE + inst.offset
        self.loc = ir.Loc(self.loc.filename, self.loc.line, col=col)
        return original(self, inst, kws)

    def chain_exception(new_exc, old_exc):
        new_exc.__cause__ = old_exc
        return new_exc

    interpreter.Interpreter._dispatch = _dispatch
    typeinfer.utils.chain_exception = chain_exception
    try:
        yield
    finally:
        interpreter.Interpreter._dispatch = original
        typeinfer.utils.chain_exception = chain


@contextlib.contextmanager
def dead_code_kept():
    """numba's removal of unused values after it inlined an overload (``InlineOverloads``) left out: typing is done
    by then, so the values are typed, and a reader of the typed IR (``record``) sees every expression the function
    computes, used or not (the C keeps what the author wrote: ``a_cols = ac < k`` in a branch that never reads it)."""
    typed_passes = typer.module("core.typed_passes")

    original = typed_passes.dead_code_elimination
    typed_passes.dead_code_elimination = lambda *args, **kwargs: None
    try:
        yield
    finally:
        typed_passes.dead_code_elimination = original


#: ``compile_function``'s return type of a device function whose return type numba infers
INFERRED = "inferred"


def compile_function(pyfunc, argtypes: tuple, return_type=None, cc=TYPING_CC, lower: bool = True):
    """numba-cuda's compile of ``pyfunc`` for ``argtypes`` (a kernel: ``return_type`` None, void; ``INFERRED``: a
    device function, the return type numba infers), its front end and lowering to LLVM IR; raises numba's error if
    it rejects it. Without ``lower``, the passes up to lowering only: a ``TypedFunction`` (the translator's record
    reads types, and lowering is a fourth of a compile; see the module doc). Where numba-cuda-mlir is the typer
    (``typer``): its own passes up to lowering whatever ``lower`` says, with the same IR and types in the result
    (``mlir_typing``)."""
    if typer.is_mlir():
        from .mlir_typing import compile_typed

        void = typer.module("types").void
        ret = void if return_type is None else None if return_type is INFERRED else return_type
        with cuda_typing(cc):
            return compile_typed(pyfunc, tuple(argtypes), ret, cc)
    # numba's real CUDA target, only once compiling starts (see target.cuda_typing)
    from numba.cuda import types
    from numba.cuda.compiler import compile_cuda

    ret = types.void if return_type is None else None if return_type is INFERRED else return_type
    with cuda_typing(cc), faster_liveness():
        if lower:
            return compile_cuda(pyfunc, ret, tuple(argtypes), cc=cc)
        return _typed_only(pyfunc, ret, tuple(argtypes), cc)


def _typed_only(pyfunc, return_type, argtypes: tuple, cc):
    """``compile_cuda``'s pipeline and flags (numba-cuda 0.30) without its library, lowering and backend."""
    from numba.cuda import utils
    from numba.cuda.compiler import CUDAFlags, compile_extra
    from numba.cuda.descriptor import cuda_target

    flags = CUDAFlags()
    flags.no_compile = flags.no_cpython_wrapper = flags.no_cfunc_wrapper = True
    flags.inline = "never"
    flags.error_model = "numpy"
    flags.compute_capability = cc
    call_conv = typer.module("core.callconv").CUDACallConv(cuda_target.target_context)
    with utils.numba_target_override():
        return compile_extra(typingctx=cuda_target.typing_context, targetctx=cuda_target.target_context,
                             func=pyfunc, args=argtypes, return_type=return_type, flags=flags, locals={},
                             pipeline_class=_typing_pipeline(), call_conv=call_conv, abi_info={})


@functools.cache
def _typing_pipeline():
    """numba-cuda's ``CUDACompiler`` with its passes up to (not including) ``CreateLibrary``, then one that makes the
    ``TypedFunction``."""
    from numba.cuda.compiler import CreateLibrary, CUDACompiler

    return typing_only(CUDACompiler, CreateLibrary, typer.module("core.compiler_machinery"),
                       typer.module("types").GridGroup, "numba-cuda")


def compile_kernel(pyfunc, argtypes: tuple, registry: CodeRegistry, cc=TYPING_CC, ptx: bool = False):
    """``compile_function`` of a kernel with every IR expression tagged (see the module doc); with ``ptx``, NVVM
    too."""
    with tagged_locations(registry):
        cres = compile_function(pyfunc, argtypes, cc=cc)
    if ptx and not typer.is_mlir():  # numba-cuda-mlir's typing stops before its lowering (``mlir_typing``)
        with cuda_typing(cc):
            cres.library.get_asm_str(cc=cc)
    return cres
