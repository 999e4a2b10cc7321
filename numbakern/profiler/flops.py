"""Floating-point operations per source line, from what numba-cuda decided for each operation (the front end's
facts): counted statically per run of a line, multiplied by the line's runs (``collect``).

What counts, as Nsight Compute's roofline counts it (``fadd + fmul + 2 * ffma`` per type): an add, subtract or
multiply whose result is a float is one operation of its type (``fp16``, ``fp32``, ``fp64``); ``cuda.fma`` is
two (the compiler contracts ``a * b + c`` into one FFMA, two operations either way). A division is counted as
one (the GPU computes it with a reciprocal and a few FMAs). Math functions (``exp``, ``sqrt``...) run on the
special-function unit and are counted apart, as ``sfu_<type>``, not as flops. A tensor-core ``mma`` of shape
m×n×k is ``2·m·n·k`` operations of its input type per warp (``tensor_bf16``, ``tensor_f16``, ``tensor_tf32``).

The operations of a ``for`` header's iterable (``range(math.ceil(k / tw))``) run once per entry into the loop, not
once per iteration: they are marked, and counted by the runs of the header's first instruction.
"""

from __future__ import annotations

import ast
import re

from ..frontend.decompile import node_key

FLOAT_TYPES = {"float16": "fp16", "float32": "fp32", "float64": "fp64"}
_ARITHMETIC = {"+", "-", "*", "/"}
_MMA = re.compile(r"mma_m(\d+)n(\d+)k(\d+)_(\w+)")
WARP = 32

#: (file, line) -> {type: (operations per run, whether they run once per entry into a loop instead)}
LineFlops = dict


def line_flops(facts: dict, files: dict[str, str]) -> LineFlops:
    """Per source line, the floating-point operations one run of it performs. ``files`` maps a facts function's
    label (``"kernel"``, ``"device:0"``...) to its source file (a label it lacks: the kernel's file)."""
    out: LineFlops = {}
    for data in facts.get("functions") or ():
        if not data:
            continue
        python = data["python"]
        filename = files.get(data["label"], files.get("kernel", ""))
        fdef = ast.parse(python["text"]).body[0]
        nodes = data["nodes"]
        placed = list(zip(ast.walk(fdef), python["positions"]))
        per_entry = {id(inner) for node in ast.walk(fdef) if isinstance(node, ast.For) for inner in ast.walk(node.iter)}
        for node, pos in placed:
            if pos is None or "lineno" not in node._attributes:
                continue
            for kind, count in _operations(node, nodes.get(node_key(node), {})):
                slot = out.setdefault((filename, pos[0]), {})
                n, _ = slot.get(kind, (0.0, False))
                slot[kind] = (n + count, id(node) in per_entry)
    return out


def _operations(node: ast.AST, facts: dict):
    """``(type, count)`` for each floating-point operation ``node`` performs."""
    if isinstance(node, ast.BinOp):
        for fact in facts.get("binop", ()):
            kind = FLOAT_TYPES.get(fact.get("ret", {}).get("t"))
            if kind and fact.get("op") in _ARITHMETIC:
                yield kind, 1.0
    elif isinstance(node, ast.Call):
        for fact in facts.get("call", ()):
            fn = fact.get("fn", {})
            name = fn.get("name", "")
            kind = FLOAT_TYPES.get(fact.get("ret", {}).get("t"))
            if name == "fma" and kind:
                yield kind, 2.0
            elif fn.get("kind") == "math" and kind and name not in ("fabs", "copysign", "floor", "ceil", "trunc",
                                                                        "isnan", "isinf", "isfinite"):
                yield f"sfu_{kind}", 1.0
            else:
                found = _MMA.search(name) or _MMA.search(_called_name(node))
                if found:
                    m, n, k, operand = found.groups()
                    # per lane: the warp's 2mnk operations over its 32 lanes (lines are counted per lane)
                    yield f"tensor_{operand}", 2.0 * int(m) * int(n) * int(k) / WARP


def _called_name(node: ast.Call) -> str:
    func = node.func
    return func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
