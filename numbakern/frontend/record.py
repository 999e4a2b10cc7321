"""The typed record of a function: its syntax tree with what numba-cuda decided about every operation on it (in a
process with numba's real CUDA target: the translator's; the simulator reads the same compile as ``facts``).

``type_function(pyfunc, argtypes)`` compiles the function once (``compile.compile_function``, no GPU) with every IR
expression tagged by the bytecode instruction that made it (``compile.tagged_locations``). Python 3.11 gives each
instruction the span of the syntax node it evaluates, so each operation of numba's typed IR lands on the node of
the function's own text that performs it: ``a[i] * 2`` on its ``BinOp`` with numba's signature ``(float32, int64)
-> float64``, ``f(x)`` on its ``Call`` with the signature numba chose for it (a device function's compiled one),
``x[i]`` on its ``Subscript``, ``t.x`` on its ``Attribute``; the value of a conditional expression on its branches
(the type numba unifies them to). Consumers ask the record, never numba's typing context: whatever numba
compiles, they see as numba typed it.

The tree is the function's own source (its names, comments and layout are the author's); a function with no
source text gets the Python rebuilt from numba's IR instead (``source.rebuilt_function``), typed the same way.
Where Python's compiler folded an expression of constants (``2 * 3``, ``-1``, ``1 << 4``), numba saw one
constant: the record says so (``Operation.kind == "const"``).

Besides the operations, per Python name: the types of its SSA versions (``p``, ``p.1``, ...) in numba's order;
for a name whose versions have more than one type, where each type is stored and read and where numba converts one
version into another (by source line); the locals numba types as a literal (``N = 100``); the module and closure
values numba read (``globals``); and whether the function needs a cooperative launch (a grid-wide sync).
"""

from __future__ import annotations

import ast
import operator
import sys
import types as pytypes
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from . import closures, typer
from .compile import CODE_STRIDE, INFERRED, CodeRegistry, compile_function, dead_code_kept, tagged_locations
from .source import FunctionSource, function_source

#: the kinds of IR operation a syntax node of each class performs
KINDS = {
    ast.BinOp: ("binop", "inplace_binop"),  # (an in-place one: a BinOp made of an AugAssign, at its position)
    ast.AugAssign: ("inplace_binop",),
    ast.Compare: ("binop",),
    ast.UnaryOp: ("unary",),
    ast.Call: ("call",),
    ast.Subscript: ("getitem", "static_getitem", "typed_getitem"),
    ast.Attribute: ("getattr",),
    ast.Constant: ("const",),
    ast.Name: ("global", "freevar"),
    ast.For: ("getiter",),
}
_STORE_KINDS = ("setitem", "staticsetitem")


@dataclass(frozen=True)
class Operation:
    """One operation of numba's typed IR."""
    kind: str                  # the IR operation: binop, inplace_binop, unary, call, getitem, setitem, getattr, ...
    type: Any                  # numba's type of its result (None: a statement)
    signature: Any = None      # the signature numba chose (the types it converts the operands to)
    operands: tuple = ()       # numba's types of its operands, as they are before any conversion
    callee: Any = None         # a call: numba's type of what is called
    value: Any = None          # a constant's value, a global's object
    #: ``x in items`` over a sequence: the signature of ``item == x`` that numba's implementation compares with; of
    #: tuples, a tuple of signatures, one for each pair of numbers that numba's tuple ``==`` compares
    item_comparison: Any = None


@dataclass
class Versions:
    """The SSA versions of one Python name, by source line (numba's IR has no columns)."""
    types: list                                      # the distinct types, in order of their first store
    stores: dict = field(default_factory=dict)       # line -> [type stored there], in IR order
    loads: dict = field(default_factory=dict)        # line -> [type read there]
    copies: dict = field(default_factory=dict)       # line -> [(from type, to type)] (phi copies), in IR order


Span = tuple  # (line, col, end line, end col) in ``source.lines``' numbering (the tree's)


