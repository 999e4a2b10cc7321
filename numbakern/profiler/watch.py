"""``pytest --profile KERNEL``: profile the launches of a declared kernel that a test run makes.

Before each launch of a watched kernel (``numbakern.sim.engine.launch_hooks``), the launch is profiled on copies of
its arguments, so the test's own launch runs as it would have, checkers and all. One profile is kept per distinct
launch (the same grid, block and argument shapes give the same counts), and the pytest plugin prints them after
the run.
"""

from __future__ import annotations

import numpy as np


class Watch:
    """The kernels named on the command line and the profiles of their launches so far."""

    def __init__(self, names: list[str], gpu: str):
        self.names = list(names)
        self.gpu = gpu
        self.profiles: list[tuple[str, object]] = []  # (kernel name, Profile or the error's text)
        self._functions: dict | None = None
        self._seen: set = set()

    def install(self) -> None:
        from ..sim import engine

        engine.launch_hooks.append(self.before_launch)

    def uninstall(self) -> None:
        from ..sim import engine

        if self.before_launch in engine.launch_hooks:
            engine.launch_hooks.remove(self.before_launch)

    def _watched(self) -> dict:
        """The watched kernels' Python functions, by identity -> name (resolved at the first launch, when the
        test run has imported what declares them)."""
        if self._functions is None:
            from .. import registry
            from ..sim.adapters import adapter_of

            self._functions = {}
            for name in self.names:
                spec = registry.get(name)
                self._functions[id(adapter_of(spec.kernel).python_function(spec.kernel))] = name
        return self._functions

    def before_launch(self, kernel, args) -> None:
        from ..sim.adapters import adapter_of

        adapter = adapter_of(kernel)
        name = self._watched().get(id(adapter.python_function(kernel)))
        if name is None:
            return
        grid, block = adapter.launch_dims(kernel)
        shapes = tuple((a.shape, str(a.dtype)) if hasattr(a, "shape") else type(a).__name__ for a in args)
        key = (name, tuple(grid), tuple(block), adapter.dynamic_shared_bytes(kernel), shapes)
        if key in self._seen:
            return
        self._seen.add(key)
        from . import profile_launch

        copies = [_copy(a) for a in args]
        try:
            self.profiles.append((name, profile_launch(kernel, copies, gpu=self.gpu)))
        except Exception as e:  # noqa: BLE001 - the test's own launch reports the kernel's errors
            self.profiles.append((name, f"{type(e).__name__}: {e}"))

    def report(self) -> str:
        from . import report

        if not self.profiles:
            return f"no launch of {', '.join(self.names)} ran"
        parts = []
        for name, found in self.profiles:
            if isinstance(found, str):
                parts.append(f"{name}: the profile failed: {found}")
            else:
                parts.append(report.text(found))
        return "\n\n".join(parts)


def _copy(arg):
    """A copy of an array argument (the profiled launch writes it), the argument itself otherwise."""
    if isinstance(arg, np.ndarray):
        return arg.copy()
    copy_to_host = getattr(arg, "copy_to_host", None)
    if callable(copy_to_host):
        return copy_to_host()
    return arg
