"""The API reference of ``numbakern.mma`` (and the 16-byte access modules beside it), generated from the
instructions' declarations and the helpers' docstrings: ``docs/mma-api.md``.

    python -m numbakern.intrinsics.reference            # rewrites docs/mma-api.md
    python -m numbakern.intrinsics.reference --check    # exit 1 if it is out of date

``tests/mma/test_api_reference.py`` checks that the file is this module's output and that every public name has
documentation of its own.
"""

from __future__ import annotations

import inspect
import os
import sys
import tempfile
from pathlib import Path

from . import formats, hopper, layout, memory, tensorcore
from .op import Op

DOC = Path(__file__).resolve().parents[2] / "docs" / "mma-api.md"

_HEADER = """# `numbakern.mma` API reference

Generated from the instructions' declarations (`numbakern/intrinsics/`) by `python -m numbakern.intrinsics.reference`;
do not edit by hand. The guide is [tensor-cores.md](tensor-cores.md). Every instruction below is a function a
`@cuda.jit` kernel calls (numba-cuda, numba-cuda-mlir and numbakern's simulator run the same object; `translate`
writes the same PTX in C); arguments are positional. Fragments are `cuda.local.array`s, one element per 32-bit
register, laid out as the PTX ISA lays them out (`numbakern.mma.layout`). In a PTX template, `$name` is the operand
the argument `name` becomes (`{$d}`: the registers of the fragment `d`).
"""


def _op_entry(op: Op) -> str:
    lines = [f"### `{op.name}({', '.join(op.params)})`", ""]
    if op.ptx:
        lines += [f"PTX: `{op.ptx}`", ""]
    lines += [inspect.cleandoc(op.doc), ""]
    return "\n".join(lines)


def _function_entry(module: str, fn) -> str:
    return "\n".join([f"### `{module}.{fn.__name__}{inspect.signature(fn)}`", "", inspect.cleandoc(fn.__doc__), ""])


def _section(title: str, intro: str, entries: list[str]) -> str:
    return "\n".join([f"## {title}", "", intro, "", *entries])


def render() -> str:
    parts = [
        _HEADER,
        _section("Tensor-core instructions (`numbakern.mma`)", "`from numbakern.mma import mma_m16n8k16_bf16, ...`.",
                 [_op_entry(op) for op in tensorcore.OPS]),
        _section("Host formats (`numbakern.mma.formats`)", inspect.cleandoc(formats.__doc__).split("\n\n")[0],
                 [_function_entry("formats", getattr(formats, name)) for name in formats.__all__
                  if inspect.isfunction(getattr(formats, name))]),
        _section("Fragment layouts (`numbakern.mma.layout`)", "Which matrix element each lane's registers hold, as "
                 "the PTX ISA tabulates it.",
                 [_function_entry("layout", getattr(layout, name)) for name in layout.__all__
                  if inspect.isfunction(getattr(layout, name))]),
        _section("16-byte accesses (`numbakern.vector_io`, `numbakern.async_copy`)", inspect.cleandoc(
            memory.__doc__).split("\n\n", 1)[1], [_op_entry(op) for op in memory.OPS]),
        _section("Hopper (`numbakern.mma.hopper`, sm_90a)", "numba-cuda and numba-cuda-mlir lower these, the "
                 "simulator models them with the checkers of asynchronous pipelines, `translate` writes them for "
                 "sm_90a. The wgmma shapes listed are the library's; every N that PTX allows (a multiple of 8 up to "
                 "256), the `_rs` forms (A from registers) and the tf32 ones (`wgmma_m64n{N}k8_tf32[_rs]`) are "
                 "declared when a kernel first names them.", [_op_entry(op) for op in hopper.OPS]),
    ]
    return "\n".join(parts).rstrip() + "\n"


def write(path: Path = DOC) -> bool:
    """Rewrite ``path`` (atomically) if it differs from ``render()``; whether it changed."""
    text = render()
    if path.exists() and path.read_text(encoding="utf-8") == text:
        return False
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name, suffix=".tmp")
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(tmp, path)
    return True


def main(argv: list[str]) -> int:
    if argv == ["--check"]:
        current = DOC.exists() and DOC.read_text(encoding="utf-8") == render()
        print(f"{DOC}: {'up to date' if current else 'out of date: run python -m numbakern.intrinsics.reference'}")
        return 0 if current else 1
    if argv:
        print(__doc__, file=sys.stderr)
        return 2
    print(f"{DOC}: {'written' if write() else 'unchanged'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
