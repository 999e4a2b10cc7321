"""The import structure of ``numbakern/`` and ``translate/``, read from the source (every ``import`` statement: at
module level, inside functions and under ``TYPE_CHECKING``):

- no import circle, in either package or between them, between modules or between packages (a package: a
  folder with an ``__init__.py``; a module right under ``numbakern/`` or ``translate/`` is a package of its own);
- the code generator (``translate.codegen``) reaches nothing of the simulator (``numbakern.sim``), by any chain of
  imports: an instruction's C emitter and its simulator model meet only in its declaration (``numbakern.intrinsics``);
- each package's stages go forward (``docs/design/stages.md``): no stage imports a later one (a backend gets the
  later stages as callbacks), and every module is in a stage;
- numbakern, the authoring side, knows nothing of translate;
- an import inside a function in translate says why it is not at the top (optional dependencies, numba's CUDA
  target chosen first, ...), with a comment on or above it or a ``try`` that catches its ``ImportError``.

Each check is a function of the scanned source (``scan``), so the tests at the end plant violations in a copy of
the packages and show that every check reports them.
"""

from __future__ import annotations

import ast
import functools
import io
import re
import shutil
import tokenize
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("numbakern", "translate")
#: the stage table of both packages (a Markdown table per package, stages in order)
STAGES_DOC = ROOT / "docs" / "design" / "stages.md"

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
        return f"{self.source} -> {self.target} ({self.path.parent.name}/{self.path.name}:{self.line}, {where})"


@dataclass(frozen=True)
class Source:
    """The modules of PACKAGES under one root and every import between them."""

    root: Path
    modules: dict[str, tuple[Path, bool]]    # module name -> (file, is a package)
    imports: tuple[Import, ...]


def scan(root: Path) -> Source:
    mods = {}
    for pkg in PACKAGES:
        for path in sorted((root / pkg).rglob("*.py")):
            parts = list(path.relative_to(root).with_suffix("").parts)
            is_pkg = parts[-1] == "__init__"
            mods[".".join(parts[:-1] if is_pkg else parts)] = (path, is_pkg)
    found = []
    for module, (path, is_pkg) in mods.items():
        for node, in_function, type_only in _walk(ast.parse(path.read_text(), str(path))):
            for target in _targets(mods, module, is_pkg, node):
                if target != module:
                    found.append(Import(module, target, path, node.lineno, in_function, type_only))
    return Source(root, mods, tuple(found))


@functools.cache
def source() -> Source:
    return scan(ROOT)


def modules() -> dict[str, tuple[Path, bool]]:
    return source().modules


def imports() -> tuple[Import, ...]:
    return source().imports


def _known(mods: dict, name: str) -> str | None:
    """The module of PACKAGES that importing ``name`` runs (``a.b.attr`` -> ``a.b``), None for other packages."""
    while name and name not in mods:
        name = name.rpartition(".")[0]
    return name or None


def _targets(mods: dict, module: str, is_pkg: bool, node: ast.Import | ast.ImportFrom) -> list[str]:
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
        names = [f"{origin}.{a.name}" if f"{origin}.{a.name}" in mods else origin for a in node.names]
    return [t for t in (_known(mods, n) for n in names) if t is not None]


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
    assert ("translate.request", "translate.typed", False, True) in found             # under TYPE_CHECKING
    assert ("translate.backends.ast_backend", "translate.backends", False, False) in found  # a package's __init__
    assert len(modules()) > 80


def circle_report(src: Source) -> list[str]:
    """Each import circle of the source, with the imports that close it."""
    circles = import_circles(_edges(src.imports))
    where = {(i.source, i.target): i for i in src.imports}
    return ["  " + " -> ".join(c) + "\n"
            + "\n".join(f"      {where[a, b]}" for a, b in zip(c, c[1:]) if (a, b) in where)
            for c in circles]


def test_no_import_circles():
    circles = circle_report(source())
    assert not circles, "import circles:\n" + "\n".join(circles)


# -- packages ------------------------------------------------------------------------------------------------------


def package_of(src: Source, module: str) -> str:
    """The package ``module`` belongs to: its folder's (``numbakern.sim.engine`` -> ``numbakern.sim``). A module right
    under a top package (``numbakern/launch.py``) is a package of its own, as that package's ``__init__`` is: the top
    packages are flat rows of stages; their sub-packages are the units that must not import each other around."""
    path, is_pkg = src.modules[module]
    package = module if is_pkg else module.rpartition(".")[0]
    return module if package in PACKAGES else package


def package_imports(src: Source) -> dict[tuple[str, str], list[Import]]:
    """(importing package, imported package) -> the imports between them, for packages that differ."""
    found: dict[tuple[str, str], list[Import]] = {}
    for imp in src.imports:
        edge = (package_of(src, imp.source), package_of(src, imp.target))
        if edge[0] != edge[1]:
            found.setdefault(edge, []).append(imp)
    return found