@dataclass(frozen=True)
class FunctionRecord:
    pyfunc: Any
    argtypes: tuple
    return_type: Any
    source: FunctionSource
    versions: Mapping[str, list]                     # Python name -> numba types of its SSA versions, in order
    #: locals numba types as a literal (a single assignment of a constant, e.g. ``N = 100``): name -> value
    literals: Mapping[str, Any]
    #: for a name whose SSA versions have more than one type: where each is stored, read and converted
    retyped: Mapping[str, Versions]
    globals: Mapping[str, Any]                       # the module and closure values numba read, by name
    cooperative: bool                                # a grid-wide sync: the kernel needs a cooperative launch
    operations_at: Mapping[Span, tuple] = field(repr=False, default_factory=dict)
    #: the phi copies numba makes of a value, at the value's span (a conditional expression's branch): their types
    copies_at: Mapping[Span, tuple] = field(repr=False, default_factory=dict)

    @property
    def tree(self) -> ast.FunctionDef:
        return self.source.tree

    def operations(self, node: ast.AST, kinds: tuple | None = None) -> tuple:
        """numba's operations at ``node``'s position (of the kinds its class performs, or ``kinds``), in IR order."""
        span = _span(node)
        if span is None:
            return ()
        if kinds is None:
            kinds = KINDS.get(type(node), ())
            if isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Store):
                kinds = _STORE_KINDS
        return tuple(op for op in self.operations_at.get(span, ()) if op.kind in kinds)

    def operation(self, node: ast.AST, index: int = 0) -> Operation | None:
        """The ``index``-th operation numba made of ``node`` (a chained comparison makes one per operator), or
        None."""
        found = self.operations(node)
        return found[index] if index < len(found) else None

    def signature(self, node: ast.AST, index: int = 0):
        """The signature numba chose for the operation ``node`` performs (None: numba made none of it); a method
        call's with its receiver as the first argument. An operator on constants only (``2 * 3``, ``-1``, ``32 +
        2`` in a shape tuple) numba never sees: Python folded it into one constant, which numba types like any
        other (``int64``, ``float64``); the signature is that type's, for the operands and the result."""
        op = self.operation(node, index)
        if op is not None and op.signature is not None:
            return op.signature.as_function() if op.signature.recvr is not None else op.signature
        if isinstance(node, (ast.BinOp, ast.UnaryOp)) and all(
                isinstance(n, (ast.Constant, ast.BinOp, ast.UnaryOp, ast.operator, ast.unaryop))
                for n in ast.walk(node)):
            return _folded_signature(node)
        return None

    def evaluation(self, node: ast.AST, which: int, of: int) -> FunctionRecord:
        """This record as the ``which``-th of ``of`` evaluations of ``node`` sees it, where Python compiles ``node``
        more than once (a while loop's test: before the loop, and again at the end of its body, each typed by
        numba with the versions there): inside ``node``, each position's operations, and each of its lines' loads
        and conversions of re-typed names, keep that evaluation's share (they come in IR order, one evaluation
        after another)."""
        span = _span(node)
        if span is None:
            return self
        first, last = self.source.first_line + span[0] - 1, self.source.first_line + span[2] - 1

        def share(items, kind=lambda item: None):
            # (an evaluation whose operations differ in kind: numba folded one, ``n < 50`` of a literal ``n = 0``
            # before the loop: every evaluation reads the operations the others have)
            n = len(items) // of
            kinds = {tuple(map(kind, items[k * n:(k + 1) * n])) for k in range(of)}
            if not n or n * of != len(items) or len(kinds) > 1:
                return items
            return items[which * n:(which + 1) * n]

        def inside(at) -> bool:
            return at[:2] >= span[:2] and at[2:] <= span[2:]

        def lines(by_line: dict) -> dict:
            return {line: share(items) if first <= line <= last else items for line, items in by_line.items()}

        def kind(op):
            return op.kind

        return replace(
            self, operations_at={at: share(ops, kind) if inside(at) else ops for at, ops in self.operations_at.items()},
            copies_at={at: share(c) if inside(at) else c for at, c in self.copies_at.items()},
            retyped={name: replace(v, loads=lines(v.loads), copies=lines(v.copies))
                     for name, v in self.retyped.items()})

    def item_comparison(self, node: ast.Compare):
        """numba's signature of ``item == x`` inside ``x in items`` (None where the record has none)."""
        op = self.operation(node)
        return op.item_comparison if op is not None else None

    def type_of(self, node: ast.AST):
        """numba's type of the value of expression ``node`` (None where the record has no operation of it)."""
        if isinstance(node, ast.IfExp):
            return self.unified(node)
        op = self.operation(node)
        return op.type if op is not None else None

    def unified(self, node: ast.IfExp):
        """The type numba gives a conditional expression: the one its branches are converted to (their last phi
        copy), None where the record does not show it."""
        found, other = self._branch_copies(node.body), self._branch_copies(node.orelse)
        if found and other and found[-1] == other[-1]:
            return found[-1]
        if not found and not other:
            return self._returned(node)
        return None

    def _branch_copies(self, branch: ast.expr) -> tuple:
        """The phi copies of a conditional expression's branch; of a branch that is itself one (``a if c else (b if
        d else e)``: its branches join the outer ones' phi), the type that one unifies to."""
        if isinstance(branch, ast.IfExp):
            inner = self.unified(branch)
            return () if inner is None else (inner,)
        return self.copies_at.get(_span(branch) or (), ())

    def _returned(self, node: ast.IfExp):
        """The type of ``return x if c else y`` where Python 3.12 compiled a return into each branch (no phi): the
        return's casts of the branches, one per branch, at the statement ending where the expression ends."""
        span = _span(node)
        if span is None:
            return None
        for at, ops in self.operations_at.items():
            if at[2:] == span[2:] and at[:2] < span[:2]:
                casts = {op.type for op in ops if op.kind == "cast"}
                if len(casts) == 1 and sum(op.kind == "cast" for op in ops) >= 2:
                    return casts.pop()
        return None


