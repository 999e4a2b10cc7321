"""The Hopper tensor-core matmul: ``out (float32) = a @ b`` for bf16 or f16 ``a`` (h×k) and ``b`` (k×w) with
warpgroup MMA (``wgmma``) fed by the bulk tensor copy engine (TMA). GPU only (compute capability 9.0).

A persistent kernel (one block per multiprocessor, each walking output tiles in grouped order), warp-specialised:

- **warpgroup 0, the producer**: one thread issues the TMA copies of each k-tile (A: ``bm``×64, B: 64×``bn`` as
  ``bn / 64`` boxes of 64×64) into a ring of ``stages`` shared buffers, 128-byte swizzled by the copy engine, after
  waiting on that buffer's *empty* barrier; the copies complete on its *full* barrier (``expect_tx``). It gives its
  registers to the consumers (``setmaxnreg``).
- **warpgroups 1..consumers**: each waits on *full*, runs four ``wgmma m64n{bn}k16`` (one 64-deep k-tile) on its
  64 rows of the A tile and the whole B tile straight from shared memory (matrix descriptors: A k-major, B n-major
  with ``trans_b``), waits for them, and arrives on *empty*. Then the epilogue: accumulators to ``out``.

TMA zero-fills boxes past the matrices' edges (and counts their bytes), so any h is correct; the tensor maps need
k and w multiples of 8 (16-byte row strides) and 16-byte aligned data.

``tf32x3=True`` makes the same kernel fp32-accurate on the tf32 tensor cores (3xTF32: ``matmul_3xtf32``'s split,
``numbakern.kernels.tf32x3``): ``a`` is (2, h, k) float32, the big and small tf32 parts of A, and ``b`` (2, w, k),
those of B transposed (wgmma reads tf32 B only k-major; ``matmul_3xtf32.split_tf32_parts`` makes both). A stage
holds the four tiles, each ``bm`` (``bn``) rows of 32 floats (128 bytes, the same swizzle as the 16-bit tiles), and
per k8 step a consumer runs ``a_small b_big``, ``a_big b_small``, ``a_big b_big`` (``wgmma m64n{bn}k8 tf32``). The
products of each ``kpartial`` k-tiles go into a fresh accumulator that is then added to the tile's sum in registers:
the tensor cores truncate inside their fp32 sums, so one accumulator over all of k loses accuracy with k
(docs/tensor-cores.md section 8). Within a partial sum one k-tile's wgmma group runs while the next is issued (its
stage released when it is done); at the partial sum's end the consumer waits for all. k and w multiples of 4.
"""

from __future__ import annotations

import numpy as np
from numba import cuda

from .. import mode
from ..fastpath import jit_options, u32
from ..mma import hopper, pack_bf16x2, pack_f16x2
from ..specialize import specialize
from ..tensormap import TensorMapParam, declared_tensor_maps, device_address, tensor_map_params
from ..unroll import unroll
from .tiles import grouped_tile

BK = 64  # k per stage: one 128-byte swizzled row of 16-bit values (32 floats with tf32x3)
PANEL = 64  # columns of one B box (128 bytes)
ALIGN = 1024  # the 128-byte swizzle repeats every 1024 bytes: each tile starts on such a boundary
#: the kernel's arguments: a, b (16-bit), out, and the three tensor maps (16 uint64 each, in device memory)
SIGNATURE = "void(uint16[:, ::1], uint16[:, ::1], float32[:, ::1], uint64[::1], uint64[::1], uint64[::1])"
STAGING = 16 * 1024  # bytes of output one consumer stages at a time (the TMA-store epilogue)
#: blocks a launch in the simulator has at most (a few, so that each walks several tiles)
SIM_MULTIPROCESSORS = 2


