"""Loop variables: a C ``for`` loop declares its variable in the loop, a Python loop assigns a name of the function.

The two agree as long as no statement reads the name where it may still hold the loop's last value. So, for each
name that a ``for`` loop binds:

- assigning it inside its own loop is refused (C's loop would change its iteration);
- reading it outside its loops is refused where it may still hold a loop's value (``for q in ...: ...`` then
  ``out[0] = q``), found by a forward walk of the function (loops walked to their fixed point);
- a fresh assignment after the loop (``q = 3``) starts a new variable: the C declares it in the enclosing block, and
  the ``for`` loop's own ``q`` shadows it inside the loop.
"""

from __future__ import annotations

import ast


def check(src, body: list[ast.stmt]) -> tuple[set, set]:
    """``(loop variables, those that are also used outside their loops)``; a located error where the C would read
    another value than Python."""
    loops: dict[str, list] = {}
    for node in ast.walk(ast.Module(body=body, type_ignores=[])):
        if isinstance(node, ast.For):  # (for k, (a, b) in enumerate(zip(x, y)): each of them)
            for t in ast.walk(node.target):
                if isinstance(t, ast.Name):
                    loops.setdefault(t.id, []).append(node)
    reused = set()
    for name, fors in loops.items():
        inside = set()
        for loop in fors:
            inside.update(id(n) for n in ast.walk(loop))
            for stmt in loop.body:
                for n in ast.walk(stmt):
                    if isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Store):
                        raise src.error(n, f"the loop variable '{name}' is assigned inside its loop; C's for loop "
                                        "would change the iteration", hint="assign to another variable")
        outside = [n for n in ast.walk(ast.Module(body=body, type_ignores=[]))
                   if isinstance(n, ast.Name) and n.id == name and id(n) not in inside]
        if outside:
            _Walk(src, name, {id(f) for f in fors}).block(body, False)
            reused.add(name)
    return set(loops), reused


class _Walk:
    """A forward walk that knows, at each statement, whether ``name`` may hold a value a loop over it left."""

    def __init__(self, src, name: str, loops: set):
        self.src, self.name, self.loops = src, name, loops

    def block(self, stmts, stale: bool) -> bool:
        for stmt in stmts:
            stale = self.stmt(stmt, stale)
        return stale

    def reads(self, node, stale: bool) -> None:
        if not stale or node is None:
            return
        for n in ast.walk(node):
            if isinstance(n, ast.Name) and n.id == self.name and isinstance(n.ctx, ast.Load):
                raise self.src.error(n, f"'{self.name}' is read here where it may still hold the last value of a "
                                     f"loop over it (after a Python loop the name keeps it; a C loop variable ends "
                                     f"with its loop)", hint="use a different name outside the loop, or assign it "
                                     "before this read")

    def stmt(self, stmt, stale: bool) -> bool:
        if isinstance(stmt, ast.For) and id(stmt) in self.loops:
            self.reads(stmt.iter, stale)
            self.block(stmt.body, False)
            return True
        if isinstance(stmt, (ast.For, ast.While)):
            self.reads(stmt.iter if isinstance(stmt, ast.For) else stmt.test, stale)
            end = self.block(stmt.body, stale)
            if end and not stale:  # the next iteration starts from what this one left
                end = self.block(stmt.body, True)
                if isinstance(stmt, ast.While):
                    self.reads(stmt.test, True)
            return stale or end or self._breaks_stale(stmt)
        if isinstance(stmt, ast.If):
            self.reads(stmt.test, stale)
            return self.block(stmt.body, stale) | self.block(stmt.orelse, stale)
        if isinstance(stmt, (ast.Assign, ast.AnnAssign)):
            self.reads(stmt.value, stale)
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            for t in targets:
                if not isinstance(t, ast.Name):
                    self.reads(t, stale)
            names = {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name) and
                     isinstance(n.ctx, ast.Store)}
            return False if self.name in names else stale
        self.reads(stmt, stale)
        return stale

    def _breaks_stale(self, loop) -> bool:
        """Does a loop over the name sit inside ``loop`` (a break may leave its value behind)?"""
        return any(isinstance(n, ast.For) and id(n) in self.loops for n in ast.walk(loop))
