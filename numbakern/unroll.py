"""Unrolling of constant-trip loops: ``for i in unroll(range(C))``, the Numba spelling of ``#pragma unroll``.

NVVM leaves a loop rolled when its body is large (the flagship matmul's k-steps: 64 multiply-adds each), and
numba-cuda has no way to ask for unrolling. A fully unrolled k-loop is what turns rolled fragment indices into
registers and shared-memory offsets into immediates (``docs/performance.md``). ``unroll`` marks the loops to
unroll; numbakern expands them in the Python source before Numba sees the function::

    @specialize
    def kernel(bk):
        @cuda.jit
        def kernel(a_s, ...):
            for kk in unroll(range(bk)):      # bk copies of the body, kk a literal in each
                ...
        return kernel

``unroll(range(C), k)`` unrolls by ``k`` instead: a loop over every k-th value whose body is k copies (the
variable counts the loop's values, the copies read ``i``, ``i + step``, ...), then the ``C % k`` remaining values
as copies; ``k = 1`` keeps the loop rolled. The C says ``#pragma unroll k``: the same shape on both sides, where
a full unroll would cost registers or (in numba, for large bodies) minutes of compile time.

``specialize`` expands every kernel it builds (``expand_kernel``); ``unrolled`` does it for a plain function,
under the ``@cuda.jit`` decorator. The range's arguments must be compile-time values: literals, module constants,
a factory's closure constants, or the counters of enclosing unrolled loops. Each copy of the body keeps the
original source lines (so errors and simulator reports point at the loop's lines), and the loop variable becomes a
literal of the type Numba gives the counter (a Python int, or ``np.uint64`` for a range of unsigned numbers).
``break``/``continue`` directly in an unrolled body, an ``else`` clause, and assignments to the loop variable
are refused with the loop's file and line.

The expansion is remembered on disk (``numbakern.frontend.cache``, beside the front end's facts): the compiled
code of an expanded function, keyed by its file's text, its position, its closure's values and this module's own
source, with every compile-time value the expansion read (which loops are ``unroll`` loops, their ranges and
factors). A process that builds the same kernel reads the code back after evaluating those values again and
finding each the same; any other answer expands again. Loading the kernel library then costs a process a fraction
of a second instead of seconds (every ``translate`` command and worker process loads it).

How each consumer sees it:

- **Numba (GPU)**: the expanded function, straight-line code. Outside an expanded function ``unroll`` is an inline
  identity on the range, so such a loop is correct, just rolled.
- **Simulator**: the original, rolled function, typed by numba as written (numba types a tensor-core kernel's
  expansion for seconds, its loops in about one); the expansion where numba refuses the rolled loops (a counter
  that must be a literal), and for the profiler, which counts the GPU's code (``numbakern.sim.kerneltypes``).
- **translate**: the original, rolled function (``rolled_function``), with ``#pragma unroll`` on the loop.
"""

from __future__ import annotations

import ast
import builtins
import hashlib
import inspect
import linecache
import marshal
import sys
import textwrap
import types as pytypes
from collections.abc import Callable
from typing import Any

import numpy as np

from . import mlir_lowering, mode
from .frontend import cache, closures
from .intrinsics import numba_cuda
from .intrinsics.op import when_imported

#: the attribute of an expanded function that holds the original one (read by the translator)
ROLLED_ATTR = "__numbakern_rolled__"

#: the name under which an expanded function reaches ``np.uint64`` (a parameter of the wrapper, so a closure value)
_UINT64_NAME = "__numbakern_uint64__"


def _py_unroll(r, times=None):
    """Marks ``for i in unroll(range(C)):`` for full unrolling (``unroll(range(C), k)``: k copies of the body per
    iteration); in plain Python it returns the range."""
    return r


def _register_overload():
    """numba's typing of ``unroll`` where a function was not expanded: the range itself (the loop stays rolled)."""
    from numba.cuda import types
    from numba.cuda.extending import overload

    @overload(_py_unroll, target="cuda", inline="always")
    def _unroll_overload(r, times=None):
        if not isinstance(r, types.RangeType):
            raise TypeError(f"unroll() takes a range(...), got {r}")

        def impl(r, times=None):
            return r

        return impl


