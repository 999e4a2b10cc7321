"""What a builtin's handler may use of the translator it is given: the declared interface of the builtins table's
extension point (``builtins.PROVIDERS``). A provider module (``intrinsics``, ``atomics``, ``mathfuncs``,
``pybuiltins``, ``vectors``, and any new one, such as tensor-core intrinsics) receives ``tr`` and uses only these;
``tests/translate/test_builtin_interface.py`` checks that every provider keeps to them and that the translator
(``stmts.FunctionTranslator``) provides them. ``calls`` (device functions) is the translator's own and reaches
further into its state.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from ..errors import SourceInfo

if TYPE_CHECKING:
    from ..typed import TypedFunction


@dataclass(frozen=True)
class FunctionContext:
    """What does not change while one function is translated: the function, numba's record of it, its source and
    parameters, and the file it goes into."""
    unit: Any                         # the file being generated (unit.Unit): helpers, constants, device functions
    pyfunc: Any                       # the Python function (a FunctionType: as a class attribute pyright binds it)
    typed: TypedFunction              # numba's types (the typed record) as C declares them
    kind: str                         # "kernel" | "device"
    name: str                         # the Python name
    c_function: str                   # the C name
    fn: ast.FunctionDef               # the syntax tree the walk reads
    src: SourceInfo                   # its text and place, to locate errors
    params: tuple[str, ...]           # every Python parameter
    runtime_params: tuple[str, ...]   # those that are C parameters (the others are bound)
    bound: Mapping[str, Any]          # parameters bound to compile-time values (a specialised device function)
    instantiations: tuple[Mapping[str, Any], ...]  # each C++ template instantiation's constants

    def var_type(self, name: str):
        """numba's type of a Python name (its SSA versions merged, ``typed``)."""
        return self.typed.var_types.get(name)


class Translator(Protocol):
    @property
    def src(self) -> SourceInfo:
        """The function's source: ``tr.src.error(node, message, hint=...)`` to raise a located error."""
        ...

    @property
    def helpers(self) -> set[str]:
        """Names of ``helpers.py`` entries the generated file needs (``tr.helpers.add("nk_wrap")``)."""
        ...

    @property
    def unit(self) -> Any:
        """The file being generated (``unit.Unit``): its fastmath, constants and device functions."""
        ...

    def expr(self, node: ast.AST) -> Any:
        """The C of an expression that has a C value (``cexpr.CExpr``), or a located error."""
        ...

    def value(self, node: ast.AST) -> Any:
        """``CExpr``, ``TupleVal``, ``arrays.ArrayInfo``/``Row`` or ``Static`` (a compile-time Python object)."""
        ...

    def cond(self, node: ast.AST) -> Any:
        """An expression used for its truth value."""
        ...

    def signature(self, node: ast.AST, index: int = 0) -> Any:
        """numba's signature of the operation ``node`` performs, from the typed record (a located error where numba
        compiled none)."""
        ...

    def binop(self, op: str, left: Any, right: Any, node: ast.AST, sig: Any = None) -> Any:
        """``left op right`` (``CExpr``) as numba computes it with signature ``sig`` (default: ``node``'s)."""
        ...

    def viewed(self, view: Any) -> Any:
        """A view of an array (``arrays.ArrayInfo``): stores through it write the array it is part of."""
        ...

    def scalar_key(self, numba_type: Any) -> str | None:
        """The C type key of a numba type (``"float32"``, ``"int64"``, a record's), else None."""
        ...

    def const_value(self, node: ast.AST) -> Any:
        """The compile-time Python value of ``node``, else None."""
        ...

    def dtype_key(self, node: ast.AST, where: Any) -> str:
        """The C type key of a dtype argument (``np.float32``, ``"int32"``)."""
        ...

    def lookup_global(self, name: str) -> tuple[bool, Any]:
        """``(found, value)`` of a name the kernel reads from its module or closure."""
        ...

    def emit(self, line: str) -> None:
        """A C statement before the current one (only where ``require_hoist`` allows it)."""
        ...

    def temp(self, want: str) -> str:
        """A fresh C name for a temporary."""
        ...

    def hoist(self, e: Any, want: str) -> Any:
        """``e`` evaluated once, now, into a new constant."""
        ...

    def require_hoist(self, node: ast.AST | None) -> None:
        """A located error if no statement may be emitted before the current expression."""
        ...

    def mark_written(self, cname: str) -> None:
        """The array of C name ``cname`` is written (so it is not ``const``)."""
        ...


#: the names of the interface, for the check of the providers
MEMBERS = frozenset(name for name in (*Translator.__annotations__, *vars(Translator)) if not name.startswith("_"))
