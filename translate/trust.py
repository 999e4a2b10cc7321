"""What a manifest may make ``translate`` import or evaluate: nothing of its own choosing.

A manifest is data that reviewers skim as generated output, so everything in it is untrusted. Commands that read
one (``translate --check``, verification) use its entries only through this module:

- ``kernel_target(target, project)``: the kernel an entry names, accepted only when it lives in the project's own
  kernel modules (``[tool.numbakern] kernels``, a package meaning all its modules) or, for a project that includes
  it, numbakern's library. A ``package.module:kernel`` target is accepted by its module name; a
  ``path/to/file.py:kernel`` target only when the file, resolved inside the project's root, *is* one of those
  modules. Anything else raises ``UntrustedEntry`` and is never imported.
- ``signature(text)``: an entry's signature string, parsed by a fixed grammar of numba type names (never ``eval``
  on the manifest's text: that is code).
- ``constants(value)``: an entry's compile-time constants, numbers only.
- ``record(value)``: an entry's GPU verification record, only when it is well formed (``ok`` a boolean, ``file_sha256``
  a sha256): a record is a *claim* -- anyone who can edit the manifest can write one -- so it decides nothing that
  a check depends on; ``claim_text`` says what it claims (who, where, when, which bytes), for people to weigh.

The project's own kernel modules are code: ``--check`` imports them (they run as the user, as ``pytest`` would run
them). docs/translate.md says exactly that.
"""

from __future__ import annotations

import ast
import json
import os
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

#: a manifest entry's file name: a plain name in the output folder (no path, not hidden, no control characters)
FILE_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.+-]{0,199}$")
_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


#: the one backend whose files ``translate --check`` derives again; any other backend's file is only a claim
DETERMINISTIC_BACKEND = "ast"


class UntrustedEntry(ValueError):
    """A manifest entry that names something outside the project's kernel modules, or a value that is not data."""


def check_file_name(name: Any) -> str:
    """``name`` when it is a plain file name inside the output folder; ``UntrustedEntry`` otherwise."""
    if not isinstance(name, str) or not FILE_NAME.match(name) or name in (".", ".."):
        raise UntrustedEntry(f"the entry {name!r} is not a plain file name in the output folder (entries name "
                             "files such as kernel.cu, never paths)")
    return name


def trusted_modules(project) -> tuple[str, ...]:
    """The modules whose kernels ``project`` vouches for: its configured kernel modules, and numbakern's library
    when the project is the library or includes it."""
    from numbakern import registry  # the library's module list (importing the registry imports no kernel)

    mods = list(project.kernel_modules)
    if project.is_library or project.include_library:
        mods += [m for m in registry.KERNEL_MODULES if m not in mods]
    return tuple(mods)


def module_is_trusted(module: str, trusted: Iterable[str]) -> bool:
    """``module`` is one of ``trusted`` or inside one of them (a configured package means all its modules)."""
    return any(module == t or module.startswith(t + ".") for t in trusted)


def kernel_target(target: Any, project, registry_names: Iterable[str] = ()) -> str:
    """The target string to resolve for an entry, once it is known to name a kernel of the project (or of the
    library it includes); ``UntrustedEntry`` naming the target otherwise. ``registry_names``: the names of the
    registered kernels the project vouches for (a bare name must be one of them)."""
    if not isinstance(target, str) or not target or len(target) > 1000 or any(ord(c) < 32 for c in target):
        raise UntrustedEntry(f"the kernel {target!r} is not a kernel name")
    trusted = trusted_modules(project)
    where = _vouchers(project)
    if ":" not in target:
        if target in set(registry_names):
            return target
        raise UntrustedEntry(f"'{target}' is not a kernel of {where}; translate --check imports only those")
    module_part, attr = target.rsplit(":", 1)
    if not all(_IDENTIFIER.match(p) for p in attr.split(".")):
        raise UntrustedEntry(f"'{target}': '{attr}' is not a kernel's name")
    if module_part.endswith(".py") or "/" in module_part or os.sep in module_part:
        module = _module_of_file(module_part, project)
        if module is None or not module_is_trusted(module, trusted):
            raise UntrustedEntry(f"'{target}' is a file outside the kernel modules of {where}; translate --check "
                                 "imports only those (list its module in [tool.numbakern] kernels)")
        return target
    if not all(_IDENTIFIER.match(p) for p in module_part.split(".")):
        raise UntrustedEntry(f"'{target}': '{module_part}' is not a module name")
    if not module_is_trusted(module_part, trusted):
        raise UntrustedEntry(f"'{target}' is not in the kernel modules of {where}; translate --check imports only "
                             "those (list it in [tool.numbakern] kernels)")
    return target