def package_circle_report(src: Source) -> list[str]:
    """Each circle of packages, with an import that makes each of its steps."""
    between = package_imports(src)
    edges: dict[str, set[str]] = {}
    for a, b in between:
        edges.setdefault(a, set()).add(b)
    return ["  " + " -> ".join(c) + "\n" + "\n".join(f"      {between[a, b][0]}" for a, b in zip(c, c[1:]))
            for c in import_circles(edges)]


#: (importer, imported, why): no module under the first may reach one under the second by any chain of imports
FORBIDDEN = (
    ("translate.codegen", "numbakern.sim", "the code generator writes C from the typed kernel and each instruction's "
     "declaration (numbakern.intrinsics); the simulator is not part of it"),
)


def forbidden_reach(src: Source, rules=FORBIDDEN) -> list[str]:
    """Each forbidden reach, with the chain of imports that makes it (imports under ``TYPE_CHECKING`` aside)."""
    edges: dict[str, list[Import]] = {}
    for imp in src.imports:
        if not imp.type_only:
            edges.setdefault(imp.source, []).append(imp)
    found = []
    for importer, imported, why in rules:
        start = sorted(m for m in src.modules if m == importer or m.startswith(importer + "."))
        via: dict[str, Import | None] = dict.fromkeys(start)
        todo = list(start)
        while todo:
            module = todo.pop(0)
            for imp in edges.get(module, ()):
                if imp.target not in via:
                    via[imp.target] = imp
                    todo.append(imp.target)
        for module in sorted(via):
            if module == imported or module.startswith(imported + "."):
                chain = []
                while via[module] is not None:
                    chain.append(via[module])
                    module = via[module].source
                found.append(f"  {importer} reaches {imported} ({why}):\n" +
                             "\n".join(f"      {imp}" for imp in reversed(chain)))
                break
    return found


def test_no_package_circles():
    circles = package_circle_report(source())
    assert not circles, "packages that import each other around a circle:\n" + "\n".join(circles)


def test_no_forbidden_reach():
    found = forbidden_reach(source())
    assert not found, "\n".join(found)


# -- the stage table -----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Stage:
    name: str
    entries: tuple[str, ...]   # files ("translate/api.py") and folders ("translate/codegen/")


_ENTRY = re.compile(r"`([^`]+)`")


def parse_stages(text: str) -> dict[str, tuple[Stage, ...]]:
    """The stages of each package from the Markdown of ``docs/design/stages.md``: under a ``## <package>`` heading, a
    table whose rows are ``| stage | `file.py`, `folder/`, ... | what it does |``, in order."""
    out: dict[str, list[Stage]] = {}
    package = None
    for line in text.splitlines():
        heading = re.match(r"^##\s+`?(\w+)`?\s*$", line)
        if heading:
            package = heading.group(1) if heading.group(1) in PACKAGES else None
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")] if line.lstrip().startswith("|") else []
        if package is None or len(cells) < 3 or cells[0] in ("stage", "") or set(cells[0]) <= set("-: "):
            continue
        entries = tuple(_ENTRY.findall(cells[1]))
        for entry in entries:
            if entry.rstrip("/") in PACKAGES:
                raise ValueError(f"stage '{cells[0]}' of {package} names the whole package ({entry}): name its "
                                 "modules, or its sub-packages as folders")
            if not entry.startswith(package + "/") or not (entry.endswith(".py") or entry.endswith("/")):
                raise ValueError(f"stage '{cells[0]}' of {package}: {entry} is not a file or folder of {package}")
        out.setdefault(package, []).append(Stage(cells[0], entries))
    missing = [p for p in PACKAGES if p not in out]
    if missing:
        raise ValueError(f"no stage table for {', '.join(missing)}")
    return {p: tuple(stages) for p, stages in out.items()}


@functools.cache
def stages() -> dict[str, tuple[Stage, ...]]:
    return parse_stages(STAGES_DOC.read_text())


def stage_of(src: Source, table: dict[str, tuple[Stage, ...]], module: str) -> int | None:
    """The index of the stage whose most specific entry is ``module``'s file or a folder above it; None if none is."""
    path = src.modules[module][0].relative_to(src.root).as_posix()
    best = None
    for i, stage in enumerate(table[module.split(".")[0]]):
        for entry in stage.entries:
            if (path == entry or (entry.endswith("/") and path.startswith(entry))) and \
                    (best is None or len(entry) > len(best[1])):
                best = (i, entry)
    return None if best is None else best[0]


