"""The benchmark's torch baseline of every library kernel (``KernelSpec.baseline``) computes what the kernel
computes: run on CPU tensors of a test case, it matches the spec's float64 reference."""

import numpy as np
import pytest

from numbakern import all_specs
from numbakern.compare import compare

FAMILIES = {"reduce", "softmax", "norm", "scan", "histogram", "conv"}
SPECS = [spec for spec in all_specs() if spec.family in FAMILIES and spec.baseline is not None]


@pytest.mark.parametrize("spec", SPECS, ids=lambda s: s.name)
def test_baseline_matches_the_reference(spec, rng):
    torch = pytest.importorskip("torch")
    case = spec.make_case(spec.test_sizes[-1], rng, "normal")
    tensors = [torch.from_numpy(a.copy()) if isinstance(a, np.ndarray) else a for a in case.args]
    run, name = spec.baseline(*tensors)
    assert name
    got = run().numpy().astype(np.float64)
    (i,) = spec.outputs
    want = spec.reference(*case.args)[i]
    if i in spec.accumulates:  # the kernel adds to the output's initial values; torch returns the counts alone
        want = want - case.args[i]
    scale = spec.error_scale(*case.args)[i] if spec.error_scale else None
    result = compare(got.reshape(want.shape), want, scale=scale, rtol=max(spec.rtol, 1e-5), atol=spec.atol,
                     name=f"{spec.name} baseline {name}")
    assert result.ok, str(result)