def completed(first: FunctionRecord, others: tuple) -> FunctionRecord:
    """``first`` completed by the records of the same code for other closure values (a template's other
    instantiations): numba prunes a branch on a constant (``flag and x[i] > 0``), so an operation one
    instantiation never compiles is typed from one that does. What ``first`` typed stays as it is."""
    ops, copies = dict(first.operations_at), dict(first.copies_at)
    versions, retyped = dict(first.versions), dict(first.retyped)
    for other in others:
        for span, found in other.operations_at.items():
            ops.setdefault(span, found)
        for span, found in other.copies_at.items():
            copies.setdefault(span, found)
        for name, ts in other.versions.items():
            versions.setdefault(name, ts)
        for name, v in other.retyped.items():
            retyped.setdefault(name, v)
    return replace(first, operations_at=ops, copies_at=copies, versions=versions, retyped=retyped,
                   cooperative=first.cooperative or any(o.cooperative for o in others))


def _span(node) -> Span | None:
    if getattr(node, "lineno", None) is None or getattr(node, "end_lineno", None) is None:
        return None
    return node.lineno, node.col_offset, node.end_lineno, node.end_col_offset


def _folded_signature(node):
    signature, typeof, types = (typer.module(m) for m in ("typing.templates", "typing.typeof", "types"))

    try:
        value = eval(compile(ast.Expression(node), "<folded>", "eval"), {"__builtins__": {}})  # noqa: S307
    except Exception:  # noqa: BLE001 - Python would not fold it either (1 // 0): numba has no type for it
        return None
    t = types.unliteral(typeof.typeof(value))
    return signature.signature(t, *([t] * (1 if isinstance(node, ast.UnaryOp) else 2)))


def inlined_signature(pyfunc, argtypes: tuple):
    """The signature of a call numba inlined (``inline="always"``: no call is left in the caller's IR): numba types
    the inlined body with the arguments' own types, as typing the callee for them does."""
    signature = typer.module("typing.templates").signature

    return signature(type_function(pyfunc, argtypes, INFERRED).return_type, *argtypes)


def type_function(pyfunc, argtypes: tuple, return_type=None) -> FunctionRecord:
    """The typed record of ``pyfunc`` for ``argtypes`` (``return_type`` None: a kernel, ``compile.INFERRED``: a
    device function whose return type numba infers); raises numba's error if numba rejects it, ``source.NoSource``
    where the function has no text (``source.rebuilt_function`` gives one).

    A record is made once per process for the same function, types and values read (``_reads``): typing is most of
    a translation's cost, and a library's kernels share their device functions (a check of numbakern's library
    asked for 116 distinct records 348 times)."""
    kept: list = []
    reads = _reads(pyfunc, kept)
    key = (id(pyfunc), tuple(argtypes), return_type, typer.name())
    found = _made.get(key)
    if found is not None and found[1] == reads:
        _made.move_to_end(key)
        return found[3]
    record = _typed(pyfunc, argtypes, return_type)
    _made[key] = (pyfunc, reads, kept, record)  # the function kept too: its id stays its own
    if len(_made) > _MADE_MOST:
        _made.popitem(last=False)
    return record