def unplaced_modules(src: Source, table) -> list[str]:
    return [m for m in src.modules if stage_of(src, table, m) is None]


def stale_entries(src: Source, table) -> list[str]:
    """Entries of the table that name no file or folder of the source."""
    return [f"{stage.name}: {entry}" for stages_ in table.values() for stage in stages_ for entry in stage.entries
            if not (src.root / entry).exists()]


def backward_imports(src: Source, table) -> list[str]:
    """Imports of a later stage of the importer's own package (type-only imports aside)."""
    found = []
    for imp in src.imports:
        pkg = imp.source.split(".")[0]
        if imp.type_only or imp.target.split(".")[0] != pkg:
            continue
        here, there = stage_of(src, table, imp.source), stage_of(src, table, imp.target)
        if here is not None and there is not None and there > here:
            found.append(f"  {imp}: stage '{table[pkg][here].name}' imports stage '{table[pkg][there].name}'")
    return found


def numbakern_imports_of_translate(src: Source) -> list[str]:
    return [str(i) for i in src.imports if i.source.startswith("numbakern") and i.target.startswith("translate")]


def test_every_module_has_a_stage():
    unplaced = unplaced_modules(source(), stages())
    assert not unplaced, f"modules in no stage of {STAGES_DOC.relative_to(ROOT)} (place them there):\n  " + \
        "\n  ".join(unplaced)


def test_the_stage_table_names_only_what_exists():
    stale = stale_entries(source(), stages())
    assert not stale, f"{STAGES_DOC.relative_to(ROOT)} names what does not exist:\n  " + "\n  ".join(stale)


def test_the_stages_go_forward():
    backward = backward_imports(source(), stages())
    assert not backward, "a stage imports a later one:\n" + "\n".join(backward)


def test_numbakern_knows_nothing_of_translate():
    found = numbakern_imports_of_translate(source())
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


def test_closure_cells_are_read_in_one_module():
    readers = []
    for pkg in PACKAGES:
        for path in sorted((ROOT / pkg).rglob("*.py")):
            text = path.read_text()
            if any(word in text for word in ("__closure__", "co_freevars", "cell_contents")):
                readers.append(str(path.relative_to(ROOT)))
    assert readers == ["numbakern/frontend/closures.py"]


# -- every check fails on a planted violation ------------------------------------------------------------------------


def _copy(tmp_path: Path, plant: dict[str, str]) -> Source:
    """A copy of the packages with ``plant`` (file -> lines) appended to (or written as) files; scanned."""
    for pkg in PACKAGES:
        shutil.copytree(ROOT / pkg, tmp_path / pkg, ignore=shutil.ignore_patterns("__pycache__"))
    for name, lines in plant.items():
        path = tmp_path / name
        path.write_text((path.read_text() if path.exists() else "") + "\n" + lines + "\n")
    return scan(tmp_path)


def test_an_unchanged_copy_passes_every_check(tmp_path):
    src = _copy(tmp_path, {})
    assert len(src.modules) == len(modules()) and len(src.imports) == len(imports())
    assert not (unplaced_modules(src, stages()) or stale_entries(src, stages()) or backward_imports(src, stages())
                or circle_report(src) or numbakern_imports_of_translate(src) or package_circle_report(src)
                or forbidden_reach(src))


def test_a_planted_package_circle_is_reported(tmp_path):
    """The simulator imports the instructions' declarations (its models register on them); a declaration module
    importing a simulator module that imports nothing back closes no circle of modules, but one of packages."""
    src = _copy(tmp_path, {"numbakern/intrinsics/formats.py": "def later():\n    from ..sim import config"})
    assert not circle_report(src)
    circles = package_circle_report(src)
    assert any("numbakern.intrinsics -> numbakern.sim -> numbakern.intrinsics" in c for c in circles), circles
    assert any("numbakern.intrinsics.formats -> numbakern.sim.config" in c for c in circles), circles


def test_a_planted_package_circle_between_translates_packages_is_reported(tmp_path):
    src = _copy(tmp_path, {"translate/llm/cli_args.py":
                           "def later():\n    from translate.backends.llm import LLMBackend"})
    assert any("translate.backends -> translate.llm -> translate.backends" in c for c in package_circle_report(src))


def test_a_planted_import_of_the_simulator_in_the_code_generator_is_reported(tmp_path):
    direct = _copy(tmp_path / "direct", {"translate/codegen/mma.py":
                                         "def later():\n    from numbakern.sim import config"})
    assert [f.splitlines()[1].strip() for f in forbidden_reach(direct)] == [
        f"translate.codegen.mma -> numbakern.sim.config (codegen/mma.py:"
        f"{len((ROOT / 'translate/codegen/mma.py').read_text().splitlines()) + 3}, function-level)"]
    # through another package: the code generator imports the declarations, which would import the simulator
    chained = _copy(tmp_path / "chained", {"numbakern/intrinsics/op.py": "def later():\n    from ..sim import errors"})
    found = forbidden_reach(chained)
    assert len(found) == 1 and "numbakern.intrinsics.op -> numbakern.sim.errors" in found[0], found


