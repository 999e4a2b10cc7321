"""Where the code generator's walk hands a call of a declared instruction (``numbakern.intrinsics``) to the C emitter
registered on its Op: a ``Site``, the narrow view of the call an emitter gets (its arguments, evaluated when the
emitter asks for them; the C helpers, statements and names it may add; located errors). ``call_op`` is the
builtins table's handler of every declared instruction. Nothing here imports numba's CUDA target, so the helpers'
text (``helpers.py``) can be read without it.
"""

from __future__ import annotations

import ast

from numbakern.intrinsics import op_of

from . import arrays
from .cexpr import CExpr


class Site:
    """One call of a declared instruction, as its C emitter (``op.emitters["c"]``) sees it: the interface between
    the code generator's walk and the emitters (/work/lab/coord/record-ops.md). Arguments are evaluated when the
    emitter first asks for them, in the order it asks (so the C's temporaries come in that order)."""

    def __init__(self, tr, op, node):
        self._tr, self._node, self.op = tr, node, op
        self._values: dict = {}

    @property
    def unit(self):
        """The kernel being translated (its parameters; the tensor maps its launcher makes)."""
        return self._tr.unit

    @property
    def nargs(self) -> int:
        return len(self._node.args)

    @property
    def keywords(self) -> bool:
        """Whether the call passes keyword arguments (the instructions take theirs by position)."""
        return bool(self._node.keywords)

    def args(self, count: int, usage: str = "") -> None:
        """Exactly ``count`` positional arguments, or the error saying what the call takes."""
        if len(self._node.args) != count or self._node.keywords:
            raise self.error(None, f"{self.op.name} takes {usage or f'{count} argument(s)'}"
                             + (" by position" if self._node.keywords else ""))

    def value(self, i: int):
        """The i-th argument: a ``CExpr``, ``TupleVal``, ``ArrayInfo`` or ``Static``."""
        if i not in self._values:
            self._values[i] = self._tr.value(self._node.args[i])
        return self._values[i]

    def expr(self, i: int) -> CExpr:
        """The i-th argument as a C value (a located error if it has none)."""
        v = self.value(i)
        return v if isinstance(v, CExpr) else self._tr.expr(self._node.args[i])

    def cond(self, i: int) -> CExpr:
        return self._tr.cond(self._node.args[i])

    def constant(self, i: int):
        """The i-th argument's compile-time value, else None."""
        return self._tr.const_value(self._node.args[i])

    def array(self, i: int, *kinds: str):
        """The i-th argument if it is an array of one of ``kinds`` (``ArrayInfo.kind``), or an array parameter of a
        device function (whatever array its caller passes: a shared tile, a register array), else None."""
        info = self.value(i)
        return info if arrays.is_kind(self._tr, info, *kinds) else None

    def is_tuple(self, i: int) -> bool:
        """Whether the i-th argument is written as a tuple (an index of one integer per dimension)."""
        return isinstance(self._node.args[i], ast.Tuple)

    def element(self, array: int, index: int | None = None, offset: bool = False) -> CExpr:
        """The C of ``args[array][args[index]]`` (its lvalue, or with ``offset`` its flat element offset); index
        None: the array's first element."""
        info = self.value(array)
        if index is None:
            return arrays.element_at(self._tr, info, [CExpr("0", "int32", None, literal=0, nonneg=True)], self._node)
        return arrays.element(self._tr, info, self._node.args[index], self._node, offset=offset)

    def signature(self):
        """numba's signature of the call."""
        return self._tr.signature(self._node)

    def scalar_key(self, numba_type) -> str | None:
        return self._tr.scalar_key(numba_type)

    def hoist(self, e: CExpr, want: str) -> CExpr:
        """``e`` evaluated once, now, into a new constant."""
        return self._tr.hoist(e, want)

    def helper(self, name: str) -> None:
        self._tr.helpers.add(name)

    def statement(self, code: str) -> None:
        """A C statement before the call's expression (a located error where none may go there)."""
        self._tr.require_hoist(self._node)
        self._tr.emit(code)

    def emit(self, code: str) -> None:
        """A C statement of a call that is itself a statement."""
        self._tr.emit(code)

    def temp(self, hint: str) -> str:
        return self._tr.temp(hint)

    def writes(self, array: int) -> None:
        self._tr.mark_written(self.value(array).name)

    def need_statement(self) -> None:
        """A located error if no statement may go before the call's expression."""
        self._tr.require_hoist(self._node)

    def error(self, i: int | None, message: str, hint: str | None = None) -> Exception:
        node = self._node if i is None else self._node.args[i]
        return self._tr.src.error(node, message, hint=hint) if hint else self._tr.src.error(node, message)


def call_op(tr, obj, node):
    """The builtins table's handler of every declared instruction: its C emitter, given the call's ``Site``."""
    op = op_of(obj)
    assert op is not None, obj  # (the table lists only declared instructions)
    return op.emitters["c"](Site(tr, op, node))
