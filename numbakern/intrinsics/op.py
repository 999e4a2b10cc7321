"""One GPU instruction, declared once: an ``Op``.

An ``Op`` says what the instruction is, for every backend: the Python parameters a kernel calls it with, its
operands (``Regs``, ``Element``, ``Data``, ``Scalar``, ``Immediate``: which arguments they are, what they must be,
how the instruction sees them), its result, its PTX template, whether it synchronises the warp, its side effects
and what memory one lane's call touches. From that, ``typing`` is the one typing rule every compiler applies, and
``ptx_text`` the one instruction text every code generator renders. Backends attach their emitters by name
(``register``): ``numba-cuda`` (``numbakern.intrinsics.numba_cuda``), ``mlir`` (``numbakern.mlir_lowering``), ``c``
(``translate/codegen``), ``sim`` (``numbakern/sim``). The model is CuTe's ``MmaOp`` atoms (one struct per
instruction carrying its shapes, types and PTX) with JAX Pallas's per-backend lowering-rule tables.

``Op.function`` is what a kernel calls: the same object in every process, whichever compiler or simulator runs
it. A compiler learns it through its own extension registry when it is loaded (``on_declare``); in Python (the
simulator) a call runs the simulator's dispatch, which the simulator installs (``install_simulator``). Nothing is
chosen when this package is imported.

Templates name operands as ``$name``: ``{$d}`` renders a fragment's registers (``{$0,$1,$2,$3}`` for LLVM,
``{%0, %1, %2, %3}`` for C), ``$n`` of an ``Immediate`` its value (LLVM) or an ``"n"`` operand (C). Operands are
numbered in declaration order, outputs first.
"""

from __future__ import annotations

import importlib.abc
import importlib.util
import inspect
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, NamedTuple

# -- operands ------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Regs:
    """Registers of a fragment: elements ``at .. at + count - 1`` of a 1-D ``cuda.local.array`` (``at`` a parameter
    of its own, or None: the array's first ``count`` elements, at constant indices)."""

    name: str
    dtypes: tuple[str, ...]
    count: int | str  # or the name of the Immediate that gives it
    at: str | None = None
    out: bool = False  # written by the instruction
    tied: bool = False  # read and written: the instruction's outputs, and the same registers as inputs
    asm: str = "b32"  # the register as the instruction sees it: "b32" or "f32"



@dataclass(frozen=True)
class Element:
    """The address of ``array[index]`` in memory ``space`` ("shared": a 32-bit shared-window address, "global": a
    64-bit one). ``bits``: the element sizes allowed (None: any); ``dtypes``: the element types allowed;
    ``flat``: the index may also be one integer, a flat element offset into a C-contiguous array."""

    name: str
    index: str
    space: str
    label: str = ""  # the argument as messages name it ("the destination"); default its name
    want: str = ""  # what it must be, for messages
    dtypes: tuple[str, ...] | None = None
    bits: tuple[int, ...] | None = None
    contiguous: bool = False
    flat: bool = False



@dataclass(frozen=True)
class Data:
    """An array's data pointer, as a 64-bit address (a tensor map in global memory)."""

    name: str
    want: str = "an array"



@dataclass(frozen=True)
class Scalar:
    """A number, converted to ``cast`` (a numpy type name) for the instruction."""

    name: str
    kind: str  # "float", "int" or "bool"
    cast: str = ""
    hint: str = ""  # added to the type error: what to pass instead



@dataclass(frozen=True)
class Immediate:
    """A compile-time integer written into the instruction (a literal or a factory's constant in the kernel)."""

    name: str
    choices: tuple[int, ...] | None = None  # the values allowed (None: any >= minimum)
    minimum: int | None = None
    why: str = ""  # why it must be known at compile time, for messages



Operand = Regs | Element | Data | Scalar | Immediate


class Access(NamedTuple):
    """One array an instruction touches for one lane: ``space`` "global" | "shared" (None: wherever the array
    is), ``kind`` "ld" | "st" | "atom", ``index`` None with 0 ``nbytes`` when the lane takes part and moves
    nothing."""

    space: str | None
    kind: str
    array: Any
    index: Any
    nbytes: int

