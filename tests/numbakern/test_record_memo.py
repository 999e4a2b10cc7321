"""A typed record is made once per process for one function, argument types and values read
(``numbakern.frontend.record.type_function``), and made again when anything the compile reads has changed: a global
or a module attribute the kernel reads, its code, a device function it calls (numba keeps a device function's
compiles per signature in its dispatcher: another dispatcher under the name is a change)."""

import os
import subprocess
import sys

KERNEL = '''
from numba import cuda

import settings


@cuda.jit(device=True)
def scaled(x):
    return x * 2


@cuda.jit(device=True)
def scaled_by_a_float(x):
    return x * 2.5


@cuda.jit
def scale(a, out):
    i = cuda.grid(1)
    if i < a.size:
        out[i] = scaled(a[i]) + OFFSET * settings.FACTOR


OFFSET = 1
'''

SCRIPT = r'''
import ast
import importlib

from numba.core import types

import kernels
import settings
from numbakern.frontend import record as R
from numbakern.frontend.target import cuda_typing

compiles = []
typed = R._typed
R._typed = lambda *args: compiles.append(args[0].__name__) or typed(*args)
signature = (types.int32[::1], types.float64[::1])


def call_type(record):
    call = next(n for n in ast.walk(record.tree) if isinstance(n, ast.Call) and getattr(n.func, "id", "") == "scaled")
    return record.operations(call)[0].type


def sum_type(record):
    add = next(n for n in ast.walk(record.tree) if isinstance(n, ast.BinOp) and isinstance(n.op, ast.Add))
    return record.operations(add)[0].type


with cuda_typing((9, 0)):
    first = R.type_function(kernels.scale.py_func, signature)
    assert R.type_function(kernels.scale.py_func, signature) is first and compiles == ["scale"], compiles
    assert call_type(first) == types.int64 and sum_type(first) == types.int64, (call_type(first), sum_type(first))

    kernels.OFFSET = 0.5  # a global of the kernel's: int64 + float64 is a float64
    second = R.type_function(kernels.scale.py_func, signature)
    assert second is not first and compiles == ["scale"] * 2, compiles
    assert sum_type(second) == types.float64, sum_type(second)

    kernels.OFFSET, settings.FACTOR = 1, 0.5  # a module attribute the kernel reads
    third = R.type_function(kernels.scale.py_func, signature)
    assert third is not second and compiles == ["scale"] * 3, compiles
    assert sum_type(third) == types.float64, sum_type(third)

    settings.FACTOR = 2
    kernels.scaled = kernels.scaled_by_a_float  # another device function under the name the kernel calls
    fourth = R.type_function(kernels.scale.py_func, signature)
    assert fourth is not first and compiles == ["scale"] * 4, compiles
    assert call_type(fourth) == types.float64, call_type(fourth)

    other = R.type_function(kernels.scale.py_func, (types.int64[::1], types.float64[::1]))  # other argument types
    assert other is not fourth and compiles == ["scale"] * 5, compiles
    assert R.type_function(kernels.scale.py_func, signature) is fourth and compiles == ["scale"] * 5, compiles
print("ok")
'''


def test_a_record_is_made_again_only_when_what_the_compile_reads_has_changed(tmp_path):
    (tmp_path / "settings.py").write_text("FACTOR = 2\n")
    (tmp_path / "kernels.py").write_text(KERNEL)  # a file: the record reads the kernel's source text
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="0", PYTHONPATH=str(tmp_path))  # numba's real CUDA target
    done = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, env=env, timeout=300,
                          cwd=tmp_path)
    assert done.returncode == 0 and done.stdout.strip().endswith("ok"), done.stdout[-2000:] + done.stderr[-3000:]
