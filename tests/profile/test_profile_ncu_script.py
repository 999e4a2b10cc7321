"""scripts/profile_ncu.py without a GPU: its simulator side, how it reads Nsight Compute's raw CSV and pairs each row
with its kernel, the comparison against the targets, and its refusal to run without ncu."""

from __future__ import annotations

import importlib
import json
import sys

import pytest

from tests.perf.test_bench_tools import SCRIPTS

pytestmark = pytest.mark.sim


@pytest.fixture(scope="module")
def tool():
    # imported by its own name, as its simulator workers (spawned processes) import it again
    if str(SCRIPTS) not in sys.path:
        sys.path.insert(0, str(SCRIPTS))
    return importlib.import_module("profile_ncu")


def ncu_csv(rows: list[dict]) -> str:
    """ncu's ``--page raw --csv --print-units base`` layout: a header, a units row, one row per profiled launch."""
    metrics = sorted({m for r in rows for m in r if m != "Kernel Name"})
    header = ["ID", "Kernel Name", *metrics]
    lines = [",".join(f'"{h}"' for h in header), ",".join('""' for _ in header)]
    for i, r in enumerate(rows):
        cells = [str(i), r["Kernel Name"], *(f"{r.get(m, ''):,}" if m in r else "" for m in metrics)]
        lines.append(",".join(f'"{c}"' for c in cells))
    return "==PROF== Connected to process 1\n" + "\n".join(lines) + "\n"


def test_the_simulators_side_and_the_comparison(tool, tmp_path):
    out = tmp_path / "run"
    assert tool.main(["--sim-only", "--kernels", "lesson reduce_shuffle", "--out", str(out), "--no-docs",
                      "--jobs", "1"]) == 0
    sims = json.loads((out / "sim.json").read_text())
    [sim] = sims
    metrics = sim["metrics"]
    assert sim["target"]["name"] == "reduce_shuffle" and metrics["global_ld.requests"] == (1 << 22) // 32
    # ncu's row for it, with the atomics split between op_atom and op_red, and the time of a DRAM-bound run
    gpu = {"Kernel Name": "reduce_shuffle", "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum": 131072,
           "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum": 524288 * 1.05,
           "l1tex__t_requests_pipe_lsu_mem_global_op_atom.sum": 0,
           "l1tex__t_requests_pipe_lsu_mem_global_op_red.sum": metrics["global_atom.requests"],
           "sm__maximum_warps_per_active_cycle_pct": metrics["occupancy_pct"],
           "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed": 80.0,
           "gpu__time_duration.sum": metrics["predicted_ns"] * 1.2}
    rows = tool.parse_ncu_csv(ncu_csv([gpu]))
    assert rows[0]["l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum"] == pytest.approx(524288 * 1.05)
    (out / "profiled.json").write_text(json.dumps(["lesson reduce_shuffle"]))
    table = {(r["what"]): r for r in tool.compare(sims, tool.by_label(rows, out))}
    loads, sectors = "global ld requests (cp.async's included)", "global ld sectors (cp.async's included)"
    assert table[loads]["met"] == "yes" and table[loads]["difference"] == 0
    assert table[sectors]["met"] == "no"  # 5% off
    assert table["global atomic requests"]["met"] == "yes"  # op_atom + op_red
    assert table["theoretical occupancy %"]["met"] == "yes"
    assert table["time: predicted bound / measured (ns)"]["target"] == "25%"
    assert table["time: predicted bound / measured (ns)"]["met"] == "yes"  # the bound 1/1.2 of the time: -17%
    short = tool.short_table(list(table.values()))
    assert "lesson reduce_shuffle" in short and sectors in short


def test_a_kernel_ncu_did_not_profile_is_left_out_of_the_pairing(tool, tmp_path):
    (tmp_path / "profiled.json").write_text(json.dumps(["a", "c"]))  # b failed on the GPU
    rows = tool.parse_ncu_csv(ncu_csv([{"Kernel Name": "ka", "gpu__time_duration.sum": 1},
                                       {"Kernel Name": "kc", "gpu__time_duration.sum": 3}]))
    paired = tool.by_label(rows, tmp_path)
    assert {k: v["kernel"] for k, v in paired.items()} == {"a": "ka", "c": "kc"}


def test_unknown_kernels_are_named(tool, tmp_path, capsys):
    with pytest.raises(SystemExit) as e:
        tool.main(["--sim-only", "--kernels", "no_such_kernel", "--out", str(tmp_path)])
    assert e.value.code == 2 and "unknown kernel(s) no_such_kernel" in capsys.readouterr().err


