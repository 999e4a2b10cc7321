"""Where each C variable is declared.

A Python variable lives for the whole function; a C variable lives in its block. For each name the declaration
goes into the innermost block that contains every use; it is declared *at* its first assignment when that is a
plain assignment statement directly in that block (so every path through the block assigns it before any use,
including each iteration of a loop), and otherwise just before the first statement of that block that uses it.
"""

from __future__ import annotations

import ast
from collections.abc import Collection
from dataclasses import dataclass, field


@dataclass
class Plan:
    inline: set = field(default_factory=set)          # (id(stmt), name): declare at this assignment
    before: dict = field(default_factory=dict)        # id(stmt) -> [names] declared (uninitialised) before it


def _names_in(node, ignore: Collection[int] = frozenset()) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and id(n) not in ignore}


def _direct_targets(stmt) -> set[str]:
    if isinstance(stmt, ast.Assign):  # (a = b = v: each of them)
        out = set()
        for t in stmt.targets:
            if isinstance(t, ast.Name):
                out.add(t.id)
            elif isinstance(t, ast.Tuple) and all(isinstance(e, ast.Name) for e in t.elts):
                out |= {e.id for e in t.elts if isinstance(e, ast.Name)}
        return out
    if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name) and stmt.value is not None:
        return {stmt.target.id}
    return set()


def plan(body: list[ast.stmt], names: set[str], ignore: Collection[int] = frozenset()) -> Plan:
    """Where to declare ``names``; occurrences in ``ignore`` (ids of Name nodes) do not count."""
    occ: dict[str, list[tuple]] = {}

    def visit(block, path):
        for i, stmt in enumerate(block):
            here = path + ((id(block), i),)
            sub_blocks = []
            if isinstance(stmt, (ast.If, ast.While)):
                heads = [stmt.test]
                sub_blocks = [stmt.body, stmt.orelse]
            elif isinstance(stmt, ast.For):
                heads = [stmt.iter, stmt.target]
                sub_blocks = [stmt.body, stmt.orelse]
            else:
                heads = [stmt]
            for h in heads:
                for n in _names_in(h, ignore):
                    if n in names:
                        occ.setdefault(n, []).append((here, stmt))
            for b in sub_blocks:
                visit(b, here)

    visit(body, ())
    result = Plan()
    for name in sorted(occ):
        paths = [p for p, _ in occ[name]]
        depth = 0
        while all(len(p) > depth for p in paths) and len({p[depth][0] for p in paths}) == 1:
            depth += 1
        # paths share blocks [0, depth); the declaration block is the one at depth-1 (entries index statements)
        d = depth - 1
        first = min(p[d][1] for p in paths)
        stmt_at = [(p, s) for p, s in occ[name] if p[d][1] == first]
        stmt = stmt_at[0][1] if all(len(p) == d + 1 for p, _ in stmt_at) else None
        if stmt is not None and name in _direct_targets(stmt) and name not in _names_in(stmt.value, ignore):
            result.inline.add((id(stmt), name))
        else:
            # the statement at index `first` of the declaration block
            anchor = _stmt_at(body, paths[0][:d] + ((paths[0][d][0], first),))
            result.before.setdefault(id(anchor), []).append(name)
    return result


def _stmt_at(body, path):
    block = body
    stmt = None
    for depth, (_, i) in enumerate(path):
        stmt = block[i]
        if depth + 1 < len(path):
            nxt = path[depth + 1][0]
            for b in (getattr(stmt, "body", None), getattr(stmt, "orelse", None)):
                if b is not None and id(b) == nxt:
                    block = b
                    break
    return stmt
