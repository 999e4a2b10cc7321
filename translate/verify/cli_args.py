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