def test_without_ncu_it_says_so(tool, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.delenv("NCU", raising=False)
    with pytest.raises(SystemExit) as e:
        tool.main(["--kernels", "vector_add", "--out", str(tmp_path)])
    assert e.value.code == 2 and "ncu" in capsys.readouterr().err


def test_shared_memory_is_compared_on_the_instructions_wavefronts_and_conflicts(tool, tmp_path):
    # ncu's figures for the lessons' unpadded transpose on an H200 (2026-11-29): L1 counts 37,959 wavefronts of
    # loads that no instruction asked for, each also counted as a bank conflict; the SASS counter has none of them
    l1 = {"Kernel Name": "transpose_unpadded",
          "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum": 4_232_263,
          "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum": 4_101_191,
          "smsp__sass_l1tex_data_pipe_lsu_wavefronts_mem_shared_op_ld.sum": 4_194_304,
          "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum": 134_658,
          "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum": 3_586,
          "smsp__sass_l1tex_data_pipe_lsu_wavefronts_mem_shared_op_st.sum": 131_072}
    [row] = tool.parse_ncu_csv(ncu_csv([l1]))
    assert tool.instruction_conflicts(row, "ld") == 4_101_191 - (4_232_263 - 4_194_304)
    assert tool.instruction_conflicts(row, "st") == 0
    assert tool.instruction_conflicts({k: v for k, v in row.items() if "smsp__" not in k}, "ld") != \
        tool.instruction_conflicts({k: v for k, v in row.items() if "smsp__" not in k}, "ld")  # NaN: no SASS count
    # attention_bf16_d64 on the H200: L1's loads include the ldmatrix wavefronts, which SASS counts under op_ldsm
    ldsm = {"Kernel Name": "flash_attention_mma", "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum": 2_176,
            "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum": 0,
            "smsp__sass_l1tex_data_pipe_lsu_wavefronts_mem_shared_op_ld.sum": 0,
            "smsp__sass_l1tex_data_pipe_lsu_wavefronts_mem_shared_op_ldsm.sum": 2_176}
    [ldsm_row] = tool.parse_ncu_csv(ncu_csv([ldsm]))
    assert tool.instruction_conflicts(ldsm_row, "ld") == 0

    # a 32 x 32 tile read down its columns: 32 wavefronts per request, 31 of them conflicts
    requests = 131_072
    metrics = {"shared_lds.wavefronts": 32 * requests, "shared_lds.conflicts": 31 * requests,
               "shared_st.wavefronts": requests, "shared_st.conflicts": 0}
    sims = [{"target": {"name": "transpose_unpadded", "where": "lesson", "size": {}, "sample": 16},
             "metrics": metrics}]
    (tmp_path / "profiled.json").write_text(json.dumps(["lesson transpose_unpadded"]))
    table = {r["what"]: r for r in tool.compare(sims, tool.by_label([row], tmp_path))}
    for what in ("shared ld wavefronts", "shared ld bank conflicts", "shared st wavefronts"):
        assert table[what]["target"] == "2%" and table[what]["met"] == "yes", table[what]
    assert "shared st bank conflicts" not in table  # none on either side once L1's extra wavefronts are taken off
    assert table["shared ld bank conflicts"]["ncu"] == 4_063_232
    # L1's own counts are shown, not held to a target
    assert table["shared st bank conflicts (L1, all)"]["ncu"] == 3_586
    assert table["shared st bank conflicts (L1, all)"]["target"] == ""
    assert not any("(SASS)" in what for what in table)


def test_the_times_target_is_on_the_bound_at_the_measured_copy_bandwidth(tool, tmp_path):
    # a bandwidth-bound kernel that moves 201 MB: 41.9 us at the spec's 4.8 TB/s, 47.2 us at a measured 4,264 GB/s
    moved = 201_326_592
    metrics = {"dram_bytes": moved, "predicted_ns": 1e9 * moved / 4.8e12, "bound_not_dram_ns": 1_000.0}
    sims = [{"target": {"name": "vector_add", "where": "library", "size": {"n": 1 << 24}, "sample": 16},
             "metrics": metrics}]
    gpu = {"Kernel Name": "vector_add", "gpu__time_duration.sum": 57_760,
           "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed": 68.0}
    (tmp_path / "profiled.json").write_text(json.dumps(["vector_add"]))
    rows = tool.by_label(tool.parse_ncu_csv(ncu_csv([gpu])), tmp_path)
    copy = {"bytes_per_s": 4.264e12, "ms": 0.126, "floats": 1 << 28, "how": "Tensor.copy_"}
    table = {r["what"]: r for r in tool.compare(sims, rows, copy)}
    spec, measured = table["time: predicted bound / measured (ns)"], table[tool.AT_COPY[0]]
    assert spec["target"] == "" and spec["difference"] == pytest.approx(41_943 / 57_760 - 1, abs=1e-4)
    assert measured["simulator"] == pytest.approx(1e9 * moved / 4.264e12)
    assert measured["target"] == "25%" and measured["met"] == "yes"
    # without a measurement the spec's bound carries the target
    table = {r["what"]: r for r in tool.compare(sims, rows)}
    assert table["time: predicted bound / measured (ns)"]["met"] == "no" and tool.AT_COPY[0] not in table


def test_the_simulator_makes_the_launch_a_gpu_makes_when_asked(monkeypatch):
    from numbakern.kernels import collectives, config

    gpu, sim = {"bm": 128}, {"bm": 16}
    monkeypatch.delenv(config.SIM_AS_GPU_ENV, raising=False)
    assert config.for_mode(sim, gpu) == sim and collectives.resident_blocks(256) == collectives.SIM_BLOCKS
    monkeypatch.setenv(config.SIM_AS_GPU_ENV, "132")
    assert config.for_mode(sim, gpu) == gpu
    assert collectives.multiprocessors() == 132 and collectives.resident_blocks(256) == 132 * 8
    monkeypatch.setenv(config.SIM_AS_GPU_ENV, "many")
    with pytest.raises(ValueError, match="NUMBAKERN_SIM_AS_GPU must be a positive whole number"):
        config.for_mode(sim, gpu)


def test_merged_runs_pair_each_kernel_with_its_own_runs_ncu_row(tool, tmp_path):
    def run(folder, kernels: dict[str, int], profiled: list[str], copy=None):
        folder.mkdir()
        sims = [{"target": {"name": k, "where": "library", "size": {"n": n}, "sample": 16},
                 "metrics": {"global_ld.requests": n}} for k, n in kernels.items()]
        (folder / "sim.json").write_text(json.dumps(sims))
        rows = [{"Kernel Name": k, "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum": kernels[k] + 1} for k in profiled]
        (folder / "ncu.csv").write_text(ncu_csv(rows))
        (folder / "profiled.json").write_text(json.dumps(profiled))
        (folder / "provenance.json").write_text(json.dumps({"text": f"run {folder.name}."}))
        if copy:
            (folder / "copy.json").write_text(json.dumps(copy))
        return folder

    copy = {"bytes_per_s": 4.2e12, "ms": 0.5, "floats": 1 << 28, "how": "Tensor.copy_"}
    first = run(tmp_path / "a", {"vector_add": 100, "transpose": 200}, ["vector_add", "transpose"], copy)
    # the second run profiles vector_add again (its row replaces the first's); reduce_sum has no ncu row there
    second = run(tmp_path / "b", {"vector_add": 300, "reduce_sum": 400}, ["vector_add"])
    sims, rows, merged_copy, provenance = tool.merge_runs([first, second])
    by_name = {s["target"]["name"]: s for s in sims}
    assert set(by_name) == set(rows) == {"vector_add", "transpose"}
    assert by_name["vector_add"]["metrics"]["global_ld.requests"] == 300
    assert rows["vector_add"]["l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum"] == 301
    assert rows["transpose"]["l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum"] == 201
    assert merged_copy == copy and "run a." in provenance and "run b." in provenance
    out = tmp_path / "merged"
    assert tool.main(["--merge", str(first), str(second), "--out", str(out), "--no-docs"]) == 0
    assert (out / "comparison.md").read_text().count("| vector_add |") >= 1


# (kernel, cp.asyncs in the simulator, their sectors, ncu's op_ldgsts requests and sectors) on the H200: every
# cp.async is under ncu's op_ld; attention_bf16_d64's (all 16-byte) nowhere else, matmul_pipelined's 512 of 4 bytes
# (of 640) again under op_ldgsts
@pytest.mark.parametrize("name, copies, sectors, ldgsts, ldgsts_sectors", [
    ("attention_bf16_d64", 96, 1_536, 0, 0),
    ("matmul_pipelined", 640, 4_096, 512, 2_048),
])
def test_cp_async_loads_are_compared_with_the_global_loads_ncu_counts_them_under(tool, tmp_path, name, copies,
                                                                                  sectors, ldgsts, ldgsts_sectors):
    metrics = {"global_ld.requests": 0, "global_ld.sectors": 0, "global_ldgsts.requests": copies,
               "global_ldgsts.sectors": sectors}
    sims = [{"target": {"name": name, "where": "library", "size": {}, "sample": 8}, "metrics": metrics}]
    gpu = {"Kernel Name": name, "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum": copies,
           "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum": sectors,
           "l1tex__t_requests_pipe_lsu_mem_global_op_ldgsts_cache_access.sum": ldgsts,
           "l1tex__t_sectors_pipe_lsu_mem_global_op_ldgsts_cache_access.sum": ldgsts_sectors}
    (tmp_path / "profiled.json").write_text(json.dumps([name]))
    table = {r["what"]: r for r in tool.compare(sims, tool.by_label(tool.parse_ncu_csv(ncu_csv([gpu])), tmp_path))}
    for what in ("global ld requests (cp.async's included)", "global ld sectors (cp.async's included)"):
        assert table[what]["met"] == "yes" and table[what]["difference"] == 0, table[what]
    assert table["cp.async requests"]["target"] == ""  # shown only
