"""numbakern.gpus: the visible GPUs without CUDA (nvidia-smi's rows, CUDA_VISIBLE_DEVICES, a fake list), the
round-robin rule, and when two GPUs' timings may be compared."""

from __future__ import annotations

import ast
import os
import stat
import sys
from pathlib import Path

import pytest

from numbakern import gpus


def rows(n: int, name: str = "NVIDIA H100 80GB HBM3") -> list[dict[str, str]]:
    return [{"index": str(i), "uuid": f"GPU-{i}aaa{i}", "name": name, "memory.total": "81559",
             "memory.free": str(80000 - i), "clocks.max.sm": "1980", "clocks.max.memory": "2619",
             "compute_cap": "9.0"} for i in range(n)]


def test_every_gpu_nvidia_smi_lists_when_nothing_hides_them():
    found = gpus.visible({}, smi=rows(2))
    assert [(g.index, g.token, g.name, g.arch) for g in found] == [
        (0, "GPU-0aaa0", "NVIDIA H100 80GB HBM3", "sm_90"), (1, "GPU-1aaa1", "NVIDIA H100 80GB HBM3", "sm_90")]
    assert found[1].memory_free_mib == 79999 and found[0].sm_clock_mhz == 1980


@pytest.mark.parametrize("visible, expected", [
    ("1", ["GPU-1aaa1"]),                       # an index: nvidia-smi's row of that index, named by its UUID
    ("2,0", ["GPU-2aaa2", "GPU-0aaa0"]),        # in the order CUDA_VISIBLE_DEVICES gives them
    ("GPU-3aa", ["GPU-3aaa3"]),                 # a unique UUID prefix, as CUDA takes it
    ("1,9,0", ["GPU-1aaa1"]),                   # CUDA stops at the first entry that names no device
    ("", []), ("-1", []), ("0,-1,1", ["GPU-0aaa0"]),
])
def test_cuda_visible_devices_narrows_and_orders_them(visible, expected):
    found = gpus.visible({"CUDA_VISIBLE_DEVICES": visible}, smi=rows(4))
    assert [g.token for g in found] == expected
    assert [g.index for g in found] == list(range(len(expected)))  # numbered as the process sees them


def test_without_nvidia_smi_the_entries_of_cuda_visible_devices_are_the_gpus():
    found = gpus.visible({"CUDA_VISIBLE_DEVICES": "0,1,MIG-abc"}, smi=[])
    assert [(g.index, g.token, g.name) for g in found] == [(0, "0", ""), (1, "1", ""), (2, "MIG-abc", "")]
    assert gpus.visible({}, smi=[]) == []


def test_a_fake_list_replaces_everything():
    env = {"NUMBAKERN_FAKE_GPUS": "3", "CUDA_VISIBLE_DEVICES": "0"}
    assert [(g.index, g.token) for g in gpus.visible(env, smi=rows(8))] == [(0, "0"), (1, "1"), (2, "2")]
    named = gpus.visible({"NUMBAKERN_FAKE_GPUS": '["A100", {"name": "H100", "token": "GPU-x", "sm_clock_mhz": 5}]'})
    assert [(g.name, g.token, g.sm_clock_mhz) for g in named] == [("A100", "0", None), ("H100", "GPU-x", 5)]
    for bad in ("two", '{"name": "x"}', '[{"colour": "red"}]'):
        with pytest.raises(gpus.GpuListError, match="NUMBAKERN_FAKE_GPUS"):
            gpus.visible({"NUMBAKERN_FAKE_GPUS": bad})


