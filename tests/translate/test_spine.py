"""The spine's data and its single owners: the request is frozen once built, a ``@specialize`` kernel carries its
factory and constants. (Closure cells are read in one module: tests/test_architecture.py.)"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
from numba import cuda

from numbakern.specialize import constants_of, factory_of, specialize

ROOT = Path(__file__).resolve().parents[2]

FROZEN = """
import dataclasses, json
from translate import kernel_request, targets
from translate.request import TranslateOptions

tgt = targets.resolve("matmul_tiled_static")
request = kernel_request.build_request(tgt, None, {"tw": [8, 16]}, TranslateOptions())
out = {"factory": tgt.factory.__name__ if tgt.factory else None, "constants": tgt.constants,
       "instantiations": [dict(i) for i in request.instantiations], "fastmath": request.fastmath}

def attempt(name, change, error):
    try:
        change()
        out[name] = "changed"
    except error:
        out[name] = "refused"

def set_name():
    request.name = "other"

def set_typemap():
    request.typemap["p"] = "float64"

def set_instantiation():
    request.instantiations[0]["tw"] = 4

def set_option():
    request.options.backend_options["model"] = "m"

attempt("name", set_name, dataclasses.FrozenInstanceError)
attempt("typemap", set_typemap, TypeError)
attempt("instantiation", set_instantiation, TypeError)
attempt("backend_options", set_option, TypeError)
print(json.dumps(out))
"""


def test_a_request_cannot_be_changed_once_built():
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="0")
    run = subprocess.run([sys.executable, "-c", FROZEN], capture_output=True, text=True, env=env, cwd=ROOT,
                         timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    out = json.loads(run.stdout.strip().splitlines()[-1])
    assert out["factory"] == "matmul_tiled_static" and out["constants"] == {"tw": 16}
    assert out["instantiations"] == [{"tw": 8}, {"tw": 16}]
    assert {k: out[k] for k in ("name", "typemap", "instantiation", "backend_options")} == dict.fromkeys(
        ("name", "typemap", "instantiation", "backend_options"), "refused")


@specialize
def _scaled(factor: int, shift: float = 0.5):
    @cuda.jit
    def scaled(x, out):
        i = cuda.grid(1)
        if i < x.shape[0]:
            out[i] = x[i] * factor + shift

    return scaled


@cuda.jit
def _plain(x):
    x[0] = 1.0


def test_a_specialized_kernel_carries_its_factory_and_constants(rng):
    kernel = _scaled(3)
    assert factory_of(kernel) is _scaled and constants_of(kernel) == {"factor": 3, "shift": 0.5}
    assert factory_of(_scaled(factor=3)) is _scaled and _scaled(factor=3) is kernel  # one kernel per constants
    assert factory_of(_plain) is None and constants_of(_plain) == {}
    x = rng.standard_normal(37).astype(np.float32)
    out = np.zeros_like(x)
    kernel[1, 64](x, out)
    np.testing.assert_allclose(out, x.astype(np.float64) * 3 + 0.5, rtol=1e-6)