unroll = _py_unroll
when_imported(numba_cuda.TARGET, _register_overload)  # numba-cuda's typing of it, once its CUDA target is loaded
mlir_lowering.register("unroll", unroll=_py_unroll)  # and numba-cuda-mlir's typing of it (numbakern.mlir_lowering)
_UNROLL_OBJECTS = {id(_py_unroll)}


class UnrollError(SyntaxError):
    """An ``unroll`` loop that cannot be expanded; the message names the file and line."""


# ---------------------------------------------------------------------------------------------------------------
# the public entry points


def rolled_function(func: Callable) -> Callable:
    """The function as its author wrote it (the original of an expanded function, else ``func`` itself)."""
    return getattr(func, ROLLED_ATTR, func)


def uses_unroll(func: Callable) -> bool:
    """A cheap test: does ``func``'s code name ``unroll`` at all (as a global, a closure value or an attribute)?"""
    code = getattr(func, "__code__", None)
    return code is not None and ("unroll" in code.co_names or "unroll" in closures.free_names(func))


def unrolled(func: Callable) -> Callable:
    """``func`` with its ``unroll`` loops expanded (``func`` itself when it has none). A decorator for plain kernels::

        @cuda.jit
        @unrolled
        def kernel(...): ...
    """
    if getattr(func, ROLLED_ATTR, None) is not None or not uses_unroll(func):
        return func
    name = _cache_name(func)
    if name is None:
        return _Expander(func).expand()
    code = _cached(name, func)
    if code is None:
        with cache.making(name):  # another process expanding it: its code, once stored
            code = _cached(name, func)
            if code is None:
                expander = _Expander(func)
                expanded = expander.expand()
                if expander.wrapper_code is not None:
                    cache.store_bytes(name, marshal.dumps((expander.wrapper_code, sorted(expander.read.items()))))
                return expanded
    return _made(func, code, closures.closure_values(func))


def expand_kernel(kernel: Any) -> Any:
    """A ``@cuda.jit`` kernel (Numba's dispatcher, or the simulator's kernel object) rebuilt from the expanded
    function, with the same options; ``kernel`` itself when it has no ``unroll`` loops."""
    func = getattr(kernel, "py_func", None) or getattr(kernel, "fn", None)
    if func is None or getattr(func, ROLLED_ATTR, None) is not None or not uses_unroll(func):
        return kernel
    expanded = unrolled(func)
    if expanded is func:
        return kernel
    if type(kernel).__module__ == "numbakern.sim.mlirsim":  # a numba-cuda-mlir kernel in the simulator
        return type(kernel)(expanded, device=kernel._device, debug=kernel._debug, options=kernel.options)
    if type(kernel).__module__.startswith("numba_cuda_mlir."):  # numba-cuda-mlir's own dispatcher
        from .frontend.choice import mlir_rejit

        return mlir_rejit(kernel, expanded)
    if mode.in_simulator():
        from numba.cuda.simulator.kernel import FakeCUDAKernel

        return FakeCUDAKernel(expanded, device=kernel._device, fastmath=kernel._fastmath,
                              extensions=kernel.extensions, debug=kernel._debug)
    from numba.cuda.dispatcher import CUDADispatcher

    rebuilt = CUDADispatcher(expanded, targetoptions=dict(kernel.targetoptions))
    for argtypes in list(getattr(kernel, "overloads", {})):  # an eagerly compiled kernel stays eagerly compiled
        rebuilt.compile(argtypes)
    return rebuilt


# ---------------------------------------------------------------------------------------------------------------
# the expansion