#: (function's id, argtypes, return type, typer) -> (function, what it read, the objects read, its record), the
#: least recently used dropped past ``_MADE_MOST`` (a library's kernels and device functions fit several times)
_made: OrderedDict = OrderedDict()
_MADE_MOST = 1024


def _reads(pyfunc, kept: list) -> tuple:
    """What a compile of ``pyfunc`` reads besides its argument types, as a value that is equal only while all of it
    is the same: its code, and the global, closure and module attribute values it names (numbers and strings by
    value, arrays by identity, type and shape, other objects by identity: a device function by its dispatcher, whose
    compiles numba keeps per signature). The objects go into ``kept``, which the record keeps, so that their
    identities are not reused. A module's attributes are read one level deep (``config.TILE``, not
    ``params.tile.N``: a value changed that deep in one process is not seen until the record is dropped)."""
    code = pyfunc.__code__
    names = _names(code)
    out: list = [code]

    def value(v) -> tuple:
        if v is None or isinstance(v, (bool, int, float, complex, str, bytes)):
            return (type(v), v)
        if isinstance(v, tuple):
            return (tuple, tuple(value(x) for x in v))
        kept.append(v)
        shape = getattr(v, "shape", None)
        if isinstance(shape, tuple) and hasattr(v, "dtype"):
            return ("array", id(v), str(v.dtype), shape, getattr(v, "strides", None))
        return ("object", id(v))

    def read(name: str, v) -> None:
        out.append((name, value(v)))
        if isinstance(v, pytypes.ModuleType):  # ``config.TILE``: the attributes the code names
            out.extend((name, attr, value(getattr(v, attr))) for attr in sorted(names) if hasattr(v, attr))

    for name in sorted(names):
        if name in pyfunc.__globals__:
            read(name, pyfunc.__globals__[name])
    bound = closures.closure_values(pyfunc)
    for name in closures.free_names(pyfunc):
        if name in bound:
            read(name, bound[name])
        else:  # an empty cell
            out.append((name, "empty"))
    return tuple(out)


def _names(code) -> frozenset:
    """Every name ``code`` and the code objects nested in it read."""
    names = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, pytypes.CodeType):
            names |= _names(const)
    return frozenset(names)


def lowering_error(pyfunc, argtypes: tuple) -> Exception | None:
    """numba's error where its whole compile of the kernel ``pyfunc`` (lowered, its device functions too) rejects
    what ``type_function`` typed, else None: a record is typed only, and a few refusals come from lowering alone (a
    Python list needs NRT, which CUDA kernels do not have)."""
    try:
        compile_function(pyfunc, tuple(argtypes))
    except Exception as e:  # noqa: BLE001 - whatever numba raises is its refusal
        return e
    return None


def _typed(pyfunc, argtypes: tuple, return_type) -> FunctionRecord:
    src = function_source(pyfunc)
    registry = CodeRegistry()
    with tagged_locations(registry), dead_code_kept():
        cres = compile_function(pyfunc, tuple(argtypes), return_type, lower=False)
    return _record(pyfunc, argtypes, cres, registry, src)


