"""The import structure of ``numbakern/`` and ``translate/``, read from the source (every ``import`` statement: at
module level, inside functions and under ``TYPE_CHECKING``):

- no import circle, in either package or between them;
- translate's spine goes forward: no stage imports a later one (a backend gets the later stages as callbacks);
- numbakern, the authoring side, knows nothing of translate;
- an import inside a function in translate says why it is not at the top (optional dependencies, numba's CUDA
  target chosen first, ...), with a comment on or above it or a ``try`` that catches its ``ImportError``.
"""

from __future__ import annotations

import ast
import functools
import io
import tokenize
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("numbakern", "translate")

#: translate's modules by stage, in the order a kernel goes through them; a module may import modules of its own
#: stage and of earlier ones. Every module of translate belongs to a stage (a new one must be placed here).
SPINE = (
    ("foundations", ("translate", "translate.errors", "translate.cnames", "translate.closures", "translate.writes")),
    ("front end", ("translate.targets", "translate.frontend", "translate.depends", "translate.options")),
    ("request", ("translate.request",)),
    ("backends", ("translate.backends", "translate.codegen", "translate.llm")),
    ("emit", ("translate.emit",)),
    ("nvrtc", ("translate.nvrtc",)),
    ("manifest", ("translate.manifest",)),
    ("verify", ("translate.verify",)),
    ("candidate checks", ("translate.candidates",)),
    ("pipeline", ("translate.pipeline", "translate.check")),
    ("helper process", ("translate.worker",)),
    ("entry points", ("translate.api",)),
    ("command line", ("translate.cli", "translate.commands", "translate.__main__")),
)

#: modules whose function-level imports belong to their own owners' conventions (the code generator)
WHY_EXEMPT = ("translate.codegen",)


@dataclass(frozen=True)
class Import:
    source: str        # the importing module
    target: str        # the imported module (one of PACKAGES')
    path: Path
    line: int
    in_function: bool
    type_only: bool    # under ``if TYPE_CHECKING:``

    def __str__(self) -> str:
        where = "function-level" if self.in_function else "type-only" if self.type_only else "module-level"
        return f"{self.source} -> {self.target} ({self.path.relative_to(ROOT)}:{self.line}, {where})"


@functools.cache
def modules() -> dict[str, tuple[Path, bool]]:
    """``module name -> (file, is a package)`` for every module of PACKAGES."""
    out = {}
    for pkg in PACKAGES:
        for path in sorted((ROOT / pkg).rglob("*.py")):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            is_pkg = parts[-1] == "__init__"
            out[".".join(parts[:-1] if is_pkg else parts)] = (path, is_pkg)
    return out


def _known(name: str) -> str | None:
    """The module of PACKAGES that importing ``name`` runs (``a.b.attr`` -> ``a.b``), None for other packages."""
    mods = modules()
    while name and name not in mods:
        name = name.rpartition(".")[0]
    return name or None


def _targets(module: str, is_pkg: bool, node: ast.Import | ast.ImportFrom) -> list[str]:
    if isinstance(node, ast.Import):
        names = [a.name for a in node.names]
    else:
        if node.level:
            base = module.split(".") if is_pkg else module.split(".")[:-1]
            base = base[: len(base) - (node.level - 1)]
            origin = ".".join(base + ([node.module] if node.module else []))
        else:
            origin = node.module
        # `from pkg import sub` imports the submodule; `from pkg import name` the package
        names = [f"{origin}.{a.name}" if f"{origin}.{a.name}" in modules() else origin for a in node.names]
    return [t for t in map(_known, names) if t is not None]


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _walk(node: ast.AST, in_function: bool = False, type_only: bool = False):
    for child in ast.iter_child_nodes(node):
        if isinstance(child, (ast.Import, ast.ImportFrom)):
            yield child, in_function, type_only
        yield from _walk(child, in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)),
                         type_only or (isinstance(child, ast.If) and _is_type_checking(child)))


@functools.cache
def imports() -> tuple[Import, ...]:
    out = []
    for module, (path, is_pkg) in modules().items():
        for node, in_function, type_only in _walk(ast.parse(path.read_text(), str(path))):
            for target in _targets(module, is_pkg, node):
                if target != module:
                    out.append(Import(module, target, path, node.lineno, in_function, type_only))
    return tuple(out)


def import_circles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Each import circle as a list of modules ``[a, b, ..., a]``: one per strongly connected component (Tarjan),
    following edges inside the component from its first module."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1 or v in edges.get(v, ()):
                components.append(sorted(component))

    for v in sorted(set(edges) | {w for ws in edges.values() for w in ws}):
        if v not in index:
            visit(v)
    return [_circle(c, edges) for c in components]


def _circle(component: list[str], edges: dict[str, set[str]]) -> list[str]:
    """A path from the component's first module back to itself, through the component (breadth first)."""
    inside = set(component)
    start = component[0]
    previous: dict[str, str] = {}
    frontier = [start]
    while frontier:
        nxt = []
        for v in frontier:
            for w in sorted(edges.get(v, ()) & inside):
                if w == start:
                    path = [v]
                    while path[-1] != start:
                        path.append(previous[path[-1]])
                    return [*reversed(path), start]
                if w not in previous:
                    previous[w] = v
                    nxt.append(w)
        frontier = nxt
    return component