#: the inline-asm constraint letter of each asm type (LLVM's and C's)
CONSTRAINT = {"f32": "f", "b32": "r", "b16": "h", "b64": "l"}
_ASM_OF_CAST = {"float32": "f32", "uint32": "b32", "int32": "b32", "uint64": "b64", "int64": "b64"}


def asm_type(operand) -> str:
    """The asm type of a Scalar/Element/Data operand as the instruction reads it."""
    if isinstance(operand, Scalar):
        return _ASM_OF_CAST[operand.cast]
    return "b32" if isinstance(operand, Element) and operand.space == "shared" else "b64"


# -- the instruction -----------------------------------------------------------------------------------------------


@dataclass(eq=False)
class Op:
    """One instruction (or one variant: each mma shape is an Op of its own)."""

    name: str
    module: str  # the public module a kernel imports it from ("numbakern.mma")
    doc: str
    params: tuple[str, ...]
    operands: tuple[Operand, ...] = ()
    result: Any = "void"  # "void", a numpy type name, "bool", or a tuple of them (a UniTuple)
    result_asm: str | None = None  # the result as an asm output (None: not an asm output)
    ptx: str | None = None
    volatile: bool = False  # never dropped, duplicated or moved (LLVM side effect, C ``asm volatile``)
    clobbers_memory: bool = False  # ordered with the memory accesses around it
    sync: str | None = None  # "warp": all 32 lanes together, at one instruction (.sync.aligned); "mask"
    asynchronous: bool = False  # its memory effects land at a later wait (cp.async)
    family: str = ""  # "mma", "ldmatrix", "cvt", "copy", "vector", "hopper", "warp", "atomic"
    instruction: str = ""  # the instruction as a profiler names it ("ldmatrix", "cp.async", "vector", ...)
    shape: Any = None  # the variant's shape (an MmaShape for mma)
    check: Callable | None = None  # extra typing check: check(types, fail, bound argument types)
    touches: Callable | None = None  # (bound argument values, lane) -> [(argument, index, bytes, kind)]
    stub: tuple[str, ...] | None = None  # for an instruction numba-cuda provides: its path under numba.cuda
    emitters: dict[str, Callable] = field(default_factory=dict)
    function: Callable | None = None

    def __post_init__(self):
        if self.stub is None and self.function is None:
            self.function = _make_function(self)

    @property
    def qualname(self) -> str:
        return f"{self.module}.{self.name}"

    def register(self, backend: str, emitter: Callable) -> Callable:
        """Attach ``backend``'s emitter (one per backend: a second registration replaces the first)."""
        self.emitters[backend] = emitter
        return emitter

    # -- typing --------------------------------------------------------------------------------------------------

    def bind(self, args, error: type[Exception] = TypeError) -> dict[str, Any]:
        """The call's arguments by parameter name (positional only, as every intrinsic takes them)."""
        if len(args) != len(self.params):
            raise error(f"{self.name} takes {len(self.params)} argument(s) ({', '.join(self.params)}), "
                        f"got {len(args)}")
        return dict(zip(self.params, args))

    def register_count(self, operand: Regs, bound: dict) -> int:
        """How many registers ``operand`` names (an Immediate's value where the count is a parameter)."""
        if isinstance(operand.count, int):
            return operand.count
        value = bound[operand.count]
        return int(getattr(value, "literal_value", value))

    def typing(self, types, error: type[Exception], argtypes) -> Any:
        """The call's result type, for the numba types of its arguments, or ``error`` naming the bad argument and
        what it must be. ``types`` is the compiler's own ``types`` module (numba-cuda's or numba-cuda-mlir's)."""
        bound = self.bind(argtypes, error)

        def fail(message: str):
            raise error(f"{self.name}: {message}")

        for operand in self.operands:
            _check_operand(self, types, fail, operand, bound)
        if self.check is not None:
            self.check(types, fail, bound)
        return result_type(types, self.result)

    # -- the PTX -------------------------------------------------------------------------------------------------

    def asm_operands(self, bound: dict) -> tuple[list, list]:
        """``(outputs, inputs)``: per asm operand, ``(operand, register index or None, asm type)``, in numbering
        order: the outputs (the result, written registers), then tied inputs, then the inputs."""
        outputs, tied, inputs = [], [], []
        if self.result_asm is not None:
            outputs.append((None, None, self.result_asm))
        for operand in self.operands:
            if isinstance(operand, Regs):
                regs = [(operand, q, operand.asm) for q in range(self.register_count(operand, bound))]
                if operand.out or operand.tied:
                    outputs += regs
                if operand.tied:
                    tied += regs
                elif not operand.out:
                    inputs += regs
            elif not isinstance(operand, Immediate):
                inputs.append((operand, None, asm_type(operand)))
        return outputs, tied + inputs

    @staticmethod
    def asm_arguments(inputs: list, values: dict[int, list]) -> list:
        """The backend's values of the ``inputs`` (``asm_operands``), in order: ``values[id(operand)]`` holds each
        operand's, one per register."""
        taken: dict[int, int] = {}
        arguments = []
        for operand, _, _ in inputs:
            i = taken.get(id(operand), 0)
            arguments.append(values[id(operand)][i])
            taken[id(operand)] = i + 1
        return arguments

    def constraints(self, bound: dict) -> str:
        """The LLVM inline-asm constraints: outputs, tied inputs (their outputs' numbers), inputs, memory clobber."""
        outputs, inputs = self.asm_operands(bound)
        tied = {(id(o), q): str(i) for i, (o, q, _) in enumerate(outputs) if isinstance(o, Regs) and o.tied}
        cons = [f"={CONSTRAINT[t]}" for _, _, t in outputs]
        cons += [tied.get((id(o), q), CONSTRAINT[t]) for o, q, t in inputs]
        return ",".join(cons + (["~{memory}"] if self.clobbers_memory else []))

    def ptx_text(self, bound: dict, style: str = "llvm") -> str:
        """The instruction text with its operands numbered: ``$0``... joined by ``,`` (LLVM inline asm), or ``%0``...
        joined by ``, `` with immediates as operands too (C inline asm, numbered after the others). Tied registers
        are named by their outputs; LLVM numbers their inputs too (matching constraints), C does not (its ``"+f"``
        operands are outputs and inputs at once)."""
        outputs, inputs = self.asm_operands(bound)
        prefix, sep = ("$", ",") if style == "llvm" else ("%", ", ")
        if style != "llvm":
            inputs = [x for x in inputs if not (isinstance(x[0], Regs) and x[0].tied)]
        numbers: dict[str, list[str]] = {}
        for i, (operand, _, _) in enumerate(outputs + inputs):
            if i < len(outputs) or not (isinstance(operand, Regs) and operand.tied):  # tied: named by its outputs
                numbers.setdefault("result" if operand is None else operand.name, []).append(f"{prefix}{i}")
        last = len(outputs) + len(inputs)
        for operand in self.operands:
            if isinstance(operand, Immediate) and style == "llvm":
                value = bound[operand.name]
                numbers[operand.name] = [str(int(getattr(value, "literal_value", value)))]
            elif isinstance(operand, Immediate):
                numbers[operand.name] = [f"%{last}"]
                last += 1
        return re.sub(r"\$([A-Za-z_]\w*)", lambda m: sep.join(numbers[m.group(1)]), self.ptx)

    # -- memory ------------------------------------------------------------------------------------------------

    def accesses(self, args, lane: int | None = None) -> tuple[Access, ...]:
        """What one lane's call touches in memory, for a profiler (registers are not memory): an ``Access`` per
        array, when the instruction is issued (an ``asynchronous`` one carries it out later)."""
        if self.touches is None:
            return ()
        bound = self.bind(args)
        spaces = {o.name: o.space for o in self.operands if isinstance(o, Element)}
        return tuple(Access(spaces.get(name) if spaces.get(name) != "any" else None, kind, bound[name], index, nbytes)
                     for name, index, nbytes, kind in self.touches(bound, lane))

    def flops(self) -> dict[str, int]:
        """Floating-point operations per warp, as a roofline counts them (``{"tensor_bf16": 4096}`` for an
        m16n8k16 bf16 mma: 2*m*n*k); empty for the instructions that do none."""
        if self.family != "mma":
            return {}
        return {f"tensor_{self.shape.operand}": 2 * self.shape.m * self.shape.n * self.shape.k}

    def __repr__(self) -> str:
        return f"<Op {self.qualname}>"


