"""What the simulator checks, how it orders threads, whether it types kernels, read at every launch.

Precedence: Python overrides (``configure``, or the innermost ``checks``/``shuffled``/``allow_negative_indices``/
``typing`` context) over the environment (``NUMBAKERN_SIM_CHECKS``, ``NUMBAKERN_SIM_SHUFFLE``,
``NUMBAKERN_SIM_TYPING``, ``NUMBAKERN_SIM_DEADLOCK_SECONDS``) over the defaults (no checks, fixed thread order,
typing on, 5 s of no progress before a ``DeadlockError``). The pytest plugin sets ``NUMBAKERN_SIM_CHECKS=all``
unless the user chose otherwise.
"""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass

CHECKS_ENV = "NUMBAKERN_SIM_CHECKS"
SHUFFLE_ENV = "NUMBAKERN_SIM_SHUFFLE"
#: "stock" keeps numba-cuda's own engine when numbakern installs itself (a baseline, or to rule numbakern out)
ENGINE_ENV = "NUMBAKERN_SIM_ENGINE"
#: "0"/"off" runs kernels without numba-cuda's front end: no TypingError, Python's arithmetic instead of Numba's
TYPING_ENV = "NUMBAKERN_SIM_TYPING"
#: seconds of spinning with no thread making progress before a DeadlockError
DEADLOCK_ENV = "NUMBAKERN_SIM_DEADLOCK_SECONDS"
DEFAULT_DEADLOCK_SECONDS = 5.0
CHECK_NAMES = ("race", "uninit", "bounds", "barrier")

_UNSET = object()


@dataclass(frozen=True)
class Settings:
    checks: frozenset[str]
    shuffle_seed: int | None
    allow_negative_indices: bool
    typing: bool = True
    deadlock_seconds: float = DEFAULT_DEADLOCK_SECONDS


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
    typing = merged.get("typing")
    if typing is None:
        typing = os.environ.get(TYPING_ENV, "1").strip().lower() not in ("0", "off", "no", "false")
    deadlock = merged.get("deadlock_seconds")
    if deadlock is None:
        deadlock = _seconds(os.environ.get(DEADLOCK_ENV, "").strip() or DEFAULT_DEADLOCK_SECONDS, DEADLOCK_ENV)
    return Settings(checks, seed, bool(merged.get("allow_negative_indices", False)), bool(typing), deadlock)


def _seconds(value, what: str) -> float:
    try:
        seconds = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{what} must be a number of seconds, got {value!r}") from None
    if not seconds > 0:
        raise ValueError(f"{what} must be a positive number of seconds, got {value!r}")
    return seconds


def configure(*, checks=_UNSET, shuffle_seed=_UNSET, allow_negative_indices=_UNSET, typing=_UNSET,
              deadlock_seconds=_UNSET) -> Settings:
    """Set process-wide overrides (``checks=None`` / ``shuffle_seed=...`` back to the environment's); returns them.

    ``typing=False`` runs kernels without numba-cuda's front end; ``deadlock_seconds`` is how long threads may spin
    with no progress before a ``DeadlockError`` (``None`` for either: back to the environment's)."""
    base = _overrides[0]
    if typing is not _UNSET:
        base["typing"] = None if typing is None else bool(typing)
    if deadlock_seconds is not _UNSET:
        base["deadlock_seconds"] = None if deadlock_seconds is None else _seconds(deadlock_seconds, "deadlock_seconds")
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


def typing(on: bool = True):
    """Context manager: type the enclosed launches with numba-cuda's front end (or not, with ``False``)."""
    return _layer(typing=bool(on))


def deadlock_after(seconds: float):
    """Context manager: a ``DeadlockError`` after this many seconds of spinning with no progress."""
    return _layer(deadlock_seconds=_seconds(seconds, "deadlock_after"))

