"""The cases a registered kernel is verified on: seeds × the spec's ``verify_sizes`` × the input distributions (the
spec's ``distributions``: ``registry.DISTRIBUTIONS``, and ``SPECIAL`` for kernels whose reference defines special
values), each case made from its own deterministic generator; and the smallest sizes, which the sanitizers and the
repair loop's quick verification run on."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import numpy as np

from numbakern.registry import Case, KernelSpec

DEFAULT_SEEDS = (0, 1, 2)


def cases_for(spec: KernelSpec, seeds: Sequence[int] = DEFAULT_SEEDS, sizes: Sequence[Mapping[str, int]] | None = None,
              dists: Sequence[str] | None = None) -> Iterator[tuple[dict[str, int], int, str, Case]]:
    """``(size, seed, dist, case)`` for every combination, each from its own deterministic generator."""
    sizes = list(sizes if sizes is not None else spec.verify_sizes)
    dists = list(dists if dists is not None else spec.distributions)
    for si, size in enumerate(sizes):
        for seed in seeds:
            for di, dist in enumerate(dists):
                rng = np.random.default_rng([int(seed), si, di])
                yield dict(size), int(seed), dist, spec.make_case(size, rng, dist)


def smallest_sizes(spec: KernelSpec, n: int = 2) -> list[dict[str, Any]]:
    """The ``n`` smallest verify sizes (by element count): what the sanitizers run on."""
    return [dict(s) for s in sorted(spec.verify_sizes, key=lambda s: int(np.prod(list(s.values()))))[:n]]
