"""Peers in ``scripts/bench.py``'s rows, timed beside the Numba kernel, its translated C and the torch baseline on the
same device tensors: the tensor-core matmuls' (``matmul_bf16``, ``matmul_f16``, ``matmul_3xtf32``), and torch's
other backends for every attention and matmul row.

- ``matmul_bf16`` / ``matmul_f16``: Triton's ``tl.dot`` on the 16-bit values (autotuned, fp32 accumulation,
  16-bit output as cuBLAS gives, and fp32 output as the Numba kernels give), and numbakern's Hopper kernel
  (``numbakern.kernels.matmul_wgmma``: wgmma + TMA, GPU only) with fp32 and 16-bit output.
- ``matmul_3xtf32``: cuBLAS with TF32 on (1xTF32, the fast and inexact one) beside the SGEMM baseline, on a Hopper
  GPU numbakern's wgmma path as ``matmul_3xtf32(a, b)`` runs it there (B^T and the split parts made, then
  ``matmul_wgmma(tf32x3=True)``: the registered ``matmul_3xtf32_wgmma`` row times that kernel alone), and each
  implementation's error against a float64 product of the same inputs (``accuracy_note``; also for
  ``matmul_3xtf32_wgmma``, against the product of the fp32 values its parts make up).
- every attention and matmul row: torch's other backends beside its default dispatch (the benchmark's torch
  column), each SDPA backend and each BLAS library torch can use, with the kernels each ran (``backend_peers``).
"""

from __future__ import annotations

import contextlib

TC_KERNELS = ("matmul_bf16", "matmul_f16", "matmul_3xtf32")
#: the kernels whose rows carry their error against float64 (``accuracy_note``)
ACCURACY_KERNELS = (*TC_KERNELS, "matmul_3xtf32_wgmma")
#: the registered Hopper matmuls (numbakern/kernels/matmul_hopper.py): Triton's tl.dot beside them in the same run
WGMMA_KERNELS = ("matmul_wgmma_bf16", "matmul_wgmma_f16", "matmul_wgmma_f16_out16")
_TRITON: dict = {}


def triton_dot16():
    """An autotuned Triton ``tl.dot`` for 16-bit row-major inputs: ``launch(a, b, c) -> run``, c's dtype the
    output's (16-bit or float32); None without Triton."""
    if "launch" in _TRITON:
        return _TRITON["launch"]
    try:
        import triton
        import triton.language as tl
    except ImportError as exc:
        print(f"Triton is not installed ({exc}): no 16-bit Triton row", flush=True)
        _TRITON["launch"] = None
        return None
    configs = [triton.Config({"BM": bm, "BN": bn, "BK": bk, "G": 8}, num_warps=nw, num_stages=ns)
               for bm, bn, bk, nw, ns in [(128, 256, 64, 8, 3), (256, 128, 64, 8, 3), (128, 128, 64, 4, 4),
                                         (128, 128, 64, 8, 4), (128, 256, 32, 8, 4), (64, 256, 64, 4, 4)]]

    @triton.autotune(configs=configs, key=["M", "N", "K", "OUT32"])
    @triton.jit
    def dot16(a, b, c, M, N, K, OUT32: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
              G: tl.constexpr):
        pid = tl.program_id(0)
        num_m = tl.cdiv(M, BM)
        num_n = tl.cdiv(N, BN)
        in_group = G * num_n
        first = pid // in_group * G
        gs = tl.minimum(num_m - first, G)
        pm = first + (pid % in_group) % gs
        pn = (pid % in_group) // gs
        rm = pm * BM + tl.arange(0, BM)
        rn = pn * BN + tl.arange(0, BN)
        rk = tl.arange(0, BK)
        ap = a + rm[:, None] * K + rk[None, :]
        bp = b + rk[:, None] * N + rn[None, :]
        acc = tl.zeros((BM, BN), dtype=tl.float32)
        for k0 in range(0, tl.cdiv(K, BK)):
            am = (rm[:, None] < M) & (rk[None, :] + k0 * BK < K)
            bm = (rk[:, None] + k0 * BK < K) & (rn[None, :] < N)
            acc = tl.dot(tl.load(ap, mask=am, other=0.0), tl.load(bp, mask=bm, other=0.0), acc)
            ap += BK
            bp += BK * N
        cm = (rm[:, None] < M) & (rn[None, :] < N)
        if OUT32:
            tl.store(c + rm[:, None] * N + rn[None, :], acc, mask=cm)
        else:
            tl.store(c + rm[:, None] * N + rn[None, :], acc.to(c.dtype.element_ty), mask=cm)

    def launch(a, b, c):
        import torch

        m, k = a.shape
        n = b.shape[1]

        def grid(meta):
            return (triton.cdiv(m, meta["BM"]) * triton.cdiv(n, meta["BN"]),)

        return lambda: dot16[grid](a, b, c, m, n, k, c.dtype == torch.float32)

    _TRITON["launch"] = launch
    return launch


