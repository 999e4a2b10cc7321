"""Statements and whole functions: ``FunctionTranslator`` turns one typed Python function into C."""

from __future__ import annotations

import ast
import inspect
import operator
import textwrap

import numpy as np
from numba.cuda import types

from ..cnames import c_name, is_int, scalar_key
from ..errors import SourceInfo
from . import arrays, ranges, scope, unroll, vectors
from .builtins import BuiltinsMixin
from .cexpr import CExpr, Static, TupleVal, cast, paren
from .exprs import BINOPS, ExprMixin

_STMT_HINT = ("assignments (also tuple unpacking and augmented), if/elif/else, for ... in range(...), while, "
              "break, continue, return, expression statements (calls)")


def parse_function(pyfunc) -> tuple[ast.FunctionDef, SourceInfo]:
    lines, first = inspect.getsourcelines(pyfunc)
    text = "".join(lines)
    dedented = textwrap.dedent(text)
    indent = len(lines[0]) - len(lines[0].lstrip()) if lines else 0
    tree = ast.parse(dedented)
    fn = next(n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)))
    filename = inspect.getsourcefile(pyfunc) or "<unknown>"
    return fn, SourceInfo(filename, dedented.splitlines(), first, indent)


#: a ``range`` loop whose trip count is a compile-time constant up to this gets ``#pragma unroll``: NVVM leaves such
#: a loop rolled when its body is large (docs/performance.md: the flagship's k-steps), nvcc does not always unroll it
#: either, and a fully unrolled k-loop is what separates 78% from 92% of cuBLAS for the cp.async matmul
UNROLL_LIMIT = 64