def test_a_planted_backward_import_is_reported_in_either_package(tmp_path):
    src = _copy(tmp_path, {"translate/writes.py": "from .nvrtc import nvrtc_compile",
                           "numbakern/launch.py": "from .sim import engine"})
    found = backward_imports(src, stages())
    assert len(found) == 2, found
    assert "translate.writes -> translate.nvrtc" in found[0] or "translate.writes -> translate.nvrtc" in found[1]
    assert any("numbakern.launch -> numbakern.sim.engine" in f and "'authoring' imports stage 'simulator'" in f
               for f in found)


def test_a_planted_import_circle_is_reported(tmp_path):
    src = _copy(tmp_path, {"translate/emit.py": "def later():\n    from . import pipeline"})
    assert any("translate.emit -> translate.pipeline" in c for c in circle_report(src))


def test_a_planted_import_of_translate_in_numbakern_is_reported(tmp_path):
    src = _copy(tmp_path, {"numbakern/launch.py": "def later():\n    import translate.errors"})
    assert numbakern_imports_of_translate(src) == ["numbakern.launch -> translate.errors (numbakern/launch.py:"
                                                   f"{len((ROOT / 'numbakern/launch.py').read_text().splitlines()) + 3}"
                                                   ", function-level)"]


def test_a_new_module_must_be_placed(tmp_path):
    src = _copy(tmp_path, {"translate/newcomer.py": "X = 1", "numbakern/frontend/newcomer.py": "X = 1",
                           "numbakern/newcomer.py": "X = 1"})
    # a folder entry places the modules under it; a file entry only its own module
    assert unplaced_modules(src, stages()) == ["numbakern.newcomer", "translate.newcomer"]


def test_a_stage_may_not_name_a_whole_package():
    """The defect of the earlier hard-coded table: listing the package ``translate`` as a stage module placed every
    module of translate, so the check that each is placed could not fail."""
    text = STAGES_DOC.read_text()
    with pytest.raises(ValueError, match="names the whole package"):
        parse_stages(text.replace("`translate/__init__.py`", "`translate/`"))
    with pytest.raises(ValueError, match="is not a file or folder of numbakern"):
        parse_stages(text.replace("`numbakern/mode.py`", "`translate/mode.py`"))
    with pytest.raises(ValueError, match="no stage table for translate"):
        parse_stages(text.split("## translate")[0])


def test_a_table_entry_that_names_nothing_is_reported():
    table = parse_stages(STAGES_DOC.read_text().replace("`translate/writes.py`", "`translate/writes.py`, "
                                                        "`translate/gone.py`, `translate/gone/`"))
    assert stale_entries(source(), table) == ["foundations: translate/gone.py", "foundations: translate/gone/"]


def _module_level_imports_of_numba(path: Path) -> list[str]:
    found = []
    for node, in_function, type_only in _walk(ast.parse(path.read_text(), str(path))):
        if in_function or type_only:
            continue
        names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
        if isinstance(node, ast.ImportFrom) and node.level:
            continue
        found += [n for n in names if n.split(".")[0] in ("numba", "numba_cuda", "numba_cuda_mlir")]
    return found


def test_the_front_end_package_imports_no_numba_until_typing_starts():
    """``numbakern/__init__`` imports ``numbakern.frontend.rebind`` (and ``switch`` asks ``choice``) before numba's
    CUDA mode is chosen, and in an environment with numba-cuda-mlir only: the package and what it imports at module
    level must not import numba."""
    edges = _edges(i for i in imports() if not i.in_function and not i.type_only)
    # (the simulator imports decompile's node_key at module level, in an environment without numba too)
    todo = ["numbakern.frontend", "numbakern.frontend.choice", "numbakern.frontend.rebind",
            "numbakern.frontend.decompile"]
    reached: set[str] = set()
    while todo:
        module = todo.pop()
        if module not in reached:
            reached.add(module)
            todo += [t for t in edges.get(module, ()) if t.startswith("numbakern.frontend")]
    assert {"numbakern.frontend.request", "numbakern.frontend.decompile"} <= reached
    found = {m: _module_level_imports_of_numba(modules()[m][0]) for m in sorted(reached)}
    assert not any(found.values()), f"module-level imports of numba: {found}"
    assert _module_level_imports_of_numba(modules()["numbakern.frontend.resolve"][0]) == ["numba", "numba.cuda"]
