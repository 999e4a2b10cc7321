"""The typed record of a conditional expression on Python 3.11 and 3.12. Python 3.11 joins the branches in a phi (its
copies give the expression's type); Python 3.12 may compile the statement around it once per branch: ``return x if c
else y`` a return each (the type is the returns' casts: 11 library files failed to translate on 3.12, the GPU
machine's Python, before the record read them), ``out[i] = x if c else y`` a store each (the record joins the
branches' types as numba's phi would). CI runs this file on both Pythons."""

import os
import subprocess
import sys

SCRIPT = r'''
import ast
from dataclasses import replace

from numba.core import types

from numbakern.frontend import record as R
from numbakern.frontend.target import cuda_typing
from numbakern.kernels.collectives import nan_max

with cuda_typing((9, 0)):
    rec = R.type_function(nan_max.py_func, (types.float32, types.float32), types.float32)
node = next(n for n in ast.walk(rec.tree) if isinstance(n, ast.IfExp))
assert rec.unified(node) == types.float32, rec.unified(node)  # this Python's own form, whichever it is
# Python 3.12's form on any version: no phi copies, the return statement's casts, one per branch
ret, cast = next((at, op) for at, ops in rec.operations_at.items() for op in ops if op.kind == "cast")
py312 = replace(rec, copies_at={}, operations_at={**rec.operations_at, ret: (cast, cast)})
assert py312.unified(node) == types.float32, py312.unified(node)
# a lone cast is not a return per branch: no type
assert replace(py312, operations_at={**rec.operations_at, ret: (cast,)}).unified(node) is None
print("ok")
'''


def test_a_conditional_return_is_typed_with_or_without_a_phi():
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="0")  # the record is made with numba's real CUDA target
    done = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0 and done.stdout.strip().endswith("ok"), done.stderr[-3000:]


STORE = r'''
import ast
import numpy as np
from numba import cuda
from numba.core import types

from numbakern.frontend import record as R
from numbakern.frontend.target import cuda_typing


def pick(flags, small, out):
    i = cuda.grid(1)
    out[i] = small[i] if flags[i] else 0  # the function's last statement: 3.12 copies it, with the return, per branch


with cuda_typing((9, 0)):
    rec = R.type_function(pick, (types.boolean[::1], types.int32[::1], types.int32[::1]))
node = next(n for n in ast.walk(rec.tree) if isinstance(n, ast.IfExp))
print(rec.unified(node))
'''


def test_a_stored_conditional_is_typed_as_numbas_phi_joins_its_branches(tmp_path):
    """int32 and the literal 0 join to int64 in numba's phi (Python 3.11); on 3.12, where each branch is stored on its
    own, the record says the same."""
    script = tmp_path / "store.py"  # a file: the record reads the kernel's source text
    script.write_text(STORE)
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="0")
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip().splitlines()[-1] == "int64"
