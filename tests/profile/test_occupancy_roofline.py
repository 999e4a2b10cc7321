"""Theoretical occupancy against values worked out by hand with CUDA's occupancy rules, and the roofline bound."""

import pytest

from numbakern.profiler import occupancy, roofline
from numbakern.profiler.model import Kernel, Memory

H100, A100, L4 = (roofline.gpu(name) for name in ("H100", "A100", "L4"))


@pytest.mark.parametrize("spec, threads, registers, static, dynamic, blocks, warps, limiter", [
    # 8 warps a block; 32 registers: 1,024 per warp, 16 warps per sub-partition: the 64 warp slots fill first
    (H100, 256, 32, 0, 0, 8, 64, "warps"),
    # 128 registers: 4,096 per warp, 4 warps per sub-partition, 16 warps: 2 blocks
    (H100, 256, 128, 0, 0, 2, 16, "registers"),
    # 64 registers: 2,048 per warp, 8 per sub-partition, 32 warps: one block of 32 warps
    (H100, 1024, 64, 0, 0, 1, 32, "registers"),
    # 40 registers: 1,280 per warp (a multiple of 256), 12 per sub-partition (16384 / 1280 = 12.8), 48 warps
    (H100, 128, 40, 0, 0, 12, 48, "registers"),
    # 48 KB static shared memory: + 1 KB reserved = 50,176 bytes, 4 of them in 228 KB
    (H100, 256, 32, 49152, 0, 4, 32, "shared memory"),
    # the same in dynamic shared memory
    (H100, 256, 32, 0, 49152, 4, 32, "shared memory"),
    # 255 registers x 1,024 threads cannot launch at all
    (H100, 1024, 255, 0, 0, 0, 0, "registers"),
    # more shared memory than a block may have
    (H100, 128, 32, 0, 240 * 1024, 0, 0, "shared memory"),
    # compute capability 8.9: 48 warps
    (L4, 256, 32, 0, 0, 6, 48, "warps"),
    # A100: 164 KB per SM, 100 KB + 1 KB per block: one block
    (A100, 256, 32, 0, 100 * 1024, 1, 8, "shared memory"),
    # 32 threads (one warp) per block: the 32-block limit
    (H100, 32, 16, 0, 0, 32, 32, "blocks"),
])
def test_occupancy(spec, threads, registers, static, dynamic, blocks, warps, limiter):
    occ = occupancy.occupancy(spec, threads, registers, static, dynamic)
    assert (occ.blocks_per_sm, occ.warps_per_sm, occ.limiter) == (blocks, warps, limiter)
    assert occ.fraction == warps / spec.max_warps_per_sm


def test_unknown_registers_are_no_limit():
    occ = occupancy.occupancy(H100, 256, None, 0, 0)
    assert occ.blocks_per_sm == 8 and "registers" not in occ.limits


def test_the_roofline_takes_the_slowest_resource():
    k = Kernel(memory={"global_ld": Memory(requests=10, sectors=4e6), "shared_ld": Memory(requests=10, wavefronts=1e6)},
               flops={"fp32": 2e9, "sfu_fp32": 1e6}, unique_bytes_read=64e6, unique_bytes_written=64e6)
    bound = roofline.bound(k, H100)
    assert bound.seconds["dram"] == pytest.approx(128e6 / 3.35e12)
    assert bound.seconds["fp32"] == pytest.approx(2e9 / 66.9e12)
    assert bound.seconds["shared"] == pytest.approx(1e6 / (132 * 1.98e9))
    assert bound.seconds["l1"] == pytest.approx(4e6 / (4 * 132 * 1.98e9))
    assert bound.seconds["sfu"] == pytest.approx(1e6 / (16 * 132 * 1.98e9))
    assert bound.limiter == "dram" and bound.bound_seconds == bound.seconds["dram"]
    assert bound.arithmetic_intensity == pytest.approx(2e9 / 128e6)
    k.flops["fp32"] = 1e13
    assert roofline.bound(k, H100).limiter == "fp32"