class _Expander:
    def __init__(self, func: Callable):
        self.func = func
        self.filename = func.__code__.co_filename
        try:
            lines, self.first = inspect.getsourcelines(func)
        except (OSError, TypeError) as e:
            raise UnrollError(f"unroll: the source of {func.__qualname__} is not available ({e}); loops can be "
                              "unrolled only in functions defined in a file") from None
        tree = ast.parse(textwrap.dedent("".join(lines)))
        ast.increment_lineno(tree, self.first - 1)
        self.fndef = next(n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)))
        self.env = dict(vars(builtins))
        self.env.update(func.__globals__)
        self.closure = closures.closure_values(func)
        for name in closures.free_names(func):
            if name not in self.closure:
                raise UnrollError(f"unroll: {func.__qualname__} refers to '{name}' before it is assigned")
        self.env.update(self.closure)
        self.env[_UINT64_NAME] = np.uint64
        self.count = 0
        #: every compile-time value the expansion read: (expression, the enclosing counters it reads) -> value
        self.read: dict[tuple, tuple] = {}
        self.wrapper_code: pytypes.CodeType | None = None

    def expand(self) -> Callable:
        fndef = self.fndef
        fndef.decorator_list = []
        fndef.body = self._block(fndef.body, {})
        if not self.count:
            return self.func
        params = [*self.closure, _UINT64_NAME]
        wrapper = ast.FunctionDef(
            name="__numbakern_unrolled__",
            args=ast.arguments(posonlyargs=[], args=[ast.arg(p) for p in params], kwonlyargs=[], kw_defaults=[],
                               defaults=[]),
            body=[fndef, ast.Return(ast.Name(fndef.name, ast.Load()))], decorator_list=[], returns=None)
        if "type_params" in ast.FunctionDef._fields:  # Python 3.12+
            wrapper.type_params = []
        returned = wrapper.body[1]
        for node in (wrapper, *wrapper.args.args, returned, returned.value):  # (the kernel's own nodes have theirs)
            ast.copy_location(node, fndef)
        module = ast.Module(body=[wrapper], type_ignores=[])
        code = compile(module, self.filename, "exec")
        self.wrapper_code = next(c for c in code.co_consts if isinstance(c, pytypes.CodeType))
        return _made(self.func, self.wrapper_code, self.closure)

    def _block(self, stmts: list, consts: dict) -> list:
        out = []
        for stmt in stmts:
            if isinstance(stmt, ast.For) and self._is_unroll(stmt.iter, consts):
                out.extend(self._unroll(stmt, consts))
                continue
            for field in ("body", "orelse", "finalbody"):
                inner = getattr(stmt, field, None)
                if isinstance(inner, list) and inner and isinstance(inner[0], ast.stmt):
                    setattr(stmt, field, self._block(inner, consts) or [ast.copy_location(ast.Pass(), stmt)])
            out.append(stmt)
        return out

    def _is_unroll(self, node, consts) -> bool:
        if not (isinstance(node, ast.Call) and len(node.args) in (1, 2) and not node.keywords):
            return False
        return self._value(node.func, consts, _MARKER)

    def _unroll(self, loop: ast.For, consts: dict) -> list:
        where = f"{self.filename}:{loop.lineno}"
        rng = loop.iter.args[0]
        if not (isinstance(rng, ast.Call) and isinstance(rng.func, ast.Name) and rng.func.id == "range"
                and 1 <= len(rng.args) <= 3 and not rng.keywords):
            raise UnrollError(f"{where}: unroll() takes range(...) with 1 to 3 positional arguments")
        if not isinstance(loop.target, ast.Name):
            raise UnrollError(f"{where}: an unrolled loop needs a single name as its variable")
        if loop.orelse:
            raise UnrollError(f"{where}: an unrolled loop cannot have an else clause")
        var = loop.target.id
        _check_body(loop, var, where)
        try:
            bounds = [self._value(a, consts, _NUMBER) for a in rng.args]
            times = self._value(loop.iter.args[1], consts, _NUMBER) if len(loop.iter.args) == 2 else None
        except Exception as e:  # noqa: BLE001
            raise UnrollError(f"{where}: the trip count of an unrolled loop must be a compile-time constant "
                              "(a literal, a module constant, a factory's constant): "
                              f"{type(e).__name__}: {e}") from None
        if not all(_is_int(b) for b in bounds):
            raise UnrollError(f"{where}: range() of an unrolled loop needs integers, got "
                              f"{', '.join(type(b).__name__ for b in bounds)}")
        if times is not None and (not _is_int(times) or times < 1):
            raise UnrollError(f"{where}: unroll(range(...), times) needs a positive integer times, got {times!r}")
        unsigned = any(isinstance(b, np.unsignedinteger) for b in bounds)
        values = range(*(int(b) for b in bounds))
        self.count += 1
        if times is None or times >= len(values):
            return self._copies(loop, var, values, consts, unsigned)
        if times == 1:  # kept rolled (the C says `#pragma unroll 1`)
            loop.iter = rng
            loop.body = self._block(loop.body, consts)
            return [loop]
        return self._partial(loop, var, values, int(times), consts, unsigned)

    def _copies(self, loop, var, values, consts, unsigned, offset=None) -> list:
        """The body once per value, the variable a literal in each (or ``offset + literal``, an expression)."""
        out = []
        for value in values:
            literal = self._literal(value, unsigned, loop)
            if offset is not None:
                literal = ast.fix_missing_locations(
                    ast.copy_location(ast.BinOp(ast.Name(offset, ast.Load()), ast.Add(), literal), loop))
            body = _clone(loop.body, var, literal)
            out.extend(self._block(body, consts if offset is not None else
                                   {**consts, var: np.uint64(value) if unsigned else value}))
        return out

    def _partial(self, loop, var, values, times, consts, unsigned) -> list:
        """``times`` copies of the body per iteration of a loop over the first ``len // times * times`` values
        (the variable counts those iterations' first values), then the remaining values as copies."""
        main = len(values) // times * times
        step = values.step
        rolled = ast.For(
            target=ast.Name(var, ast.Store()),
            iter=ast.Call(ast.Name("range", ast.Load()),
                          [self._literal(values.start, unsigned, loop),
                           self._literal(values.start + main * step, unsigned, loop),
                           self._literal(times * step, unsigned, loop)], []),
            body=[], orelse=[])
        ast.copy_location(rolled, loop)
        steps = [q * step for q in range(times)]
        first = _clone(loop.body)  # the first copy reads the counter itself
        rolled.body = self._block(first, consts) + self._copies(loop, var, steps[1:], consts, unsigned, offset=var)
        for node in (rolled.target, rolled.iter, rolled.iter.func):  # (the literals and the copies have theirs)
            ast.copy_location(node, loop)
        return [rolled] + self._copies(loop, var, values[main:], consts, unsigned)

    def _literal(self, value: int, unsigned: bool, where: ast.AST) -> ast.expr:
        node = ast.Constant(value)
        if unsigned:  # numba counts a range of unsigned numbers in uint64: the literal keeps that type
            node = ast.Call(ast.Name(_UINT64_NAME, ast.Load()), [node], [])
        return ast.fix_missing_locations(ast.copy_location(node, where))

    def _value(self, node: ast.expr, consts: dict, kind: str):
        """The value of a compile-time expression of the kernel (the counters of enclosing unrolled loops known), as
        ``kind`` reads it (``_MARKER``: whether it is the ``unroll`` marker), recorded for the cache."""
        text = ast.unparse(node)
        code = _expression(text, self.filename)
        counters = tuple(sorted((n, _number(consts[n])) for n in code.co_names if n in consts))
        value = _evaluate(code, self.env, consts, kind)
        self.read[(kind, text, counters)] = _number(value) if kind == _NUMBER else value
        return value