def _record(pyfunc, argtypes, cres, registry: CodeRegistry, src: FunctionSource) -> FunctionRecord:
    ir, types = typer.module("core.ir"), typer.module("types")

    typemap, calltypes = cres.fndesc.typemap, cres.fndesc.calltypes
    typingctx = getattr(cres, "typing_context", None)
    versions: dict[str, list] = {}
    for key, t in typemap.items():
        if key.startswith("$") or key.startswith("arg."):
            continue
        versions.setdefault(key.split(".")[0], []).append(t)
    several = {name for name, ts in versions.items() if len(_distinct(types, ts)) > 1}
    retyped = _version_lines(types, cres.type_annotation.blocks, typemap, several) if several else {}
    literals = {name: ts[0].literal_value for name, ts in versions.items()
                if len(ts) == 1 and isinstance(ts[0], types.Literal)
                and isinstance(ts[0].literal_value, (int, float, bool))}

    code = pyfunc.__code__
    line0, indent = src.first_line - 1, src.indent

    def span(item) -> Span | None:
        loc = getattr(item, "loc", None)
        col = getattr(loc, "col", None)
        pos = registry.position(col)
        if pos is None or col is None or registry.codes[col // CODE_STRIDE] is not code:
            return None  # an instruction of another function's code (a device function numba inlined)
        return pos[0] - line0, pos[1] - indent, pos[2] - line0, pos[3] - indent

    ops: dict[Span, list] = {}
    copies: dict[Span, list] = {}
    read: dict[str, Any] = {}

    def add(item, op: Operation) -> None:
        at = span(item)
        if at is not None:
            ops.setdefault(at, []).append(op)

    def typeof(var):
        return typemap.get(var.name)

    for block in cres.type_annotation.blocks.values():
        for stmt in block.body:
            if isinstance(stmt, ir.Assign):
                value, target = stmt.value, typemap.get(stmt.target.name)
                if isinstance(value, (ir.Global, ir.FreeVar)):
                    read.setdefault(value.name, value.value)
                    add(value, Operation("global" if isinstance(value, ir.Global) else "freevar", target,
                                         value=value.value))
                elif isinstance(value, ir.Const):
                    add(value, Operation("const", target, value=value.value))
                elif isinstance(value, ir.Var) and stmt.target.name.startswith("$phi"):
                    at = span(stmt)
                    if at is not None:
                        copies.setdefault(at, []).append(target)
                elif isinstance(value, ir.Expr):
                    add(value, _operation(ir, value, target, typeof, calltypes, typingctx))
            elif isinstance(stmt, (ir.SetItem, ir.StaticSetItem)):
                index = stmt.index if isinstance(stmt, ir.SetItem) else stmt.index_var
                add(stmt, Operation("setitem" if isinstance(stmt, ir.SetItem) else "staticsetitem", None,
                                    calltypes.get(stmt), tuple(typeof(v) if v is not None else None
                                                               for v in (stmt.target, index, stmt.value))))
    if sys.version_info >= (3, 12):
        _join_split_branches(src.tree, ops, copies, versions, types, typingctx)
    return FunctionRecord(
        pyfunc, tuple(argtypes), cres.signature.return_type, src, versions, literals, retyped, read,
        bool(getattr(cres.library, "use_cooperative", False)),
        {k: tuple(v) for k, v in ops.items()}, {k: tuple(v) for k, v in copies.items()})


def _join_split_branches(tree, ops: dict, copies: dict, versions: dict, types, typingctx) -> None:
    """Python 3.12 may compile the statement around a conditional expression once per branch (``out[i] = x if c
    else y``: one store each, no phi joining the branches). Record the copies Python 3.11's phi makes there: each
    branch's value converted to the type numba unifies the branches' types to."""
    if typingctx is None:
        return
    for node in ast.walk(tree):
        if not isinstance(node, ast.IfExp):
            continue
        spans = (_span(node.body), _span(node.orelse))
        if None in spans or any(s in copies for s in spans):
            continue
        branch = [_value_type(n, at, ops, versions, types) for n, at in zip((node.body, node.orelse), spans)]
        joined = typingctx.unify_types(*branch) if None not in branch else None
        if joined is not None:
            for at, t in zip(spans, branch):
                copies[at] = [t, joined]


def _value_type(node, at, ops: dict, versions: dict, types):
    """numba's type of the value of expression ``node`` (at span ``at``): its last typed operation's, or a local's
    one type; None where the record cannot say."""
    typed = [op.type for op in ops.get(at, ()) if op.type is not None]
    if typed:
        return typed[-1]
    if isinstance(node, ast.Name):
        found = _distinct(types, versions.get(node.id, ()))
        return found[0] if len(found) == 1 else None
    return None


def _operation(ir, expr, target, typeof, calltypes, typingctx) -> Operation:
    op = expr.op
    sig = calltypes.get(expr)
    if op in ("binop", "inplace_binop"):
        compared = _item_comparison(sig, typingctx) if expr.fn is operator.contains else None
        return Operation(op, target, sig, (typeof(expr.lhs), typeof(expr.rhs)), item_comparison=compared)
    if op == "unary":
        return Operation(op, target, sig, (typeof(expr.value),))
    if op == "call":
        return Operation(op, target, sig, tuple(typeof(a) for a in expr.args), typeof(expr.func))
    if op in ("getitem", "static_getitem", "typed_getitem"):
        index = _field(expr, "index_var") or _field(expr, "index")
        return Operation(op, target, sig, (typeof(expr.value), typeof(index) if isinstance(index, ir.Var) else None))
    if op == "getattr":
        return Operation(op, target, None, (typeof(expr.value),), value=expr.attr)
    value = _field(expr, "value")
    return Operation(op, target, sig, (typeof(value),) if isinstance(value, ir.Var) else ())


def _item_comparison(sig, typingctx):
    """numba's signature of ``item == value`` for ``value in items`` (``sig``: contains(items, value)), which its
    implementation compares inside it, out of the IR's sight: ``==`` of an item of a sequence and the value; over an
    array, the loop of ``np.equal`` (np.nditer's 0-d items against the value: a float32 array and an int64 value
    compare in float32)."""
    items = sig.args[0] if sig is not None else None
    if typingctx is None or items is None:
        return None
    types = typer.module("types")
    try:
        if isinstance(items, types.Array):
            loop = typer.module("np.numpy_support").ufunc_find_matching_loop(np.equal, (items.dtype, sig.args[1]))
            return None if loop is None else typer.module("typing").signature(types.boolean, *loop.inputs)
        if isinstance(items, types.Sequence):
            return _equality(items.dtype, sig.args[1], typingctx, types)
    except Exception:  # noqa: BLE001 - numba compiled the kernel: a comparison it cannot type is not this one
        return None
    return None


def _equality(a, b, typingctx, types):
    """numba's signature of ``a == b``; of two tuples of one length, the signatures of their items' ``==``, which
    numba's tuple ``==`` compares one by one (``tuple_eq``), as a tuple."""
    if isinstance(a, types.BaseTuple) and isinstance(b, types.BaseTuple) and len(a) == len(b):
        pairs = [_equality(x, y, typingctx, types) for x, y in zip(a, b)]
        return tuple(s for p in pairs for s in (p if isinstance(p, tuple) else (p,)))
    return typingctx.resolve_function_type(operator.eq, (a, b), {})


def _field(expr, name):
    # ir.Expr answers a missing attribute with KeyError
    try:
        return getattr(expr, name)
    except (AttributeError, KeyError):
        return None


def _distinct(types, ts: list) -> list:
    uniq = []
    for t in ts:
        t = types.unliteral(t)
        if t not in uniq:
            uniq.append(t)
    return uniq


def _version_lines(types, blocks, typemap, names: set) -> dict:
    """Where each SSA version of ``names`` is stored and read, by line, from numba's typed IR."""
    out = {n: Versions([]) for n in names}

    def base(var_name):
        return var_name.split(".")[0]

    for block in blocks.values():
        for inst in block.body:
            kind = type(inst).__name__
            if kind == "Del":
                continue
            line = inst.loc.line
            target = getattr(inst, "target", None) if kind == "Assign" else None
            if target is not None and base(target.name) in names:
                name = base(target.name)
                t = types.unliteral(typemap[target.name])
                value = inst.value
                if type(value).__name__ == "Var" and base(value.name) == name:  # a phi copy
                    out[name].copies.setdefault(line, []).append((types.unliteral(typemap[value.name]), t))
                    if t not in out[name].types:
                        out[name].types.append(t)
                    continue
                out[name].stores.setdefault(line, []).append(t)
                if t not in out[name].types:
                    out[name].types.append(t)
            for var in inst.list_vars():
                if target is not None and var is target:
                    continue
                name = base(var.name)
                if name in names and var.name in typemap:
                    out[name].loads.setdefault(line, []).append(types.unliteral(typemap[var.name]))
    return out
