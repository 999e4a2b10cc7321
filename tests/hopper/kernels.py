"""Kernels the Hopper tests launch (a module of their own, so the front end can read their source): one instruction
or one pipeline stage each, written as a kernel author writes them."""

import numpy as np
from numba import cuda

from numbakern.mma import hopper

ALIGN = 1024  # the 128-byte swizzle's pattern: each swizzled tile starts on such a boundary


@cuda.jit
def tma_box(x, out, tmap, c0, c1, c2, nbytes):
    """One TMA load of the box at (c0 innermost, c1) of the tensor ``tmap`` describes (``x``'s memory; 3-D ``x``: at
    (c0, c1, c2) through a 3-D map) into shared memory, waited for on an mbarrier; the shared bytes as they landed,
    copied to ``out``."""
    smem = cuda.shared.array(0, dtype=np.uint8)
    bars = cuda.shared.array(1, dtype=np.uint64)
    tid = cuda.threadIdx.x
    base = hopper.shared_address(smem, 0)
    pad = (ALIGN - base % ALIGN) % ALIGN
    if tid == 0:
        hopper.mbarrier_init(bars, 0, 1)
        hopper.fence_barrier_init()
    cuda.syncthreads()
    if tid == 0:
        hopper.mbarrier_arrive_expect_tx(bars, 0, nbytes)
        if x.ndim == 2:
            hopper.tma_load_2d(smem, pad, tmap, c0, c1, bars, 0)
        else:
            hopper.tma_load_3d(smem, pad, tmap, c0, c1, c2, bars, 0)
    while not hopper.mbarrier_try_wait(bars, 0, 0):
        pass
    for i in range(tid, nbytes, cuda.blockDim.x):
        out[i] = smem[pad + i]


@cuda.jit
def tma_store_box(image, y, tmap, c0, c1):
    """``image`` (the box's bytes as shared memory holds them) written to shared memory by the threads, fenced for
    the async proxy, and stored by one TMA store to the box at (c0, c1) of ``y``."""
    smem = cuda.shared.array(0, dtype=np.uint8)
    tid = cuda.threadIdx.x
    base = hopper.shared_address(smem, 0)
    pad = (ALIGN - base % ALIGN) % ALIGN
    for i in range(tid, image.shape[0], cuda.blockDim.x):
        smem[pad + i] = image[i]
    hopper.fence_proxy_async()
    cuda.syncthreads()
    if tid == 0:
        hopper.tma_store_2d(tmap, c0, c1, smem, pad)
        hopper.bulk_commit()
        hopper.bulk_wait_read(0)


@cuda.jit
def phases(bars_out, rounds):
    """Two warps hand rounds back and forth through two mbarriers (count 32 each): each round a warp waits for the
    other's arrivals with the phase's parity. ``bars_out[w, r]`` = what warp w saw of the other's round r."""
    bars = cuda.shared.array(2, dtype=np.uint64)
    box = cuda.shared.array(64, dtype=np.int32)
    tid = cuda.threadIdx.x
    w = tid // 32
    if tid == 0:
        hopper.mbarrier_init(bars, 0, 32)
        hopper.mbarrier_init(bars, 1, 32)
        hopper.fence_barrier_init()
    cuda.syncthreads()
    for r in range(rounds):
        box[tid] = r * 100 + tid
        hopper.mbarrier_arrive(bars, w)
        while not hopper.mbarrier_try_wait(bars, 1 - w, r % 2):
            pass
        bars_out[tid, r] = box[(tid + 32) % 64]
        cuda.syncthreads()  # (the next round's writes wait until both warps read this round's)


