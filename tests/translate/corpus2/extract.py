"""A corpus entry's kernel as a module of its own: the kernel, the functions it calls and the module-level names it
reads (transitively), and the file's imports of numba, numpy, math and cmath, each as written in the source file, in
the file's order. Nothing else of the file runs (its scripts, benchmarks, other imports). The module is written into
a cache folder outside the repository (``NUMBAKERN_CORPUS2_CACHE``, else the system's temporary folder)."""

from __future__ import annotations

import ast
import hashlib
import os
import tempfile
from pathlib import Path

from . import sources

KEEP_IMPORTS = ("numba", "numpy", "math", "cmath")


def cache_dir() -> Path:
    return Path(os.environ.get("NUMBAKERN_CORPUS2_CACHE") or Path(tempfile.gettempdir()) / "numbakern-corpus2")


def module_text(key: str, path: str, names: tuple, prelude: str = "", also: tuple = ()) -> str:
    """The module holding ``names`` (a kernel and anything else the entry asks for) of ``path`` in source ``key``;
    ``also``: ``(path, names)`` of other files of the source whose parts come first (a device function of another
    module); ``prelude``: the entry's own lines between those and the file's parts (a stand-in for a module the
    kernel reads, said in the entry)."""
    imports, parts = [], []
    for other, other_names in also:
        i, p = _parts(key, other, other_names)
        imports += i
        parts += p
    i, p = _parts(key, path, names)
    source = sources.SOURCES[key]
    header = (f"# {source.repo}@{source.commit}:{path} ({source.license}), the parts that {', '.join(names)} "
              "needs, extracted by tests/translate/corpus2/extract.py (not part of this repository)\n")
    seen, lines = set(), [header]
    for imp in imports + i:
        if imp not in seen:
            seen.add(imp)
            lines.append(imp + "\n")
    lines += parts + ([prelude.strip() + "\n"] if prelude.strip() else []) + p
    return "\n".join(lines)


def _parts(key: str, path: str, names: tuple) -> tuple[list, list]:
    """(the kept import statements, the wanted definitions) of ``path``, each as written."""
    text = sources.read(key, path)
    tree = ast.parse(text)
    defs: dict = {}
    kept_imports = []
    for node in tree.body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            mods = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
            if all(m.split(".")[0] in KEEP_IMPORTS for m in mods):
                kept_imports.append(node)
        elif isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            defs[node.name] = node
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            for t in (node.targets if isinstance(node, ast.Assign) else [node.target]):
                for n in ast.walk(t):
                    if isinstance(n, ast.Name):
                        defs.setdefault(n.id, node)
    wanted, todo = set(), list(names)
    while todo:
        name = todo.pop()
        node = defs.get(name)
        if node is None or id(node) in wanted:
            continue
        wanted.add(id(node))
        todo += [n.id for n in ast.walk(node) if isinstance(n, ast.Name)]
    missing = [n for n in names if n not in defs]
    if missing:
        raise LookupError(f"{path}: no top-level {', '.join(missing)}")
    lines = text.splitlines()

    def segment(n):
        return "\n".join(lines[_first_line(n) - 1:n.end_lineno]) + "\n"

    return [segment(n).strip() for n in kept_imports], [segment(n) for n in tree.body if id(n) in wanted]


def _first_line(node) -> int:
    """The first line of a top-level statement, its decorators included."""
    return min([node.lineno, *(d.lineno for d in getattr(node, "decorator_list", ()))])


def module_path(key: str, path: str, names: tuple, prelude: str = "", also: tuple = ()) -> Path:
    """``module_text`` written into the cache (once per content), as a file named after the source file."""
    text = module_text(key, path, names, prelude, also)
    digest = hashlib.sha256(text.encode()).hexdigest()[:16]
    stem = f"{key}_{Path(path).stem}".replace("-", "_")
    out = cache_dir() / digest / f"{stem}.py"
    if not out.exists():
        out.parent.mkdir(parents=True, exist_ok=True)
        tmp = out.with_suffix(".tmp")
        tmp.write_text(text)
        os.replace(tmp, out)
    return out