def _vouchers(project) -> str:
    if project.is_library:
        return "numbakern's library"
    kind = f"project {project.name} ({project.pyproject})"
    return kind + (" or numbakern's library" if project.include_library else "")


def _module_of_file(path: str, project) -> str | None:
    """The dotted module name of ``path`` (relative to the current folder, as translate recorded it) when the file
    exists inside the project's root; None otherwise (outside the root, through a link out of it, missing)."""
    root = Path(os.path.realpath(project.root))
    full = Path(os.path.realpath(path))
    if not full.is_file() or full.suffix != ".py" or not full.is_relative_to(root):
        return None
    parts = list(full.relative_to(root).with_suffix("").parts)
    if parts and parts[-1] == "__init__":
        parts.pop()
    if not parts or not all(_IDENTIFIER.match(p) for p in parts):
        return None
    return ".".join(parts)


# -- values --------------------------------------------------------------------------------------------------------

#: the call-like names a signature may use besides numba's types
_SIGNATURE_CALLS = {"void", "none", "readonly"}


def signature(text: Any):
    """An entry's signature string as numba types, read by a fixed grammar (``void(float32[:, ::1], int64)``):
    numba's type names, subscripts with ``:`` and ``::1`` slices, calls of ``void``/``readonly``. Anything else
    (attribute access, other names, expressions) is ``UntrustedEntry``; the manifest's text is never evaluated."""
    from numba.cuda import types  # numba's type objects (no CUDA target needed)

    if not isinstance(text, str) or len(text) > 2000:
        raise UntrustedEntry(f"the signature {text!r} is not a signature string")
    try:
        tree = ast.parse(text, mode="eval")
    except SyntaxError:
        raise UntrustedEntry(f"the signature {text!r} is not valid syntax") from None

    def build(node):
        if isinstance(node, ast.Name):
            value = getattr(types, node.id, None) if not node.id.startswith("_") else None
            if not isinstance(value, types.Type) and node.id not in _SIGNATURE_CALLS:
                raise UntrustedEntry(f"the signature {text!r} names '{node.id}', which is not a numba type")
            return value if value is not None else node.id
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and not node.keywords:
            args = [build(a) for a in node.args]
            if node.func.id == "readonly" and len(args) == 1 and isinstance(args[0], types.Array):
                return args[0].copy(readonly=True)
            fn = build(node.func)
            if isinstance(fn, str):  # void / none: a signature
                return types.void(*args)
            if isinstance(fn, types.Type):
                return fn(*args)
        if isinstance(node, ast.Subscript):
            dtype = build(node.value)
            dims = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
            if not isinstance(dtype, types.Type) or not all(isinstance(d, ast.Slice) for d in dims):
                raise UntrustedEntry(f"the signature {text!r} has an array type numba does not write that way")
            steps = [_slice_step(d, text) for d in dims]
            layout = "C" if steps[-1] == 1 else "F" if steps[0] == 1 and len(steps) > 1 else "A"
            if sum(s == 1 for s in steps) > 1:
                raise UntrustedEntry(f"the signature {text!r} has two contiguous dimensions in one array")
            return types.Array(dtype, len(dims), layout)
        raise UntrustedEntry(f"the signature {text!r} contains {type(node).__name__}, which a signature has not")

    try:
        sig = build(tree.body)
    except (TypeError, ValueError) as e:
        if isinstance(e, UntrustedEntry):
            raise
        raise UntrustedEntry(f"the signature {text!r} is not a signature ({e})") from None
    if isinstance(sig, (str, types.Type)):
        raise UntrustedEntry(f"the signature {text!r} is a type, not a signature (void(...))")
    return sig


