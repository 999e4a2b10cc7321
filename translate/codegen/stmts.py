"""Statements and whole functions: ``FunctionTranslator`` turns one typed Python function into C."""

from __future__ import annotations

import ast
import dataclasses
import operator
import re

import numpy as np
from numba.cuda import types

from .. import cnames
from ..cnames import c_name, is_complex, is_int, scalar_key
from ..errors import TranslationError
from ..typed import evaluation
from ..writes import is_lambda_assignment, local_functions
from . import analyses, arrays, calls, comments, inner, loopvars, pybuiltins, scope, unroll, variables, vectors
from .cexpr import UNARY, CExpr, RangeVal, Static, TupleVal, cast, paren
from .context import FunctionContext
from .diagnose import internal_error
from .emitter import Emitter
from .exprs import BINOPS, ExprMixin, homogeneous_tuple
from .source import parse_function

_STMT_HINT = ("assignments (also tuple unpacking and augmented), if/elif/else, for ... in range(...), while, "
              "break, continue, return, expression statements (calls)")


#: a ``range`` loop whose trip count is a compile-time constant up to this gets ``#pragma unroll``: NVVM leaves such
#: a loop rolled when its body is large (docs/performance.md: the flagship's k-steps), nvcc does not always unroll it
#: either, and a fully unrolled k-loop is what separates 78% from 92% of cuBLAS for the cp.async matmul
UNROLL_LIMIT = 64


def _own_statements(body):
    """The statements of a loop's ``body`` and of the blocks in it, but not of the loops in it."""
    for stmt in body:
        yield stmt
        if not isinstance(stmt, (ast.For, ast.While, ast.FunctionDef)):
            for field in ("body", "orelse", "finalbody", "handlers"):
                yield from _own_statements(getattr(stmt, field, None) or [])


