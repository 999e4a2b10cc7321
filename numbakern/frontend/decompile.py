"""A typed function's Python, rebuilt from numba's own typed IR (helper process), for the simulator to run.

The simulator computes with Numba's types by rewriting a function's Python (``numbakern.sim.typed``) with what
numba decided for each operation. Reading those decisions off numba's typed IR and rebuilding the Python from the
same IR needs no source text: a kernel made by ``exec``, read from stdin or given with ``python -c`` has none, and
an ``unroll()`` expansion has none of its own (its copies of a loop body share their source lines). The rebuilt
function is plain Python that computes what the IR computes:

- temporaries used once, in evaluation order, are folded back into the expressions they came from
  (``out[i] = x[i] * 2``), so the function runs about as many bytecodes as the author's;
- control flow is structured again: ``for v in range(...)`` where numba iterates, ``while True:`` with ``break``
  and ``continue`` for other loops, ``if``/``else`` at the branches (a block reached along several paths to an
  exit may be repeated); a graph this cannot structure runs as a loop over its blocks;
- every variable version numba typed on its own (``x``, ``x.1``) is a variable of its own, with one type;
- every node carries the source position of the bytecode instruction it came from (``compile.CodeRegistry``), so
  a checker's report names the kernel's own line.

The result is a source text, the facts of its operations keyed by the text's node spans (``source.node_key``), the
original position of every node (in ``ast.walk`` order of the parsed text) and the names the text reads from the
function's globals and closure.
"""

from __future__ import annotations

import ast
import keyword
import math
import operator
from typing import Any

from . import closures, typer

_BINARY = {
    operator.add: ast.Add, operator.sub: ast.Sub, operator.mul: ast.Mult, operator.truediv: ast.Div,
    operator.floordiv: ast.FloorDiv, operator.mod: ast.Mod, operator.pow: ast.Pow, operator.lshift: ast.LShift,
    operator.rshift: ast.RShift, operator.and_: ast.BitAnd, operator.or_: ast.BitOr, operator.xor: ast.BitXor,
    operator.matmul: ast.MatMult,
}
_COMPARE = {
    operator.lt: ast.Lt, operator.le: ast.LtE, operator.gt: ast.Gt, operator.ge: ast.GtE, operator.eq: ast.Eq,
    operator.ne: ast.NotEq, operator.is_: ast.Is, operator.is_not: ast.IsNot,
}
_UNARY = {operator.neg: ast.USub, operator.pos: ast.UAdd, operator.invert: ast.Invert, operator.not_: ast.Not}

#: effect levels of an expression, for moving it past other statements: a pure value, a read of memory, anything
PURE, READS, EFFECTS = 0, 1, 2

#: the names of the helpers a rebuilt function may call (``numbakern.sim.typed`` provides them)
ITER_NEXT = "__nk_iter_next"
#: a variable numba leaves undefined on a path (it is never read there): a value of any type, zero
UNDEFINED = "__nk_undefined"
#: the prefix of a value an inlined device function reads: ``__nk_inlined_<its index in the request>_<its name>``
INLINED = "__nk_inlined_"
#: a function defined inside the rebuilt one: ``__nk_make_function(path, closure values, defaults)``, ``path`` the
#: indices that lead through ``co_consts`` from the function's own code to the nested code (``nested_code_path``)
MAKE_FUNCTION = "__nk_make_function"


#: the node classes of the rebuilt text that carry each kind of fact
CLASSES = {
    "binop": ("BinOp", "Compare"),
    "unary": ("UnaryOp",),
    "call": ("Call",),
    "getitem": ("Subscript",),
    "static_getitem": ("Subscript",),
    "typed_getitem": ("Subscript",),
    "getattr": ("Attribute",),
    "setitem": ("Subscript",),
    "global": ("Name",),
    "const": ("Constant",),
    "return": ("Return",),
}


def node_key(node: Any) -> str:
    """The key of a node of the rebuilt text: its span there and its class (several nodes can share a span)."""
    return f"{node.lineno}:{node.col_offset}:{node.end_lineno}:{node.end_col_offset}:{type(node).__name__}"


class DecompileError(Exception):
    """Something of the typed IR that has no Python here; the message names it and the kernel's line."""


class _Unstructured(Exception):
    """Control flow that structured statements cannot express: the function runs as a loop over its blocks."""


def rebuild(cres, record_of, codes) -> dict:
    """The Python of ``cres`` (a numba-cuda compile result): ``{"text", "positions", "nodes", "variables",
    "reads"}`` (``variables``: each name of the text and numba's variables it holds).

    ``record_of(item)``: the facts (``[(kind, fact), ...]``) numba's typing gave an IR expression or statement;
    ``codes``: the ``CodeRegistry`` that tagged the IR with bytecode positions."""
    return _Decompiler(cres, record_of, codes).run()


class _Node:
    """Where an AST node came from: the IR item (for its facts) and its source position."""

    __slots__ = ("item", "pos")

    def __init__(self, item, pos):
        self.item, self.pos = item, pos