def _edges(selected) -> dict[str, set[str]]:
    edges: dict[str, set[str]] = {}
    for imp in selected:
        edges.setdefault(imp.source, set()).add(imp.target)
    return edges


def test_the_circle_finder_finds_circles_and_only_circles():
    assert import_circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c", "a"]]
    assert import_circles({"a": {"b"}, "b": {"c"}, "d": {"a", "c"}}) == []
    assert import_circles({"a": {"a"}}) == [["a", "a"]]


def test_the_walk_sees_every_kind_of_import():
    found = {(i.source, i.target, i.in_function, i.type_only) for i in imports()}
    assert ("translate.pipeline", "translate.emit", False, False) in found            # module level
    assert ("translate.api", "translate.pipeline", True, False) in found              # inside a function
    assert ("translate.request", "translate.frontend", False, True) in found          # under TYPE_CHECKING
    assert ("translate.worker.__main__", "translate.worker", False, False) in found   # a package's __init__
    assert len(modules()) > 80


def test_no_import_circles():
    circles = import_circles(_edges(imports()))
    where = {(i.source, i.target): i for i in imports()}
    report = ["  " + " -> ".join(c) + "\n"
              + "\n".join(f"      {where[a, b]}" for a, b in zip(c, c[1:]) if (a, b) in where)
              for c in circles]
    assert not circles, "import circles:\n" + "\n".join(report)


def _stage(module: str) -> int:
    best = None
    for i, (_, members) in enumerate(SPINE):
        for m in members:
            if (module == m or module.startswith(m + ".")) and (best is None or len(m) > len(best[1])):
                best = (i, m)
    assert best is not None, f"{module} is in no stage of SPINE (tests/test_architecture.py): place it there"
    return best[0]


def test_the_spine_goes_forward():
    backward = [f"  {imp}: stage '{SPINE[_stage(imp.source)][0]}' imports stage '{SPINE[_stage(imp.target)][0]}'"
                for imp in imports()
                if imp.source.startswith("translate") and imp.target.startswith("translate") and not imp.type_only
                and _stage(imp.target) > _stage(imp.source)]
    assert not backward, "a stage imports a later one:\n" + "\n".join(backward)


def test_every_translate_module_has_a_stage():
    for module in modules():
        if module.split(".")[0] == "translate":
            _stage(module)


def test_numbakern_knows_nothing_of_translate():
    found = [str(i) for i in imports() if i.source.startswith("numbakern") and i.target.startswith("translate")]
    assert not found, "numbakern imports translate:\n" + "\n".join(found)


def _comment_lines(text: str) -> tuple[set[int], set[int]]:
    """(lines that are only a comment, lines that end in a comment)."""
    only, trailing = set(), set()
    for tok in tokenize.generate_tokens(io.StringIO(text).readline):
        if tok.type == tokenize.COMMENT:
            (only if tok.line.strip().startswith("#") else trailing).add(tok.start[0])
    return only, trailing


def _catches_import_error(node: ast.Try) -> bool:
    for handler in node.handlers:
        names = handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type]
        if any(isinstance(n, ast.Name) and n.id in ("ImportError", "ModuleNotFoundError") for n in names):
            return True
    return False


def _unexplained_function_imports(path: Path) -> list[int]:
    """Lines of function-level imports in ``path`` with no reason given (see the module docstring). A run of
    consecutive import statements shares one comment above it."""
    text = path.read_text()
    only, trailing = _comment_lines(text)
    lines = text.splitlines()
    found = []

    def visit(node: ast.AST, in_function: bool, optional: bool) -> None:
        for field in ("body", "orelse", "finalbody", "handlers"):
            block = getattr(node, field, None)
            if not isinstance(block, list):
                continue
            run: list[ast.stmt] = []
            for stmt in [*block, None]:
                if isinstance(stmt, (ast.Import, ast.ImportFrom)):
                    run.append(stmt)
                    continue
                if run and in_function and not optional:
                    first = run[0].lineno
                    above = first - 1
                    while above > 0 and not lines[above - 1].strip():
                        above -= 1
                    if above not in only and not any(s.lineno in trailing or s.end_lineno in trailing for s in run):
                        found.append(first)
                run = []
                if stmt is not None:
                    visit(stmt, in_function or isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)),
                          optional or (isinstance(stmt, ast.Try) and _catches_import_error(stmt)))

    visit(ast.parse(text), False, False)
    return found


def test_the_why_check_tells_explained_from_unexplained_imports(tmp_path):
    path = tmp_path / "m.py"
    path.write_text("import os\n\n\ndef f():\n    import json\n\n\ndef g():\n    # numba after the target is chosen\n"
                    "    import numba\n    import numpy\n\n\ndef h():\n    import re  # cheap\n\n\ndef k():\n"
                    "    try:\n        import openai\n    except ImportError:\n        openai = None\n")
    assert _unexplained_function_imports(path) == [5]


def test_imports_inside_functions_say_why():
    found = []
    for module, (path, _) in modules().items():
        if module.split(".")[0] == "translate" and not module.startswith(WHY_EXEMPT):
            found += [f"  {path.relative_to(ROOT)}:{line}" for line in _unexplained_function_imports(path)]
    assert not found, ("imports inside functions without a reason (move them to the top, or say why on or above "
                       "them):\n" + "\n".join(found))