def result_type(types, spec):
    if isinstance(spec, tuple):
        return types.UniTuple(result_type(types, spec[0]), len(spec))
    return {"void": types.void, "bool": types.boolean}.get(spec) or getattr(types, spec)


def _index_ok(types, index, ndim: int, flat: bool) -> bool:
    parts = list(index) if isinstance(index, types.BaseTuple) else [index]
    return all(isinstance(p, types.Integer) for p in parts) and (
        len(parts) == ndim or (flat and not isinstance(index, types.BaseTuple)))


def _check_operand(op: Op, types, fail, operand, bound: dict) -> None:
    t = bound[operand.name]
    if isinstance(operand, Regs):
        if not isinstance(t, types.Array) or t.ndim != 1 or str(t.dtype) not in operand.dtypes:
            fail(f"{operand.name} must be a 1-D {' or '.join(operand.dtypes)} array (a cuda.local.array of "
                 f"registers), got {t}")
        if operand.at is not None and not isinstance(bound[operand.at], types.Integer):
            fail(f"{operand.at} (the first register's index) must be an integer, got {bound[operand.at]}")
    elif isinstance(operand, Element):
        label = operand.label or operand.name
        dtype = getattr(t, "dtype", None)
        if not isinstance(t, types.Array) or (operand.contiguous and t.layout != "C") or \
                (operand.dtypes is not None and str(dtype) not in operand.dtypes) or \
                (operand.bits is not None and getattr(dtype, "bitwidth", 0) not in operand.bits):
            fail(f"{label} must be {operand.want or 'an array'}, got {t}")
        if not _index_ok(types, bound[operand.index], t.ndim, operand.flat):
            fail(f"the index into {label} must be {t.ndim} integer(s) (one per dimension), got {bound[operand.index]}")
    elif isinstance(operand, Data):
        if not isinstance(t, types.Array):
            fail(f"{operand.name} must be {operand.want}, got {t}")
    elif isinstance(operand, Scalar):
        kind = {"float": types.Float, "int": types.Integer, "bool": types.Boolean}[operand.kind]
        if not isinstance(t, kind):
            want = {"float": "a float", "int": "an integer", "bool": "a bool"}[operand.kind]
            fail(f"{operand.name} must be {want}, got {t}{operand.hint}")
    elif isinstance(operand, Immediate):
        value = getattr(t, "literal_value", None)
        ok = isinstance(t, types.IntegerLiteral) and (operand.minimum is None or value >= operand.minimum) and (
            operand.choices is None or value in operand.choices)
        if not ok:
            if operand.choices is not None and isinstance(t, types.IntegerLiteral):
                fail(f"{operand.name} must be one of {', '.join(map(str, operand.choices))}{operand.why}, got {value}")
            kind = "non-negative compile-time integer" if operand.minimum == 0 else "compile-time integer"
            fail(f"{operand.name} must be a {kind} (a literal or a factory's constant{operand.why}), got {t}")


