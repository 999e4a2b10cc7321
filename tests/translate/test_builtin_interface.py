"""The builtins table's extension point keeps its declared interface (translate/codegen/context.py): every provider
module uses only the members of ``Translator`` on the ``tr`` it is given, and the translator provides every member.
A new provider (tensor-core intrinsics, say) is held to the same. Read from the sources (importing the code generator
needs numba's real CUDA target, which a simulator session does not have)."""

from __future__ import annotations

import ast
from pathlib import Path

from translate.codegen.context import MEMBERS

CODEGEN = Path(__file__).resolve().parents[2] / "translate" / "codegen"


def _tree(name: str) -> ast.Module:
    return ast.parse((CODEGEN / f"{name}.py").read_text())


def _providers() -> list[str]:
    for node in ast.walk(_tree("builtins")):
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "PROVIDERS" for t in node.targets):
            return [e.id for e in node.value.elts]
    raise AssertionError("translate/codegen/builtins.py has no PROVIDERS")


def _tr_uses(tree: ast.AST) -> set[str]:
    return {n.attr for n in ast.walk(tree)
            if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id == "tr"}


def test_providers_use_only_the_declared_interface():
    providers = [p for p in _providers() if p != "calls"]  # device functions: the translator's own
    assert {"intrinsics", "atomics", "mathfuncs", "pybuiltins", "vectors"} <= set(providers)
    for name in providers:
        undeclared = _tr_uses(_tree(name)) - MEMBERS
        assert not undeclared, f"{name}.py uses tr.{', tr.'.join(sorted(undeclared))}, which " \
                               "translate/codegen/context.py's Translator does not declare"


def test_the_translator_provides_every_member_of_the_interface():
    provided = set()
    for name in ("stmts", "exprs"):  # FunctionTranslator(ExprMixin)
        for node in ast.walk(_tree(name)):
            if isinstance(node, ast.ClassDef) and node.name in ("FunctionTranslator", "ExprMixin"):
                provided |= {n.name for n in node.body if isinstance(n, ast.FunctionDef)}
                provided |= {t.attr for n in ast.walk(node) if isinstance(n, ast.Assign) for target in n.targets
                             for t in ast.walk(target)
                             if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == "self"}
    assert not MEMBERS - provided, f"FunctionTranslator lacks {sorted(MEMBERS - provided)}"


def test_the_check_catches_an_undeclared_use():
    handler = ast.parse("def handler(tr, obj, node):\n    return tr.flow.interval(tr.expr(node))\n")
    assert _tr_uses(handler) - MEMBERS == {"flow"}
