"""GPUs' peak rates and per-multiprocessor limits, and the roofline bound of a profiled launch on one of them.

The bound is the time each resource needs for the launch's work at its peak rate; the largest is the launch's lower
bound and its *limiter*. DRAM traffic is the bytes the kernel must move at least (every global sector it touches,
once: what stays in L2 is not read twice); the flops are by type (CUDA cores per precision, tensor cores per
operand type); shared memory takes one wavefront per clock per multiprocessor (32 banks of 4 bytes); the L1 serves
four 32-byte sectors of global requests per clock per multiprocessor (128 bytes); the special-function unit 16
results per clock per multiprocessor. A real launch also pays its launch latency and the ramp of its waves, so
small launches take longer than the bound.

Sources (peak rates at the boost clock, dense tensor-core rates, no sparsity):

- H100 SXM5 and H200 SXM: NVIDIA H100 Tensor Core GPU datasheet and H200 datasheet (FP32 67 TFLOPS, FP64 34,
  TF32 tensor 494.7, BF16/FP16 tensor 989.4; HBM3 3.35 TB/s, HBM3e 4.8 TB/s); FP16 non-tensor 133.8 TFLOPS: NVIDIA
  H100 whitepaper, table 3; 132 SMs at 1980 MHz.
- A100 SXM4 80 GB: NVIDIA A100 datasheet (FP32 19.5 TFLOPS, FP64 9.7, TF32 tensor 156, BF16/FP16 tensor 312;
  HBM2e 2,039 GB/s); FP16 non-tensor 78 TFLOPS: NVIDIA A100 whitepaper, table 1; 108 SMs at 1410 MHz.
- L4: NVIDIA L4 datasheet (FP32 30.3 TFLOPS, TF32 tensor 60, BF16/FP16 tensor 121; GDDR6 300 GB/s); 58 SMs at
  2040 MHz; FP64 at 1/64 of FP32 (compute capability 8.9: CUDA C++ Programming Guide, arithmetic instructions).
- GeForce RTX 4090: NVIDIA Ada Lovelace architecture whitepaper, appendix A (FP32 82.6 TFLOPS, FP16 tensor with
  FP32 accumulate 165.2, TF32 tensor 82.6; GDDR6X 1,008 GB/s); 128 SMs at 2520 MHz; FP64 at 1/64 of FP32.
- Per multiprocessor (registers, warps, blocks, shared memory and its per-block reserve, allocation units): CUDA C++
  Programming Guide, "Technical Specifications per Compute Capability", and CUDA's occupancy calculator
  (``cuda_occupancy.h``).
"""

from __future__ import annotations

from dataclasses import dataclass

from .model import Kernel, Roofline


@dataclass(frozen=True)
class GPU:
    name: str
    cc: tuple[int, int]
    sms: int
    clock_hz: float  # boost SM clock
    dram_bytes_per_s: float
    flops_per_s: dict  # "fp32", "fp64", "fp16", "tensor_bf16", "tensor_f16", "tensor_tf32"
    registers_per_sm: int = 65536
    max_registers_per_block: int = 65536
    max_warps_per_sm: int = 64
    max_blocks_per_sm: int = 32
    shared_per_sm: int = 233472  # bytes, the largest carveout
    max_shared_per_block: int = 232448  # with the opt-in
    reserved_shared_per_block: int = 1024
    shared_granularity: int = 128
    register_granularity: int = 256  # registers, per warp
    sfu_per_clock: int = 16  # per multiprocessor

    @property
    def shared_wavefronts_per_s(self) -> float:
        return self.sms * self.clock_hz

    @property
    def l1_sectors_per_s(self) -> float:
        return 4 * self.sms * self.clock_hz


_HOPPER = {"fp32": 66.9e12, "fp64": 33.5e12, "fp16": 133.8e12, "tensor_bf16": 989.4e12, "tensor_f16": 989.4e12,
           "tensor_tf32": 494.7e12}

GPUS: dict[str, GPU] = {
    "H100": GPU("H100 SXM5", (9, 0), 132, 1.98e9, 3.35e12, _HOPPER),
    "H200": GPU("H200 SXM", (9, 0), 132, 1.98e9, 4.8e12, _HOPPER),
    "A100": GPU("A100 SXM4 80GB", (8, 0), 108, 1.41e9, 2.039e12,
                {"fp32": 19.5e12, "fp64": 9.7e12, "fp16": 78e12, "tensor_bf16": 312e12, "tensor_f16": 312e12,
                 "tensor_tf32": 156e12},
                shared_per_sm=167936, max_shared_per_block=166912),
    "L4": GPU("L4", (8, 9), 58, 2.04e9, 300e9,
              {"fp32": 30.3e12, "fp64": 30.3e12 / 64, "fp16": 30.3e12, "tensor_bf16": 121e12, "tensor_f16": 121e12,
               "tensor_tf32": 60e12},
              max_warps_per_sm=48, max_blocks_per_sm=24, shared_per_sm=102400, max_shared_per_block=101376),
    "RTX4090": GPU("GeForce RTX 4090", (8, 9), 128, 2.52e9, 1008e9,
                   {"fp32": 82.6e12, "fp64": 82.6e12 / 64, "fp16": 82.6e12, "tensor_bf16": 165.2e12,
                    "tensor_f16": 165.2e12, "tensor_tf32": 82.6e12},
                   max_warps_per_sm=48, max_blocks_per_sm=24, shared_per_sm=102400, max_shared_per_block=101376),
}


def gpu(name: str) -> GPU:
    """The GPU called ``name`` (``"H100"``, ``"h200"``, ``"RTX 4090"``...); ``ValueError`` naming the choices."""
    key = name.replace(" ", "").replace("-", "").upper()
    for k, spec in GPUS.items():
        if key == k.upper():
            return spec
    raise ValueError(f"gpu: unknown GPU {name!r}; expected one of {', '.join(GPUS)}")


def bound(kernel: Kernel, spec: GPU) -> Roofline:
    """The launch's roofline on ``spec``: each resource's time at its peak, the largest of them, and its name."""
    seconds: dict[str, float] = {"dram": kernel.unique_bytes / spec.dram_bytes_per_s}
    for kind, count in kernel.flops.items():
        if kind.startswith("sfu_"):
            seconds["sfu"] = seconds.get("sfu", 0.0) + count / (spec.sfu_per_clock * spec.sms * spec.clock_hz)
        elif kind in spec.flops_per_s:
            seconds[kind] = count / spec.flops_per_s[kind]
    wavefronts = sum(m.wavefronts for k, m in kernel.memory.items() if k.startswith("shared"))
    seconds["shared"] = wavefronts / spec.shared_wavefronts_per_s
    sectors = sum(m.sectors for k, m in kernel.memory.items() if k.startswith("global"))
    seconds["l1"] = sectors / spec.l1_sectors_per_s
    limiter = max(seconds, key=seconds.get)
    flops = sum(v for k, v in kernel.flops.items() if not k.startswith("sfu_"))
    intensity = flops / kernel.unique_bytes if kernel.unique_bytes else 0.0
    return Roofline(spec.name, seconds, limiter, seconds[limiter], intensity, flops, kernel.unique_bytes)