# -- what a kernel calls -------------------------------------------------------------------------------------------

#: the simulator's dispatch ``run(op, frame, args)``, installed by the simulator (``install_simulator``)
_simulator: Callable | None = None


def install_simulator(run: Callable | None) -> None:
    """Calls of an instruction's function in Python run ``run(op, frame, args)`` (``frame``: the caller's)."""
    global _simulator
    _simulator = run


def _call(op: Op, frame, args):
    if _simulator is None:
        raise RuntimeError(f"{op.qualname} runs only inside a kernel: compiled for a GPU, or on numbakern's "
                           "simulator (not from host code; numbakern.mma.formats has the host versions of the "
                           "conversions)")
    return _simulator(op, frame, args)


#: the file name of every instruction's function (a simulator leaves these frames out of the kernel's line)
FUNCTION_FILE = "<numbakern instruction>"


def _make_function(op: Op) -> Callable:
    """A function with the instruction's name, parameters and docstring, living in its public module (so pickles
    and ``help()`` name it there) and calling ``_call``."""
    params = ", ".join(op.params)
    namespace = {"_call": _call, "_op": op, "_frame": sys._getframe}
    code = compile(f"def {op.name}({params}):\n    return _call(_op, _frame(1), ({params}{',' if params else ''}))\n",
                   FUNCTION_FILE, "exec")
    exec(code, namespace)
    fn = namespace[op.name]
    fn.__module__, fn.__qualname__, fn.__doc__ = op.module, op.name, op.doc
    fn.__numbakern_op__ = op
    return fn