#: what an expression of the expansion is read as: whether it is the ``unroll`` marker, or a number
_MARKER, _NUMBER = "marker", "number"


def _expression(text: str, filename: str, _compiled: dict = {}) -> pytypes.CodeType:  # noqa: B006 - a memo
    key = (text, filename)
    code = _compiled.get(key)
    if code is None:
        code = _compiled[key] = compile(text.strip(), filename, "eval")
    return code


def _evaluate(code: pytypes.CodeType, env: dict, consts: dict, kind: str):
    if kind == _MARKER:
        try:
            return id(eval(code, {**env, **consts})) in _UNROLL_OBJECTS  # noqa: S307 - the kernel's source
        except Exception:  # noqa: BLE001 - a run-time name: not the marker
            return False
    return eval(code, {**env, **consts})  # noqa: S307 - the kernel's source


def _number(value) -> tuple:
    """A value as the cache records it: an integer's type and value (``np.uint64`` makes the copies' literals
    unsigned); anything else by its type alone, which no expansion accepts as a bound."""
    if _is_int(value):
        return (type(value).__module__, type(value).__qualname__, int(value))
    return (type(value).__module__, type(value).__qualname__, None)


def _from_number(recorded: tuple):
    """An enclosing loop's counter as the expansion had it (a Python int, or a numpy integer)."""
    module, name, value = recorded
    return int(value) if module == "builtins" else getattr(np, name)(value)


