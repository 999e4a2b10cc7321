"""translate.definitions: the statements of a script that define what a kernel reads, and nothing else."""

import ast

from translate.definitions import definitions

SCRIPT = '''
import os
from numba import cuda
if os.environ.get("NUMBA_ENABLE_CUDASIM") == "1":
    bpg, tpb = 2, 8
else:
    bpg, tpb = 50, 32
n = bpg * tpb
unused = print("launched")


@cuda.jit
def k(x):
    i = cuda.grid(1)
    if i < n:
        x[i] = tpb
'''


def _kept(script: str, wanted) -> str:
    return ast.unparse(definitions(ast.parse(script), wanted))


def test_a_name_bound_in_both_branches_of_an_if_keeps_the_if():
    kept = _kept(SCRIPT, ["k"])
    assert "bpg, tpb = (50, 32)" in kept and "n = bpg * tpb" in kept
    assert "print" not in kept


def test_the_kept_statements_run_and_define_what_the_kernel_reads():
    namespace = {}
    exec(compile(definitions(ast.parse(SCRIPT), ["n"]), "<script>", "exec"), namespace)
    assert namespace["n"] in (16, 1600) and "unused" not in namespace


def test_assignments_to_attributes_of_a_needed_name_are_kept():
    """A kernel reading ``config.THRESHOLD`` of a namespace module set up at the top level (stumpy's kernels read
    its ``config`` module so): the attribute assignments complete what the kernel reads; others are not run."""
    script = '''
import types
from numba import cuda
config = types.ModuleType("config")
config.THRESHOLD = 1e-14
config.LIMITS[0] = 3
other = types.SimpleNamespace()
other.value = run_everything()


@cuda.jit
def k(x):
    x[0] = max(x[0], config.THRESHOLD)
'''
    kept = _kept(script, ["k"])
    assert "config.THRESHOLD = 1e-14" in kept and "config.LIMITS[0] = 3" in kept
    assert "other" not in kept and "run_everything" not in kept


def test_a_loop_that_fills_a_needed_namespace_is_kept():
    """A namespace filled by a module-level loop of ``setattr`` calls (issue 39): the loop completes what the kernel
    reads, so it runs; a loop that does other work does not."""
    script = '''
import types
from numba import cuda
consts = types.SimpleNamespace()
for name, value in (("A", 2), ("B", 3)):
    setattr(consts, name, value)
for step in range(3):
    run_everything(step)


@cuda.jit
def k(x):
    x[0] = consts.A * consts.B
'''
    kept = _kept(script, ["k"])
    assert "setattr(consts, name, value)" in kept and "run_everything" not in kept
    namespace = {}
    exec(compile(definitions(ast.parse(script), ["k"]), "<script>", "exec"), namespace)
    assert (namespace["consts"].A, namespace["consts"].B) == (2, 3)