def _values16(torch, spec, x):
    """The kernel's 16-bit argument as a tensor of its format (bf16 data travels as uint16 bit patterns)."""
    return x.view(torch.bfloat16) if spec.name in ("matmul_bf16", "matmul_wgmma_bf16") else x


def tensor_core_peers(torch, spec, arrays) -> dict:
    """``{key: (launch, label)}`` for ``spec``'s row; empty for other kernels."""
    if spec.name not in TC_KERNELS + WGMMA_KERNELS:
        return {}
    out = {}
    if spec.name == "matmul_3xtf32":
        a, b = arrays[:2]
        c = torch.empty(a.shape[0], b.shape[1], device=a.device)

        def tf32():
            torch.backends.cuda.matmul.allow_tf32 = True
            try:
                torch.matmul(a, b, out=c)
            finally:
                torch.backends.cuda.matmul.allow_tf32 = False

        out["cublas_tf32"] = (tf32, "cuBLAS, TF32 on (1xTF32)")
        out.update(tf32x3_hopper_peer(torch, a, b, c))
        return out
    a, b = (_values16(torch, spec, x) for x in arrays[:2])
    h, w = a.shape[0], b.shape[1]
    fmt = "f16" if a.dtype == torch.float16 else "bf16"
    launch = triton_dot16()
    if launch is not None:
        out["triton"] = (launch(a, b, torch.empty(h, w, device=a.device, dtype=a.dtype)),
                         f"Triton tl.dot {fmt} ({fmt} out, autotuned)")
        out["triton_out32"] = (launch(a, b, torch.empty(h, w, device=a.device)),
                               f"Triton tl.dot {fmt} (fp32 out, autotuned)")
    if spec.name in TC_KERNELS:  # (the Hopper kernels' own rows time them already)
        out.update(hopper_peers(torch, spec, arrays))
    return out


def backend_peers(torch, family: str, baseline, kernels_of) -> dict:
    """torch's own alternatives to its default dispatch of ``baseline`` (a call of the benchmark's torch column), each
    where it takes the inputs and labelled with the kernels it ran (``kernels_of(fn)``): for attention each SDPA
    backend (flash, cuDNN, memory-efficient, math: ``sdpa_kernel``), for a matmul each BLAS library torch can use
    (cuBLAS, cuBLASLt: ``torch.backends.cuda.preferred_blas_library``, on a GPU)."""
    if family == "attention":
        from torch.nn.attention import SDPBackend, sdpa_kernel

        choices = [(f"sdpa_{b.name.lower()}", f"SDPA {b.name}", lambda b=b: sdpa_kernel(b))
                   for b in (SDPBackend.FLASH_ATTENTION, SDPBackend.CUDNN_ATTENTION, SDPBackend.EFFICIENT_ATTENTION,
                             SDPBackend.MATH)]
    elif family == "matmul" and torch.cuda.is_available():
        choices = [(f"blas_{lib}", f"torch.matmul with {name}", lambda lib=lib: _blas_library(torch, lib))
                   for lib, name in (("cublas", "cuBLAS"), ("cublaslt", "cuBLASLt"))]
    else:
        return {}
    out = {}
    for key, label, context in choices:
        def run(context=context):
            with context():
                return baseline()
        try:
            run()
        except RuntimeError as exc:  # a backend that does not take these inputs here
            print(f"  {label} unavailable: {str(exc).splitlines()[0][:100]}", flush=True)
            continue
        out[key] = (run, f"{label} (ran {kernels_of(run)})")
    return out


@contextlib.contextmanager
def _blas_library(torch, lib: str):
    """torch's BLAS library set to ``lib`` (``cublas`` or ``cublaslt``) for the calls inside, then restored."""
    before = torch.backends.cuda.preferred_blas_library()
    torch.backends.cuda.preferred_blas_library(lib)
    try:
        yield
    finally:
        torch.backends.cuda.preferred_blas_library(before)