def _made(func: Callable, wrapper_code: pytypes.CodeType, closure: dict) -> Callable:
    """The expanded function: the wrapper's code run on ``func``'s globals and closure values."""
    make = pytypes.FunctionType(wrapper_code, func.__globals__)
    new = make(*closure.values(), np.uint64)
    for attr in ("__module__", "__qualname__", "__doc__", "__defaults__", "__kwdefaults__"):
        setattr(new, attr, getattr(func, attr))
    setattr(new, ROLLED_ATTR, func)
    return new


# ---------------------------------------------------------------------------------------------------------------
# the cache of expansions

#: bump when what an entry holds changes shape
_FORMAT = 1


def _cache_name(func: Callable) -> str | None:
    """The entry's name for ``func``: its file's text and its place in it, its closure's values, this module's
    source and Python's version (the code's format); None when its file cannot be read."""
    code = func.__code__
    linecache.checkcache(code.co_filename)  # the file as it is now, as inspect reads it for the expansion
    lines = linecache.getlines(code.co_filename)
    if not lines:
        return None
    h = hashlib.sha256(f"unroll {_FORMAT}; {sys.version}; {_own_source()}; {code.co_filename}; "
                       f"{code.co_firstlineno}; {func.__qualname__}\n".encode())
    h.update("".join(lines).encode())
    for name, value in closures.closure_values(func).items():
        h.update(f"\0{name}={_number(value) if _is_int(value) else type(value).__qualname__}".encode())
    return f"unroll-{h.hexdigest()}.code"


def _cached(name: str, func: Callable) -> pytypes.CodeType | None:
    """The entry's wrapper code when every value its expansion read reads the same now, else None."""
    data = cache.load_bytes(name)
    if data is None:
        return None
    try:
        wrapper_code, read = marshal.loads(data)
    except (ValueError, EOFError, TypeError):
        return None  # another Python's marshal format, or a damaged file
    env = {**vars(builtins), **func.__globals__, **closures.closure_values(func), _UINT64_NAME: np.uint64}
    for (kind, text, counters), recorded in read:
        consts = {n: _from_number(v) for n, v in counters}
        try:
            value = _evaluate(_expression(text, func.__code__.co_filename), env, consts, kind)
        except Exception:  # noqa: BLE001 - a value the expansion read that cannot be read now: expand again
            return None
        if (_number(value) if kind == _NUMBER else value) != recorded:
            return None
    return wrapper_code if isinstance(wrapper_code, pytypes.CodeType) else None


_own: str | None = None


def _own_source() -> str:
    """This module's source, hashed: an expansion made by other code is never reused."""
    global _own
    if _own is None:
        with open(__file__, "rb") as f:
            _own = hashlib.sha256(f.read()).hexdigest()
    return _own


def _check_body(loop: ast.For, var: str, where: str) -> None:
    """Refuse what copies of the body cannot express: break/continue of this loop, assignments to its variable."""

    def visit(node, in_nested_loop):
        if isinstance(node, (ast.Break, ast.Continue)) and not in_nested_loop:
            raise UnrollError(f"{where}: break/continue in an unrolled loop's body is not supported")
        if isinstance(node, ast.Name) and node.id == var and not isinstance(node.ctx, ast.Load):
            raise UnrollError(f"{where}: the unrolled loop's variable '{var}' is assigned in its body")
        nested = in_nested_loop or isinstance(node, (ast.For, ast.While))
        for child in ast.iter_child_nodes(node):
            visit(child, nested)

    for stmt in loop.body:
        visit(stmt, False)


def _clone(node, name: str | None = None, literal: ast.expr | None = None):
    """A copy of an AST (a node, or a list of them): new nodes, the same immutable leaves; with ``name``, each read
    of that name replaced by a copy of ``literal``. ``copy.deepcopy`` and a second pass did this at several times
    the cost, paid by every process that loads the kernel library (it expands the library's unrolled loops)."""
    if isinstance(node, list):
        return [_clone(n, name, literal) for n in node]
    if name is not None and type(node) is ast.Name and node.id == name and type(node.ctx) is ast.Load:
        return ast.copy_location(_clone(literal), node)
    cls = node.__class__
    new = cls.__new__(cls)
    new.__dict__.update({k: _clone(v, name, literal) if isinstance(v, (list, ast.AST)) else v
                         for k, v in node.__dict__.items()})
    return new


def _is_int(v) -> bool:
    return isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_))


__all__ = ["unroll", "unrolled", "expand_kernel", "rolled_function", "uses_unroll", "UnrollError"]
