"""What the simulator checks and how it orders threads, read at every launch.

Precedence: Python overrides (``configure``, or the innermost ``checks``/``shuffled``/``allow_negative_indices``
context) over the environment (``NUMBAKERN_SIM_CHECKS``, ``NUMBAKERN_SIM_SHUFFLE``) over the defaults (no checks,
fixed thread order). The pytest plugin sets ``NUMBAKERN_SIM_CHECKS=all`` unless the user chose otherwise.
"""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass

CHECKS_ENV = "NUMBAKERN_SIM_CHECKS"
SHUFFLE_ENV = "NUMBAKERN_SIM_SHUFFLE"
#: "stock" keeps numba-cuda's own engine when numbakern installs itself (a baseline, or to rule numbakern out)
ENGINE_ENV = "NUMBAKERN_SIM_ENGINE"
CHECK_NAMES = ("race", "uninit", "bounds", "barrier")

_UNSET = object()


@dataclass(frozen=True)
class Settings:
    checks: frozenset[str]
    shuffle_seed: int | None
    allow_negative_indices: bool


def parse_checks(spec) -> frozenset[str]:
    """``"all"``, ``"none"``/``""``, a comma list such as ``"race,uninit"``, or an iterable of check names."""
    if isinstance(spec, str):
        word = spec.strip().lower()
        if word == "all":
            return frozenset(CHECK_NAMES)
        if word in ("", "none", "0", "off"):
            return frozenset()
        names = [n.strip() for n in word.split(",") if n.strip()]
    else:
        names = [str(n).strip().lower() for n in spec]
    unknown = sorted(set(names) - set(CHECK_NAMES))
    if unknown:
        raise ValueError(
            f"unknown simulator check(s) {', '.join(map(repr, unknown))}; "
            f"expected 'all', 'none' or a comma list of {', '.join(CHECK_NAMES)}"
        )
    return frozenset(names)


# one dict per active override layer; configure() edits the bottom one, contexts push and pop their own
_overrides: list[dict] = [{}]


def current() -> Settings:
    merged: dict = {}
    for layer in _overrides:
        merged.update(layer)
    checks = merged.get("checks")
    if checks is None:
        checks = parse_checks(os.environ.get(CHECKS_ENV, "none"))
    seed = merged.get("shuffle_seed", _UNSET)
    if seed is _UNSET:
        env_seed = os.environ.get(SHUFFLE_ENV, "").strip()
        seed = int(env_seed) if env_seed else None
    return Settings(checks, seed, bool(merged.get("allow_negative_indices", False)))


def configure(*, checks=_UNSET, shuffle_seed=_UNSET, allow_negative_indices=_UNSET) -> Settings:
    """Set process-wide overrides (``checks=None`` / ``shuffle_seed=...`` back to the environment's); returns them."""
    base = _overrides[0]
    if checks is not _UNSET:
        if checks is None:
            base.pop("checks", None)
        else:
            base["checks"] = parse_checks(checks)
    if shuffle_seed is not _UNSET:
        base["shuffle_seed"] = None if shuffle_seed is None else int(shuffle_seed)
    if allow_negative_indices is not _UNSET:
        base["allow_negative_indices"] = bool(allow_negative_indices)
    return current()


@contextlib.contextmanager
def _layer(**values):
    _overrides.append(values)
    try:
        yield current()
    finally:
        # by identity: an equal layer (a nested checks("all") in a checks("all")) is another context's
        del _overrides[next(i for i, layer in enumerate(_overrides) if layer is values)]


def checks(spec="all"):
    """Context manager: run the enclosed launches with these checks (``"all"``, ``"none"``, ``"race,uninit"``)."""
    return _layer(checks=parse_checks(spec))


def shuffled(seed: int | None):
    """Context manager: shuffle thread (and block) order with this seed; ``None`` restores the fixed order."""
    return _layer(shuffle_seed=None if seed is None else int(seed))


def negative_indices_allowed():
    return _layer(allow_negative_indices=True)

