"""docs/verification.md states what the manifest's GPU records say: which kernels' C is not bit-exact against
Numba, and by how much in the recorded run."""

import json
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOC = (ROOT / "docs" / "verification.md").read_text()
RECORDS = {f: e["verification"] for f, e in
           json.loads((ROOT / "generated_cuda" / "manifest.json").read_text())["files"].items()}


def what_is_verified() -> str:
    return DOC.split("## What is verified now", 1)[1].split("\n## ", 1)[0]


def test_the_kernels_named_not_bit_exact_are_those_whose_records_differ():
    section = what_is_verified()
    not_exact = sorted(f.removesuffix(".cu") for f, r in RECORDS.items() if r and r["max_rel_error"] > 0)
    named = sorted(set(re.findall(r"^- `(\w+)`", section, re.M)))
    assert named == not_exact, (named, not_exact)
    verified = sorted(f.removesuffix(".cu") for f, r in RECORDS.items() if r and r["ok"])
    words = " ".join(section.split())
    assert f"{len(verified)} of the {len(RECORDS)} are verified" in words or \
        (len(verified) == len(RECORDS) and f"all {len(RECORDS)} are verified" in words)
    for kernel in sorted(f.removesuffix(".cu") for f in RECORDS if f.removesuffix(".cu") not in verified):
        assert f"`{kernel}`" in section, f"{kernel} has no GPU record and the section does not name it"


def test_the_recorded_differences_are_stated_as_measured():
    section = what_is_verified()
    for kernel, text in re.findall(r"^- `(\w+)`(.*?)(?=^- |\n\n)", section, re.M | re.S):
        recorded = RECORDS[f"{kernel}.cu"]["max_rel_error"]
        assert f"{recorded:.1e}".replace("e-0", "e-") in text, (kernel, recorded, text)
