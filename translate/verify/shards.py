"""``--shard i/n``: a deterministic share of a project's kernels, for one host of many (a CI matrix, a Slurm array,
Ray tasks), whose manifests are merged afterwards (``translate --merge``).

Every host computes the same split from the same inputs (the kernel names and their costs from the committed
manifest): no host talks to another. The split is *rendezvous hashing with bounded loads*: each kernel ranks the
shards by a hash of its name and the shard's number (SHA-256: the same on every machine and every Python), and,
taken largest first, goes to the first shard of its ranking that stays within ``1 + SLACK`` times an even share of
the total cost (else to the least loaded). So the shards are balanced by cost, and adding a kernel moves few others:
most keep the first shard of their own ranking, which no other kernel changes.

Standard library only.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence

#: how far above an even share of the cost a shard may be filled before a kernel goes to its next choice
SLACK = 0.15


class ShardError(ValueError):
    """A ``--shard`` value that cannot be used; one line naming the option."""


def parse(text: str, option: str = "--shard") -> tuple[int, int]:
    """``"2/4"`` -> ``(2, 4)``: shard 2 of 4, counted from 1."""
    i, sep, n = str(text).partition("/")
    if not sep or not i.strip().isdigit() or not n.strip().isdigit():
        raise ShardError(f"{option} must be I/N (shard I of N, counted from 1), got {text!r}")
    i_, n_ = int(i), int(n)
    if n_ < 1 or not 1 <= i_ <= n_:
        raise ShardError(f"{option} {text}: I must be between 1 and N, and N at least 1")
    return i_, n_


def _score(name: str, shard: int) -> int:
    return int.from_bytes(hashlib.sha256(f"{name}\0{shard}".encode()).digest()[:8], "big")


def assign(costs: Mapping[str, float], n: int) -> dict[str, int]:
    """Each name's shard (1..``n``), balanced by ``costs`` (seconds, or any positive weight)."""
    weight = {name: max(float(c), 1e-6) for name, c in costs.items()}
    total = sum(weight.values())
    cap = max(max(weight.values(), default=0.0), (1 + SLACK) * total / n)
    loads = [0.0] * n
    out: dict[str, int] = {}
    for name in sorted(weight, key=lambda k: (-weight[k], k)):
        ranking = sorted(range(n), key=lambda s: (-_score(name, s), s))
        choice = next((s for s in ranking if loads[s] + weight[name] <= cap * (1 + 1e-9)),
                      min(range(n), key=lambda s: (loads[s], s)))
        loads[choice] += weight[name]
        out[name] = choice + 1
    return out


def select(names: Sequence[str], costs: Mapping[str, float], shard: tuple[int, int]) -> list[str]:
    """The names of shard ``(i, n)``, in ``names``' order; ``costs``: by name (a missing one weighs 1)."""
    i, n = shard
    where = assign({name: costs.get(name, 1.0) for name in names}, n)
    return [name for name in names if where[name] == i]
