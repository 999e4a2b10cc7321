"""2-D convolutions with a shared-memory halo, as ``F.conv2d`` computes them (cross-correlation, zero padding that
keeps the size, stride 1):

``conv2d_image(radius, rows)``
    A ``(2 radius + 1)``-square filter over one large single-channel image: ``out[y, x] = sum w[dy, dx] *
    x[y + dy - radius, x + dx - radius]``, zero outside the image (``F.conv2d(x[None, None], w[None, None],
    padding=radius)``). A block of 32 x 8 threads computes a 32-wide, ``8 * rows``-tall tile of the output. It first
    copies the tile and its halo of ``radius`` pixels on every side into shared memory (coalesced loads, all issued
    before the barrier; zeros outside the image), so each input pixel comes from DRAM about once instead of
    ``(2 radius + 1)**2`` times. Each thread then computes ``rows`` vertically adjacent outputs of one column,
    sliding down its column of the tile: for each filter column it reads ``rows + 2 radius`` values into registers
    and uses each for up to ``2 radius + 1`` outputs, so shared-memory reads per output drop from ``(2 radius + 1)**2``
    to ``(2 radius + 1) (rows + 2 radius) / rows``. The filter lives in registers.

``conv2d_nchw(channels, filters, rows)``
    A 3x3 convolution of a batch of multi-channel images (NCHW) with a few input channels: ``out[n, k] = b[k] +
    sum_c w[k, c] (*) x[n, c]`` with padding 1 (``F.conv2d(x, w, b, padding=1)``). A block computes a 32 x
    ``8 * rows`` tile of all ``filters`` output channels of one image: the halo tiles of all ``channels`` input
    channels and the whole filter bank go to shared memory once, and each thread keeps ``filters * rows``
    accumulators in registers, so every input value read from shared memory feeds ``3 * filters`` multiply-adds, and
    the filters of one tap are read four at a time (16-byte shared reads), each weight feeding ``rows`` of them.

Both are memory-bound at their bench sizes for small filters and channel counts (8 bytes per output pixel and
channel for the image filter; ``4 (channels + filters)`` per pixel for the batch); the halo costs
``(th + 2 r)(32 + 2 r) / (32 th)`` times the tile in loads, mostly served by L2 because neighbouring blocks read
the same halo lines.

``conv2d(x, w, b=None)`` is the user-facing function (either shape).
"""

from __future__ import annotations

import numpy as np
from numba import cuda

from ..fastpath import jit_options, u32
from ..launch import LaunchConfig, cdiv, check_array, check_same_device, empty_like_on, to_kernel_arg
from ..registry import Case, KernelSpec, Work, random_array, register
from ..specialize import specialize
from ..unroll import unroll
from ..vector_io import vload4
from .config import checked_out

#: threads of a block along x (one warp: a row of 32 output pixels) and along y
TX = 32
TY = 8
THREADS = TX * TY
#: ``launch_bounds``' minimum of resident blocks per multiprocessor, by filter radius. For the 5x5 filter Numba's
#: register allocator takes 60 registers when it is free to (4 blocks, 50% occupancy) where nvcc takes 40 for the
#: same code (6 blocks); asking for 6 blocks caps it at 40 (a 16-byte spill) and took the H200's 8192² time from
#: 0.429 ms to 0.330 ms, against 0.346 ms for the C (docs/kernels.md). The 3x3 filter fits 8 blocks (32 registers)
#: without it; other radii are not measured.
IMAGE_MIN_BLOCKS = {2: 6}


def _check_rows(what: str, rows: int) -> None:
    if not isinstance(rows, int) or not 1 <= rows <= 16:
        raise ValueError(f"{what}: rows (outputs per thread) must be an int from 1 to 16, got {rows!r}")