def hopper_peers(torch, spec, arrays) -> dict:
    """numbakern's Hopper kernel (wgmma + TMA), fp32 and 16-bit output, where the device is of compute capability
    9.0 and the shapes allow it."""
    from numba import cuda

    if torch.cuda.get_device_capability() != (9, 0):
        return {}
    from numbakern.kernels.matmul_wgmma import DEFAULT_CONFIG, WgmmaMatmul

    a, b = arrays[:2]
    if a.shape[1] % 8 or b.shape[1] % 8:
        return {}
    f16 = spec.name == "matmul_f16"
    x, y = cuda.as_cuda_array(a), cuda.as_cuda_array(b)
    out32 = torch.empty(a.shape[0], b.shape[1], device=a.device)
    out16 = torch.empty(a.shape[0], b.shape[1], device=a.device, dtype=torch.float16 if f16 else torch.bfloat16)
    k32 = WgmmaMatmul(**DEFAULT_CONFIG, f16=f16)
    k16 = WgmmaMatmul(**DEFAULT_CONFIG, f16=f16, out16=True)
    o32, o16 = cuda.as_cuda_array(out32), cuda.as_cuda_array(out16.view(torch.int32))
    fmt = spec.name[7:]
    return {"numba_sm90": (lambda: k32(x, y, o32), "Numba sm_90a wgmma+TMA (fp32 out)"),
            "numba_sm90_out16": (lambda: k16(x, y, o16), f"Numba sm_90a wgmma+TMA ({fmt} out)")}


#: the Hopper 3xTF32 path's partial sums timed beside its default (one k-tile each): ``{key: kpartial}``
TF32X3_PARTIALS = {"numba_sm90": 1, "numba_sm90_kpartial2": 2, "numba_sm90_kpartial4": 4}


def tf32x3_hopper_peer(torch, a, b, out) -> dict:
    """``matmul_3xtf32(a, b, out, kernel="wgmma")`` (B^T, the split, the wgmma kernel: the whole of what it runs on
    a Hopper GPU), in its default configuration and with longer partial sums (faster, fewer fp32 adds, more of the
    tensor cores' truncation: ``TF32X3_PARTIALS``), where the device is of compute capability 9.0 and the shapes
    allow it."""
    if (not torch.cuda.is_available() or torch.cuda.get_device_capability() != (9, 0) or a.shape[1] % 4
            or b.shape[1] % 4 or a.shape[1] == 0):
        return {}
    from numbakern.kernels.matmul_3xtf32 import matmul_3xtf32
    from numbakern.kernels.matmul_wgmma import TF32X3_CONFIG

    def run(kpartial):
        config = {**TF32X3_CONFIG, "kpartial": kpartial}
        return lambda: matmul_3xtf32(a, b, out, config=config, kernel="wgmma")

    return {key: (run(p), f"Numba sm_90a 3xTF32 wgmma+TMA (kpartial {p}), B^T and the split included")
            for key, p in TF32X3_PARTIALS.items()}


def accuracy_note(torch, spec, tensors, impls) -> str:
    """The relative error (Frobenius norm) against a float64 product of the same inputs of the Numba kernel, its C
    and the torch baseline (for ``matmul_3xtf32`` also its Hopper path), each run once more: ``"rel. error vs
    float64: numba 3.1e-07, c 3.1e-07, torch ..."``; empty for other kernels."""
    if spec.name not in ACCURACY_KERNELS:
        return ""
    a, b, out = tensors[:3]
    if spec.name == "matmul_3xtf32_wgmma":  # the split parts of A and of B^T
        ref = a.double().sum(0) @ b.double().sum(0).t()
    else:
        ref = _values16(torch, spec, a).double() @ _values16(torch, spec, b).double()
    runs = dict(impls)
    if spec.name == "matmul_3xtf32":
        runs.update({key: fn for key, (fn, _) in tf32x3_hopper_peer(torch, a, b, out).items()})
    errs = []
    for key in ("numba", "c", "torch", *TF32X3_PARTIALS):
        if key not in runs:
            continue
        out.fill_(float("nan"))
        result = runs[key]()
        torch.cuda.synchronize()
        got = result if isinstance(result, torch.Tensor) and tuple(result.shape) == tuple(ref.shape) else out
        errs.append(f"{key} {float(((got.double() - ref).norm() / ref.norm()).item()):.1e}")
    return "rel. error vs float64: " + ", ".join(errs)