def test_gpu_names():
    assert roofline.gpu("h200").dram_bytes_per_s == 4.8e12
    assert roofline.gpu("RTX 4090").name == "GeForce RTX 4090"
    with pytest.raises(ValueError, match="gpu: unknown GPU 'B200'"):
        roofline.gpu("B200")


def test_the_chart_without_matplotlib_is_skipped(tmp_path, monkeypatch):
    import builtins

    from numbakern.profiler import report
    from numbakern.profiler.model import Kernel, Profile, Sampling

    real_import = builtins.__import__

    def no_matplotlib(name, *args, **kwargs):
        if name.startswith("matplotlib"):
            raise ImportError("no matplotlib here")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_matplotlib)
    k = Kernel(flops={"fp32": 1e9}, unique_bytes_read=1e6)
    p = Profile("k", (1, 1, 1), (32, 1, 1), 0, [], k, Sampling(1, 1, "all"), roofline=roofline.bound(k, H100))
    assert report.chart([p], H100, tmp_path / "roofline.png") is None
    assert not (tmp_path / "roofline.png").exists()


def test_the_chart_is_drawn(tmp_path):
    pytest.importorskip("matplotlib")
    from numbakern.profiler import report
    from numbakern.profiler.model import Kernel, Profile, Sampling

    k = Kernel(flops={"fp32": 1e9}, unique_bytes_read=1e6)
    p = Profile("k", (1, 1, 1), (32, 1, 1), 0, [], k, Sampling(1, 1, "all"), roofline=roofline.bound(k, H100))
    assert report.chart([p], H100, tmp_path / "roofline.png") == str(tmp_path / "roofline.png")
    assert (tmp_path / "roofline.png").stat().st_size > 1000


# nvJitLink 13.5's verbose logs for the lessons' unpadded transpose (a 32 x 32 float tile: 4,096 bytes of shared)
LTO_LOG = """INFO: NVVM70 LTOIR Container created (8524 bytes)
ptxas info    : 0 bytes gmem
ptxas info    : Compiling entry function '_ZN9numbakern8profiler7lessons18transpose_unpadded' for 'sm_90'
ptxas info    : Function properties for _ZN9numbakern8profiler7lessons18transpose_unpadded
ptxas         .     16 bytes stack frame, 8 bytes spill stores, 8 bytes spill loads
ptxas info    : Used 28 registers, used 1 barriers, 4096 bytes smem
ptxas info    : Compile time = 11.981 ms
"""
PTX_LOG = """ptxas info    : 0 bytes gmem
ptxas info    : Compiling entry function '_ZN9numbakern8profiler7lessons18transpose_unpadded' for 'sm_90'
ptxas info    : Function properties for _ZN9numbakern8profiler7lessons18transpose_unpadded
ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 30 registers, used 1 barriers
ptxas info    : Compile time = 13.080 ms
info    : 8 bytes gmem
info    : Function properties for '_ZN9numbakern8profiler7lessons18transpose_unpadded':
info    : used 30 registers, used 1 barriers, 0 stack, 5120 bytes smem, 672 bytes cmem[0], 0 bytes lmem
"""


def test_the_compilers_report_is_read_from_ptxas_own_line():
    from numbakern.profiler.resources import parse_report

    # link-time optimised (how numba-cuda compiles a launch where nvJitLink is installed): ptxas's line alone
    assert parse_report(LTO_LOG) == {"registers": 28, "static_shared": 4096, "local_bytes": 16}
    # from PTX: ptxas gives no shared memory, the linker's summary does
    assert parse_report(PTX_LOG) == {"registers": 30, "static_shared": 5120, "local_bytes": 0}
    with pytest.raises(ValueError, match="no register count"):
        parse_report("ptxas info    : 0 bytes gmem\n")