class FunctionTranslator(ExprMixin):
    """One typed Python function -> the lines of its C body.

    ``cname``: the C function name; ``params``: the C names of the runtime parameters as ``(name, extents,
    strides)`` (the kernel's come from the request, whose launcher uses the same); ``bound``: parameters bound to
    compile-time values (a device function specialized for the functions, dtypes and literals its caller
    passes); ``template_consts``: closure constants that are C++ template parameters."""

    def __init__(self, unit, pyfunc, typed, *, kind="kernel", name=None, cname=None, params=None, bound=None,
                 template_consts=None, all_template_consts=None):
        fn, src = parse_function(pyfunc)
        for bad in (fn.args.vararg, fn.args.kwarg, *fn.args.kwonlyargs):
            if bad is not None:
                raise src.error(fn, "kernels take positional parameters only")
        names = tuple(a.arg for a in fn.args.args)
        bound = dict(bound or {})
        #: the instantiation whose constants the walk reads (a static condition reads each in turn)
        self.template_consts = dict(template_consts or {})
        self.ctx = FunctionContext(
            unit, pyfunc, typed, kind, name or pyfunc.__name__, cname or name or pyfunc.__name__, fn, src, names,
            tuple(p for p in names if p not in bound), bound,
            # every instantiation's constants: a branch is pruned only where they all agree on it
            tuple(dict(c) for c in (all_template_consts or [self.template_consts])))
        self.comments = comments.Comments(src.lines)
        self.aliases: dict = {}
        self.inner: dict = {}  # the functions defined in this one: name -> inner.InnerFunction
        self.arrays: dict = {}
        self.scalars: dict = {}
        self.written: set = set()
        self.view_owners: dict = {}  # the C pointer expression of a view -> the C name of the array it is part of
        self.assumed: set = set()
        self.loop_vars: set = set()
        #: per enclosing loop, innermost last: the flag a ``break`` sets when the loop has an ``else`` (else None)
        self.break_flags: list[str | None] = []
        self.out = self._name_params(params)
        self._classify()
        self._name_locals()

    # -- what providers use (translate.codegen.context.Translator) ------------------------------------------------
    def emit(self, line: str):
        self.out.emit(line)

    def temp(self, want: str) -> str:
        """A fresh C name for a generated temporary (``ph_stop``, ``a_new``)."""
        return self.out.temp(want)

    def hoist(self, e, want: str):
        return self.out.hoist(e, want)

    def require_hoist(self, node):
        self.out.require_hoist(node)

    def no_hoist(self):
        return self.out.no_hoist()

    def c_index(self):
        return self.out.c_index()

    # -- setup -------------------------------------------------------------------------------------------------
    def _name_params(self, params) -> Emitter:
        """The C names of the parameters (``self.param_c``: name -> (cname, extents, strides)) and the
        function's namespace, in which its locals and temporaries are claimed next."""
        types_of = dict(zip(self.ctx.params, self.ctx.typed.argtypes))
        taken = set(self.ctx.unit.file_names.taken) | set(self.template_consts)
        if self.ctx.kind != "kernel":  # the kernel's template parameters are not in scope in a device function
            taken -= self.ctx.unit.template_params - set(self.template_consts)
        if params is None:
            names, named = cnames.typed_param_cnames(self.ctx.c_function, self.ctx.runtime_params,
                                                     [types_of[p] for p in self.ctx.runtime_params], reserved=taken)
        else:
            names, named = cnames.Namespace(taken | {self.ctx.c_function}), list(params)
            for group in named:
                for c, extents, strides in group if isinstance(group, list) else [group]:
                    names.reserve(c, *extents, *strides)
        self.param_c = dict(zip(self.ctx.runtime_params, named))
        self.ctx.unit.local_names.update(names.taken)
        return Emitter(names, self.ctx.unit.local_names, self.ctx.src)

    def _name_locals(self):
        """Every Python name the body assigns gets its C name now, before any generated one (so a local named
        ``x_shape0`` cannot shadow the extent of ``x``: the extent was named first and the local gets a suffix)."""
        self.local_c: dict[str, str] = {}
        defined = local_functions(self.ctx.fn)  # (C functions of their own: their names and locals are theirs)
        for node in _own_nodes(self.ctx.fn):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store) and node.id not in self.ctx.params \
                    and node.id not in self.local_c and node.id not in defined:
                self.local_c[node.id] = self.out.names.claim(node.id)
        array_locals = {n for n, t in self.ctx.typed.var_types.items()
                        if isinstance(t, types.Array) and n in self.local_c and n not in self.ctx.typed.conflicts}
        dynamic = arrays.dynamic_names(self, self.ctx.fn)
        self.array_aliases = {n: arrays.alias_info(self, n, self.local_c[n], self.ctx.var_type(n))
                              for n in sorted(arrays.alias_names(self.ctx.fn, array_locals, dynamic))}
        for n, info in self.array_aliases.items():
            self.arrays[n] = info
        self.retyped: dict = {}
        for name in self.ctx.typed.retyped:
            if name in self.local_c:
                cvars = variables.retyped_vars(self, name, self.ctx.typed.retyped[name])
                if cvars is not None:
                    self.retyped[name] = cvars
        types_of = dict(zip(self.ctx.params, self.ctx.typed.argtypes))
        for name in self.ctx.runtime_params:
            t = types_of[name]
            if isinstance(t, types.BaseTuple) and name not in self.arrays and name not in self.scalars \
                    and name not in self.array_tuples:
                stem = self.param_c[name][0].rstrip("_")
                given = self.param_c[name][1]  # the kernel's: the launcher's names of the items
                self.tuple_vars[name] = variables.tuple_cvars(t, self.scalar_key, self.out.names.claim, stem, given)
        for name in self.present:
            self.present[name] = self.out.names.claim(f"{self.local_c[name].rstrip('_')}_present")
        self.ret_outs = None
        rt = self.ctx.typed.return_type
        #: a device function returning an Optional (None on some paths): its value, and whether it is there
        #: through a pointer
        self.ret_present = self.out.names.claim("present") if self.ctx.kind == "device" and isinstance(
            rt, types.Optional) and self.scalar_key(rt.type) is not None else None
        #: a device function returning an array (one of its own: numba returns only those): the pointer as the C
        #: result, the extents (and strides) through pointers
        self.ret_array = None
        if self.ctx.kind == "device" and isinstance(rt, types.Array):
            claim = self.out.names.claim
            self.ret_array = ([claim(f"ret_shape{d}") for d in range(rt.ndim)],
                              [claim(f"ret_stride{d}") for d in range(rt.ndim)] if rt.layout != "C" else [])
        if self.ctx.kind == "device" and isinstance(rt, types.BaseTuple):
            if not variables.is_number_tuple(rt, self.scalar_key):
                raise self.src.error(self.ctx.fn, f"'{self.ctx.name}' returns {rt}: device functions may return "
                                     "numbers and tuples of numbers")
            #: through pointers, one per number (``ret_0_1`` of a tuple of tuples)
            self.ret_outs = variables.tuple_cvars(rt, self.scalar_key, self.out.names.claim, "ret")
        for name, item_types in list(self.tuple_vars.items()):
            if name in self.ctx.runtime_params:
                continue
            if name not in self.local_c:
                del self.tuple_vars[name]
                continue
            self.tuple_vars[name] = variables.tuple_cvars(item_types, self.scalar_key, self.out.names.claim,
                                                          self.local_c[name].rstrip("_"))
        self.ctx.unit.local_names.update(self.out.names.taken)

    def declarations(self, name) -> list[str]:
        """The C declarations (uninitialised) of a Python local's variable(s)."""
        if name in self.held_ranges:
            raise self.src.error(self.statement, f"'{name}' holds a range made in a block that does not contain all "
                                 "its uses: a range held in a variable is made once, before the code that reads it",
                                 hint=f"{name} = range(...) on a line of its own before the loops that read it")
        if name in self.retyped:
            return [f"{c_name(v.key)} {v.cname};" for vs in self.retyped[name].values() for v in variables.leaves(vs)]
        if name in self.tuple_vars:
            return [f"{c_name(v.key)} {v.cname};" for v in variables.leaves(self.tuple_vars[name])]
        if name in self.array_aliases:
            return arrays.alias_declarations(self.array_aliases[name])
        flag = [f"bool {self.present[name]};"] if name in self.present else []
        return flag + [f"{c_name(self.scalars[name])} {self.cname(name)};"]

    def cname(self, name):
        """The C name of a Python parameter or local."""
        if name in self.local_c:
            return self.local_c[name]
        if name in self.param_c:
            return self.param_c[name][0]
        return self.out.names.claim(name)

    def _classify(self):
        self.array_tuples: dict = {}  # a parameter that is a tuple of arrays -> their ArrayInfos
        for name, t in zip(self.ctx.params, self.ctx.typed.argtypes):
            if name in self.ctx.bound:
                continue
            if isinstance(t, types.Array):
                c, extents, strides = self.param_c[name]
                self.arrays[name] = arrays.param_array(c, t, extents, strides, self)
            elif self.scalar_key(t) is not None:
                self.scalars[name] = self.scalar_key(t)
            elif cnames.is_array_tuple(t):  # its arrays, parameters of their own
                self.array_tuples[name] = [arrays.param_array(c, x, extents, strides, self)
                                           for x, (c, extents, strides) in zip(t, self.param_c[name])]
                self.aliases[name] = TupleVal(list(self.array_tuples[name]))
            elif variables.is_number_tuple(t, self.scalar_key) and (
                    self.ctx.kind == "device" or all(self.scalar_key(x) for x in t)):
                pass  # a tuple of numbers: one C parameter per number (named in _name_locals)
            elif self.ctx.kind != "device" and variables.is_number_tuple(t, self.scalar_key):
                raise self.src.error(self.ctx.fn, f"argument '{name}' is a tuple of tuples ({t}): a kernel's "
                                     "launcher takes tuples of numbers", hint="pass the numbers as one flat tuple")
            else:
                raise self.src.error(self.ctx.fn, f"argument '{name}' has type {t}, which is not supported",
                                     hint="arrays, numbers and tuples of numbers")
        self.tuple_vars: dict = {}
        self.held_ranges: set = set()  # locals that hold a range (``odd = range(1, n, 2)``): aliases of its bounds
        self.present: dict = {}  # an Optional local -> the C name of its flag (named with the other locals)
        for name, t in self.ctx.typed.var_types.items():
            if name in self.ctx.params or name in self.ctx.typed.conflicts:
                continue
            k = self.scalar_key(t)
            if k is not None:
                self.scalars[name] = k
            elif isinstance(t, types.Optional) and self.scalar_key(t.type) is not None:
                self.scalars[name] = self.scalar_key(t.type)  # the value, and a flag: is it there (not None)
                self.present[name] = None
            elif variables.is_number_tuple(t, self.scalar_key):
                self.tuple_vars[name] = t
            elif isinstance(t, types.RangeType):
                self.held_ranges.add(name)
        self.values = analyses.Values(self.ctx, self.template_consts, dict(self.scalars), self.lookup_global,
                                      self.static_truth)
        self.facts = self.values.facts

    # -- what the value facts say at the current statement (analyses.Values) --------------------------------------
    def relational_nonneg(self, node) -> bool:
        return self.values.relational_nonneg(node)

    def flow_nonneg(self, node) -> bool:
        return self.values.nonneg(node, getattr(self, "statement", None))

    def flow_interval(self, node) -> tuple:
        return self.values.interval(node, getattr(self, "statement", None))

    def operation_ranges(self, node):
        return self.values.operation_ranges(node, getattr(self, "statement", None))

    def bounded(self, node) -> bool:
        """Does numba compute ``node`` without wrapping around past its type (its + - * cannot overflow)?"""
        return self.values.fits(node, getattr(self, "statement", None))

    def mark_written(self, cname):
        self.written.add(self.view_owners.get(cname, cname))

    # -- output ------------------------------------------------------------------------------------------------
    def translate(self) -> list[str]:
        body = self.ctx.fn.body
        if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) and \
                isinstance(body[0].value.value, str):
            body = body[1:]
        self.loop_vars, reused = loopvars.check(self.ctx.src, body)
        declarable = {n for n in (*self.scalars, *self.retyped, *self.tuple_vars, *self.array_aliases,
                                  *self.held_ranges)
                      if n not in self.ctx.params and (n not in self.loop_vars or n in reused)}
        # a name reused after its loops: declared where its other uses need it (the loops declare their own)
        in_loops = {id(n) for loop in ast.walk(ast.Module(body=body, type_ignores=[]))
                    if isinstance(loop, ast.For) and isinstance(loop.target, ast.Name) and loop.target.id in reused
                    for n in ast.walk(loop) if isinstance(n, ast.Name) and n.id == loop.target.id}
        self.plan = scope.plan(body, declarable, ignore=in_loops)
        self.plan_declared = declarable
        self.block(body)
        for text in self.comments.before(len(self.ctx.src.lines) + 1):  # after the last statement
            self.out.emit(f"// {text}")
        if self.ret_present is not None and not (body and isinstance(body[-1], ast.Return)):
            self.out.emit(f"*{self.ret_present} = false;")  # Python returns None at the end of the function
            self.out.emit("return 0;")
        return self.out.lines

    def block(self, stmts):
        for stmt in stmts:
            self.statement = stmt
            for text in self.comments.before(stmt.lineno):
                self.out.emit(f"// {text}")
            for name in self.plan.before.get(id(stmt), []):
                self._conflict_check(name, stmt)
                for line in self.declarations(name):
                    self.out.emit(line)
            method = getattr(self, "s_" + type(stmt).__name__, None)
            if method is None:
                raise self.src.error(stmt, f"unsupported statement ({type(stmt).__name__})", hint=_STMT_HINT)
            start = len(self.out.lines)
            try:
                method(stmt)
            except TranslationError:
                raise
            except Exception as e:  # noqa: BLE001 - a bug of the code generator: located at this statement
                raise internal_error(self.ctx.src, stmt, e) from e
            if not isinstance(stmt, (ast.If, ast.For, ast.While)):
                note = self.comments.trailing(stmt.lineno, stmt.end_lineno)
                if note and len(self.out.lines) > start:
                    self.out.lines[-1] += note
                elif note:  # a statement with no C of its own (pass, a docstring): the comment by itself
                    self.out.emit("//" + note[4:])

    def header_comment(self, node) -> str:
        """`` // ...`` for the comments after code on a compound statement's header lines."""
        last = node.body[0].lineno - 1 if node.body else node.end_lineno
        return self.comments.trailing(node.lineno, max(node.lineno, last))

    def _conflict_check(self, name, node):
        if name in self.ctx.typed.conflicts and name not in self.retyped:
            raise self.src.error(node, f"'{name}' takes different types in different places "
                                 f"({', '.join(self.ctx.typed.conflicts[name])})",
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
        self.out.emit(f"{e.code};")

    def s_Raise(self, node):
        """``raise`` in a kernel: numba-cuda ends the thread there (a kernel compiled without ``debug=True`` drops
        the exception; ``options.from_target`` refuses one compiled with it)."""
        self._ends_the_thread(node, "raise")
        self.out.emit("return;" + self._said(node))

    def s_Assert(self, node):
        """``assert c``: numba raises AssertionError where ``c`` is false, which ends the thread (``s_Raise``)."""
        self._ends_the_thread(node, "assert")
        test = self.cond(node.test)
        self.out.emit(f"if (!{paren(test, UNARY)}) return;" + self._said(node))

    def _said(self, node) -> str:
        """The statement as the kernel says it, as a comment (unless the author's own comment follows it)."""
        if self.comments.trailing(node.lineno, node.end_lineno) or node.lineno != node.end_lineno:
            return ""
        return f"  // {self.src.lines[node.lineno - 1].strip()}"

    def _ends_the_thread(self, node, what: str) -> None:
        if self.ctx.kind != "kernel":
            raise self.src.error(node, f"{what} in a device function: numba-cuda ends the thread through every "
                                 "caller, which the C does not do", hint="test the condition in the kernel")

    def s_Break(self, node):
        if self.break_flags and self.break_flags[-1] is not None:
            self.out.emit(f"{self.break_flags[-1]} = true;")
        self.out.emit("break;")

    def s_Continue(self, node):
        self.out.emit("continue;")

    def s_Return(self, node):
        if self.ret_present is not None and node.value is None:
            node = ast.copy_location(ast.Return(ast.Constant(None)), node)
        if self.ret_present is None and (self.ctx.kind == "kernel" or node.value is None or (
                isinstance(node.value, ast.Constant) and node.value.value is None)):
            if self.ctx.kind == "kernel" and node.value is not None and not (
                    isinstance(node.value, ast.Constant) and node.value.value is None):
                raise self.src.error(node.value, "kernels cannot return a value", hint="write results into an array")
            self.out.emit("return;")
            return
        value = node.value
        assert value is not None  # (a bare return: above)
        if self.ret_array is not None:  # `*ret_shape0 = a_shape0; return a;`
            info = arrays.as_array(self, self.value(value), value)
            if not isinstance(info, arrays.ArrayInfo) or info.extents is None:
                raise self.src.error(value, f"'{self.ctx.name}' returns an array: one of its array arguments")
            self.mark_written(info.owner or info.name)  # (its caller may store into what comes back)
            for out, e in zip(self.ret_array[0], info.extents):
                self.out.emit(f"*{out} = {e.code};")
            for out, e in zip(self.ret_array[1], arrays.element_strides(info) if self.ret_array[1] else ()):
                self.out.emit(f"*{out} = {e.code};")
            self.out.emit(f"return {arrays.base_pointer(info)};")
            return
        if self.ret_outs is not None:  # a tuple comes back through pointers: `*ret_0 = a; *ret_1 = b;`
            for out, item in self._paired(self.ret_outs, self.value(value), value,
                                          f"'{self.ctx.name}' returns {self.ctx.typed.return_type}"):
                self.out.emit(f"*{out.cname} = {cast(item, out.key).code};")
            self.out.emit("return;")
            return
        if self.ret_present is not None:  # an Optional result: whether it is there, through the pointer
            if isinstance(value, ast.Constant) and value.value is None:
                self.out.emit(f"*{self.ret_present} = false;")
                self.out.emit("return 0;")
                return
            e = self.expr(value)
            if e.present is not None:
                self.out.emit(f"*{self.ret_present} = {e.present};")
            else:
                self.out.emit(f"*{self.ret_present} = true;")
            self.out.emit(f"return {cast(e, self.scalar_key(self.ctx.typed.return_type.type)).code};")
            return
        e = self.expr(value)
        self.out.emit(f"return {e.code};")

    def s_If(self, node, prefix="if"):
        self.statement = node  # an elif's test is evaluated where its own statement is (not at the body's end)
        static = self.static_condition(node.test)
        if static is not None:  # numba prunes a branch on a compile-time constant (and leaves it untyped): so do we
            taken = node.body if static else node.orelse
            dropped = node.orelse if static else node.body
            note = self.header_comment(node)
            if dropped:  # (from the `else:` line when the else branch is the one left out)
                self.comments.drop(min(s.lineno for s in dropped) - (1 if static else 0),
                                   max(s.end_lineno for s in dropped))
            if note and static and taken:  # the condition's comment annotates the branch kept
                self.out.emit("//" + note[4:])
            if prefix == "if":
                self.block(taken)
            else:  # an elif chain already open: the taken branch becomes its else
                self.out.emit("} else {")
                self._nested(taken)
                self.out.emit("}")
            return
        if prefix == "if":
            test = self.cond(node.test)
        else:
            with self.out.no_hoist():  # an elif test is evaluated after the previous branch's code
                test = self.cond(node.test)
        self.out.emit(f"{prefix} ({test.code}) {{" + self.header_comment(node))
        self._nested(node.body)
        orelse = node.orelse
        if len(orelse) == 1 and isinstance(orelse[0], ast.If) and not self.plan.before.get(id(orelse[0])):
            return self.s_If(orelse[0], prefix="} else if")
        if orelse:
            self.out.emit("} else {")
            self._nested(orelse)
        self.out.emit("}")

    def static_condition(self, node):
        """True/False when ``node`` is a compile-time constant (``if vec:``, ``if group > 1:``), else None; a
        TranslationError when it is constant but differs between the instantiations."""
        values = set()
        saved = self.template_consts
        try:
            for consts in self.ctx.instantiations:
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

    def static_truth(self, node):
        """True/False when ``node`` is a compile-time constant of the same truth in every instantiation, else None
        (numba prunes what such a condition rules out, and leaves it untyped)."""
        try:
            return self.static_condition(node)
        except TranslationError:  # constant, but not the same in every instantiation
            return None

    def _const_truth(self, node):
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            v = self._const_truth(node.operand)
            return None if v is None else not v
        if isinstance(node, ast.BoolOp):
            deciding = isinstance(node.op, ast.Or)  # the truth that ends the chain: True in `or`, False in `and`
            for v in node.values:
                known = self._const_truth(v)
                if known is None or known == deciding:  # a run-time operand first, or the constant that decides
                    return known
            return not deciding
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
        with self.out.nested():
            self.block(body)

    def s_While(self, node):
        self._loop(node, self._while_loop)

    def s_For(self, node):
        self._loop(node, self._for_loop)

    def _loop(self, node, emit_loop):
        """A ``for`` or ``while`` loop, and its ``else``, which runs when the loop ends without a ``break``: after
        the loop, under a flag that its own breaks set (``bool broke = false;``), or unconditionally when it has
        none. Breaks in loops inside it are theirs."""
        breaks = node.orelse and any(isinstance(n, ast.Break) for n in _own_statements(node.body))
        flag = self.temp("broke") if breaks else None
        if flag is not None:
            self.out.emit(f"bool {flag} = false;")
        self.break_flags.append(flag)
        try:
            emit_loop(node)
        finally:
            self.break_flags.pop()
        if flag is not None:
            self.out.emit(f"if (!{flag}) {{  // the loop's else")
            self._nested(node.orelse)
            self.out.emit("}")
        elif node.orelse:
            self.block(node.orelse)

    def _while_loop(self, node):
        if self._retyped_in_test(node):
            return self._rotated_while(node)
        with self.out.no_hoist():  # evaluated before every iteration
            test = self.cond(node.test)
        self.out.emit(f"while ({test.code}) {{" + self.header_comment(node))
        self._nested(node.body)
        self.out.emit("}")

    def _retyped_in_test(self, node) -> list[str]:
        """The names of several types that a while loop's test reads in more than one type: Python compiles the
        test twice, before the loop and at the end of its body, and numba types each (``v = x[i]`` float32 before,
        ``v = v / 2`` float64 in the body)."""
        return [name for name in self._retyped_in_test_names(node.test) if len(set(
            self.ctx.typed.retyped[name].loads.get(self.src.first_line + node.test.lineno - 1, []))) > 1]

    def _retyped_in_test_names(self, test) -> list[str]:
        return sorted({n.id for n in ast.walk(test) if isinstance(n, ast.Name) and n.id in self.retyped})

    def _rotated_while(self, node):
        """``while c: body`` as numba runs it when its test reads a name in two types: the test before the loop in
        the types there, numba's conversions into the loop's versions, then ``do { body } while (c)`` with the test
        in the body's types (each evaluation translated with its share of the typed record)."""
        whole = self.ctx
        tests = []
        for which in (0, 1):
            self.ctx = dataclasses.replace(whole, typed=evaluation(whole.typed, node.test, which, 2))
            try:
                with self.out.no_hoist():
                    tests.append(self.cond(node.test))
                if which == 0:
                    converted = self._converted_after(node.test)
            finally:
                self.ctx = whole
        for line in converted:  # (numba converts before it branches: also where the loop does not run)
            self.out.emit(line)
        self.out.emit(f"if ({tests[0].code}) {{" + self.header_comment(node))
        with self.out.nested():
            self.out.emit("do {")
            self._nested(node.body)
            self.out.emit(f"}} while ({tests[1].code});")
        self.out.emit("}")

    def _converted_after(self, test) -> list[str]:
        """numba's conversions of re-typed names on the line of a while loop's test (this evaluation's): into the
        versions the loop's body, and the code after it, read (its phi nodes)."""
        line, out = self.src.first_line + test.lineno - 1, []
        for name in self._retyped_in_test_names(test):
            versions, cvars = self.ctx.typed.retyped[name], self.retyped[name]
            for src, dst in dict.fromkeys(versions.copies.get(line, [])):
                if src != dst:
                    for a, b in zip(variables.leaves(cvars[src]), variables.leaves(cvars[dst])):
                        conversion = f"{b.cname} = ({c_name(b.key)}){a.cname};"
                        if not self._still_holds(conversion, a.cname, b.cname):
                            out.append(conversion)
        return out

    def _still_holds(self, conversion: str, src: str, dst: str) -> bool:
        """Was ``conversion`` (``dst = (T)src;``) the last assignment to either name, in this block (numba also
        converts right after the store, ``v = x[i]``, where its phi copy lies on that line)?"""
        assigns = re.compile(rf"^(?:\w+ )?(?:{re.escape(src)}|{re.escape(dst)}) *(?:[-+*/%&|^]|<<|>>)?=(?!=)")
        for text in reversed(self.out.lines):
            text = text.strip()
            if text == conversion:
                return True
            if assigns.match(text) or text.endswith("{") or text == "}":
                return False  # (assigned since, or another block: not a straight line back to it)
        return False

    def _for_loop(self, node):
        it = node.iter
        marked = unroll.unroll_range(self, it)  # for i in unroll(range(...)): #pragma unroll, whatever the trips
        it = marked[0] if marked is not None else it
        f = self.value(it.func) if isinstance(it, ast.Call) and marked is None and not it.keywords and \
            isinstance(it.func, (ast.Name, ast.Attribute)) else None
        held = self.aliases.get(it.id) if isinstance(it, ast.Name) else None
        if marked is None and not (isinstance(f, Static) and f.obj is range) and not isinstance(held, RangeVal):
            return self._for_each(node, f.obj if isinstance(f, Static) else None)
        if not isinstance(node.target, ast.Name):
            raise self.src.error(it, "a loop over range(...) binds a single name", hint="for i in range(n)")
        name = node.target.id
        key = scalar_key(self.ctx.var_type(name))
        if isinstance(held, RangeVal):  # its bounds held in constants when it was made
            return self._range_loop(node, name, key, held.start, held.stop,
                                    None if held.step.literal == 1 else held.step, set(), [False] * 3, None)
        if not isinstance(it, ast.Call) or not 1 <= len(it.args) <= 3 or it.keywords:
            raise self.src.error(it, "range takes 1 to 3 positional arguments")
        args = [self.expr(a) for a in it.args]
        start, stop, step = (CExpr("0", "int32", types.literal(0), literal=0), args[0], None) if len(args) == 1 else \
            (args[0], args[1], args[2] if len(args) == 3 else None)
        stop_names = {n.id for n in ast.walk(it) if isinstance(n, ast.Name)}
        # `for x in range(x, x + n)` reads the x declared before the loop, but in C the new x's scope begins at its
        # own initialiser (`for (int64_t x = x; ...)` reads itself) and covers the test: such bounds are computed
        # before the loop, as Python computes them
        reads_own = [name in {n.id for n in ast.walk(a) if isinstance(n, ast.Name)} for a in it.args]
        reads_own = [False, *reads_own, False] if len(it.args) == 1 else reads_own + [False] * (3 - len(it.args))
        start_names = {n.id for n in ast.walk(it.args[0]) if isinstance(n, ast.Name)} if len(it.args) > 1 else set()
        self._range_loop(node, name, key, start, stop, step, stop_names, reads_own, marked, start_names)

    def _range_loop(self, node, name, key, start, stop, step, stop_names: set[str], reads_own: list[bool], marked,
                    start_names: set[str] | None = None):
        """The C loop of ``for name in range(...)`` from its bounds (``step`` None: 1); ``stop_names``: the names the
        bounds read, ``reads_own``: whether start, stop and step read the loop variable, ``marked``: the range under
        ``unroll(...)`` and its pragma, ``start_names``: the names the start reads."""
        it = node.iter
        start, stop = cast(start, key) if start.literal is None else start, self._bound(stop, key)
        var = self.cname(name)
        ctype = c_name(key)
        assigned = {n.id for s in node.body for n in ast.walk(s)
                    if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
        start_reads_own, stop_reads_own, step_reads_own = reads_own

        def before_loop(value, what):  # a bound computed once, before the loop: `const int64_t i_stop = n;`
            temp = self.out.temp(f"{var.rstrip('_')}_{what}")
            self.out.emit(f"const {ctype} {temp} = {value.code};")
            return CExpr(temp, key, None)

        if start_reads_own:
            start = before_loop(start, "start")
        if not stop.pure or (assigned & stop_names) or stop_reads_own:
            stop = before_loop(stop, "stop")
        step_hoisted = step is not None and step.literal is None and step_reads_own
        if step_hoisted:
            step = before_loop(self._bound(step, key), "step")
        trips = self._constant_trip_count(it) if isinstance(it, ast.Call) else len(range(
            start.literal, stop.literal, 1 if step is None else step.literal)) if all(
            b is None or isinstance(b.literal, int) for b in (start, stop, step)) else None
        note = self.header_comment(node)
        if marked is not None:
            self.out.emit(marked[1])
        elif trips is not None and 1 < trips <= UNROLL_LIMIT:
            self.out.emit("#pragma unroll")
        if step is None or step.literal == 1:
            self.out.emit(f"for ({ctype} {var} = {start.code}; {var} < {paren(stop, 11)}; {var}++) {{" + note)
        elif isinstance(step.literal, int) and step.literal < 0 and stop.literal is None:
            start_assigned = bool(assigned & (start_names or set()))
            self._counted_down(node, var, ctype, key, start, stop, -step.literal, start_assigned, note)
            return
        elif isinstance(step.literal, int) and step.literal != 0:
            cmp = "<" if step.literal > 0 else ">"
            inc = f"{var} += {step.literal}" if step.literal > 0 else f"{var} -= {-step.literal}"
            self.out.emit(f"for ({ctype} {var} = {start.code}; {var} {cmp} {paren(stop, 11)}; {inc}) {{" + note)
        elif step.nonneg:  # range rejects a zero step, so a step proven >= 0 is positive
            step = self._bound(step, key)
            self.out.emit(f"for ({ctype} {var} = {start.code}; {var} < {paren(stop, 11)}; {var} += {paren(step, 3)}) {{"
                      + note)
        else:
            step = self._bound(step, key)
            if not step_hoisted and (not step.pure or (assigned & stop_names)):
                step = before_loop(step, "step")
            self.out.emit(f"for ({ctype} {var} = {start.code}; {paren(step, 11)} > 0 ? {var} < {paren(stop, 11)} : "
                      f"{var} > {paren(stop, 11)}; {var} += {paren(step, 3)}) {{" + note)
        self._nested(node.body)
        self.out.emit("}")

    def _counted_down(self, node, var, ctype, key, start, stop, by: int, start_assigned: bool, note: str) -> None:
        """``for k in range(start, stop, -by)`` with a run-time stop, as numba's range iterator counts: the trips
        counted up from 0, and ``k`` made of each. ptxas of CUDA 13.0 at -O3 (and the driver's JIT) miscompiles
        ``for (k = n; k > -n; k -= 3)`` with a floating-point accumulator, and no upward loop (docs/translate.md,
        "A miscompile in CUDA 13.0's ptxas")."""
        base = var.rstrip("_")
        # the start is read again in the body: a literal or a name the body does not assign as it is, anything else
        # computed once, before the loop
        if not re.fullmatch(r"-?\w+", start.code) or start_assigned:
            start = self.out.hoist(cast(start, key), f"{base}_start")
        trips, trip = self.out.temp(f"{base}_trips"), self.out.temp(f"{base}_trip")
        self.helpers.add("nk_range_len")
        self.out.emit(f"const int64_t {trips} = nk_range_len({start.code}, {stop.code}, -{by});")
        self.out.emit(f"for (int64_t {trip} = 0; {trip} < {trips}; {trip}++) {{" + note)
        with self.out.nested():
            down = CExpr(str(-by), "int64", types.literal(-by), literal=-by)
            self.out.emit(f"const {ctype} {var} = {pybuiltins.range_item(start, trip, down).code};")
        self._nested(node.body)
        self.out.emit("}")

    def _for_each(self, node, called):
        """``for v in x`` over an array (its elements), a tuple (its items, held in a C array), ``enumerate`` and
        ``zip`` of those and of ranges: a counted C loop that reads each item where Python's iterator would."""
        from numba.cuda import types as nt

        it = node.iter
        if called in (enumerate, zip):
            if it.keywords or not it.args or (called is enumerate and len(it.args) > 2):
                raise self.src.error(it, f"{called.__name__}() of arrays and tuples, by position")
            seqs = it.args[:1] if called is enumerate else it.args
        else:
            seqs = [it]
        targets = node.target.elts if isinstance(node.target, ast.Tuple) and called is not None else [node.target]
        if called is enumerate:
            if len(targets) != 2:
                raise self.src.error(node.target, "enumerate() gives pairs: for k, v in enumerate(x)")
            counter_node, targets = targets[0], targets[1:]
            if isinstance(targets[0], ast.Tuple) and self._calls_zip(seqs[0]):  # for k, (a, b) in enumerate(zip(x, y))
                seqs, targets = seqs[0].args, targets[0].elts
        else:
            counter_node = None
        if len(targets) != len(seqs) or not all(isinstance(t, (ast.Name, ast.Tuple)) for t in targets) or not (
                counter_node is None or isinstance(counter_node, ast.Name)):
            raise self.src.error(node.target, "a loop over arrays and tuples binds one name per item",
                                 hint="for v in x / for k, v in enumerate(x) / for a, b in zip(x, y) / "
                                      "for k, (a, b) in enumerate(zip(x, y))")
        #: (C name, C type key, the items it takes in turn): one per number the loop binds
        bound: list[tuple] = []
        #: (Python name, its alias, what it takes in turn: the C arrays of a tuple's items, or an array's rows)
        aliased: list[tuple] = []
        counts = []
        for seq, target in zip(seqs, targets):
            v = arrays.as_array(self, self.value(seq), seq)
            if isinstance(v, TupleVal) and v.items and isinstance(v.items[0], TupleVal) and homogeneous_tuple(v):
                # a tuple of tuples: one C array per number of the item (`for a, b in pairs`)
                for cname, key, values in self._loop_numbers(target, v.items, seq):
                    held = self.out.temp(f"{cname.rstrip('_')}_items")
                    self.out.emit(f"const {c_name(key)} {held}[{len(values)}] = "
                                  f"{{{', '.join(cast(x, key).code for x in values)}}};")
                    bound.append((cname, key, arrays.ArrayInfo(held, "local", key, 1, None, None)))
                n = len(v.items)
                counts.append(CExpr(str(n), "int64", nt.literal(n), literal=n, nonneg=True))
                continue
            if isinstance(v, TupleVal) and v.items and all(isinstance(x, arrays.ArrayInfo) for x in v.items):
                # a tuple of arrays: C arrays of their pointers and extents, indexed by the loop's counter
                if not (isinstance(target, ast.Name) and target.id in self.array_aliases):
                    raise self.src.error(target, "a loop over a tuple of arrays binds one name to each array",
                                         hint="for arr in (x, y)")
                info = self.array_aliases[target.id]
                lines, held = arrays.alias_items(self, info, v.items, seq)
                for line in lines:
                    self.out.emit(line)
                aliased.append((target.id, info, held))
                n = len(v.items)
                counts.append(CExpr(str(n), "int64", nt.literal(n), literal=n, nonneg=True))
                continue
            if not isinstance(target, ast.Name):
                raise self.src.error(target, "a loop over numbers binds one name per item",
                                     hint="for v in x / for a, b in ((1, 2), (3, 4))")
            if isinstance(v, arrays.ArrayInfo) and v.ndim > 1 and target.id in self.array_aliases:
                if v.extents is None:
                    raise self.src.error(seq, "dynamic shared memory cannot be iterated: its extent is not known "
                                         "to the C code")
                aliased.append((target.id, self.array_aliases[target.id], v))  # its rows
                counts.append(v.extents[0])
                continue
            cname, key = self._loop_target(target)
            if isinstance(v, arrays.ArrayInfo):
                if v.extents is None:
                    raise self.src.error(seq, "dynamic shared memory cannot be iterated: its extent is not known "
                                         "to the C code")
                if v.ndim != 1:
                    raise self.src.error(seq, "a loop over the rows of an array is not supported",
                                         hint="for r in range(m.shape[0]): row = m[r]")
                bound.append((cname, key, v))
                counts.append(v.extents[0])
            elif isinstance(v, RangeVal):
                # zip() and enumerate() made the range before the loop: its bounds as they were then (a range held
                # in a variable holds them already)
                if not isinstance(seq, ast.Name):
                    v = RangeVal(*(b if b.literal is not None else self.out.hoist(b, f"{target.id}_{what}")
                                   for b, what in ((v.start, "start"), (v.stop, "stop"), (v.step, "step"))))
                bound.append((cname, key, v))
                counts.append(pybuiltins.range_len(self, v))
            elif isinstance(v, TupleVal) and v.items and all(isinstance(x, CExpr) for x in v.items):
                first = v.items[0]
                key = key or (first.key if isinstance(first, CExpr) else None)
                assert key is not None
                held = self.out.temp(f"{cname.rstrip('_')}_items")
                values = ", ".join(cast(x, key).code for x in v.items)
                self.out.emit(f"const {c_name(key)} {held}[{len(v.items)}] = {{{values}}};")
                bound.append((cname, key, arrays.ArrayInfo(held, "local", key, 1, None, None)))
                n = len(v.items)
                counts.append(CExpr(str(n), "int64", nt.literal(n), literal=n, nonneg=True))
            else:
                raise self.src.error(seq, "for loops iterate over range(...), arrays, tuples of numbers, "
                                     "enumerate() and zip() of those and of ranges")
        count = counts[0]
        for c in counts[1:]:  # zip stops at the shortest
            count = c if count.literal is not None and c.literal is not None and c.literal < count.literal else \
                count if c.literal is not None and count.literal is not None else \
                CExpr(f"{paren(count, 10)} < {paren(c, 11)} ? {paren(count, 4)} : {paren(c, 3)}", "int64",
                      nt.int64, 3, True)
        start = None
        if counter_node is not None and len(it.args) == 2:
            start = self.expr(it.args[1])
        assigned = {n.id for s in node.body for n in ast.walk(s) if isinstance(n, ast.Name)
                    and isinstance(n.ctx, ast.Store)}
        counter = counter_node if isinstance(counter_node, ast.Name) else None
        if counter is not None and start is None and counter.id not in assigned:
            index = self.cname(counter.id)  # enumerate's counter is the loop's own
            counter = None
        else:
            stem = bound[0][0] if bound else aliased[0][1].name
            index = self.out.temp(f"{stem.rstrip('_')}_i")
        if not count.pure or (count.literal is None and any(isinstance(b[2], RangeVal) for b in bound)):
            count = CExpr(self.out.hoist(count, f"{index}_stop").code, "int64", nt.int64, nonneg=True)
        note = self.header_comment(node)
        if count.literal is not None and 1 < count.literal <= UNROLL_LIMIT:
            self.out.emit("#pragma unroll")
        self.out.emit(f"for (int64_t {index} = 0; {index} < {paren(count, 11)}; {index}++) {{" + note)
        with self.out.nested():
            if counter is not None:
                cname, key = self._loop_target(counter)
                k = f"{index} + {paren(start, 13)}" if start is not None else index
                self.out.emit(f"{c_name(key)} {cname} = {k};")
            i = CExpr(index, "int64", nt.int64, nonneg=True)
            for cname, key, info in bound:
                if isinstance(info, RangeVal):
                    e = pybuiltins.range_item(info.start, index, info.step)
                else:
                    e = arrays.element_at(self, info, [i], node.iter) if info.extents is not None else \
                        CExpr(f"{info.name}[{index}]", info.key, None)
                self.out.emit(f"{c_name(key)} {cname} = {cast(e, key).code};")
            for name, info, source in aliased:
                # (a loop variable used only in its loop is declared here; the plan declares one used after it)
                declare = name not in self.plan_declared
                if isinstance(source, arrays.ArrayInfo):  # its row
                    row = arrays.row_array(self, arrays.Row(source, [i], [node.iter]), node.iter)
                    lines = arrays.alias_assignment(self, info, row, node.iter, declare)
                else:  # the items' pointers and extents, from their C arrays
                    ctypes = arrays.alias_ctypes(info) if declare else [""] * len(source)
                    lines = [f"{ctype}{var} = {items}[{index}];"
                             for ctype, var, items in zip(ctypes, arrays.alias_variables(info), source)]
                for line in lines:
                    self.out.emit(line)
            self.block(node.body)
        self.out.emit("}")

    def _loop_target(self, target: ast.Name) -> tuple[str, str | None]:
        """The C variable (name, type key) a loop over items binds ``target`` to: of a name numba types differently
        in different places, the version this loop stores."""
        if target.id in self.retyped:
            var = self.retyped[target.id][variables.version_at(self, target.id, target, "store")]
            return var.cname, var.key
        return self.cname(target.id), scalar_key(self.ctx.var_type(target.id))

    def _loop_numbers(self, target, items: list, seq) -> list[tuple]:
        """(C name, C type key, its value in each item) for each number that the loop target ``target`` (a name
        or a pattern of names) binds from the tuples ``items``."""
        first = items[0]
        if isinstance(first, CExpr) and isinstance(target, ast.Name) and target.id in self.scalars:
            return [(self.cname(target.id), self.scalars[target.id], items)]
        if isinstance(first, TupleVal) and isinstance(target, ast.Tuple) and len(target.elts) == len(first.items):
            return [number for j, t in enumerate(target.elts)
                    for number in self._loop_numbers(t, [item.items[j] for item in items], seq)]
        if isinstance(first, TupleVal) and isinstance(target, ast.Name) and target.id in self.tuple_vars:
            numbers = [variables.leaf_values(item) for item in items]
            return [(var.cname, var.key, [values[j] for values in numbers])
                    for j, var in enumerate(variables.leaves(self.tuple_vars[target.id]))]
        raise self.src.error(target, "this loop target does not match the items of the tuple",
                             hint="for a, b in ((1, 2), (3, 4)) / for pair in ((1, 2), (3, 4))")

    def _calls_zip(self, node) -> bool:
        """``node`` is ``zip(...)`` of arguments by position."""
        return isinstance(node, ast.Call) and isinstance(node.func, (ast.Name, ast.Attribute)) and bool(node.args) \
            and not node.keywords and isinstance(f := self.value(node.func), Static) and f.obj is zip

    def _constant_trip_count(self, it: ast.Call):
        """The most iterations a ``range`` of compile-time constants makes in any instantiation, else None."""
        most = 0
        saved = self.template_consts
        try:
            for consts in self.ctx.instantiations:
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

    def s_FunctionDef(self, node):
        """A function defined in this one: a C function of its own (``inner``), where its comments go too."""
        name, fn = inner.define(self, node)
        self.inner[name] = fn
        self.comments.drop(node.lineno, node.end_lineno)

    def s_Assign(self, node):
        if is_lambda_assignment(node):
            return self.s_FunctionDef(node)  # f = lambda v: ... is def f(v): return ...
        if len(node.targets) == 1:
            return self._assign(node.targets[0], node.value, node)
        # a = b = v: v evaluated once, then stored into each target from left to right, as Python does
        v = self.value(node.value)
        if isinstance(v, CExpr) and not v.pure:
            v = self.out.hoist(v, "value")
        for target in node.targets:
            self._assign(target, node.value, node, value=v)

    def _assign(self, target, value_node, stmt, value=None):
        """``target = value_node`` (``value``: its value, already evaluated)."""
        if isinstance(target, ast.Tuple):
            return self._unpack(target, value_node, stmt, value)
        if isinstance(target, ast.Subscript) or isinstance(target, ast.Attribute):
            base = self.value(target.value)
            if isinstance(base, CExpr) and isinstance(base.nbt, types.Record):  # x[i]["s0"] = v, x[i].s0 = v
                field = target.attr if isinstance(target, ast.Attribute) else (
                    target.slice.value if isinstance(target.slice, ast.Constant) else None)
                if isinstance(target.value, ast.Subscript):
                    arr = self.value(target.value.value)
                    if isinstance(arr, arrays.ArrayInfo):
                        self.mark_written(arr.name)
                lhs = self.record_field(base, field, target)
                rhs = self.as_cexpr(value, value_node) if value is not None else self.expr(value_node)
                self.out.emit(f"{lhs.code} = {self._store_value(cast(rhs, lhs.key), lhs.key).code};")
                return
            if not isinstance(base, (arrays.ArrayInfo, arrays.Row)) or isinstance(target, ast.Attribute):
                raise self.src.error(target, "only array elements can be assigned", hint="x[i] = v")
            self.mark_written(base.name)
            index = target.slice.elts if isinstance(target.slice, ast.Tuple) else [target.slice]
            if any(isinstance(i, ast.Slice) for i in index):  # x[a:b] = v: every element of the view
                view = self.viewed(arrays.subscript_view(self, base, target.slice, target))
                self.mark_written(view.owner or view.name)
                return self._fill(view, value if value is not None else self.value(value_node), value_node)
            lhs = arrays.element(self, base, target.slice, target)
            rhs = self.as_cexpr(value, value_node) if value is not None else self.expr(value_node)
            if value is not None:
                rhs = cast(rhs, lhs.key)
            self.out.emit(f"{lhs.code} = {self._store_value(rhs, lhs.key).code};")
            return
        if not isinstance(target, ast.Name):
            raise self.src.error(target, "unsupported assignment target", hint="a name, x[i], or a, b = ...")
        self._assign_name(target.id, value_node, stmt, target, value=value)

    def _fill(self, view, value, node) -> None:
        """``x[a:b] = v`` (numba's setitem of a view): a number into every element, or an array of the view's shape
        element by element (read before the loop, if it is a view of the same memory numba copies first: not
        supported here)."""
        from numba.cuda import types as nt

        value = arrays.as_array(self, value, node)
        if isinstance(value, arrays.ArrayInfo):
            if value.ndim != view.ndim or value.extents is None:
                raise self.src.error(node, "an array stored into a slice must have the slice's dimensions",
                                     hint="a number, or an array of the same shape")
        elif isinstance(value, CExpr):
            value = cast(value, view.key)
            if not value.pure:
                value = self.out.hoist(value, "value")
        else:
            raise self.src.error(node, "this value cannot be stored into a slice", hint="a number or an array")
        if view.strides and all(st.literal is not None for st in view.strides) and \
                [st.literal for st in view.strides] == [st.literal for st in arrays.element_strides(
                    arrays.ArrayInfo(view.name, view.kind, view.key, view.ndim, view.extents, None))]:
            view = arrays.ArrayInfo(view.name, view.kind, view.key, view.ndim, view.extents, view.nbt, None,
                                    view.owner)  # (its strides are a C-contiguous array's)
        indices = [CExpr(self.out.temp("k" if view.ndim == 1 else f"k{d}"), "int64", nt.int64, nonneg=True)
                   for d in range(view.ndim)]
        for d, i in enumerate(indices):
            self.out.emit(f"for (int64_t {i.code} = 0; {i.code} < {paren(view.extents[d], 11)}; {i.code}++) {{")
            self.out.depth += 1
        lhs = arrays.element_at(self, view, indices, node)
        rhs = arrays.element_at(self, value, indices, node) if isinstance(value, arrays.ArrayInfo) else value
        self.out.emit(f"{lhs.code} = {self._store_value(cast(rhs, lhs.key), lhs.key).code};")
        for _ in indices:
            self.out.depth -= 1
            self.out.emit("}")

    def _assign_name(self, name, value_node, stmt, target_node, value=None):
        t = self.ctx.var_type(name)
        if isinstance(t, types.Array) and name not in self.ctx.typed.conflicts:
            return self._assign_array(name, value_node, stmt, target_node, value)
        inline = (id(stmt), name) in self.plan.inline
        if name in self.retyped:
            stored = variables.version_at(self, name, target_node, "store")
            var = self.retyped[name][stored]
            if inline:
                for line in self.declarations(name):
                    self.out.emit(line)
            if isinstance(var, list):
                self._assign_tuple(name, value_node, value, False, target_node, var)
            else:
                rhs = value if value is not None else self.expr(value_node)
                self.out.emit(f"{var.cname} = {self._store_value(rhs, var.key).code};")
            for src, dst in variables.copies_after_store(self, name, target_node, stored):
                for a, b in zip(variables.leaves(src), variables.leaves(dst)):
                    self.out.emit(f"{b.cname} = ({c_name(b.key)}){a.cname};")
            return
        if name in self.present:
            return self._assign_optional(name, value_node, value, inline)
        if name in self.scalars:
            self._conflict_check(name, target_node)
            rhs = value if value is not None else self.expr(value_node)
            key = self.scalars[name]
            rhs = self._store_value(rhs, key)
            if inline:
                self.out.emit(f"{c_name(key)} {self.cname(name)} = {rhs.code};")
            elif rhs.code != self.cname(name):  # `x = uint64(x)` of a uint64 x is no C statement
                self.out.emit(f"{self.cname(name)} = {rhs.code};")
            return
        if name in self.tuple_vars:
            return self._assign_tuple(name, value_node, value, inline, target_node)
        self._conflict_check(name, target_node)
        v = value if value is not None else self.value(value_node)
        if isinstance(v, RangeVal):
            return self._hold_range(name, v, stmt, target_node)
        if name in self.aliases or not isinstance(v, (Static, TupleVal)):
            raise self.src.error(target_node, f"'{name}' holds a value the C code cannot store ({t})",
                                 hint="assign numbers and arrays; CUDA objects such as cuda.threadIdx once")
        if isinstance(v, TupleVal) and not _named(v):
            raise self.src.error(target_node, "tuples are supported only as names for arrays and pure values "
                                 "(x.shape, (x, y))")
        if isinstance(v, TupleVal):
            self._check_fixed_items(v, target_node)
        self.aliases[name] = v

    def _check_fixed_items(self, v: TupleVal, node) -> None:
        """A name for a tuple reads its arrays again where it is read: an alias among them that Python assigns
        again later (``a = x; t = (a, y); a = z``) would then be the new array, where Python's tuple holds the old."""
        stores: dict = {}
        for n in ast.walk(self.ctx.fn):
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
                stores[n.id] = stores.get(n.id, 0) + 1
        moving = {info.name: py for py, info in self.array_aliases.items() if stores.get(py, 0) > 1}
        for item in v.items:
            if isinstance(item, TupleVal):
                self._check_fixed_items(item, node)
            elif isinstance(item, arrays.ArrayInfo) and item.name in moving:
                raise self.src.error(node, f"this tuple holds '{moving[item.name]}', which is assigned another "
                                     "array elsewhere: the C would read the array it names then",
                                     hint="put the array itself in the tuple, or give each array a name of its own")

    def _hold_range(self, name, r: RangeVal, stmt, target_node) -> None:
        """``odd = range(1, n, 2)``: Python computes the bounds here, so the C holds them here, in constants named
        after the range (a literal as it is); a loop over ``odd``, ``x in odd`` and ``len(odd)`` read them."""
        if name in self.aliases or (id(stmt), name) not in self.plan.inline:
            raise self.src.error(target_node, f"'{name}' holds a range and is assigned more than once, or where not "
                                 "all its uses follow: a range held in a variable is made once, before the code "
                                 "that reads it", hint=f"{name} = range(...) on a line of its own, once")

        def held(bound: CExpr, what: str) -> CExpr:
            return bound if bound.literal is not None else self.out.hoist(bound, f"{name}_{what}")

        self.aliases[name] = RangeVal(held(r.start, "start"), held(r.stop, "stop"), held(r.step, "step"))

    def _assign_optional(self, name, value_node, value, inline):
        """An Optional local: ``b = None`` clears its flag, a number sets both, a call of a device function that
        returns an Optional writes the flag through a pointer (``b = bin_number(x, &b_present);``)."""
        flag, key = self.present[name], self.scalars[name]
        if inline:
            self.out.emit(f"bool {flag};")
        decl = f"{c_name(key)} " if inline else ""
        if value is None and isinstance(value_node, ast.Constant) and value_node.value is None:
            self.out.emit(f"{flag} = false;")
            if inline:
                self.out.emit(f"{decl}{self.cname(name)};")
            return
        if value is None and isinstance(value_node, ast.Call):
            f = self.value(value_node.func)
            if isinstance(f, Static) and calls.is_device_function(f.obj):
                rhs = calls.device_call(self, f.obj.py_func, value_node, f.obj, present=flag)
                self.out.emit(f"{decl}{self.cname(name)} = {rhs.code};")
                return
        rhs = self._store_value(value if value is not None else self.expr(value_node), key)
        if rhs.present is not None:
            self.out.emit(f"{decl}{self.cname(name)} = {rhs.code};")
            self.out.emit(f"{flag} = {rhs.present};")
            return
        self.out.emit(f"{decl}{self.cname(name)} = {cast(rhs, key).code};")
        self.out.emit(f"{flag} = true;")

    def _paired(self, tree, v, node, what) -> list[tuple]:
        """(CVar, CExpr) for each number of the tuple value ``v`` stored into the variables ``tree`` (nested as
        the tuple); a located error where ``v`` is not a tuple of that shape."""
        if not isinstance(v, TupleVal) or len(v.items) != len(tree):
            raise self.src.error(node, f"this value cannot be stored: {what}", hint="a tuple of numbers: t = (a, b)")
        return [pair for var, item in zip(tree, v.items)
                for pair in (self._paired(var, item, node, what) if isinstance(var, list)
                             else [(var, self.as_cexpr(item, node))])]

    def _assign_tuple(self, name, value_node, value, inline, target_node, cvars=None):
        v = value if value is not None else self.value(value_node)
        pairs = self._paired(cvars or self.tuple_vars[name], v, target_node, f"'{name}' is {self.ctx.var_type(name)}")
        cvars, items = [var for var, _ in pairs], [item for _, item in pairs]
        reads = {c.cname for c in cvars} & set(_identifiers(" ".join(i.code for i in items)))
        if reads and len(cvars) > 1:  # `t = (t[1], t[0])`: every value first, as Python does
            temps = []
            for var, item in zip(cvars, items):
                tmp = self.out.temp(f"{var.cname}_new")
                self.out.emit(f"const {c_name(var.key)} {tmp} = {item.code};")
                temps.append(CExpr(tmp, var.key, var.nbt))
            items = temps
        for var, item in zip(cvars, items):
            item = self._store_value(item, var.key)
            self.out.emit(f"{c_name(var.key) + ' ' if inline else ''}{var.cname} = {item.code};")

    def as_cexpr(self, v, node):
        if isinstance(v, CExpr):
            return v
        raise self.src.error(node, "this tuple element has no C value", hint="tuples of numbers")

    def _store_value(self, rhs, key):
        if rhs.literal is not None and key in ("float32",) and rhs.key != key:
            return cast(rhs, key)
        if is_complex(key) and rhs.key != key:  # cuComplex types do not convert implicitly
            return cast(rhs, key)
        return rhs

    def _assign_array(self, name, value_node, stmt, target_node, value=None):
        if name in self.arrays and name not in self.array_aliases:
            raise self.src.error(target_node, f"the array name '{name}' is assigned twice",
                                 hint="one name per array")
        if name in self.array_aliases:
            info = self.array_aliases[name]
            where = value_node if value is None else target_node  # (an unpacked item has no node of its own)
            src = self.value(value_node) if value is None else value
            for line in arrays.alias_assignment(self, info, src, where, (id(stmt), name) in self.plan.inline):
                self.out.emit(line)
            return
        if value is not None:
            raise self.src.error(target_node, f"'{name}' is bound to an array here; the C code binds only names it "
                                 "can point anywhere", hint="a name of its own for each array")
        if isinstance(value_node, ast.Call):
            f = self.value(value_node.func)
            from numba import cuda
            if isinstance(f, Static) and f.obj is cuda.const.array_like:
                if len(value_node.args) != 1 or value_node.keywords:
                    raise self.src.error(value_node, "cuda.const.array_like takes one module-level numpy array")
                arg = self.value(value_node.args[0])
                if isinstance(arg, arrays.ArrayInfo):  # of an array that is no constant: numba's is the array itself
                    self.arrays[name] = arg
                    return
                src = value_node.args[0]
                found, arr = self.lookup_global(src.id) if isinstance(src, ast.Name) else (False, None)
                if not found or not isinstance(src, ast.Name):
                    raise self.src.error(src, "cuda.const.array_like takes a numpy array defined at module level")
                self.arrays[name] = arrays.const_array(self, src.id, arr, value_node)
                return
            if isinstance(f, Static) and f.obj in (cuda.shared.array, cuda.local.array):
                kw = {k.arg: k.value for k in value_node.keywords if k.arg is not None}
                unknown = sorted(set(kw) - {"shape", "dtype", "alignment"})
                if unknown:
                    raise self.src.error(value_node, f"unsupported keyword(s) {', '.join(unknown)} of a shared/local "
                                         "array", hint="shape, dtype and alignment")
                args = [a for a in list(value_node.args) + [kw.get("shape"), kw.get("dtype")][len(value_node.args):]
                        if a is not None]
                if len(args) != 2:
                    raise self.src.error(value_node, "shared/local arrays need a shape and a dtype",
                                         hint="cuda.shared.array((16, 16), dtype=np.float32)")
                kind = "shared" if f.obj is cuda.shared.array else "local"
                decl, info = arrays.declare_static(self, kind, self.cname(name), args[0], args[1], value_node,
                                                   alignment=kw.get("alignment"), pyname=name)
                self.arrays[name] = info
                self.out.emit(decl)
                return
        if isinstance(value_node, ast.Subscript) and isinstance(value_node.slice, ast.Slice):
            base = self.value(value_node.value)
            if isinstance(base, arrays.ArrayInfo):
                decl, info = arrays.view(self, self.cname(name), base, value_node.slice, value_node, pyname=name)
                self.arrays[name] = info
                self.out.emit(decl)
                return
        raise self.src.error(value_node, "array variables must be created by cuda.shared.array/cuda.local.array "
                             "or as a slice of the dynamic shared array",
                             hint="index the argument array directly instead of aliasing it")

    def _unpack(self, target, value_node, stmt, value=None):
        names = target.elts
        if not all(isinstance(n, (ast.Name, ast.Subscript, ast.Tuple)) for n in names):
            raise self.src.error(target, "tuple unpacking supports names and array elements", hint="a, b = ...")
        nested = any(isinstance(n, ast.Tuple) for n in names)  # (lo, hi), (s, d) = f(x)
        if isinstance(value_node, ast.Tuple) and value is None and not nested:
            if len(value_node.elts) != len(names):
                raise self.src.error(value_node, "unpacking needs as many values as names")
            reads = {n.id for v in value_node.elts for n in ast.walk(v) if isinstance(n, ast.Name)}
            written = [n.id for n in names if isinstance(n, ast.Name)]
            subscripts = any(isinstance(n, ast.Subscript) for n in names)
            if subscripts or (reads & set(written[:-1]) and
                              not all(isinstance(self.ctx.var_type(w), types.Array) for w in written)):
                # `a, b = b, a`: every value first, as Python does
                items = []
                for n, v in zip(names, value_node.elts):
                    e = self.expr(v)
                    if e.literal is not None or not subscripts and n.id not in self.scalars:
                        if not subscripts:
                            raise self.src.error(n, "swapping is supported for numbers only")
                        items.append(e)
                        continue
                    stem = self.cname(n.id).rstrip("_") if isinstance(n, ast.Name) else "value"
                    tmp = self.out.temp(f"{stem}_new")
                    self.out.emit(f"const {c_name(e.key)} {tmp} = {e.code};")
                    items.append(CExpr(tmp, e.key, e.nbt))
                for n, e in zip(names, items):
                    self._assign_item(n, e, stmt)
                return
            for n, v in zip(names, value_node.elts):
                self._assign_name(n.id, v, stmt, n)
            return
        direct = calls.direct_outs(self, names, value_node, stmt) if value is None else None
        if direct is not None and isinstance(value_node, ast.Call):
            f = self.value(value_node.func)
            calls.device_call(self, f.obj.py_func, value_node, f.obj, outs=direct)
            return
        v = value if value is not None else self.value(value_node)
        where = value_node if value_node is not None else target  # (an inner target's value has no node)
        v = arrays.as_array(self, v, where)
        if isinstance(v, arrays.ArrayInfo):  # x, y, z = m[i]: its elements (or rows), after numba's length check
            v = self._array_items(v, len(names), where)
        if not isinstance(v, TupleVal) or len(v.items) != len(names):
            raise self.src.error(where, "this value cannot be unpacked into names",
                                 hint="a, b = x, y / h, w = m.shape / c, r = cuda.grid(2)")
        if nested and value is None:  # every value first, as Python does: `(a, b), c = (b, a), 1`
            v = self._held(v, {self.cname(n.id) for n in ast.walk(target) if isinstance(n, ast.Name)})
        for n, item in zip(names, v.items):
            self._assign_item(n, item, stmt)

    def _held(self, v: TupleVal, written: set) -> TupleVal:
        """The tuple ``v`` with each number that reads a variable in ``written`` (C names) held in a constant
        first."""
        items = []
        for x in v.items:
            if isinstance(x, TupleVal):
                x = self._held(x, written)
            elif isinstance(x, CExpr) and (not x.pure or written & set(_identifiers(x.code))):
                x = self.out.hoist(x, "value")
            items.append(x)
        return TupleVal(items, v.fields)

    def _array_items(self, info, n, node) -> TupleVal:
        """The ``n`` items of an array being unpacked: numba raises ValueError for an array of another length,
        which ends the thread on a GPU (so does the C)."""
        from numba.cuda import types as nt

        if info.extents is None:
            raise self.src.error(node, "dynamic shared memory cannot be unpacked: its extent is not known to the C")
        first = info.extents[0]
        if first.literal is None:
            self.out.emit(f"if ({paren(first, 9)} != {n}) asm volatile(\"exit;\");  // numba: ValueError (the thread "
                      "ends)")
        elif first.literal != n:
            raise self.src.error(node, f"this array has {first.literal} items, not {n}: numba raises ValueError")
        items = []
        for k in range(n):
            index = CExpr(str(k), "int64", nt.literal(k), literal=k, nonneg=True)
            if info.ndim == 1:
                items.append(arrays.element_at(self, info, [index], node))
            else:
                items.append(arrays.row_array(self, arrays.Row(info, [index], [node]), node))
        return TupleVal(items)

    def _assign_item(self, target, value, stmt):
        """One target of an unpacking, its value already evaluated."""
        if isinstance(target, ast.Name):
            return self._assign_name(target.id, None, stmt, target, value=value)
        if isinstance(target, ast.Tuple):
            return self._unpack(target, None, stmt, value=value)
        base = self.value(target.value)
        if not isinstance(base, (arrays.ArrayInfo, arrays.Row)):
            raise self.src.error(target, "only array elements can be assigned", hint="x[i] = v")
        self.mark_written(base.name)
        lhs = arrays.element(self, base, target.slice, target)
        self.out.emit(f"{lhs.code} = {self._store_value(cast(value, lhs.key), lhs.key).code};")

    def s_AugAssign(self, node):
        op = BINOPS.get(type(node.op))
        if op is None:
            raise self.src.error(node, "unsupported augmented assignment")
        target = node.target
        if isinstance(target, ast.Name) and target.id in self.retyped:  # the version read, then the one stored
            cur = self.as_cexpr(self.v_Name(ast.copy_location(ast.Name(target.id, ast.Load()), target)), target)
            res = self.binop(op, cur, self.expr(node.value), node)
            return self._assign_name(target.id, None, node, target, value=res)
        if isinstance(target, ast.Name):
            if target.id not in self.scalars:
                raise self.src.error(target, "augmented assignment needs a number variable")
            cur = self.as_cexpr(self.v_Name(ast.Name(target.id, ast.Load())), target)
            lhs_code = self.cname(target.id)
        elif isinstance(target, ast.Subscript):
            base = self.value(target.value)
            if not isinstance(base, (arrays.ArrayInfo, arrays.Row)):
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
        res = self.binop(op, cur, rhs, node)
        if res.infix is not None and res.infix[0] == lhs_code and res.infix[1] in "+-*/%&|^<<>>":
            self.out.emit(f"{lhs_code} {res.infix[1]}= {res.infix[2]};")
        else:
            self.out.emit(f"{lhs_code} = {res.code};")


def _own_nodes(fn: ast.FunctionDef):
    """The nodes of ``fn`` outside the functions defined inside it."""
    todo = list(ast.iter_child_nodes(fn))
    while todo:
        node = todo.pop()
        yield node
        if not isinstance(node, (ast.FunctionDef, ast.Lambda)):
            todo.extend(ast.iter_child_nodes(node))


def _identifiers(code: str) -> list[str]:
    import re

    return re.findall(r"[A-Za-z_][A-Za-z0-9_]*", code)


def _named(v: TupleVal) -> bool:
    """Can a Python name stand for the tuple ``v`` in the C (its items read again where the name is read): pure
    numbers, arrays (pointers that do not move) and tuples of those."""
    return all(_named(i) if isinstance(i, TupleVal) else isinstance(i, arrays.ArrayInfo) or
               isinstance(i, CExpr) and i.pure for i in v.items)
