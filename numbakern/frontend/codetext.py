"""A function's code as text that is the same in every process that compiles the same Python: what ``translate
--check`` digests of a function without source (made by ``exec`` of a string), and what the front end's helper knows
a device function it has compiled before by."""

from __future__ import annotations

import types
from typing import Any


def code_text(code: types.CodeType) -> str:
    """A code object as text that is the same in every process: where it is, its bytecode, names and constants, nested
    functions' code included. (Not ``marshal.dumps``: it flags objects by their reference counts at the moment of
    the call, which differ between the process that translated a kernel and the one that checks it.)"""

    def const(c: Any) -> str:
        if isinstance(c, types.CodeType):
            return "<" + code_text(c) + ">"
        if isinstance(c, frozenset):  # its order follows string hashing, which is randomised per process
            return "frozenset(" + ",".join(sorted(map(const, c))) + ")"
        if isinstance(c, tuple):
            return "(" + ",".join(map(const, c)) + ")"
        return repr(c)

    # where it is (file, name, lines) as well as what it does: compiled code found by this text reports positions.
    # The names of free variables are the enclosing code's cell names (in its text); their values are not code.
    return "|".join([code.co_filename, code.co_qualname, str(code.co_firstlineno), code.co_linetable.hex(),
                     code.co_code.hex(), const(code.co_consts), *map(repr, (
                         code.co_names, code.co_varnames, code.co_cellvars, code.co_argcount,
                         code.co_posonlyargcount, code.co_kwonlyargcount, code.co_flags))])