@specialize
def conv2d_image(radius: int = 1, rows: int = 8):
    """``out = F.conv2d(x, w, padding=radius)`` for one ``h`` x ``w`` float32 image and a ``(2 radius + 1)``-square
    filter; launch with ``image_launch`` (blocks of 32 x 8 threads)."""
    if not isinstance(radius, int) or not 0 <= radius <= 7:
        raise ValueError(f"conv2d_image: radius must be an int from 0 to 7, got {radius!r}")
    _check_rows("conv2d_image", rows)
    size = 2 * radius + 1  # the filter is size x size
    taps = size * size
    tile_h = TY * rows + 2 * radius  # the shared tile: the output tile and its halo
    tile_w = TX + 2 * radius
    row_steps = (tile_h + TY - 1) // TY  # tile rows each thread copies: rows ty, ty + TY, ...
    halo_cols = 2 * radius  # tile columns past the first TX
    halo_n = tile_h * halo_cols  # their elements, spread over all the threads
    halo_steps = (halo_n + THREADS - 1) // THREADS
    column = rows + 2 * radius  # tile values one thread reads per filter column

    @cuda.jit(**jit_options(threads=THREADS, min_blocks=IMAGE_MIN_BLOCKS.get(radius), fastmath=False))
    def conv2d_image(x, w, out):
        tx = cuda.threadIdx.x
        ty = cuda.threadIdx.y
        h = x.shape[0]
        wd = x.shape[1]
        x0 = cuda.blockIdx.x * TX  # the output tile's first column and row
        y0 = cuda.blockIdx.y * (TY * rows)
        tile = cuda.shared.array((tile_h, tile_w), np.float32)
        wr = cuda.local.array(taps, np.float32)
        col = cuda.local.array(column, np.float32)
        acc = cuda.local.array(rows, np.float32)

        # the tile and its halo, zeros outside the image (all loads before the barrier): each thread copies column
        # tx of every TY-th row (no division to find a position), then the threads together the 2 * radius halo
        # columns past the first TX (a power of two wide for radius 1 and 2: the division is a shift)
        tid = ty * TX + tx
        gx = x0 + tx - radius
        in_x = 0 <= gx < wd
        for j in unroll(range(row_steps)):
            ly = ty + j * TY
            if ly < tile_h:
                gy = y0 + ly - radius
                v = np.float32(0.0)
                if 0 <= gy < h and in_x:
                    v = x[u32(gy), u32(gx)]
                tile[u32(ly), tx] = v
        for j in unroll(range(halo_steps)):
            e = tid + j * THREADS
            if e < halo_n:
                ly = e // halo_cols
                lx = e % halo_cols + TX
                gy = y0 + ly - radius
                gx2 = x0 + lx - radius
                v = np.float32(0.0)
                if 0 <= gy < h and gx2 < wd:
                    v = x[u32(gy), u32(gx2)]
                tile[u32(ly), u32(lx)] = v
        for k in range(taps):
            wr[k] = w[k // size, k % size]
        for i in range(rows):
            acc[i] = np.float32(0.0)
        cuda.syncthreads()

        for dx in range(size):  # slide down this thread's column of the tile, one filter column at a time
            for j in range(column):
                col[j] = tile[ty * rows + j, tx + dx]
            for i in range(rows):
                for dy in range(size):
                    acc[i] += wr[dy * size + dx] * col[i + dy]
        ox = x0 + tx
        for i in range(rows):
            oy = y0 + ty * rows + i
            if oy < h and ox < wd:
                out[u32(oy), u32(ox)] = acc[i]

    return conv2d_image


def image_launch(config: dict, h: int, w: int) -> LaunchConfig:
    return LaunchConfig((max(1, cdiv(w, TX)), max(1, cdiv(h, TY * config["rows"])), 1), (TX, TY, 1))


@specialize
def conv2d_nchw(channels: int = 4, filters: int = 8, rows: int = 4):
    """``out = F.conv2d(x, w, b, padding=1)`` for ``x`` (n, channels, h, w), ``w`` (filters, channels, 3, 3),
    ``b`` (filters,); launch with ``nchw_launch`` (blocks of 32 x 8 threads, grid.z = images)."""
    for name, v in (("channels", channels), ("filters", filters)):
        if not isinstance(v, int) or not 1 <= v <= 16:
            raise ValueError(f"conv2d_nchw: {name} must be an int from 1 to 16, got {v!r}")
    _check_rows("conv2d_nchw", rows)
    tile_h = TY * rows + 2
    tile_w = TX + 2
    plane = tile_h * tile_w
    tile_n = channels * plane
    loads = (tile_n + THREADS - 1) // THREADS
    taps = filters * channels * 9
    column = rows + 2
    n_acc = filters * rows
    wide = 4 if filters % 4 == 0 else 1  # filters per shared read
    groups = filters // wide

    @cuda.jit(**jit_options(threads=THREADS, fastmath=False))
    def conv2d_nchw(x, w, b, out):
        tx = cuda.threadIdx.x
        ty = cuda.threadIdx.y
        tid = ty * TX + tx
        img = cuda.blockIdx.z
        h = x.shape[2]
        wd = x.shape[3]
        x0 = cuda.blockIdx.x * TX
        y0 = cuda.blockIdx.y * (TY * rows)
        tile = cuda.shared.array((channels, tile_h, tile_w), np.float32)
        # w[f, c, dy, dx] at ((c * 3 + dy) * 3 + dx) * filters + f: the filters of one tap side by side, so that one
        # 16-byte shared read brings four of them (``filters % 4 == 0``)
        bank = cuda.shared.array(taps, np.float32, alignment=16)
        col = cuda.local.array(column, np.float32)
        acc = cuda.local.array(n_acc, np.float32)
        wv = cuda.local.array(wide, np.float32)

        for k in range(loads):  # every channel's tile and halo, zeros outside the image
            e = k * THREADS + tid
            if e < tile_n:
                ch = e // plane
                ly = e % plane // tile_w
                lx = e % tile_w
                gy = y0 + ly - 1
                gx = x0 + lx - 1
                if 0 <= gy < h and 0 <= gx < wd:
                    tile[ch, ly, lx] = x[u32(img), u32(ch), u32(gy), u32(gx)]
                else:
                    tile[ch, ly, lx] = np.float32(0.0)
        for j in range(tid, taps, THREADS):  # (reads w in its own order, coalesced)
            bank[u32(((j // 9 % channels * 3 + j // 3 % 3) * 3 + j % 3) * filters + j // (channels * 9))] = w[
                u32(j // (channels * 9)), u32(j // 9 % channels), u32(j // 3 % 3), u32(j % 3)]
        for k in range(n_acc):
            acc[k] = np.float32(0.0)
        cuda.syncthreads()

        for c in range(channels):
            for dx in range(3):
                for j in range(column):
                    col[j] = tile[c, ty * rows + j, tx + dx]
                for dy in range(3):
                    for g in range(groups):  # `wide` filters at a time
                        tap = ((c * 3 + dy) * 3 + dx) * filters + g * wide
                        if wide == 4:
                            vload4(bank, tap, wv, 0)
                        else:
                            wv[0] = bank[tap]
                        for q in range(wide):
                            for i in range(rows):
                                acc[(g * wide + q) * rows + i] += wv[q] * col[i + dy]
        ox = x0 + tx
        for f in range(filters):
            bf = b[f]
            for i in range(rows):
                oy = y0 + ty * rows + i
                if oy < h and ox < wd:
                    out[u32(img), f, u32(oy), u32(ox)] = acc[f * rows + i] + bf

    return conv2d_nchw


def nchw_launch(config: dict, n: int, h: int, w: int) -> LaunchConfig:
    return LaunchConfig((max(1, cdiv(w, TX)), max(1, cdiv(h, TY * config["rows"])), max(1, n)), (TX, TY, 1))


# ---------------------------------------------------------------------------------------------------------------
# the user-facing function

IMAGE_ROWS = 8  # outputs per thread of the image filter: a 32 x 64 output tile
NCHW_ROWS = 4  # of the batch convolution: 32 x 32, with filters x 4 accumulators per thread


def conv2d(x, w, b=None, out=None):
    """``F.conv2d`` with stride 1 and the padding that keeps the size, for float32 arrays:

    - ``x`` (h, w) with ``w`` (s, s), s odd (1 to 15): one image, one filter, no bias;
    - ``x`` (n, c, h, w) with ``w`` (k, c, 3, 3) and ``b`` (k,) or None: a batch, c and k from 1 to 16.

    torch tensors, CuPy arrays or numpy arrays in, the result of the same kind on the same device.
    """
    xi = check_array("x", x, dtype=np.float32)
    wi = check_array("w", w, dtype=np.float32)
    if len(xi.shape) == 2:
        if len(wi.shape) != 2 or wi.shape[0] != wi.shape[1] or wi.shape[0] % 2 == 0 or wi.shape[0] > 15:
            raise ValueError(f"conv2d: for a 2-D image 'x', 'w' must be an s x s filter with s odd, 1 to 15; got "
                             f"shape {wi.shape}")
        if b is not None:
            raise ValueError("conv2d: a single-channel image filter takes no bias; pass b=None")
        out_shape = xi.shape
    elif len(xi.shape) == 4:
        n, c, h, wd = xi.shape
        if len(wi.shape) != 4 or wi.shape[1] != c or wi.shape[2:] != (3, 3):
            raise ValueError(f"conv2d: for a batch 'x' of shape {xi.shape}, 'w' must have shape (k, {c}, 3, 3); got "
                             f"{wi.shape}")
        k = wi.shape[0]
        if not 1 <= c <= 16 or not 1 <= k <= 16:
            raise ValueError(f"conv2d: the batch kernel takes 1 to 16 input and output channels, got c={c}, k={k}")
        out_shape = (n, k, h, wd)
    else:
        raise ValueError(f"conv2d: argument 'x' must be 2-D (h, w) or 4-D (n, c, h, w), got shape {xi.shape}")
    infos = {"x": xi, "w": wi}
    if b is not None:
        bi = check_array("b", b, dtype=np.float32, ndim=1)
        if bi.shape != (out_shape[1],):
            raise ValueError(f"conv2d: argument 'b' must have shape ({out_shape[1]},), got {bi.shape}")
        infos["b"] = bi
    out, infos["out"] = checked_out("conv2d", out, x, xi, out_shape)
    check_same_device(**infos)
    if 0 in out_shape:
        return out
    if len(out_shape) == 2:
        cfg = image_launch({"rows": IMAGE_ROWS}, *out_shape)
        kernel = conv2d_image(wi.shape[0] // 2, IMAGE_ROWS)
        kernel[cfg.grid, cfg.block](to_kernel_arg(x), to_kernel_arg(w), to_kernel_arg(out))
        return out
    if b is None:
        b = empty_like_on(x, (out_shape[1],), np.dtype(np.float32))
        to_kernel_arg(b)[:] = 0
    cfg = nchw_launch({"rows": NCHW_ROWS}, out_shape[0], out_shape[2], out_shape[3])
    kernel = conv2d_nchw(xi.shape[1], out_shape[1], NCHW_ROWS)
    kernel[cfg.grid, cfg.block](to_kernel_arg(x), to_kernel_arg(w), to_kernel_arg(b), to_kernel_arg(out))
    return out


# ---------------------------------------------------------------------------------------------------------------
# registry: float64 references from shifted slices of the zero-padded input


def image_reference(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    s = w.shape[0]
    r = s // 2
    h, wd = x.shape
    pad = np.pad(x.astype(np.float64), r)
    out = np.zeros((h, wd))
    # a band of rows at a time, so that its taps add up in cache (the whole image's would stream through memory
    # s * s times); each element still sums its taps in the same order
    band = max(1, (1 << 18) // max(1, wd))
    term = np.empty((min(band, h), wd))
    for y in range(0, h, band):
        rows = min(band, h - y)
        for dy in range(s):
            for dx in range(s):
                np.multiply(float(w[dy, dx]), pad[y + dy:y + dy + rows, dx:dx + wd], out=term[:rows])
                out[y:y + rows] += term[:rows]
    return out


def _image_scale(x, w, out):
    return {2: image_reference(np.abs(x), np.abs(w))}


def nchw_reference(x: np.ndarray, w: np.ndarray, b: np.ndarray) -> np.ndarray:
    n, c, h, wd = x.shape
    pad = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (1, 1), (1, 1)))
    out = np.broadcast_to(b.astype(np.float64)[None, :, None, None], (n, w.shape[0], h, wd)).copy()
    for dy in range(3):
        for dx in range(3):
            # (n, c, h, w) x (k, c) -> (n, k, h, w)
            out += np.einsum("nchw,kc->nkhw", pad[:, :, dy:dy + h, dx:dx + wd], w[:, :, dy, dx].astype(np.float64))
    return out


def _image_case(size, rng, dist="uniform", radius=1):
    h, wd = size["h"], size["w"]
    x = random_array(rng, (h, wd), np.float32, dist)
    w = np.ascontiguousarray(rng.standard_normal((2 * radius + 1,) * 2), dtype=np.float32)
    out = np.full((h, wd), np.nan, np.float32)
    return Case((x, w, out), image_launch({"rows": IMAGE_ROWS}, h, wd), dict(size))


def _nchw_case(size, rng, dist="uniform"):
    n, h, wd = size["n"], size["h"], size["w"]
    c, k = NCHW_CONFIG["channels"], NCHW_CONFIG["filters"]
    x = random_array(rng, (n, c, h, wd), np.float32, dist)
    w = np.ascontiguousarray(rng.standard_normal((k, c, 3, 3)) / 3, dtype=np.float32)
    b = np.ascontiguousarray(rng.standard_normal(k), dtype=np.float32)
    out = np.full((n, k, h, wd), np.nan, np.float32)
    return Case((x, w, b, out), nchw_launch(NCHW_CONFIG, n, h, wd), dict(size))


def _image_baseline(x, w, out):
    import torch.nn.functional as F

    r = w.shape[0] // 2
    x4, w4 = x[None, None], w[None, None]
    return (lambda: F.conv2d(x4, w4, padding=r)), "F.conv2d (cuDNN, TF32 off)"


def _nchw_baseline(x, w, b, out):
    import torch.nn.functional as F

    return (lambda: F.conv2d(x, w, b, padding=1)), "F.conv2d (cuDNN, TF32 off)"


IMAGE_TEST_SIZES = ({"h": 1, "w": 1}, {"h": 70, "w": 45}, {"h": 9, "w": 100})
IMAGE_VERIFY_SIZES = ({"h": 1, "w": 1}, {"h": 70, "w": 45}, {"h": 1021, "w": 257}, {"h": 4096, "w": 4096},
                      {"h": 3, "w": 10007})

for _radius in (1, 2):
    _s = 2 * _radius + 1
    register(KernelSpec(
        name=f"conv2d_{_s}x{_s}",
        family="conv",
        kernel=conv2d_image(_radius, IMAGE_ROWS),
        signatures=("void(float32[:, ::1], float32[:, ::1], float32[:, ::1])",),
        make_case=lambda size, rng, dist="uniform", _r=_radius: _image_case(size, rng, dist, _r),
        reference=lambda x, w, out: {2: image_reference(x, w)},
        error_scale=_image_scale,
        outputs=(2,),
        rtol=1e-5,
        constants={"radius": _radius, "rows": IMAGE_ROWS},
        test_sizes=IMAGE_TEST_SIZES,
        verify_sizes=IMAGE_VERIFY_SIZES,
        bench_sizes=({"h": 8192, "w": 8192},),
        work=lambda size, _t=_s * _s: Work(flops=2.0 * _t * size["h"] * size["w"], bytes=8.0 * size["h"] * size["w"]),
        description=f"{_s}x{_s} filter over one image, shared-memory halo tile, {IMAGE_ROWS} outputs per thread",
        baseline=_image_baseline,
    ))

NCHW_CONFIG = {"channels": 4, "filters": 8, "rows": NCHW_ROWS}


def _nchw_work(size) -> Work:
    c, k = NCHW_CONFIG["channels"], NCHW_CONFIG["filters"]
    pixels = size["n"] * size["h"] * size["w"]
    return Work(flops=2.0 * 9 * c * k * pixels, bytes=4.0 * (c + k) * pixels)


register(KernelSpec(
    name="conv2d_nchw",
    family="conv",
    kernel=conv2d_nchw(**NCHW_CONFIG),
    signatures=("void(float32[:, :, :, ::1], float32[:, :, :, ::1], float32[::1], float32[:, :, :, ::1])",),
    make_case=_nchw_case,
    reference=lambda x, w, b, out: {3: nchw_reference(x, w, b)},
    error_scale=lambda x, w, b, out: {3: nchw_reference(np.abs(x), np.abs(w), np.abs(b))},
    outputs=(3,),
    rtol=1e-5,
    constants=dict(NCHW_CONFIG),
    test_sizes=({"n": 1, "h": 1, "w": 1}, {"n": 2, "h": 9, "w": 35}, {"n": 1, "h": 34, "w": 7}),
    verify_sizes=({"n": 1, "h": 1, "w": 1}, {"n": 2, "h": 9, "w": 35}, {"n": 3, "h": 127, "w": 257},
                  {"n": 16, "h": 224, "w": 224}),
    bench_sizes=({"n": 16, "h": 512, "w": 512},),
    work=_nchw_work,
    description="3x3 convolution, 4 -> 8 channels, NCHW: halo tiles and the filter bank in shared memory",
    baseline=_nchw_baseline,
))