def _slice_step(node: ast.Slice, text: str) -> int | None:
    if node.lower is not None or node.upper is not None:
        raise UntrustedEntry(f"the signature {text!r} has a slice with bounds")
    if node.step is None:
        return None
    if isinstance(node.step, ast.Constant) and node.step.value == 1 and type(node.step.value) is int:
        return 1
    raise UntrustedEntry(f"the signature {text!r} has a slice step other than 1")


def constants(value: Any) -> dict[str, list]:
    """An entry's ``constants`` as ``{name: [values]}``: identifiers mapped to numbers (or lists of numbers)."""
    if value in (None, {}):
        return {}
    if not isinstance(value, dict):
        raise UntrustedEntry(f"constants {value!r} are not a table of numbers")
    out = {}
    for name, v in value.items():
        values = v if isinstance(v, list) else [v]
        if not isinstance(name, str) or not _IDENTIFIER.match(name) or not values or \
                not all(isinstance(x, (bool, int, float)) for x in values):
            raise UntrustedEntry(f"the constant {name!r} = {v!r} is not a number")
        out[name] = values
    return out


# -- verification records ----------------------------------------------------------------------------------------

_SHA256 = re.compile(r"^[0-9a-f]{64}$")


#: no verification record is larger, as JSON (the library's are about 700 bytes)
MAX_RECORD_BYTES = 64 << 10


def record(value: Any) -> dict | None:
    """``value`` as a verification record, or None when it is not one (``record_problem`` says why)."""
    return value if record_problem(value) is None else None


def record_problem(value: Any) -> str | None:
    """Why ``value`` is not a verification record (None when it is one): a table whose ``ok`` is a boolean
    (``"false"`` is text, not a verdict), whose ``file_sha256`` names the bytes it is about, and of at most 64 KiB."""
    if not isinstance(value, dict):
        return f"it is {type(value).__name__}, not a table"
    if not isinstance(value.get("ok"), bool):
        return f"its ok is {printable(repr(value.get('ok')), 40)}, not true or false"
    if not isinstance(value.get("file_sha256"), str) or not _SHA256.match(value["file_sha256"]):
        return "it names no file bytes (file_sha256)"
    try:
        size = len(json.dumps(value))
    except (TypeError, ValueError):
        return "it is not JSON data"
    if size > MAX_RECORD_BYTES:
        return f"it is larger than {MAX_RECORD_BYTES >> 10} KiB"
    return None


def passed(value: Any, file_sha256: str | None = None) -> bool:
    """True when ``value`` is a well-formed record of a pass (of the bytes ``file_sha256``, when given)."""
    found = record(value)
    return found is not None and found["ok"] is True and (file_sha256 is None or found["file_sha256"] == file_sha256)


def claim_text(value: Any) -> str:
    """What a record claims, as one line for people (every field shown as text, never as terminal control):
    ``PASS on NVIDIA H200 (host gpu-7), 2026-11-26T23:26:06Z, bytes 54a68e8b2bcd``."""
    found = record(value)
    if found is None:
        return "no well-formed record"
    verdict = "PASS" if found["ok"] else "FAIL"
    host = f" (host {printable(found['host'], 80)})" if found.get("host") else ""
    return (f"{verdict} on {printable(found.get('device') or 'an unnamed device', 80)}{host}, "
            f"{printable(found.get('date') or 'no date', 40)}, bytes {found['file_sha256'][:12]}")


def printable(value: Any, limit: int | None = None) -> str:
    """``value`` as text that is safe to print on a terminal: control characters (escape sequences, newlines,
    carriage returns) shown as escapes, and cut to ``limit`` characters. Manifest fields reach the terminal only
    through this."""
    text = value if isinstance(value, str) else str(value)
    shown = "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)
    return shown if limit is None or len(shown) <= limit else shown[:limit - 1] + "…"
