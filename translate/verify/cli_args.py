"""The verification options, for ``python -m translate.verify`` and the ``translate`` command (which reads them
before it has chosen numba's CUDA target: this module imports nothing but ``argparse``)."""

from __future__ import annotations

import argparse


def add_arguments(parser: argparse.ArgumentParser, *, with_verify_flag: bool = True) -> None:
    """The verification options, for the ``translate`` CLI (``--verify`` itself included unless told otherwise)."""
    group = parser.add_argument_group("verification (needs a CUDA GPU and nvcc)")
    if with_verify_flag:
        group.add_argument("--verify", action="store_true",
                           help="run the compiled .cu against the Numba kernel on the GPU and record the result")
    group.add_argument("--sanitize", action="store_true",
                       help="also run compute-sanitizer memcheck, racecheck, initcheck and synccheck on the smallest "
                            "cases")
    group.add_argument("--seeds", type=int, default=3, metavar="N",
                       help="random seeds per size and distribution (default 3)")
    group.add_argument("--no-record", dest="record", action="store_false",
                       help="do not write the verification records into the manifest")
    group.add_argument("--records-out", metavar="JSON",
                       help="also write the records to this file (for --apply elsewhere)")
    group.add_argument("--verify-log", metavar="DIR", help="write the full per-case report and sanitizer logs here")
    group.add_argument("--verbose-cases", action="store_true", help="print every case, not only failures")
    group.add_argument("--gpus", default="all", metavar="all|N",
                       help="spread the kernels over this many of the visible GPUs, one worker process per GPU and "
                            "more where a GPU has room (default: all; docs/verification.md)")
    group.add_argument("--jobs-per-gpu", default="auto", metavar="auto|N",
                       help="worker processes per GPU (default auto: from the CPU cores and the GPU's free memory)")


def add_shard_argument(parser: argparse.ArgumentParser, what: str) -> None:
    """``--shard I/N``: one host's deterministic share of the kernels (``translate.verify.shards``)."""
    parser.add_argument("--shard", metavar="I/N",
                        help=f"{what} only shard I of N (from 1) of the kernels, split by a hash of their names and "
                             "balanced by their verification times; the shards' folders merge with translate --merge")


def jobs_per_gpu(value: str) -> int | None:
    """``--jobs-per-gpu``: None for auto, else the number; a ``ValueError`` naming the option."""
    text = str(value).strip().lower()
    if text == "auto":
        return None
    if not text.isdigit() or int(text) < 1:
        raise ValueError(f"--jobs-per-gpu must be 'auto' or a positive number, got {value!r}")
    return int(text)