class _Decompiler:
    def __init__(self, cres, record_of, codes):
        analysis, ir = typer.module("core.analysis"), typer.module("core.ir")

        self.ir = ir
        self.cres = cres
        self.record_of = record_of
        self.codes = codes
        annotation = cres.type_annotation
        self.func_id = annotation.func_id
        self.typemap = cres.fndesc.typemap
        self.pyfunc = self.func_id.func
        self.filename = self.pyfunc.__code__.co_filename
        self.blocks = annotation.blocks
        self.cfg = analysis.compute_cfg_from_blocks(self.blocks)
        dead = set(self.cfg.dead_nodes())
        self.labels = [label for label in sorted(self.blocks) if label not in dead]
        self.origin: dict[int, _Node] = {}  # id(AST node) -> where it came from
        self._keep: list = []  # every node given an origin, so that no id in origin is reused by a later node
        self.reads: set[str] = set()  # global and closure names the text reads

    # -- the whole function ------------------------------------------------------------------------------------------

    def run(self) -> dict:
        self._uses()
        self._names()
        self._for_loops()
        self._plan()
        try:
            body = _Structurer(self).function()
        except _Unstructured:
            body = self._dispatch_loop()
        fdef = self._function_def(body)
        return self._text(fdef)

    def _function_def(self, body: list) -> ast.FunctionDef:
        code = self.pyfunc.__code__
        names = code.co_varnames
        nargs, nposonly, nkwonly = code.co_argcount, code.co_posonlyargcount, code.co_kwonlyargcount
        flags = code.co_flags
        at = nargs + nkwonly
        vararg = names[at] if flags & 0x04 else None
        kwarg = names[at + (1 if vararg else 0)] if flags & 0x08 else None
        args = ast.arguments(
            posonlyargs=[ast.arg(n) for n in names[:nposonly]], args=[ast.arg(n) for n in names[nposonly:nargs]],
            vararg=ast.arg(vararg) if vararg else None, kwonlyargs=[ast.arg(n) for n in names[nargs:at]],
            kw_defaults=[None] * nkwonly, kwarg=ast.arg(kwarg) if kwarg else None, defaults=[])
        name = self.pyfunc.__name__
        if not name.isidentifier():  # a lambda numba made a function of its own (``_made_function``)
            name = "_nk_" + "".join(c if c.isalnum() else "_" for c in name)
        fdef = ast.FunctionDef(name=name, args=args, body=body or [ast.Pass()], decorator_list=[],
                               returns=None, type_comment=None)
        if "type_params" in ast.FunctionDef._fields:  # Python 3.12+
            setattr(fdef, "type_params", [])  # noqa: B010 - a field pyright's 3.11 stubs do not have
        line = code.co_firstlineno
        self._at(fdef, None, (line, 0, None, None))
        return fdef

    def _text(self, fdef: ast.FunctionDef) -> dict:

        module = ast.Module([fdef], [])
        ast.fix_missing_locations(module)
        text = ast.unparse(fdef) + "\n"
        parsed = ast.parse(text).body[0]
        nodes: dict[str, dict[str, list]] = {}
        positions = []
        built = list(ast.walk(fdef))
        again = list(ast.walk(parsed))
        if len(built) != len(again):
            raise DecompileError(f"the rebuilt Python of '{self.pyfunc.__name__}' does not read back as built")
        parent_pos = {}
        for a, b in zip(built, again):
            if type(a) is not type(b):
                raise DecompileError(f"the rebuilt Python of '{self.pyfunc.__name__}' does not read back as built "
                                     f"({type(a).__name__} became {type(b).__name__})")
            origin = self.origin.get(id(a))
            pos = origin.pos if origin is not None and origin.pos is not None else parent_pos.get(id(a))
            for child in ast.iter_child_nodes(a):
                parent_pos[id(child)] = pos
            positions.append(list(pos) if pos is not None else None)
            if origin is not None and origin.item is not None:
                for kind, fact in self.record_of(origin.item):
                    kind = "binop" if kind == "inplace_binop" else kind
                    if type(b).__name__ not in CLASSES[kind] or isinstance(b, ast.Subscript) and \
                            (kind == "setitem") != isinstance(b.ctx, ast.Store):
                        continue
                    nodes.setdefault(node_key(b), {}).setdefault(kind, []).append(fact)
        variables: dict[str, list[str]] = {}
        for var, py in self.pyname.items():
            if var in self.typemap:
                variables.setdefault(py, []).append(var)
        return {"text": text, "positions": positions, "nodes": nodes, "variables": variables,
                "reads": sorted(self.reads)}

    # -- names ---------------------------------------------------------------------------------------------------

    def _names(self) -> None:
        """A Python name for every IR variable. numba's versions of the author's ``x`` (``x``, ``x.1``, ...) of one
        type share the name ``x`` wherever their values are never live at once (so ``acc += v`` in a loop stays
        one variable, not a copy per pass); the others are ``x_1``, ``x_2``, ...; numba's temporaries are ``_t0``,
        ``_t1``, ... (none of them a name the function reads from outside)."""
        import builtins

        ir = self.ir
        from .closures import free_names

        taken = set(self.pyfunc.__code__.co_names) | set(free_names(self.pyfunc)) | set(dir(builtins))
        for block in self.blocks.values():
            for stmt in block.body:
                value: Any = getattr(stmt, "value", None)
                if isinstance(value, (ir.Global, ir.FreeVar)):
                    taken.add(value.name)
        params = list(self.func_id.arg_names)
        taken.update(params)
        self.pyname: dict[str, str] = {p: p for p in params}
        every = sorted({v.name for b in self.blocks.values() for s in b.body for v in s.list_vars()})
        for group in self._coalesced([v for v in every if not v.startswith("$") and not v.startswith("arg.")]):
            named = [v for v in group if v in params]
            if named:
                name = named[0]
            else:
                base = group[0].partition(".")[0]
                base = base if base.isidentifier() and not keyword.iskeyword(base) else "_v"
                name, n = base, 0
                while name in taken:
                    n += 1
                    name = f"{base}_{n}"
                taken.add(name)
            for v in group:
                self.pyname[v] = name
        temps = 0
        for var in every:
            if var in self.pyname:
                continue
            name = f"_t{temps}"
            temps += 1
            while name in taken:
                name = f"_t{temps}"
                temps += 1
            taken.add(name)
            self.pyname[var] = name
        counts: dict[str, int] = {}
        for var, defs in self.defs.items():
            counts[self.pyname.get(var, var)] = counts.get(self.pyname.get(var, var), 0) + len(defs)
        self.assigned_once = {name for name, n in counts.items() if n == 1}

    def _coalesced(self, variables: list[str]) -> list[list[str]]:
        """The author's variables in groups that can share a name: versions of one variable, of one type, never
        live at the same time (a copy from one to the other aside)."""
        types = typer.module("types")

        ir = self.ir
        user = set(variables)
        live_in: dict[int, set] = {label: set() for label in self.labels}
        uses: dict[int, set] = {}
        kills: dict[int, set] = {}
        for label in self.labels:
            used, killed = set(), set()
            for s in self.body[label]:
                used |= {v.name for v in _ordered_operands(ir, s) if v.name in user} - killed
                if isinstance(s, ir.Assign) and s.target.name in user:
                    killed.add(s.target.name)
            uses[label], kills[label] = used, killed
        succs = {label: [t for t, _ in self.cfg.successors(label)] for label in self.labels}
        changed = True
        while changed:
            changed = False
            for label in reversed(self.labels):
                out = set().union(*(live_in.get(t, set()) for t in succs[label]))
                new = uses[label] | (out - kills[label])
                if new != live_in[label]:
                    live_in[label], changed = new, True
        base = {v: v.partition(".")[0] for v in variables}
        clash: dict[str, set] = {v: set() for v in variables}
        for label in self.labels:
            live = set().union(*(live_in.get(t, set()) for t in succs[label]))
            for s in reversed(self.body[label]):
                if isinstance(s, ir.Assign) and s.target.name in user:
                    d = s.target.name
                    copied = s.value.name if isinstance(s.value, ir.Var) else None
                    for v in live:
                        if v != d and v != copied and base[v] == base[d]:
                            clash[d].add(v)
                            clash[v].add(d)
                    live.discard(d)
                live |= {v.name for v in _ordered_operands(ir, s) if v.name in user}
        groups: list[tuple[object, list[str]]] = []
        for v in variables:
            t = types.unliteral(self.typemap[v]) if v in self.typemap else None
            for gt, members in groups:
                if gt == t and t is not None and base[members[0]] == base[v] and not (clash[v] & set(members)):
                    members.append(v)
                    break
            else:
                groups.append((t, [v]))
        return [members for _, members in groups]

    # -- uses and definitions ------------------------------------------------------------------------------------

    def _uses(self) -> None:
        ir = self.ir
        self.defs: dict[str, list] = {}  # var -> [(label, index)]
        self.uses: dict[str, list] = {}  # var -> [(label, index)]
        self.body: dict[int, list] = {}  # label -> statements, Del left out; the terminator last
        for label in self.labels:
            stmts = [s for s in self.blocks[label].body if not isinstance(s, ir.Del)]
            self.body[label] = stmts
            for i, stmt in enumerate(stmts):
                if isinstance(stmt, ir.Assign):
                    self.defs.setdefault(stmt.target.name, []).append((label, i))
                for var in _operands(ir, stmt):
                    self.uses.setdefault(var.name, []).append((label, i))

    def _def(self, var: str) -> Any:
        found = self.defs.get(var)
        if not found or len(found) != 1:
            return None
        label, i = found[0]
        return self.body[label][i]

    # -- for loops: numba's iteration protocol back to ``for v in iterable`` --------------------------------------

    def _for_loops(self) -> None:
        """``loops[header]``: ``(iterable var, target var, body entry, exit, suppressed statements)`` of every loop
        whose header is numba's ``iternext`` / ``pair_first`` / ``pair_second`` / branch."""
        ir = self.ir
        self.for_loops: dict[int, tuple] = {}
        self.suppressed: set[tuple[int, int]] = set()  # (label, index) of statements a for statement replaces
        self.sunk: dict[int, tuple[str, int, Any]] = {}  # preheader label -> (iterable's name, header, iterable)
        loops = self.cfg.loops()
        for header, loop in loops.items():
            test = header
            stmts = self.body.get(header)
            if stmts and len(stmts) == 1 and isinstance(stmts[0], ir.Jump) and stmts[0].target in loop.body and \
                    {p for p, _ in self.cfg.predecessors(stmts[0].target)} == {header}:
                test = stmts[0].target  # the header only jumps to the block that advances the iterator
                stmts = self.body.get(test)
            if not stmts or not isinstance(stmts[-1], ir.Branch):
                continue
            branch = stmts[-1]
            nxt = first = second = None
            copies: dict[str, str] = {}
            ok = True
            for s in stmts[:-1]:
                if not isinstance(s, ir.Assign):
                    ok = False
                    break
                v = s.value
                if isinstance(v, ir.Expr) and v.op == "iternext" and nxt is None:
                    nxt = s
                elif isinstance(v, ir.Expr) and v.op == "pair_first" and nxt is not None and \
                        v.value.name == nxt.target.name:
                    first = s
                elif isinstance(v, ir.Expr) and v.op == "pair_second" and nxt is not None and \
                        v.value.name == nxt.target.name:
                    second = s
                elif isinstance(v, ir.Var) and first is not None and \
                        (v.name == first.target.name or v.name in copies):
                    copies[s.target.name] = v.name
                else:
                    ok = False
                    break
            if not ok or nxt is None or first is None or second is None or branch.cond.name != second.target.name:
                continue
            body_entry, exit_ = branch.truebr, branch.falsebr
            if body_entry not in loop.body or exit_ in loop.body:
                continue
            if {p for p, _ in self.cfg.predecessors(body_entry)} != {test}:
                continue
            entries = loop.entries
            if len(entries) != 1:
                continue
            (pre,) = entries
            # every value the header computes but the loop variable is used in the header only
            target = self._last_copy(first, copies)
            values = {nxt.target.name, first.target.name, second.target.name, *copies} - {target}
            if any(u[0] != test for v in values for u in self.uses.get(v, ())):
                continue
            entry_stmts = self.body[body_entry]
            assigned = None
            if entry_stmts and isinstance(entry_stmts[0], ir.Assign) and isinstance(entry_stmts[0].value, ir.Var) \
                    and entry_stmts[0].value.name == target and len(self.uses.get(target, ())) == 1:
                assigned = entry_stmts[0].target.name  # `for i in ...` instead of `for _t in ...: i = _t`
            # the iterator: `it = getiter(iterable)` and copies of it, in the preheader only
            it = nxt.value.value.name
            chain = []
            while True:
                d = self.defs.get(it)
                if not d or len(d) != 1 or d[0][0] != pre:
                    break
                s = self.body[pre][d[0][1]]
                chain.append(d[0])
                if isinstance(s.value, ir.Var):
                    it = s.value.name
                    continue
                break
            if not chain:
                continue
            getiter = self.body[pre][chain[-1][1]]
            if not (isinstance(getiter.value, ir.Expr) and getiter.value.op == "getiter"):
                continue
            if any(len(self.uses.get(self.body[pre][i].target.name, ())) != 1 for _, i in chain):
                continue
            iterable = getiter.value.value
            self.for_loops[header] = (iterable, assigned or target, body_entry, exit_, assigned is not None, pre)
            self.suppressed.update(chain)
            self.suppressed.update((test, i) for i in range(len(stmts)))
            self.suppressed.update((header, i) for i in range(len(self.body[header])))
            if assigned is not None:
                self.suppressed.add((body_entry, 0))
            self.sunk[pre] = (iterable.name, header, iterable)

    @staticmethod
    def _last_copy(first, copies: dict) -> str:
        name = first.target.name
        changed = True
        while changed:
            changed = False
            for dst, src in copies.items():
                if src == name:
                    name, changed = dst, True
                    break
        return name

    # -- which temporaries fold back into the expression that uses them ------------------------------------------

    def _plan(self) -> None:
        """``self.inline``: temporaries built into their one use. Constants, globals and closure values always;
        another temporary when its one use is in its block and nothing between its definition and that use
        could see the difference (a write of what it reads, a call or store between a read and its use)."""
        ir = self.ir
        self.leaf: set[str] = set()
        self.alias: dict[str, Any] = {}  # a temporary that copies a variable assigned once: that variable
        for var, defs in self.defs.items():
            if len(defs) != 1 or not var.startswith("$"):
                continue
            s = self._def(var)
            if isinstance(s.value, (ir.Const, ir.Global, ir.FreeVar)) and _literal_ok(s.value):
                self.leaf.add(var)
            elif isinstance(s.value, ir.Var) and len(self.defs.get(s.value.name, ())) == 1 and \
                    self.pyname[s.value.name] in self.assigned_once and \
                    (not s.value.name.startswith("$") or len(self.uses.get(s.value.name, ())) > 1):
                # (a temporary used by this copy alone is folded into it instead: it stays where it was computed)
                self.alias[var] = s.value
        candidates = set()
        for var, defs in self.defs.items():
            if not var.startswith("$") or var in self.leaf or var in self.alias or len(defs) != 1:
                continue
            (label, i) = defs[0]
            if (label, i) in self.suppressed:
                continue
            uses = self.uses.get(var, [])
            if not (len(uses) == 1 and uses[0][0] == label and uses[0][1] > i):
                continue
            value = self.body[label][i].value
            if isinstance(value, ir.Var) or (isinstance(value, ir.Expr) and value.op in _FOLDABLE):
                if isinstance(value, ir.Expr) and value.op == "inplace_binop" and self._is_array(value.lhs.name):
                    continue
                candidates.add(var)
        self.inline: set[str] = set()
        for label in self.labels:
            self._plan_block(label, candidates)

    def _plan_block(self, label: int, candidates: set[str]) -> None:
        """One pass over a block, as a stack machine would: a candidate waits (pending) until its use; a statement
        that stays a statement is checked against every pending value it would be moved past, and a value that
        must not move is assigned where numba computed it (with whatever was folded into it)."""
        ir = self.ir
        stmts = self.body[label]
        pending: list[list] = []  # [var, definition index, reads, level], in definition order
        sunk = self.sunk.get(label)
        end = len(stmts)
        for k in range(end + 1):
            if k == end:
                if sunk is None:
                    break
                operands, s = [sunk[2]], None  # the for statement that follows the block reads its iterable
            else:
                if (label, k) in self.suppressed:
                    continue
                s = stmts[k]
                operands = list(_ordered_operands(ir, s))
            names = [o.name for o in operands]
            consumed = [p for p in pending if p[0] in names]
            # folded values are evaluated in the statement's order: it must be the order numba computed them in
            while True:
                order = sorted(consumed, key=lambda p: names.index(p[0]))
                inverted = [a for a, b in zip(order, order[1:]) if a[1] > b[1]]
                if not inverted:
                    break
                late = min((b for a, b in zip(order, order[1:]) if a[1] > b[1]), key=lambda p: p[1])
                self._demote(late, pending)
                consumed = [p for p in pending if p[0] in names]
            reads: set[str] = {self.pyname.get(n) or n for n in names if n not in {p[0] for p in consumed}}
            level = self._own_level(s) if s is not None else PURE
            for p in consumed:
                reads |= p[2]
                level = max(level, p[3])
                self.inline.add(p[0])
                pending.remove(p)
            if s is not None and isinstance(s, ir.Assign) and s.target.name in candidates:
                pending.append([s.target.name, k, reads, level])
                continue
            if s is None:
                continue
            writes = {self.pyname[s.target.name]} if isinstance(s, ir.Assign) else set()
            store = not isinstance(s, (ir.Assign, ir.Branch, ir.Jump, ir.Return))
            for p in list(pending):
                if p in pending and _conflict(p, writes, level, store):
                    self._demote(p, pending)

    def _demote(self, p: list, pending: list) -> None:
        """``p`` is assigned where it is defined: the values pending from before it are moved past it."""
        pending.remove(p)
        for q in list(pending):
            if q in pending and q[1] < p[1] and _conflict(q, set(), p[3], False):
                self._demote(q, pending)

    def _own_level(self, s) -> int:
        """The effect level of a statement's own operation (its operands' aside)."""
        ir = self.ir
        if isinstance(s, ir.Assign):
            value = s.value
            if isinstance(value, ir.Expr):
                if value.op in ("getitem", "static_getitem", "typed_getitem"):
                    return READS
                if value.op == "call":
                    return PURE if self._pure_call(value) else EFFECTS
                if value.op in _PURE_OPS:
                    return PURE
                return EFFECTS
            return PURE
        if isinstance(s, (ir.Branch, ir.Jump, ir.Return)):
            return PURE
        return EFFECTS

    def _pure_call(self, call) -> bool:
        """A call with no effect on memory: a cast, a builtin or math function numba computes in registers."""
        types = typer.module("types")

        fnty = self.typemap.get(call.func.name)
        if isinstance(fnty, types.NumberClass):
            return True
        key = getattr(fnty, "typing_key", None)
        if key in (bool, int, float, abs, min, max, range, len, slice, round, complex, divmod, pow):
            return True
        return getattr(key, "__module__", None) == "math"

    def _is_array(self, var: str) -> bool:
        types = typer.module("types")

        return isinstance(self.typemap.get(var), types.Array)

    # -- expressions ---------------------------------------------------------------------------------------------

    def _pos(self, item):
        loc = getattr(item, "loc", None)
        if loc is None:
            return None
        span = self.codes.position(getattr(loc, "col", None))
        if span is not None:
            from .compile import CODE_STRIDE

            code = self.codes.codes[loc.col // CODE_STRIDE]
            # code numba inlined from another file has no line in this one: it takes its statement's position
            return span if code.co_filename == self.filename else None
        if loc.filename != self.filename:
            return None
        return (loc.line, 0, None, None) if loc.line else None

    def _at(self, node, item, pos=None):
        self.origin[id(node)] = _Node(item, pos if pos is not None else self._pos(item))
        self._keep.append(node)
        return node

    def var(self, v, ctx=None) -> ast.expr:
        """The value of IR variable ``v``: its folded expression, or its name."""
        ir = self.ir
        while v.name in self.alias:
            v = self.alias[v.name]
        if v.name in self.leaf:
            return self.value(self._def(v.name).value)
        if v.name in self.inline:
            s = self._def(v.name)
            return self.value(s.value)
        name = self.pyname.get(v.name)
        if name is None:
            raise DecompileError(f"variable {v.name} of '{self.pyfunc.__name__}' has no definition")
        node = ast.Name(name, ctx or ast.Load())
        return self._at(node, None, self._pos(v) if isinstance(v, ir.Var) else None)

    def value(self, value) -> ast.expr:
        ir = self.ir
        if isinstance(value, ir.Var):
            return self.var(value)
        if isinstance(value, ir.Const):
            return self._at(self._constant(value.value, value), value)
        if isinstance(value, (ir.Global, ir.FreeVar)):
            made = self._made_function(value)
            if made is not None:
                return self._at(made, value)
            name = self._outside_name(value)
            self.reads.add(name)
            return self._at(ast.Name(name, ast.Load()), value)
        if isinstance(value, ir.Arg):
            return self._at(ast.Name(value.name, ast.Load()), None)
        if isinstance(value, ir.Expr):
            method = getattr(self, "expr_" + value.op, None)
            if method is None:
                raise DecompileError(self._where(value) + f"numba's '{value.op}' operation has no Python here")
            node = method(value)
            if id(node) in self.origin:  # an operand standing for the whole (numba's bool() of a bool)
                return node
            return self._at(node, value)
        raise DecompileError(self._where(value) + f"{type(value).__name__} has no Python here")

    def _outside_name(self, value) -> str:
        """The name the text reads a global or closure value by: its own, or ``INLINED`` + ``<i>_<name>`` where it
        belongs to the request's device function ``i``, whose body numba-cuda-mlir inlined into this function
        before typing (it inlines small device functions): the caller finds it in that function's globals."""
        import builtins

        from .compile import CODE_STRIDE
        from .request import device_index_of_code

        col = getattr(value.loc, "col", None)
        if getattr(builtins, value.name, None) is value.value and value.name not in self.pyfunc.__globals__:
            return value.name  # a builtin (`range`, `bool`): every function reads the same one
        if isinstance(col, int) and col >= 0 and col // CODE_STRIDE < len(self.codes.codes):
            code = self.codes.codes[col // CODE_STRIDE]
            index = device_index_of_code(code) if code is not self.pyfunc.__code__ else None
            if index is not None:
                return f"{INLINED}{index}_{value.name}"
        return value.name

    def _made_function(self, value: Any) -> ast.expr | None:
        """``__nk_make_function(...)`` for a function defined inside this one, else None.

        numba's ``make_function`` (``MAKE_FUNCTION`` of the function's code constant, with the tuple of the cells
        ``LOAD_CLOSURE`` loaded) is inlined where the function is only called; where it escapes (passed to a device
        function or an ``@overload``), numba-cuda's ``MakeFunctionToJitFunction`` makes it a global: a
        ``cuda.jit`` function of the nested code, its free variables' values (constants, or numba refuses) baked
        into its closure and its defaults into its signature. That global lives only in the helper, so the text
        makes the function again in the caller's process from the caller's own code constant and those values."""
        fn: Any = getattr(value.value, "py_func", None)
        code = getattr(fn, "__code__", None)
        if code is None or isinstance(value, self.ir.FreeVar):
            return None
        path = nested_code_path(self.pyfunc.__code__, code)
        if path is None:
            return None
        cells = closures.cell_values(fn)
        self.reads.add(MAKE_FUNCTION)
        return ast.Call(self._at(ast.Name(MAKE_FUNCTION, ast.Load()), None),
                        [self._at(self._constant(path, value), None), self._at(self._constant(cells, value), None),
                         self._at(self._constant(fn.__defaults__, value), None)], [])

    def _where(self, item) -> str:
        loc = getattr(item, "loc", None)
        line = getattr(loc, "line", None)
        return f"{self.filename}:{line}: " if line else f"{self.filename}: "

    def _constant(self, v, item) -> ast.expr:
        if isinstance(v, tuple):
            return ast.Tuple([self._at(self._constant(x, item), item) for x in v], ast.Load())
        if isinstance(v, slice):
            return ast.Call(self._at(ast.Name("slice", ast.Load()), None),
                            [self._at(self._constant(x, item), item) for x in (v.start, v.stop, v.step)], [])
        if isinstance(v, bool) or v is None or isinstance(v, (str, bytes)) or v is Ellipsis:
            return ast.Constant(v)
        if isinstance(v, (int, float, complex)):
            if isinstance(v, float) and math.isnan(v):
                return ast.BinOp(ast.Constant(math.inf), ast.Sub(), ast.Constant(math.inf))
            if isinstance(v, (int, float)) and (v < 0 or (v == 0 and math.copysign(1, v) < 0)):
                return ast.UnaryOp(ast.USub(), self._at(ast.Constant(-v), item))
            if isinstance(v, complex) and (v.real != 0 or math.copysign(1, v.imag) < 0):
                return ast.Call(self._at(ast.Name("complex", ast.Load()), None),
                                [self._at(self._constant(v.real, item), item),
                                 self._at(self._constant(v.imag, item), item)], [])
            return ast.Constant(v)
        if type(v).__module__ == "numpy" and hasattr(v, "dtype") and getattr(v, "shape", None) == ():
            self.reads.add("__nk_numpy")
            return ast.Call(ast.Attribute(self._at(ast.Name("__nk_numpy", ast.Load()), None), type(v).__name__,
                                          ast.Load()), [self._at(self._constant(v.item(), item), item)], [])
        if v is self.ir.UNDEFINED:
            return ast.Name(UNDEFINED, ast.Load())
        raise DecompileError(self._where(item) + f"the constant {v!r} ({type(v).__name__}) has no Python here")

    def expr_binop(self, e) -> ast.expr:
        left, right = self.var(e.lhs), self.var(e.rhs)
        if e.fn in _BINARY:
            return ast.BinOp(left, _BINARY[e.fn](), right)
        if e.fn in _COMPARE:
            return ast.Compare(left, [_COMPARE[e.fn]()], [right])
        if e.fn is operator.contains:
            return ast.Compare(right, [ast.In()], [left])
        raise DecompileError(self._where(e) + f"the operator {e.fn} has no Python here")

    def expr_inplace_binop(self, e) -> ast.expr:
        left, right = self.var(e.lhs), self.var(e.rhs)
        if e.immutable_fn in _BINARY:
            return ast.BinOp(left, _BINARY[e.immutable_fn](), right)
        raise DecompileError(self._where(e) + f"the operator {e.fn} has no Python here")

    def expr_unary(self, e) -> ast.expr:
        op = _UNARY.get(e.fn)
        if op is None:
            raise DecompileError(self._where(e) + f"the operator {e.fn} has no Python here")
        return ast.UnaryOp(op(), self.var(e.value))

    def expr_call(self, e) -> ast.expr:
        types = typer.module("types")

        if self.typemap.get(e.func.name) is not None and len(e.args) == 1 and not e.kws and e.vararg is None and \
                getattr(self.typemap[e.func.name], "typing_key", None) is bool and \
                isinstance(self.typemap.get(e.args[0].name), types.Boolean):
            return self.var(e.args[0])  # numba's bool() around a condition that is a bool already
        func = self.var(e.func)
        args = [self.var(a) for a in e.args]
        if e.vararg is not None:
            args.append(ast.Starred(self.var(e.vararg), ast.Load()))
        keywords = [ast.keyword(k, self.var(v)) for k, v in e.kws]
        if e.varkwarg is not None:
            keywords.append(ast.keyword(None, self.var(e.varkwarg)))
        return ast.Call(func, args, keywords)

    def expr_getattr(self, e) -> ast.expr:
        return ast.Attribute(self.var(e.value), e.attr, ast.Load())

    def _index(self, e) -> ast.expr:
        index_var = _field(e, "index_var")
        if index_var is not None:
            return self.var(index_var)
        index = _field(e, "index")
        if hasattr(index, "name") and hasattr(index, "scope"):
            return self.var(index)
        if isinstance(index, slice):
            return ast.Slice(*(self._at(self._constant(x, e), e) if x is not None else None
                               for x in (index.start, index.stop, index.step)))
        return self._constant(index, e)

    def expr_getitem(self, e) -> ast.expr:
        value = self.var(e.value)
        return ast.Subscript(value, self.var(e.index), ast.Load())

    def expr_static_getitem(self, e) -> ast.expr:
        value = self.var(e.value)
        return ast.Subscript(value, self._index(e), ast.Load())

    def expr_typed_getitem(self, e) -> ast.expr:
        value = self.var(e.value)
        return ast.Subscript(value, self.var(e.index), ast.Load())

    def expr_build_tuple(self, e) -> ast.expr:
        return ast.Tuple([self.var(v) for v in e.items], ast.Load())

    def expr_build_list(self, e) -> ast.expr:
        return ast.List([self.var(v) for v in e.items], ast.Load())

    def expr_exhaust_iter(self, e) -> ast.expr:
        types = typer.module("types")

        if isinstance(self.typemap.get(e.value.name), types.BaseTuple):
            return self.var(e.value)
        return ast.Call(self._at(ast.Name("tuple", ast.Load()), None), [self.var(e.value)], [])

    def expr_cast(self, e) -> ast.expr:
        return self.var(e.value)

    def expr_getiter(self, e) -> ast.expr:
        return ast.Call(self._at(ast.Name("iter", ast.Load()), None), [self.var(e.value)], [])

    def expr_iternext(self, e) -> ast.expr:
        self.reads.add(ITER_NEXT)
        return ast.Call(self._at(ast.Name(ITER_NEXT, ast.Load()), None), [self.var(e.value)], [])

    def expr_pair_first(self, e) -> ast.expr:
        return ast.Subscript(self.var(e.value), ast.Constant(0), ast.Load())

    def expr_pair_second(self, e) -> ast.expr:
        return ast.Subscript(self.var(e.value), ast.Constant(1), ast.Load())

    def expr_undef(self, e) -> ast.expr:
        return ast.Name(UNDEFINED, ast.Load())

    def expr_null(self, e) -> ast.expr:
        return ast.Name(UNDEFINED, ast.Load())

    # -- statements ----------------------------------------------------------------------------------------------

    def statements(self, label: int) -> list[ast.stmt]:
        """A block's statements, its terminator left out (the structurer turns it into control flow)."""
        ir = self.ir
        out = []
        for i, s in enumerate(self.body[label][:-1]):
            if (label, i) in self.suppressed:
                continue
            if isinstance(s, ir.Assign):
                name = s.target.name
                if name in self.inline or name in self.leaf or name in self.alias:
                    continue
                if isinstance(s.value, ir.Arg) and self.pyname[name] == s.value.name:
                    continue
                if name.startswith("$") and not self.uses.get(name) and isinstance(s.value, ir.Const):
                    continue  # a constant nothing reads (the code of a nested function numba made a global)
                value = self.value(s.value)
                if name.startswith("$") and not self.uses.get(name):
                    # a value nothing reads, computed for its effect: `cuda.syncthreads()`, or what it may raise
                    # (`ary.shape[-x]` out of range)
                    if isinstance(s.value, ir.Expr):
                        out.append(self._at(ast.Expr(value), s))
                    continue
                target = self._at(ast.Name(self.pyname[name], ast.Store()), None, self._pos(s.target))
                if isinstance(value, ast.Name) and value.id == target.id:
                    continue
                out.append(self._at(ast.Assign([target], value), s))
            elif isinstance(s, ir.SetItem):
                value = self.var(s.value)
                target = self.var(s.target)
                index = self.var(s.index)
                out.append(self._at(ast.Assign([self._at(ast.Subscript(target, index, ast.Store()), s)], value), s))
            elif isinstance(s, ir.StaticSetItem):
                value = self.var(s.value)
                target = self.var(s.target)
                index = self._index(s)
                out.append(self._at(ast.Assign([self._at(ast.Subscript(target, index, ast.Store()), s)], value), s))
            elif isinstance(s, ir.SetAttr):
                value = self.var(s.value)
                target = ast.Attribute(self.var(s.target), s.attr, ast.Store())
                out.append(self._at(ast.Assign([self._at(target, None)], value), s))
            elif isinstance(s, ir.Print):
                args = [self.var(a) for a in s.args]
                if s.vararg is not None:
                    args.append(ast.Starred(self.var(s.vararg), ast.Load()))
                call = self._at(ast.Call(self._at(ast.Name("print", ast.Load()), None), args, []), s)
                out.append(self._at(ast.Expr(call), s))
            elif isinstance(s, (ir.EnterWith, ir.PopBlock)):
                continue  # a with-context numba itself removed (its effect is in the IR already)
            else:
                raise DecompileError(self._where(s) + f"numba's {type(s).__name__} statement has no Python here")
        return out

    def condition(self, label: int) -> ast.expr:
        branch = self.body[label][-1]
        return self.var(branch.cond)

    def terminal(self, label: int) -> list[ast.stmt] | None:
        """A return or raise ending the block as Python statements; None for a jump or branch."""
        ir = self.ir
        t = self.body[label][-1]
        if isinstance(t, ir.Return):
            value = self.var(t.value)
            if isinstance(value, ast.Constant) and value.value is None:
                value = None
            return [self._at(ast.Return(value), t)]
        if isinstance(t, ir.Raise):
            exc = self.var(t.exception) if t.exception is not None else None
            return [self._at(ast.Raise(exc, None), t)]
        if isinstance(t, (ir.StaticRaise, ir.DynamicRaise)):
            if t.exc_class is None:
                return [self._at(ast.Raise(None, None), t)]
            cls = self._class_name(t.exc_class)
            if t.exc_args is None:
                return [self._at(ast.Raise(cls, None), t)]
            args = [self.var(a) if isinstance(a, ir.Var) else self._at(self._constant(a, t), t) for a in t.exc_args]
            return [self._at(ast.Raise(self._at(ast.Call(cls, args, []), t), None), t)]
        return None

    def _class_name(self, cls) -> ast.expr:
        import builtins

        from .closures import lookup

        name = cls.__name__
        if getattr(builtins, name, None) is cls or lookup(self.pyfunc, name) is cls:
            self.reads.add(name)
            return self._at(ast.Name(name, ast.Load()), None)
        self.reads.add(f"{cls.__module__}:{cls.__qualname__}")
        module = ast.Constant(cls.__module__)
        return self._at(ast.Call(ast.Name("__nk_import", ast.Load()), [module, ast.Constant(cls.__qualname__)], []),
                        None)

    def jump_target(self, label: int):
        ir = self.ir
        t = self.body[label][-1]
        if isinstance(t, ir.Jump):
            return t.target
        return None

    # -- a graph structured statements cannot express --------------------------------------------------------------

    def _dispatch_loop(self) -> list[ast.stmt]:
        """Every block as an arm of ``if _nk_block == label``, in a loop: correct for any graph, slower."""
        ir = self.ir
        self.suppressed = set()
        self.sunk = {}
        self._plan()
        state = "_nk_block"
        arms = []
        for label in self.labels:
            body = self.statements(label)
            t = self.body[label][-1]
            end = self.terminal(label)
            if end is not None:
                body += end
            elif isinstance(t, ir.Jump):
                body.append(ast.Assign([ast.Name(state, ast.Store())], ast.Constant(t.target)))
                body.append(ast.Continue())
            elif isinstance(t, ir.Branch):
                body.append(ast.If(self.var(t.cond),
                                   [ast.Assign([ast.Name(state, ast.Store())], ast.Constant(t.truebr))],
                                   [ast.Assign([ast.Name(state, ast.Store())], ast.Constant(t.falsebr))]))
                body.append(ast.Continue())
            test = ast.Compare(ast.Name(state, ast.Load()), [ast.Eq()], [ast.Constant(label)])
            arms.append((test, body))
        chain: list[ast.stmt] = []
        for test, body in reversed(arms):
            chain = [ast.If(test, body, chain)]
        return [ast.Assign([ast.Name(state, ast.Store())], ast.Constant(self.labels[0])),
                ast.While(ast.Constant(True), chain, [])]


def nested_code_path(root, code) -> tuple[int, ...] | None:
    """The indices leading through ``co_consts`` from code object ``root`` to ``code`` (a function defined inside
    ``root``'s function, or inside a function defined there), found by identity, else by name and first line."""
    def walk(at, match):
        for i, c in enumerate(at.co_consts):
            if isinstance(c, type(root)):
                if match(c):
                    return (i,)
                deeper = walk(c, match)
                if deeper is not None:
                    return (i, *deeper)
        return None

    return walk(root, lambda c: c is code) or walk(root, lambda c: (
        c.co_name, c.co_firstlineno, c.co_filename) == (code.co_name, code.co_firstlineno, code.co_filename))


#: operations that neither read memory nor have an effect
_PURE_OPS = {"binop", "inplace_binop", "unary", "getattr", "build_tuple", "exhaust_iter", "cast", "pair_first",
             "pair_second"}


def _conflict(p: list, writes: set, level: int, store: bool) -> bool:
    """Whether pending value ``p`` (var, index, reads, level) must not move past a statement that assigns
    ``writes`` and has effect ``level`` (``store``: it writes memory)."""
    if writes & p[2]:
        return True
    if p[3] == EFFECTS:
        return level > PURE or store
    if p[3] == READS:
        return level == EFFECTS or store
    return False


#: IR operations a temporary may be folded from
_FOLDABLE = {"binop", "inplace_binop", "unary", "call", "getattr", "getitem", "static_getitem", "typed_getitem",
             "build_tuple", "exhaust_iter", "cast", "getiter", "pair_first", "pair_second", "iternext"}


def _literal_ok(value) -> bool:
    """A constant, global or closure value that can be written in place of its temporary."""
    import numpy as np

    v = getattr(value, "value", None)
    if not hasattr(value, "name"):  # a constant
        return isinstance(v, (bool, int, float, complex, str, bytes, tuple, slice, type(None), np.generic)) or \
            v is Ellipsis or type(v).__name__ == "UndefinedType"
    return value.name.isidentifier()


def _field(e, name):
    try:
        return getattr(e, name)
    except (AttributeError, KeyError):
        return None


def _operands(ir, item) -> list:
    """The variables a statement (or expression) reads."""
    return list(_ordered_operands(ir, item))


def _ordered_operands(ir, item):
    """The variables ``item`` reads, in the order the rebuilt Python evaluates them."""
    if isinstance(item, ir.Var):
        yield item
        return
    if isinstance(item, ir.Assign):
        yield from _ordered_operands(ir, item.value)
        return
    if isinstance(item, ir.Expr):
        op = item.op
        if op in ("binop", "inplace_binop"):
            if item.fn is operator.contains:
                yield item.rhs
                yield item.lhs
            else:
                yield item.lhs
                yield item.rhs
        elif op == "call":
            yield item.func
            yield from item.args
            if item.vararg is not None:
                yield item.vararg
            for _, v in item.kws:
                yield v
            if item.varkwarg is not None:
                yield item.varkwarg
        elif op in ("getitem", "typed_getitem"):
            yield item.value
            yield item.index
        elif op == "static_getitem":
            yield item.value
            if item.index_var is not None:
                yield item.index_var
        elif op in ("build_tuple", "build_list", "build_set"):
            yield from item.items
        elif op in ("unary", "getattr", "exhaust_iter", "cast", "getiter", "iternext", "pair_first", "pair_second"):
            yield item.value
        else:
            for v in item.list_vars():
                yield v
        return
    if isinstance(item, ir.SetItem):
        yield item.value
        yield item.target
        yield item.index
    elif isinstance(item, ir.StaticSetItem):
        yield item.value
        yield item.target
        if item.index_var is not None:
            yield item.index_var
    elif isinstance(item, ir.SetAttr):
        yield item.value
        yield item.target
    elif isinstance(item, ir.Branch):
        yield item.cond
    elif isinstance(item, ir.Return):
        yield item.value
    elif isinstance(item, ir.Raise):
        if item.exception is not None:
            yield item.exception
    elif isinstance(item, (ir.StaticRaise, ir.DynamicRaise)):
        for a in item.exc_args or ():
            if isinstance(a, ir.Var):
                yield a
    elif isinstance(item, ir.Print):
        yield from item.args
        if item.vararg is not None:
            yield item.vararg
    elif isinstance(item, (ir.Jump, ir.Del, ir.Arg, ir.Const, ir.Global, ir.FreeVar)):
        return
    else:
        yield from item.list_vars()


class _Loop:
    __slots__ = ("header", "body", "follow")

    def __init__(self, header, body, follow):
        self.header, self.body, self.follow = header, body, follow


class _Structurer:
    """Blocks back to ``if``/``for``/``while`` statements (see the module doc)."""

    #: more statements than this many times the blocks' own: a graph duplicated too often, run as a block loop
    GROWTH = 4

    def __init__(self, d: _Decompiler):
        self.d = d
        self.cfg = d.cfg
        self.loops = d.cfg.loops()
        self.ipdom = self._immediate_post_dominators()
        self.reach: dict[int, set] = {}
        self.budget = self.GROWTH * sum(len(d.body[label]) for label in d.labels) + 64
        self.emitted = 0

    def _immediate_post_dominators(self) -> dict:
        pdoms = self.cfg.post_dominators()
        out = {}
        for node, doms in pdoms.items():
            strict = doms - {node}
            # the immediate one: the strict post-dominator every other strict post-dominator post-dominates
            best = None
            for c in strict:
                if all(o == c or o in pdoms.get(c, ()) for o in strict):
                    best = c
                    break
            out[node] = best
        return out

    def _reachable(self, label) -> set:
        found = self.reach.get(label)
        if found is None:
            found, stack = set(), [label]
            while stack:
                n = stack.pop()
                if n in found:
                    continue
                found.add(n)
                stack.extend(s for s, _ in self.cfg.successors(n))
            self.reach[label] = found
        return found

    def function(self) -> list[ast.stmt]:
        return self.region(self.d.labels[0], None, ())

    def region(self, label, stop, ctx: tuple) -> list[ast.stmt]:
        out: list[ast.stmt] = []
        d = self.d
        while label is not None and label != stop:
            if label in self.loops and not any(c.header == label for c in ctx):
                stmts, label = self.loop(label, stop, ctx)
                out += stmts
                continue
            block = d.statements(label)
            self.emitted += len(block) + 1
            if self.emitted > self.budget:
                raise _Unstructured
            out += block
            end = d.terminal(label)
            if end is not None:
                out += end
                return out
            target = d.jump_target(label)
            if target is not None:
                label = self.edge(target, stop, ctx, out)
                continue
            t, f = d.body[label][-1].truebr, d.body[label][-1].falsebr
            cond = d.condition(label)
            merge = self.merge_point(label, ctx)
            if merge is None:
                then = self.arm(t, None, ctx)
                if not _ends(then):
                    raise _Unstructured
                out.append(ast.If(cond, then, []))
                label = self.edge(f, stop, ctx, out)
                continue
            then, orelse = self.arm(t, merge, ctx), self.arm(f, merge, ctx)
            if not then:
                then, orelse = orelse, []
                cond = ast.UnaryOp(ast.Not(), cond)
            out.append(ast.If(cond, then or [ast.Pass()], orelse))
            label = merge
        return out

    def arm(self, target, stop, ctx) -> list[ast.stmt]:
        out: list[ast.stmt] = []
        nxt = self.edge(target, stop, ctx, out)
        if nxt is not None:
            out += self.region(nxt, stop, ctx)
        return out

    def edge(self, target, stop, ctx, out):
        """Going to ``target``: the label to go on with in this region, or None after a ``continue``, ``break`` or
        an inlined tail that ends the path."""
        if target == stop:
            return None
        if ctx:
            inner = ctx[-1]
            if target == inner.header:
                out.append(ast.Continue())
                return None
            if target not in inner.body:
                if target == inner.follow:
                    out.append(ast.Break())
                    return None
                if any(target == c.header or target == c.follow for c in ctx[:-1]):
                    raise _Unstructured  # a jump out of two loops at once: Python has no such statement
                tail = self.region(target, None, ctx)
                if not _ends(tail):
                    raise _Unstructured
                out += tail
                return None
        return target

    def merge_point(self, label, ctx):
        m = self.ipdom.get(label)
        if ctx:
            inner = ctx[-1]
            if label in inner.body and (m not in inner.body or m == inner.header):
                return None
        return m

    def loop(self, header, stop, ctx):
        d = self.d
        loop = self.loops[header]
        for_loop = d.for_loops.get(header)
        follow = self.follow(loop, stop, for_loop)
        inner = ctx + (_Loop(header, loop.body, follow),)
        if for_loop is not None:
            iterable, target, entry, natural_exit, _assigned, _pre = for_loop
            iter_node = d.var(iterable)
            body = _drop_trailing_continue(self.arm(entry, None, inner))
            orelse = []
            if natural_exit != follow:
                orelse = self.region(natural_exit, follow, ctx)
            target_node = d._at(ast.Name(d.pyname[target], ast.Store()), None)
            stmt = d._at(ast.For(target_node, iter_node, body or [ast.Pass()], orelse, None), d.body[header][-1])
        else:
            body = _drop_trailing_continue(self.region(header, None, inner))
            stmt = d._at(ast.While(ast.Constant(True), body or [ast.Pass()], []), d.body[header][-1])
        return [stmt], follow

    def follow(self, loop, stop, for_loop):
        """Where a loop's ``break`` goes: the exit every other exit flows into, if there is one."""
        exits = set(loop.exits)
        if not exits:
            return None
        if stop in exits:
            return stop
        m = self.ipdom.get(loop.header)
        if m is not None and m not in loop.body:
            return m
        # exits that return on their own are inlined where they are taken; the rest must flow into one of them
        flowing = [e for e in exits if any(o in self._reachable(e) for o in exits if o != e) or
                   not self._returns_only(e, exits)]
        candidates = [e for e in (flowing or exits) if all(e in self._reachable(o) for o in flowing)]
        if for_loop is not None and for_loop[3] in candidates:
            return for_loop[3]
        if candidates:  # the exit with the most code after it; the others are inlined where they are taken
            return max(candidates, key=lambda e: (sum(len(self.d.body[n]) for n in self._reachable(e)), -e))
        return None

    def _returns_only(self, label, exits) -> bool:
        reach = self._reachable(label)
        return not any(n in self.loops for n in reach) and not (reach & (exits - {label}))


def _ends(stmts: list) -> bool:
    """The statements never fall through (they end in return, raise, break or continue, on every path)."""
    if not stmts:
        return False
    last = stmts[-1]
    if isinstance(last, (ast.Return, ast.Raise, ast.Break, ast.Continue)):
        return True
    if isinstance(last, ast.If):
        return _ends(last.body) and _ends(last.orelse)
    return False


def _drop_trailing_continue(stmts: list) -> list:
    """A loop body's last ``continue`` (in every arm of a final ``if``) says nothing: the body ends there."""
    if stmts and isinstance(stmts[-1], ast.Continue):
        return stmts[:-1] or [ast.Pass()]
    if stmts and isinstance(stmts[-1], ast.If):
        last = stmts[-1]
        last.body = _drop_trailing_continue(last.body)
        if last.orelse:
            last.orelse = _drop_trailing_continue(last.orelse)
            if all(isinstance(x, ast.Pass) for x in last.orelse):
                last.orelse = []
    return stmts