def op_of_frame(frame) -> Op | None:
    """The Op whose function ``frame`` runs (for a walk up a simulated lane's stack), or None."""
    return frame.f_globals.get("_op") if frame.f_code.co_filename == FUNCTION_FILE else None


def op_of(obj) -> Op | None:
    """The Op a kernel's called object is (its function, or the numba-cuda stub it declares), or None."""
    op = getattr(obj, "__numbakern_op__", None)
    if isinstance(op, Op):
        return op
    try:
        return _BY_STUB.get(obj)
    except TypeError:  # unhashable
        return None


# -- the table -----------------------------------------------------------------------------------------------------

#: every declared Op, by qualified name
OPS: dict[str, Op] = {}
_BY_STUB: dict = {}  # numba-cuda's stub objects -> their Op (filled by ``stubs``)
_listeners: list[Callable[[Op], None]] = []


def declare(op: Op) -> Op:
    """Add ``op`` to the table and tell every listener (a loaded compiler registers it)."""
    if op.qualname in OPS:
        raise ValueError(f"{op.qualname} is declared twice")
    OPS[op.qualname] = op
    for listener in list(_listeners):
        listener(op)
    return op


def on_declare(listener: Callable[[Op], None]) -> None:
    """Call ``listener(op)`` for every Op declared so far and every one declared later."""
    _listeners.append(listener)
    for op in list(OPS.values()):
        listener(op)


def stubs() -> dict:
    """numba-cuda's stub objects (``cuda.shfl_sync``, ``cuda.atomic.add``...) -> the Ops that declare them (numba is
    imported here, not before: a declaration of a stub is a path)."""
    if len(_BY_STUB) < sum(op.stub is not None for op in OPS.values()):
        from numba import cuda

        for op in OPS.values():
            if op.stub is not None:
                obj = cuda
                for part in op.stub:
                    obj = getattr(obj, part)
                _BY_STUB[obj] = op
    return _BY_STUB


# -- a compiler's module loaded ------------------------------------------------------------------------------------


def when_imported(module: str, callback: Callable[[], None]) -> None:
    """Run ``callback()`` now if ``module`` is imported, else right after its first import."""
    if module in sys.modules:
        callback()
        return
    _waiting.setdefault(module, []).append(callback)
    if _finder not in sys.meta_path:
        sys.meta_path.insert(0, _finder)


_waiting: dict[str, list[Callable[[], None]]] = {}


class _AfterImport(importlib.abc.MetaPathFinder):
    """Runs the callbacks waiting for a module right after it is executed."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname not in _waiting:
            return None
        callbacks = _waiting.pop(fullname)
        if not _waiting:
            sys.meta_path.remove(self)
        spec = importlib.util.find_spec(fullname)
        if spec is None or spec.loader is None:
            return spec
        exec_module = spec.loader.exec_module

        def exec_and_run(module):
            exec_module(module)
            # as the import system does next: the module reaches its parent as an attribute
            parent, _, child = fullname.rpartition(".")
            if parent:
                setattr(sys.modules[parent], child, module)
            for callback in callbacks:
                callback()

        spec.loader.exec_module = exec_and_run
        return spec


_finder = _AfterImport()


def signature_of(op: Op, first: tuple[str, ...] = ()) -> inspect.Signature:
    """The instruction's Python signature (``first``: parameters before its own, e.g. numba's ``typingctx``)."""
    kind = inspect.Parameter.POSITIONAL_OR_KEYWORD
    return inspect.Signature([inspect.Parameter(p, kind) for p in (*first, *op.params)])
