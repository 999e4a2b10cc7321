"""What numba-cuda's front end decides about one function for one signature: the record the translator reads (in a
process with numba's real CUDA target; the simulator reads the same compile through ``facts``, in the helper).

``function_types`` compiles the function (``compile.compile_function``, no GPU) and records its argument and
return types and, for every Python name, the types of its SSA versions (``p``, ``p.1``, ...) in numba's order.
Where one name's versions have more than one type, it also records where each type is stored and read and where
numba converts one version into another (by source line: numba's IR has no columns). Locals numba types as a
literal (a single assignment of a constant, ``N = 100``) are listed with their value.
"""

from __future__ import annotations

import types as pytypes
from dataclasses import dataclass, field
from typing import Any

from numba.cuda import types

from .compile import compile_function


@dataclass
class Versions:
    """The SSA versions of one Python name, by source line (numba's IR has no columns)."""
    types: list                                      # the distinct types, in order of their first store
    stores: dict = field(default_factory=dict)       # line -> [type stored there], in IR order
    loads: dict = field(default_factory=dict)        # line -> [type read there]
    copies: dict = field(default_factory=dict)       # line -> [(from type, to type)] (phi copies), in IR order


@dataclass(frozen=True)
class FunctionTypes:
    pyfunc: pytypes.FunctionType
    argtypes: tuple[types.Type, ...]
    return_type: types.Type
    versions: dict[str, list]                         # Python name -> numba types of its SSA versions, in order
    #: locals numba types as a literal (a single assignment of a constant, e.g. ``N = 100``): name -> value
    literals: dict[str, Any] = field(default_factory=dict)
    #: for a name whose SSA versions have more than one type: where each is stored, read and converted
    retyped: dict[str, Versions] = field(default_factory=dict)


def function_types(pyfunc, argtypes: tuple, return_type=None) -> FunctionTypes:
    """numba-cuda's types of ``pyfunc`` for ``argtypes`` (``return_type`` None: a kernel); raises numba's TypingError
    if numba rejects it."""
    cres = compile_function(pyfunc, argtypes, return_type)
    typemap = cres.fndesc.typemap
    versions: dict[str, list] = {}
    for key, t in typemap.items():
        if key.startswith("$") or key.startswith("arg."):
            continue
        versions.setdefault(key.split(".")[0], []).append(t)
    several = {name for name, ts in versions.items() if len(_distinct(ts)) > 1}
    retyped = _version_lines(cres.type_annotation.blocks, typemap, several) if several else {}
    literals = {name: ts[0].literal_value for name, ts in versions.items()
                if len(ts) == 1 and isinstance(ts[0], types.Literal)
                and isinstance(ts[0].literal_value, (int, float, bool))}
    return FunctionTypes(pyfunc, tuple(argtypes), cres.signature.return_type, versions, literals, retyped)


def unliteral(t):
    """A literal type's value type (``Literal[int](100)`` -> ``int64``); any other type itself."""
    return t.literal_type if isinstance(t, types.Literal) else t


def _distinct(ts: list) -> list:
    uniq = []
    for t in ts:
        t = unliteral(t)
        if t not in uniq:
            uniq.append(t)
    return uniq


def _version_lines(blocks, typemap, names: set) -> dict:
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
                t = unliteral(typemap[target.name])
                value = inst.value
                if type(value).__name__ == "Var" and base(value.name) == name:  # a phi copy
                    out[name].copies.setdefault(line, []).append((unliteral(typemap[value.name]), t))
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
                    out[name].loads.setdefault(line, []).append(unliteral(typemap[var.name]))
    return out


def rebuilt_python(pyfunc, argtypes: tuple, return_type=None) -> str:
    """``pyfunc``'s Python rebuilt from numba-cuda's typed IR for ``argtypes`` (``decompile``: the text the simulator
    runs): for a function that has no source text to read -- made by ``exec`` of a string, read from stdin. The text
    computes what numba compiles; raises numba's error if numba rejects the function, ``DecompileError`` where the IR
    holds what Python cannot say."""
    from .compile import CodeRegistry, tagged_locations
    from .facts import DeviceFacts, FunctionFacts

    registry = CodeRegistry()
    with tagged_locations(registry):
        cres = compile_function(pyfunc, argtypes, return_type)
    facts = FunctionFacts("kernel" if return_type is None else "device", cres, registry, DeviceFacts(registry))
    facts.collect()
    return facts.python["text"]