class FunctionTranslator(ExprMixin, BuiltinsMixin):
    def __init__(self, unit, pyfunc, typed, *, kind="kernel", name=None, template_consts=None,
                 all_template_consts=None):
        self.unit = unit
        self.ctx = unit.ctx
        self.pyfunc = pyfunc
        self.typed = typed
        self.kind = kind
        self.name = name or pyfunc.__name__
        self.template_consts = dict(template_consts or {})
        # every instantiation's constants: a branch is pruned only where they all agree on it
        self.all_template_consts = [dict(c) for c in (all_template_consts or [self.template_consts])]
        self.fn, self.src = parse_function(pyfunc)
        self.helpers = unit.helpers
        self.module_consts = unit.module_consts
        self.aliases: dict = {}
        self.arrays: dict = {}
        self.scalars: dict = {}
        self.written: set = set()
        self.assumed: set = set()
        self.lines: list[str] = []
        self.depth = 1
        self.loop_vars: set = set()
        self.params = [a.arg for a in self.fn.args.args]
        for bad in (self.fn.args.vararg, self.fn.args.kwarg, *self.fn.args.kwonlyargs):
            if bad is not None:
                raise self.src.error(self.fn, "kernels take positional parameters only")
        self._classify()

    # -- setup -------------------------------------------------------------------------------------------------
    def var_type(self, name):
        return self.typed.var_types.get(name)

    def _classify(self):
        for name, t in zip(self.params, self.typed.argtypes):
            if isinstance(t, types.Array):
                if t.layout != "C":
                    raise self.src.error(self.fn, f"argument '{name}' has layout '{t.layout}'; only C-contiguous "
                                         "arrays are supported", hint="a signature with ::1 in the last dimension, "
                                         "e.g. float32[:, ::1]")
                self.arrays[name] = arrays.param_array(self.cname(name), t)
            elif scalar_key(t) is not None:
                self.scalars[name] = scalar_key(t)
            else:
                raise self.src.error(self.fn, f"argument '{name}' has type {t}, which is not supported",
                                     hint="C-contiguous arrays and numbers")
        for name, t in self.typed.var_types.items():
            if name in self.params:
                continue
            k = scalar_key(t)
            if k is not None:
                self.scalars[name] = k
        int_params = {p for p in self.params if p in self.scalars and is_int(self.scalars[p])}
        self.facts = ranges.analyze(self.fn, self._static_nonneg, int_params)
        for name in self.facts:
            if name in self.scalars and not is_int(self.scalars[name]):
                pass

    def _static_nonneg(self, node):
        if isinstance(node, ast.Name):
            if node.id in self.scalars:
                return self.scalars[node.id].startswith("u")
            if node.id in self.template_consts:
                v = self.template_consts[node.id]
                return isinstance(v, (int, float)) and v >= 0
            if node.id in self.typed.var_types:
                return str(self.typed.var_types[node.id]) == "Dim3"  # an alias of cuda.threadIdx etc.
            found, obj = self.lookup_global(node.id)
            return found and isinstance(obj, (int, float)) and not isinstance(obj, bool) and obj >= 0
        return False

    # -- output ------------------------------------------------------------------------------------------------
    def emit(self, line: str):
        self.lines.append("    " * self.depth + line)

    def translate(self) -> list[str]:
        body = self.fn.body
        if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) and \
                isinstance(body[0].value.value, str):
            body = body[1:]
        self._check_loop_vars(body)
        declarable = {n for n in self.scalars if n not in self.params and n not in self.loop_vars}
        self.plan = scope.plan(body, declarable)
        self.block(body)
        return self.lines

    def _check_loop_vars(self, body):
        bound = {}
        for node in ast.walk(ast.Module(body=body, type_ignores=[])):
            if isinstance(node, ast.For) and isinstance(node.target, ast.Name):
                bound.setdefault(node.target.id, []).append(node)
        for name, loops in bound.items():
            inside = set()
            for loop in loops:
                for n in ast.walk(loop):
                    inside.add(id(n))
                for stmt in loop.body:
                    for n in ast.walk(stmt):
                        if isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Store):
                            raise self.src.error(n, f"the loop variable '{name}' is assigned inside its loop; "
                                                 "C's for loop would change the iteration",
                                                 hint="assign to another variable")
            for node in ast.walk(ast.Module(body=body, type_ignores=[])):
                if isinstance(node, ast.Name) and node.id == name and id(node) not in inside:
                    raise self.src.error(node, f"'{name}' is a loop variable and is also used outside its loop "
                                         "(after a Python loop it keeps its last value; a C loop variable does not)",
                                         hint="use a different name outside the loop")
            self.loop_vars.add(name)

    def block(self, stmts):
        for stmt in stmts:
            for name in self.plan.before.get(id(stmt), []):
                self._conflict_check(name, stmt)
                self.emit(f"{c_name(self.scalars[name])} {self.cname(name)};")
            method = getattr(self, "s_" + type(stmt).__name__, None)
            if method is None:
                raise self.src.error(stmt, f"unsupported statement ({type(stmt).__name__})", hint=_STMT_HINT)
            method(stmt)

    def _conflict_check(self, name, node):
        if name in self.typed.conflicts:
            raise self.src.error(node, f"'{name}' takes different types in different places "
                                 f"({', '.join(self.typed.conflicts[name])})",
                                 hint="use a separate name for each type (the C variable has one type)")

    # -- statements --------------------------------------------------------------------------------------------
    def s_Pass(self, node):
        pass

    def s_Expr(self, node):
        if isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            return
        if not isinstance(node.value, ast.Call):
            raise self.src.error(node, "an expression statement that is not a call does nothing",
                                 hint="remove it or assign it")
        if vectors.is_vector_access(self.value(node.value.func)):
            vectors.emit_vector_access(self, node.value)
            return
        e = self.expr(node.value)
        self.emit(f"{e.code};")

    def s_Break(self, node):
        self.emit("break;")

    def s_Continue(self, node):
        self.emit("continue;")

    def s_Return(self, node):
        if self.kind == "kernel" or node.value is None or (
                isinstance(node.value, ast.Constant) and node.value.value is None):
            if self.kind == "kernel" and node.value is not None and not (
                    isinstance(node.value, ast.Constant) and node.value.value is None):
                raise self.src.error(node.value, "kernels cannot return a value", hint="write results into an array")
            self.emit("return;")
            return
        e = self.expr(node.value)
        self.emit(f"return {e.code};")

    def s_If(self, node, prefix="if"):
        static = self.static_condition(node.test)
        if static is not None:  # numba prunes a branch on a compile-time constant (and leaves it untyped): so do we
            taken = node.body if static else node.orelse
            if prefix == "if":
                self.block(taken)
            else:  # an elif chain already open: the taken branch becomes its else
                self.emit("} else {")
                self._nested(taken)
                self.emit("}")
            return
        test = self.cond(node.test)
        self.emit(f"{prefix} ({test.code}) {{")
        self._nested(node.body)
        orelse = node.orelse
        if len(orelse) == 1 and isinstance(orelse[0], ast.If) and not self.plan.before.get(id(orelse[0])):
            return self.s_If(orelse[0], prefix="} else if")
        if orelse:
            self.emit("} else {")
            self._nested(orelse)
        self.emit("}")

    def static_condition(self, node):
        """True/False when ``node`` is a compile-time constant (``if vec:``, ``if group > 1:``), else None; a
        TranslationError when it is constant but differs between the instantiations."""
        values = set()
        saved = self.template_consts
        try:
            for consts in self.all_template_consts:
                self.template_consts = consts
                v = self._const_truth(node)
                if v is None:
                    return None
                values.add(v)
        finally:
            self.template_consts = saved
        if len(values) > 1:
            raise self.src.error(node, "this condition is a compile-time constant with different values in the "
                                 "instantiations; numba types only the branch each one takes, so one C template "
                                 "cannot hold both", hint="translate these configurations separately")
        return values.pop()

    def _const_truth(self, node):
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            v = self._const_truth(node.operand)
            return None if v is None else not v
        if isinstance(node, ast.Compare) and len(node.ops) == 1:
            a, b = self.const_value(node.left), self.const_value(node.comparators[0])
            if a is None or b is None:
                return None
            op = {ast.Lt: operator.lt, ast.LtE: operator.le, ast.Gt: operator.gt, ast.GtE: operator.ge,
                  ast.Eq: operator.eq, ast.NotEq: operator.ne}.get(type(node.ops[0]))
            return None if op is None else bool(op(a, b))
        v = self.const_value(node)
        return None if v is None else bool(v)

    def _nested(self, body):
        self.depth += 1
        self.block(body)
        self.depth -= 1

    def s_While(self, node):
        if node.orelse:
            raise self.src.error(node, "while ... else is not supported", hint="a flag variable")
        test = self.cond(node.test)
        self.emit(f"while ({test.code}) {{")
        self._nested(node.body)
        self.emit("}")

    def s_For(self, node):
        if node.orelse:
            raise self.src.error(node, "for ... else is not supported", hint="a flag variable")
        it = node.iter
        marked = unroll.unroll_range(self, it)  # for i in unroll(range(...)): #pragma unroll, whatever the trips
        it = marked[0] if marked is not None else it
        f = self.value(it.func) if isinstance(it, ast.Call) else None
        if not (isinstance(f, Static) and f.obj is range) or not isinstance(node.target, ast.Name):
            raise self.src.error(it, "for loops must iterate over range(...) into a single name",
                                 hint="for i in range(n) / range(a, b) / range(a, b, step)")
        if not 1 <= len(it.args) <= 3 or it.keywords:
            raise self.src.error(it, "range takes 1 to 3 positional arguments")
        name = node.target.id
        key = scalar_key(self.var_type(name))
        args = [self.expr(a) for a in it.args]
        start, stop, step = (CExpr("0", "int32", types.literal(0), literal=0), args[0], None) if len(args) == 1 else \
            (args[0], args[1], args[2] if len(args) == 3 else None)
        start, stop = cast(start, key) if start.literal is None else start, self._bound(stop, key)
        var = self.cname(name)
        ctype = c_name(key)
        assigned = {n.id for s in node.body for n in ast.walk(s)
                    if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
        stop_names = {n.id for n in ast.walk(it) if isinstance(n, ast.Name)}
        if not stop.pure or (assigned & stop_names):
            self.emit(f"const {ctype} {var}_stop = {stop.code};")
            stop = CExpr(f"{var}_stop", key, None)
        trips = self._constant_trip_count(it)
        if marked is not None:
            self.emit(marked[1])
        elif trips is not None and 1 < trips <= UNROLL_LIMIT:
            self.emit("#pragma unroll")
        if step is None or step.literal == 1:
            self.emit(f"for ({ctype} {var} = {start.code}; {var} < {paren(stop, 11)}; {var}++) {{")
        elif isinstance(step.literal, int) and step.literal != 0:
            cmp = "<" if step.literal > 0 else ">"
            inc = f"{var} += {step.literal}" if step.literal > 0 else f"{var} -= {-step.literal}"
            self.emit(f"for ({ctype} {var} = {start.code}; {var} {cmp} {paren(stop, 11)}; {inc}) {{")
        elif step.nonneg:  # range rejects a zero step, so a step proven >= 0 is positive
            step = self._bound(step, key)
            self.emit(f"for ({ctype} {var} = {start.code}; {var} < {paren(stop, 11)}; {var} += {paren(step, 3)}) {{")
        else:
            step = self._bound(step, key)
            if not step.pure or (assigned & stop_names):
                self.emit(f"const {ctype} {var}_step = {step.code};")
                step = CExpr(f"{var}_step", key, None)
            self.emit(f"for ({ctype} {var} = {start.code}; {paren(step, 11)} > 0 ? {var} < {paren(stop, 11)} : "
                      f"{var} > {paren(stop, 11)}; {var} += {paren(step, 3)}) {{")
        self._nested(node.body)
        self.emit("}")

    def _constant_trip_count(self, it: ast.Call):
        """The most iterations a ``range`` of compile-time constants makes in any instantiation, else None."""
        most = 0
        saved = self.template_consts
        try:
            for consts in self.all_template_consts:
                self.template_consts = consts
                bounds = [self.const_value(a) for a in it.args]
                if not all(isinstance(b, (int, np.integer)) and not isinstance(b, bool) for b in bounds):
                    return None
                if len(bounds) == 3 and bounds[2] == 0:
                    return None
                most = max(most, len(range(*(int(b) for b in bounds))))
        finally:
            self.template_consts = saved
        return most

    def _bound(self, e, key):
        if e.key == key or (e.literal is not None and is_int(key)):
            return e
        if is_int(e.key) and is_int(key) and e.key in ("int32", "int16", "int8", "uint8", "uint16") and key == "int64":
            return e
        return cast(e, key)

    # -- assignment --------------------------------------------------------------------------------------------
    def s_AnnAssign(self, node):
        if node.value is None:
            return
        self._assign(node.target, node.value, node)

    def s_Assign(self, node):
        if len(node.targets) != 1:
            raise self.src.error(node, "chained assignment (a = b = ...) is not supported", hint="one target per line")
        self._assign(node.targets[0], node.value, node)

    def _assign(self, target, value_node, stmt):
        if isinstance(target, ast.Tuple):
            return self._unpack(target, value_node, stmt)
        if isinstance(target, ast.Subscript):
            base = self.value(target.value)
            if not isinstance(base, arrays.ArrayInfo):
                raise self.src.error(target, "only array elements can be assigned", hint="x[i] = v")
            self.mark_written(base.name)
            lhs = arrays.element(self, base, target.slice, target)
            rhs = self.expr(value_node)
            self.emit(f"{lhs.code} = {self._store_value(rhs, lhs.key).code};")
            return
        if not isinstance(target, ast.Name):
            raise self.src.error(target, "unsupported assignment target", hint="a name, x[i], or a, b = ...")
        self._assign_name(target.id, value_node, stmt, target)

    def _assign_name(self, name, value_node, stmt, target_node, value=None):
        t = self.var_type(name)
        if isinstance(t, types.Array):
            return self._assign_array(name, value_node, stmt, target_node)
        if name in self.scalars:
            self._conflict_check(name, target_node)
            rhs = value if value is not None else self.expr(value_node)
            key = self.scalars[name]
            rhs = self._store_value(rhs, key)
            if (id(stmt), name) in self.plan.inline:
                self.emit(f"{c_name(key)} {self.cname(name)} = {rhs.code};")
            else:
                self.emit(f"{self.cname(name)} = {rhs.code};")
            return
        v = value if value is not None else self.value(value_node)
        if name in self.aliases or not isinstance(v, (Static, TupleVal)):
            raise self.src.error(target_node, f"'{name}' holds a value the C code cannot store ({t})",
                                 hint="assign numbers and arrays; CUDA objects such as cuda.threadIdx once")
        if isinstance(v, TupleVal) and not all(isinstance(i, CExpr) and i.pure for i in v.items):
            raise self.src.error(target_node, "tuples are supported only as names for pure values (x.shape)")
        self.aliases[name] = v

    def _store_value(self, rhs, key):
        if rhs.literal is not None and key in ("float32",) and rhs.key != key:
            return cast(rhs, key)
        return rhs

    def _assign_array(self, name, value_node, stmt, target_node):
        if name in self.arrays:
            raise self.src.error(target_node, f"the array name '{name}' is assigned twice",
                                 hint="one name per array")
        if isinstance(value_node, ast.Call):
            f = self.value(value_node.func)
            from numba import cuda
            if isinstance(f, Static) and f.obj in (cuda.shared.array, cuda.local.array):
                kw = {k.arg: k.value for k in value_node.keywords}
                unknown = sorted(set(kw) - {"shape", "dtype", "alignment"})
                if unknown:
                    raise self.src.error(value_node, f"unsupported keyword(s) {', '.join(unknown)} of a shared/local "
                                         "array", hint="shape, dtype and alignment")
                args = list(value_node.args) + [kw.get("shape"), kw.get("dtype")][len(value_node.args):]
                if len(args) != 2 or None in args:
                    raise self.src.error(value_node, "shared/local arrays need a shape and a dtype",
                                         hint="cuda.shared.array((16, 16), dtype=np.float32)")
                kind = "shared" if f.obj is cuda.shared.array else "local"
                decl, info = arrays.declare_static(self, kind, self.cname(name), args[0], args[1], value_node,
                                                   alignment=kw.get("alignment"))
                self.arrays[name] = info
                self.emit(decl)
                return
        if isinstance(value_node, ast.Subscript) and isinstance(value_node.slice, ast.Slice):
            base = self.value(value_node.value)
            if isinstance(base, arrays.ArrayInfo):
                decl, info = arrays.view(self, self.cname(name), base, value_node.slice, value_node)
                self.arrays[name] = info
                self.emit(decl)
                return
        raise self.src.error(value_node, "array variables must be created by cuda.shared.array/cuda.local.array "
                             "or as a slice of the dynamic shared array",
                             hint="index the argument array directly instead of aliasing it")

    def _unpack(self, target, value_node, stmt):
        names = target.elts
        if not all(isinstance(n, ast.Name) for n in names):
            raise self.src.error(target, "tuple unpacking supports names only", hint="a, b = ...")
        if isinstance(value_node, ast.Tuple):
            if len(value_node.elts) != len(names):
                raise self.src.error(value_node, "unpacking needs as many values as names")
            reads = {n.id for v in value_node.elts for n in ast.walk(v) if isinstance(n, ast.Name)}
            written = [n.id for n in names]
            if reads & set(written[:-1]) and not all(isinstance(self.var_type(w), types.Array) for w in written):
                # `a, b = b, a`: evaluate every value first, as Python does
                temps = []
                for n, v in zip(names, value_node.elts):
                    e = self.expr(v)
                    key = self.scalars.get(n.id)
                    if key is None:
                        raise self.src.error(n, "swapping is supported for numbers only")
                    self.emit(f"const {c_name(key)} {self.cname(n.id)}_new = {e.code};")
                    temps.append(CExpr(f"{self.cname(n.id)}_new", key, self.var_type(n.id)))
                for n, e in zip(names, temps):
                    self._assign_name(n.id, None, stmt, n, value=e)
                return
            for n, v in zip(names, value_node.elts):
                self._assign_name(n.id, v, stmt, n)
            return
        v = self.value(value_node)
        if not isinstance(v, TupleVal) or len(v.items) != len(names):
            raise self.src.error(value_node, "this value cannot be unpacked into names",
                                 hint="a, b = x, y / h, w = m.shape / c, r = cuda.grid(2)")
        for n, item in zip(names, v.items):
            if isinstance(item, CExpr):
                self._assign_name(n.id, None, stmt, n, value=item)
            else:
                self._assign_name(n.id, None, stmt, n, value=item)

    def s_AugAssign(self, node):
        op, fn = BINOPS.get(type(node.op), (None, None))
        if op is None:
            raise self.src.error(node, "unsupported augmented assignment")
        target = node.target
        if isinstance(target, ast.Name):
            if target.id not in self.scalars:
                raise self.src.error(target, "augmented assignment needs a number variable")
            cur = self.v_Name(ast.Name(target.id, ast.Load()))
            lhs_code = self.cname(target.id)
        elif isinstance(target, ast.Subscript):
            base = self.value(target.value)
            if not isinstance(base, arrays.ArrayInfo):
                raise self.src.error(target, "only array elements can be assigned")
            self.mark_written(base.name)
            cur = arrays.element(self, base, target.slice, target)
            if not cur.pure:
                raise self.src.error(target, "this index would be evaluated twice",
                                     hint="compute it into a variable first")
            lhs_code = cur.code
        else:
            raise self.src.error(target, "unsupported augmented assignment target")
        rhs = self.expr(node.value)
        res = self.binop(op, fn, cur, rhs, node)
        if res.infix is not None and res.infix[0] == lhs_code and res.infix[1] in "+-*/%&|^<<>>":
            self.emit(f"{lhs_code} {res.infix[1]}= {res.infix[2]};")
        else:
            self.emit(f"{lhs_code} = {res.code};")

    # -- calls into other functions ------------------------------------------------------------------------------
    def mark_written(self, cname):
        self.written.add(cname)

    def device_call(self, disp, node):
        vals = [self.value(a) for a in node.args]
        argtypes = []
        for v, a in zip(vals, node.args):
            if isinstance(v, arrays.ArrayInfo):
                if v.kind != "param":
                    raise self.src.error(a, "only the kernel's array arguments can be passed to device functions")
                argtypes.append(v.nbt)
            elif isinstance(v, CExpr):
                argtypes.append(v.nbt)
            else:
                raise self.src.error(a, "device functions take numbers and arrays")
        sig = self.resolve(disp, argtypes, node)
        dev = self.unit.device_function(disp, sig, node, self.src)
        cargs = []
        for v, t, pname in zip(vals, sig.args, dev.params):
            if isinstance(v, arrays.ArrayInfo):
                if pname in dev.written:
                    self.mark_written(v.name)
                cargs.append(", ".join([v.name] + [e.code for e in v.extents]))
            else:
                k = scalar_key(t)
                cargs.append((v if v.key == k else cast(v, k)).code)
        rkey = scalar_key(sig.return_type)
        return CExpr(f"{dev.cname}({', '.join(cargs)})", rkey, sig.return_type, pure=False)
