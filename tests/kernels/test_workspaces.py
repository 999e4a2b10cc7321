"""Every registered kernel with a workspace leaves it as it found it (zeros), so the next launch needs no memset:
the verification harness checks that arguments other than outputs are unchanged, and the user-facing functions
reuse one cached workspace."""

import numpy as np
import pytest

from numbakern import all_specs, mode

CASES = [(spec.name, size) for spec in all_specs() if spec.workspace for size in spec.test_sizes]


@pytest.mark.sim
@pytest.mark.parametrize("name, size", CASES, ids=[f"{n}-{'x'.join(map(str, s.values()))}" for n, s in CASES])
def test_workspace_is_zero_after_the_launch(name, size, rng):
    from numbakern import get

    assert mode.in_simulator()
    spec = get(name)
    case = spec.make_case(size, rng, "normal")
    args = case.fresh_args()
    cfg = case.launch
    spec.kernel[cfg.grid, cfg.block, 0, cfg.shared_bytes](*args)
    names = spec.arg_names()
    for i in spec.workspace:
        assert not np.asarray(args[i]).any(), f"{name}: workspace '{names[i]}' is not zero after the launch"