def wgmma_shared_bytes(bn: int, stages: int, consumers: int, tma_store: bool = False, tf32x3: bool = False) -> int:
    """Dynamic shared memory of one block: the stage ring (and the consumers' output staging) plus room to align.
    A tile is its rows of 128 bytes either way; with ``tf32x3`` a stage holds two of A and two of B."""
    parts = 2 if tf32x3 else 1
    return stages * parts * (64 * consumers * BK + BK * bn) * 2 + (consumers * STAGING if tma_store else 0) + ALIGN


def _check(f16, bn, stages, consumers, group, tma_store=False, tf32x3=False):
    if bn not in hopper.WGMMA_N:
        raise ValueError(f"matmul_wgmma: bn must be one of {hopper.WGMMA_N}, got {bn}")
    if consumers not in (1, 2, 3):
        raise ValueError(f"matmul_wgmma: consumers must be 1, 2 or 3 warpgroups, got {consumers}")
    if stages < 2 or wgmma_shared_bytes(bn, stages, consumers, tma_store, tf32x3) > 227 * 1024:
        raise ValueError(f"matmul_wgmma: {stages} stages of {bn}-wide tiles do not fit in 227 KiB of shared memory")


@specialize
def matmul_wgmma(f16: bool = False, bn: int = 256, stages: int = 4, consumers: int = 2, group: int = 8,
                 consumer_regs: int = 232, producer_regs: int = 40, out16: bool = False, b_swap: bool = False,
                 inflight: int = 0, tma_store: bool = False, epilogue: bool = True, warp_arrive: bool = False,
                 tf32x3: bool = False, kpartial: int = 1):
    """The kernel for one configuration: ``out`` float32 (h×w), or with ``out16`` the products rounded to the
    inputs' format, two per uint32 (``out`` a uint32 h×(w/2) view of the 16-bit output). ``epilogue=False`` stores
    nothing (a diagnostic: the time of the mainloop alone). ``warp_arrive``: one arrival per consumer warp on a
    stage's empty barrier instead of one per thread. ``tf32x3``: fp32 ``a`` (2, h, k) and ``b`` (2, w, k), the
    split parts (the module's docstring), each ``kpartial`` k-tiles' products in a fresh accumulator (its wgmma
    groups overlap within one: ``inflight`` does not apply)."""
    arrivals = 4 * consumers if warp_arrive else 128 * consumers
    _check(f16, bn, stages, consumers, group, tma_store, tf32x3)
    if inflight not in (0, 1):
        raise ValueError(f"matmul_wgmma: inflight must be 0 or 1 (wgmma groups left running), got {inflight}")
    if tf32x3 and (f16 or out16 or inflight):
        raise ValueError("matmul_wgmma: tf32x3 takes fp32 inputs and output (not f16 or out16), and inflight=0 (its "
                         "groups overlap within each partial sum: kpartial)")
    if not isinstance(kpartial, int) or kpartial < 1:
        raise ValueError(f"matmul_wgmma: kpartial must be a positive int (k-tiles per partial sum), got {kpartial!r}")
    pack = pack_f16x2 if f16 else pack_bf16x2
    # the TMA-store epilogue: each consumer stages 64 rows x 256 bytes (16 KiB) at a time, as two 128-byte-swizzled
    # boxes of 64 rows x 128 bytes, after the stage ring
    ebytes = 2 if out16 else 4
    box_cols = 128 // ebytes
    round_cols = 2 * box_cols
    rounds = bn // round_cols
    staging = STAGING
    bm = 64 * consumers
    threads = 128 * (consumers + 1)
    nacc = bn // 2
    a_stage = bm * BK  # (16-bit elements: bm rows of 128 bytes; with tf32x3 one of the two A parts)
    b_stage = BK * bn
    parts = 2 if tf32x3 else 1
    stage = parts * (a_stage + b_stage)
    tx_bytes = stage * 2
    nbars = 2 * stages
    panels = bn // PANEL
    panel_bytes = PANEL * BK * 2
    kstep = BK // 2 if tf32x3 else BK  # elements of k per stage
    wgmma = getattr(hopper, f"wgmma_m64n{bn}k8_tf32" if tf32x3 else f"wgmma_m64n{bn}k16_{'f16' if f16 else 'bf16'}")
    # descriptor fields (PTX ISA "Matrix Descriptor Format"): 128-byte swizzle, 8-row groups 1024 bytes apart;
    # B's n-major panels of 64 columns are panel_bytes apart (its leading offset)
    desc_a_fields = (1 << 16) | ((1024 >> 4) << 32) | (1 << 62)
    desc_b_fields = ((panel_bytes >> 4) << 16) | ((1024 >> 4) << 32) | (1 << 62)
    if b_swap:  # (the other reading of the two offsets, kept to check the first on a GPU)
        desc_b_fields = ((panel_bytes >> 4) << 32) | ((1024 >> 4) << 16) | (1 << 62)

    @cuda.jit(**jit_options(threads=threads, min_blocks=1))
    def matmul_wgmma(a, b, out, tmap_a, tmap_b, tmap_out):
        tid = cuda.threadIdx.x
        h = a.shape[1] if tf32x3 else a.shape[0]  # (tf32x3: a (2, h, k), b (2, w, k))
        k = a.shape[2] if tf32x3 else a.shape[1]
        w = b.shape[1]
        smem = cuda.shared.array(0, dtype=np.uint16)
        smem32 = cuda.shared.array(0, dtype=np.uint32)  # (the same bytes, for the epilogue's 32-bit stores)
        smemf = cuda.shared.array(0, dtype=np.float32)
        bars = cuda.shared.array(nbars, dtype=np.uint64)  # full[s] = bars[s], empty[s] = bars[stages + s]
        base = hopper.shared_address(smem, 0)
        pad = (ALIGN - base % ALIGN) % ALIGN // 2  # elements up to the first 1024-byte boundary
        ring = base + pad * 2  # (its shared address)
        if tid == 0:
            for s in range(stages):
                hopper.mbarrier_init(bars, s, 1)
                hopper.mbarrier_init(bars, stages + s, arrivals)
            hopper.fence_barrier_init()
        cuda.syncthreads()
        num_m = (h + bm - 1) // bm
        num_n = (w + bn - 1) // bn
        ntiles = num_m * num_n
        ktiles = (k + kstep - 1) // kstep
        band = group * num_n
        wg = tid // 128
        if wg == 0:
            hopper.setmaxnreg_dec(producer_regs)
            if tid == 0:
                it = 0
                for tile in range(cuda.blockIdx.x, ntiles, cuda.gridDim.x):
                    tm, tn = grouped_tile(tile, band, group, num_m)
                    for kt in range(ktiles):
                        s = it % stages
                        while not hopper.mbarrier_try_wait(bars, stages + s, (it // stages + 1) % 2):
                            pass
                        hopper.mbarrier_arrive_expect_tx(bars, s, tx_bytes)
                        so = pad + s * stage
                        if tf32x3:  # A big, A small, B big, B small: boxes of 32 floats by bm (bn) rows
                            for p in unroll(range(2)):
                                hopper.tma_load_3d(smem, so + p * a_stage, tmap_a, kt * kstep, tm * bm, p, bars, s)
                                hopper.tma_load_3d(smem, so + 2 * a_stage + p * b_stage, tmap_b, kt * kstep,
                                                   tn * bn, p, bars, s)
                        else:
                            hopper.tma_load_2d(smem, so, tmap_a, kt * BK, tm * bm, bars, s)
                            for j in unroll(range(panels)):
                                hopper.tma_load_2d(smem, so + a_stage + j * PANEL * BK, tmap_b, tn * bn + j * PANEL,
                                                   kt * BK, bars, s)
                        it += 1
        else:
            hopper.setmaxnreg_inc(consumer_regs)
            c = wg - 1
            t = tid % 128
            row_in = (t // 32) * 16 + (t % 32) // 4
            col_in = (t % 4) * 2
            acc = cuda.local.array(nacc, np.float32)
            if tf32x3:
                part = cuda.local.array(nacc, np.float32)  # one k-tile's products
            arriver = not warp_arrive or t % 32 == 0
            it = 0
            for tile in range(cuda.blockIdx.x, ntiles, cuda.gridDim.x):
                tm, tn = grouped_tile(tile, band, group, num_m)
                for i in unroll(range(nacc)):
                    acc[i] = np.float32(0.0)
                for kt in range(ktiles):
                    s = it % stages
                    while not hopper.mbarrier_try_wait(bars, s, it // stages % 2):
                        pass
                    a_addr = ring + (s * stage + c * 64 * BK) * 2
                    b_addr = ring + (s * stage + parts * a_stage) * 2
                    hopper.wgmma_fence()
                    if tf32x3:  # per k8 (32 bytes along every tile's rows): small * big, big * small, big * big
                        small_a = a_addr + a_stage * 2
                        small_b = b_addr + b_stage * 2
                        first = 1 if kt % kpartial > 0 else 0  # (0: the partial sum starts afresh)
                        for kk in unroll(range(BK // 16)):
                            wgmma(part, desc_a_fields | ((small_a + kk * 32) % 262144 >> 4),
                                  desc_a_fields | ((b_addr + kk * 32) % 262144 >> 4), 1 if kk > 0 else first)
                            wgmma(part, desc_a_fields | ((a_addr + kk * 32) % 262144 >> 4),
                                  desc_a_fields | ((small_b + kk * 32) % 262144 >> 4), 1)
                            wgmma(part, desc_a_fields | ((a_addr + kk * 32) % 262144 >> 4),
                                  desc_a_fields | ((b_addr + kk * 32) % 262144 >> 4), 1)
                    else:
                        for kk in unroll(range(BK // 16)):
                            # A: 32 bytes further along its 128-byte rows per k16; B: 16 k-rows (2048 bytes) further
                            wgmma(acc, desc_a_fields | ((a_addr + kk * 32) % 262144 >> 4),
                                  desc_b_fields | ((b_addr + kk * 2048) % 262144 >> 4), 1, 1)
                    hopper.wgmma_commit()
                    if tf32x3 and (kt % kpartial == kpartial - 1 or kt == ktiles - 1):  # the partial sum ends
                        hopper.wgmma_wait(0, part, nacc)
                        if arriver:
                            if kt % kpartial > 0:  # (the previous k-tile's stage, still held)
                                hopper.mbarrier_arrive(bars, stages + (it + stages - 1) % stages)
                            hopper.mbarrier_arrive(bars, stages + s)
                        for i in unroll(range(nacc)):
                            acc[i] += part[i]
                    elif tf32x3:  # within a partial sum: the previous k-tile's group is done, its stage goes back
                        hopper.wgmma_wait(1, part, nacc)
                        if kt % kpartial > 0 and arriver:
                            hopper.mbarrier_arrive(bars, stages + (it + stages - 1) % stages)
                    elif inflight == 0:
                        hopper.wgmma_wait(0, acc, nacc)
                        if arriver:
                            hopper.mbarrier_arrive(bars, stages + s)
                    else:  # the previous k-tile's group is done: its stage goes back to the producer
                        hopper.wgmma_wait(1, acc, nacc)
                        if kt > 0 and arriver:
                            hopper.mbarrier_arrive(bars, stages + (it + stages - 1) % stages)
                    it += 1
                if inflight == 1 and ktiles > 0:
                    hopper.wgmma_wait(0, acc, nacc)
                    if arriver:
                        hopper.mbarrier_arrive(bars, stages + (it + stages - 1) % stages)
                if tma_store:
                    st = (pad + stages * stage) * 2 + c * staging  # this consumer's staging bytes
                    for rnd in unroll(range(rounds)):
                        if t == 0:
                            hopper.bulk_wait_read(0)  # the last round's copy has read its staging
                        hopper.named_barrier(1 + c, 128)
                        for jj in unroll(range(round_cols // 8)):
                            j = rnd * (round_cols // 8) + jj
                            box = jj // (box_cols // 8)
                            for half in unroll(range(2)):
                                r = row_in + half * 8
                                if out16:  # n8 chunk = one 16-byte chunk of the box row, 4 bytes a thread
                                    at = st + box * 8192 + r * 128 + ((jj % 8) ^ (r % 8)) * 16 + col_in * 2
                                    smem32[at // 4] = pack(acc[j * 4 + half * 2], acc[j * 4 + half * 2 + 1])
                                else:  # n8 chunk = two 16-byte chunks, 8 bytes a thread
                                    cc = (jj % 4) * 2 + col_in // 4
                                    at = st + box * 8192 + r * 128 + (cc ^ (r % 8)) * 16 + (col_in % 4) * 4
                                    smemf[at // 4] = acc[j * 4 + half * 2]
                                    smemf[at // 4 + 1] = acc[j * 4 + half * 2 + 1]
                        hopper.fence_proxy_async()  # the stores above, visible to the copy engine
                        hopper.named_barrier(1 + c, 128)
                        if t == 0:
                            for bx in unroll(range(2)):
                                hopper.tma_store_2d(tmap_out, tn * bn + rnd * round_cols + bx * box_cols,
                                                    tm * bm + c * 64, smem, (st + bx * 8192) // 2)
                            hopper.bulk_commit()
                elif not epilogue:  # (a diagnostic: the mainloop alone; the sum keeps the products alive)
                    total = np.float32(0.0)
                    for j in unroll(range(nacc)):
                        total += acc[j]
                    if total != total:
                        out[0, 0] = total
                else:
                    r0 = tm * bm + c * 64 + row_in
                    c0 = tn * bn + col_in
                    for half in unroll(range(2)):
                        r = r0 + half * 8
                        if r < h:
                            for j in unroll(range(bn // 8)):
                                col = c0 + j * 8
                                if col < w:  # (w even: the pair is inside)
                                    if out16:
                                        out[u32(r), u32(col // 2)] = pack(acc[j * 4 + half * 2],
                                                                          acc[j * 4 + half * 2 + 1])
                                    else:
                                        out[u32(r), u32(col)] = acc[j * 4 + half * 2]
                                        out[u32(r), u32(col + 1)] = acc[j * 4 + half * 2 + 1]
            if tma_store and t == 0:
                hopper.bulk_wait_read(0)  # the last copies have read their staging before the block ends

    # the tensor maps a launch makes from the arrays (numbakern.tensormap.launch_arguments, translate's launcher)
    if tf32x3:  # a (2, h, k), b (2, w, k): boxes of one part, 32 floats wide
        return tensor_map_params(matmul_wgmma, tmap_a=TensorMapParam("a", bm, kstep),
                                 tmap_b=TensorMapParam("b", bn, kstep), tmap_out=TensorMapParam("out", 64, box_cols))
    return tensor_map_params(matmul_wgmma, tmap_a=TensorMapParam("a", bm, BK), tmap_b=TensorMapParam("b", BK, PANEL),
                             tmap_out=TensorMapParam("out", 64, box_cols))


def wgmma_grid(h: int, w: int, bn: int, consumers: int, multiprocessors: int) -> int:
    tiles = -(-h // (64 * consumers)) * -(-w // bn)
    return max(1, min(tiles, multiprocessors))


class WgmmaMatmul:
    """``out = a @ b`` with ``matmul_wgmma(config)`` on numba CUDA arrays: ``a`` (h×k) and ``b`` (k×w) 16-bit
    (uint16 bf16 patterns or float16), ``out`` float32 h×w, or with ``out16`` an int32 h×(w/2) view of the 16-bit
    output; with ``tf32x3`` ``a`` (2, h, k) and ``b`` (2, w, k) float32, the split parts. Builds the tensor maps once
    per set of pointers and shapes, raises the kernel's shared-memory limit, launches one block per multiprocessor
    (at most one per tile). In the simulator (numpy arrays) it launches ``SIM_MULTIPROCESSORS`` blocks at most."""

    def __init__(self, **config):
        self.config = {"f16": False, "bn": 256, "stages": 4, "consumers": 2, "group": 8, **config}
        self.kernel = matmul_wgmma(**self.config)
        self.shared = wgmma_shared_bytes(self.config["bn"], self.config["stages"], self.config["consumers"],
                                         self.config.get("tma_store", False), self.config.get("tf32x3", False))
        self._maps: dict = {}
        self._allowed = mode.in_simulator()  # (no shared-memory limit to raise there)
        self._sms = SIM_MULTIPROCESSORS if mode.in_simulator() else None

    def maps(self, a, b, out):
        ptr = [device_address(x) for x in (a, b, out)]
        key = (*ptr, a.shape, b.shape)
        if key not in self._maps:
            params = declared_tensor_maps(self.kernel)
            out16 = self.config.get("out16")  # (out: a 32-bit view of the 16-bit output, mapped as the 16-bit matrix)
            names = ("a", "b") if out16 else ("a", "b", "out")
            made = [params[f"tmap_{n}"].make(x) for n, x in zip(names, (a, b, out))]
            if out16:
                made.append(hopper.tensor_map_2d(ptr[2], out.shape[0], b.shape[1], b.shape[1] * 2, 64, 64, 2))
            self._maps[key] = tuple(made) if mode.in_simulator() else tuple(cuda.to_device(m) for m in made)
        return self._maps[key]

    def __call__(self, a, b, out):
        maps = self.maps(a, b, out)
        h, w = out.shape[0], b.shape[1]
        if self._sms is None:  # (asked once: the launch path's host time counts for small products)
            self._sms = cuda.get_current_device().MULTIPROCESSOR_COUNT
        grid = wgmma_grid(h, w, self.config["bn"], self.config["consumers"], self._sms)
        if not self._allowed:
            from numba import typeof

            self.kernel.compile(tuple(typeof(x) for x in (a, b, out, *maps)))
            hopper.allow_dynamic_shared(self.kernel, self.shared)
            self._allowed = True
        self.kernel[grid, 128 * (self.config["consumers"] + 1), 0, self.shared](a, b, out, *maps)
        return out


#: the launcher's default configuration (measured on an H200: docs/tensor-cores.md): one wgmma batch left running
#: while the next k-tile's is issued (+24% over waiting for each), the TMA-store epilogue (+14% with fp32 output)
DEFAULT_CONFIG = {"bn": 256, "stages": 4, "consumers": 2, "inflight": 1, "tma_store": True}
#: 3xTF32 (``tf32x3``): 128x128 tiles (a partial m64n128 accumulator beside the tile's own: 128 registers), 3 stages
#: of four 16 KiB tiles and the TMA-store staging fill 225 of the 227 KiB of shared memory. A partial sum per k-tile
#: (32 of k): the tensor cores' truncation grows with a partial sum's length (docs/tensor-cores.md section 8), and
#: mma.sync's partial sums of 16 stayed at 0.3x SGEMM's error (scripts/bench.py times kpartial 2 and 4 beside it)
TF32X3_CONFIG = {"bn": 128, "stages": 3, "consumers": 2, "inflight": 0, "tma_store": True, "tf32x3": True,
                 "kpartial": 1}
_LAUNCHERS: dict = {}


def matmul_wgmma_launcher(f16: bool, config: dict | None = None) -> WgmmaMatmul:
    """The (cached) launcher of ``matmul_wgmma`` for f16 or bf16 inputs and float32 output with ``config`` (for
    3xTF32: ``TF32X3_CONFIG``, f16 False)."""
    config = {**(DEFAULT_CONFIG if config is None else config), "f16": bool(f16)}
    key = tuple(sorted(config.items()))
    if key not in _LAUNCHERS:
        _LAUNCHERS[key] = WgmmaMatmul(**config)
    return _LAUNCHERS[key]