def wgmma_from_image(name: str, n: int, trans_b: int = 0):
    """A kernel running one ``name`` wgmma on operands laid out in shared memory from ``image`` (uint32 words,
    copied to a 1024-byte-aligned place); ``descs`` are the descriptors relative to that place; A registers (for
    the ``_rs`` forms) and C come per thread from ``a_in`` and ``c_in``; D goes to ``out``."""
    fn = getattr(hopper, name)
    half = n // 2
    tf32 = "tf32" in name
    rs = name.endswith("_rs")
    a_dtype = np.float32 if tf32 else np.uint32

    @cuda.jit
    def kernel(image, descs, a_in, c_in, out, scale_d):
        smem = cuda.shared.array(0, dtype=np.uint32)
        tid = cuda.threadIdx.x
        base = hopper.shared_address(smem, 0)
        pad = (ALIGN - base % ALIGN) % ALIGN
        for i in range(tid, image.shape[0], 128):
            smem[pad // 4 + i] = image[i]
        hopper.fence_proxy_async()
        cuda.syncthreads()
        start = np.uint64((base + pad) >> 4)
        acc = cuda.local.array(half, np.float32)
        for i in range(half):
            acc[i] = c_in[tid, i]
        hopper.wgmma_fence()
        if rs:
            a = cuda.local.array(4, a_dtype)
            for i in range(4):
                a[i] = a_in[tid, i]
            if tf32:
                fn(acc, a, 0, descs[1] + start, scale_d)
            else:
                fn(acc, a, 0, descs[1] + start, scale_d, trans_b)
        elif tf32:
            fn(acc, descs[0] + start, descs[1] + start, scale_d)
        else:
            fn(acc, descs[0] + start, descs[1] + start, scale_d, trans_b)
        hopper.wgmma_commit()
        hopper.wgmma_wait(0, acc, half)
        for i in range(half):
            out[tid, i] = acc[i]

    return kernel


@cuda.jit
def named_barriers(out):
    """Warps 0-1 and warps 2-3 each meet at their own named barrier (64 threads), passing values through shared
    memory; then all four at barrier 3 with count 128."""
    s = cuda.shared.array(128, dtype=np.int32)
    tid = cuda.threadIdx.x
    s[tid] = tid * 3
    hopper.named_barrier(1 + tid // 64, 64)
    out[tid, 0] = s[(tid + 32) % 64 + (tid // 64) * 64]
    hopper.named_barrier(3, 128)
    out[tid, 1] = s[127 - tid]


@cuda.jit
def turns(out, rounds, bug):
    """Two warps take turns through named barriers, as FA3's warpgroups do: warp 0 writes a round and arrives at
    barrier 1 (``bar.arrive``: it does not wait), warp 1 waits there (``bar.sync``), reads another lane's value and
    arrives at barrier 2, which warp 0 waits at before it writes the next round. ``bug`` 1: warp 0 writes again
    after it arrives (the arrival does not wait for the reader); 2: warp 1 does not wait for the writer."""
    box = cuda.shared.array(32, dtype=np.int32)
    tid = cuda.threadIdx.x
    lane = tid % 32
    for r in range(rounds):
        if tid < 32:
            if r > 0:
                hopper.named_barrier_sync(2, 64)  # the reader has read the last round
            box[lane] = r * 100 + lane
            hopper.named_barrier_arrive(1, 64)  # the round is written: the reader's turn
            if bug == 1:
                box[lane] = -1
        else:
            if bug != 2:
                hopper.named_barrier_sync(1, 64)
            out[r, lane] = box[(lane + 1) % 32]
            if r < rounds - 1:
                hopper.named_barrier_arrive(2, 64)


@cuda.jit
def register_budgets(out):
    """The warp-specialised pattern: warpgroup 0 gives registers away, warpgroup 1 takes them."""
    tid = cuda.threadIdx.x
    if tid < 128:
        hopper.setmaxnreg_dec(40)
    else:
        hopper.setmaxnreg_inc(232)
    out[tid] = tid


# module-level variants, for the translation tests (translate names a kernel as module:name)
wgmma_ss_bf16 = wgmma_from_image("wgmma_m64n64k16_bf16", 64, 0)
wgmma_rs_bf16 = wgmma_from_image("wgmma_m64n64k16_bf16_rs", 64, 1)
wgmma_ss_tf32 = wgmma_from_image("wgmma_m64n32k8_tf32", 32)
wgmma_rs_tf32 = wgmma_from_image("wgmma_m64n16k8_tf32_rs", 16)