def test_nvidia_smi_is_read_and_an_old_driver_without_compute_cap_is_asked_again(tmp_path, monkeypatch):
    # a stand-in nvidia-smi that, like an old driver, rejects the compute_cap field
    script = tmp_path / "nvidia-smi"
    script.write_text(f"""#!{sys.executable}
import sys
query = [a for a in sys.argv if a.startswith("--query-gpu=")][0]
if "compute_cap" in query:
    print('Field "compute_cap" is not a valid field to query.', file=sys.stderr)
    raise SystemExit(2)
print("0, GPU-aa, Tesla V100-SXM2-16GB, 16160, 16000, 1530, 877")
print("1, GPU-bb, Tesla V100-SXM2-16GB, 16160, [N/A], 1530, 877")
""")
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    found = gpus.visible({})
    assert [(g.token, g.name, g.memory_free_mib, g.compute_capability) for g in found] == [
        ("GPU-aa", "Tesla V100-SXM2-16GB", 16000, ""), ("GPU-bb", "Tesla V100-SXM2-16GB", None, "")]


@pytest.mark.parametrize("n", [1, 2, 8])
def test_workers_get_their_own_gpu_then_round_robin(n):
    found = gpus.fake_list(str(n))
    assigned = [gpus.worker_gpu(k, found).token for k in range(3 * n + 1)]
    assert assigned[:n] == [str(i) for i in range(n)]                  # each of the first n its own
    assert all(assigned[k] == str(k % n) for k in range(len(assigned)))  # then GPU k mod n
    counts = [assigned.count(str(i)) for i in range(n)]
    assert max(counts) - min(counts) <= 1                              # shared as evenly as can be


def test_xdist_worker_numbers():
    assert gpus.xdist_worker_number("gw0") == 0 and gpus.xdist_worker_number("gw13") == 13
    assert gpus.xdist_worker_number("master") is None and gpus.xdist_worker_number("") is None


@pytest.mark.parametrize("value, available, expected", [("all", 2, 2), ("1", 2, 1), ("2", 2, 2), (" ALL ", 8, 8)])
def test_gpu_counts(value, available, expected):
    assert gpus.parse_count(value, available) == expected


@pytest.mark.parametrize("value, available, message", [
    ("3", 2, "--gpus 3: only 2 GPUs are visible"), ("0", 2, "positive number"), ("two", 2, "positive number"),
    ("all", 0, "no GPU is visible"), ("2", 1, "only 1 GPU is visible"),
])
def test_bad_gpu_counts_name_the_option(value, available, message):
    with pytest.raises(gpus.GpuListError, match=message):
        gpus.parse_count(value, available)


def test_same_model_needs_every_known_fact_equal():
    two = gpus.visible({}, smi=rows(2))
    same, why = gpus.same_model(two)
    assert same and "all 2 are NVIDIA H100 80GB HBM3" in why and "max SM clock (MHz) 1980" in why
    faster = rows(2)
    faster[1]["clocks.max.sm"] = "1755"  # a power-capped or other SKU of the same name
    same, why = gpus.same_model(gpus.visible({}, smi=faster))
    assert not same and "max SM clock (MHz): 1980 and 1755" in why
    mixed = rows(1) + [{**rows(2)[1], "name": "NVIDIA H200"}]
    assert not gpus.same_model(gpus.visible({}, smi=mixed))[0]
    unknown = [{**r, "clocks.max.sm": "[N/A]"} for r in rows(2)]
    unknown[0]["clocks.max.sm"] = "1980"  # known for one only: not a difference
    assert gpus.same_model(gpus.visible({}, smi=unknown))[0]
    assert not gpus.same_model(gpus.visible({"CUDA_VISIBLE_DEVICES": "0,1"}, smi=[]))[0]  # names unknown
    assert gpus.same_model(two[:1]) == (True, "one GPU")


def test_listing_gpus_needs_nothing_but_the_standard_library():
    """The plugin lists GPUs in an xdist worker before numba may be imported: gpus.py imports no other package."""
    tree = ast.parse(Path(gpus.__file__).read_text())
    imported = {alias.name.split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.Import)
                for alias in node.names}
    imported |= {node.module.split(".")[0] for node in ast.walk(tree)
                 if isinstance(node, ast.ImportFrom) and node.module and not node.level}
    assert imported and imported <= set(sys.stdlib_module_names), imported - set(sys.stdlib_module_names)
