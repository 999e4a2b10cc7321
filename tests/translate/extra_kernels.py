"""Kernels that pin down what the translator must get right beyond the corpus: kernels as a user writes them after
the lecture, C name collisions, and the places where C's integer and float rules differ from Numba's. Each is
checked for its C (test_extra.py) and, on a GPU, against Numba on random inputs (test_corpus_gpu.py)."""

import cmath
import math

import numba
import numpy as np
from numba import cuda

from numbakern.mma import hopper

TILE = 16
HALO = TILE + 2          # numba takes a shared-array shape from a module constant, not from an expression
INT64_MAX = 2 ** 63 - 1
WARP = 32
EPS = 1e-6
PRICES = np.array([10.0, 25.0, 5.0, 15.0, 30.0])   # numba freezes a module array's values into the kernel


# -- as a user writes them ---------------------------------------------------------------------------------------
@cuda.jit
def softmax_rows(x, out):
    """One warp per row: max and sum by warp shuffles; `m` is float64 (-inf), then float32 (a shared value)."""
    row = cuda.blockIdx.x
    lane = cuda.threadIdx.x
    n = x.shape[1]
    part = cuda.shared.array(WARP, np.float32)
    m = -math.inf
    for j in range(lane, n, WARP):
        m = max(m, x[row, j])
    off = WARP // 2
    while off > 0:
        m = max(m, cuda.shfl_xor_sync(0xFFFFFFFF, m, off))
        off //= 2
    part[lane] = m
    cuda.syncwarp()
    m = part[0]
    s = np.float32(0)
    for j in range(lane, n, WARP):
        s += math.exp(x[row, j] - m)
    off = WARP // 2
    while off > 0:
        s += cuda.shfl_xor_sync(0xFFFFFFFF, s, off)
        off //= 2
    for j in range(lane, n, WARP):
        out[row, j] = math.exp(x[row, j] - m) / s


@cuda.jit(device=True)
def minmax(a, b):
    return min(a, b), max(a, b)


@cuda.jit
def sort_pairs(x, out):
    i = cuda.grid(1)
    if 2 * i + 1 < x.shape[0]:
        lo, hi = minmax(x[2 * i], x[2 * i + 1])
        out[2 * i] = lo
        out[2 * i + 1] = hi


@cuda.jit
def block_scan(x, out):
    """Inclusive scan of each block's elements (Hillis-Steele in shared memory)."""
    buf = cuda.shared.array(256, np.int32)
    t = cuda.threadIdx.x
    i = cuda.grid(1)
    buf[t] = x[i] if i < x.shape[0] else 0
    cuda.syncthreads()
    step = 1
    while step < cuda.blockDim.x:
        v = buf[t - step] if t >= step else 0
        cuda.syncthreads()
        buf[t] += v
        cuda.syncthreads()
        step *= 2
    if i < out.shape[0]:
        out[i] = buf[t]


@cuda.jit
def atomic_float_max(x, out):
    i = cuda.grid(1)
    if i < x.shape[0]:
        cuda.atomic.max(out, 0, x[i])


@cuda.jit
def gaussian(x, out):
    i = cuda.grid(1)
    if i < x.shape[0]:
        out[i] = math.exp(-x[i] * x[i] / 2) / math.sqrt(2 * math.pi)


@cuda.jit
def laplace_2d(u, out):
    """A 5-point Laplacian through a shared tile with a one-element halo."""
    tile = cuda.shared.array((HALO, HALO), np.float32)
    tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
    c, r = cuda.grid(2)
    h, w = u.shape
    tile[ty + 1, tx + 1] = u[r, c] if r < h and c < w else 0.0
    if tx == 0:
        tile[ty + 1, 0] = u[r, c - 1] if r < h and 0 < c <= w else 0.0
    if tx == TILE - 1:
        tile[ty + 1, TILE + 1] = u[r, c + 1] if r < h and c + 1 < w else 0.0
    if ty == 0:
        tile[0, tx + 1] = u[r - 1, c] if 0 < r <= h and c < w else 0.0
    if ty == TILE - 1:
        tile[TILE + 1, tx + 1] = u[r + 1, c] if r + 1 < h and c < w else 0.0
    cuda.syncthreads()
    if r < h and c < w:
        out[r, c] = (tile[ty, tx + 1] + tile[ty + 2, tx + 1] + tile[ty + 1, tx] + tile[ty + 1, tx + 2]
                     - 4 * tile[ty + 1, tx + 1])


@cuda.jit
def warp_vote_count(x, out):
    """How many elements of each warp's chunk are positive: a ballot and its population count."""
    i = cuda.grid(1)
    positive = i < x.shape[0] and x[i] > 0
    votes = cuda.ballot_sync(0xFFFFFFFF, positive)
    if cuda.laneid == 0 and i // WARP < out.shape[0]:
        out[i // WARP] = cuda.popc(votes)


@cuda.jit
def rms_norm(x, out):
    """out[r] = x[r] / sqrt(mean(x[r] ** 2) + EPS), one block per row."""
    acc = cuda.shared.array(128, np.float32)
    row = cuda.blockIdx.x
    t = cuda.threadIdx.x
    n = x.shape[1]
    ss = np.float32(0)
    for j in range(t, n, cuda.blockDim.x):
        ss += x[row, j] * x[row, j]
    acc[t] = ss
    cuda.syncthreads()
    stride = cuda.blockDim.x // 2
    while stride > 0:
        if t < stride:
            acc[t] += acc[t + stride]
        cuda.syncthreads()
        stride //= 2
    scale = 1 / math.sqrt(acc[0] / n + EPS)
    for j in range(t, n, cuda.blockDim.x):
        out[row, j] = x[row, j] * scale


@cuda.jit
def stencil_1d(x, out, radius):
    """tile[t + radius + o] for o in range(-radius, radius + 1): >= 0 because o >= -radius (dynamic shared)."""
    tile = cuda.shared.array(0, dtype=np.float32)
    t = cuda.threadIdx.x
    i = cuda.grid(1)
    n = x.shape[0]
    tile[t + radius] = x[i] if i < n else 0
    if t < radius:
        left = i - radius
        tile[t] = x[left] if left >= 0 and left < n else 0
        right = i + cuda.blockDim.x
        tile[t + radius + cuda.blockDim.x] = x[right] if right < n else 0
    cuda.syncthreads()
    acc = np.float32(0)
    for o in range(-radius, radius + 1):
        acc += tile[t + radius + o]
    if i < n:
        out[i] = acc


# -- names that collide in C -----------------------------------------------------------------------------------
@cuda.jit
def shadow_extent(x):
    """A local named like the generated extent of x: the C must keep both."""
    i = cuda.grid(1)
    x_shape0 = 1
    if i < x.shape[0]:
        x[i] = x_shape0 + x_shape0 + x.shape[0]


@cuda.jit
def launcher_names(out, grid_x, stream, shared_bytes, block_z):
    """Arguments named like the host launcher's own parameters."""
    i = cuda.grid(1)
    if i < out.shape[0]:
        out[i] = grid_x * i + stream - shared_bytes * block_z


@cuda.jit
def keyword_names(float, new, xor, nk_wrap):
    """Arguments and locals named like C/C++ keywords, alternative tokens and generated helpers."""
    i = cuda.grid(1)
    compl = new + 1
    bitand = compl * xor
    if i < float.shape[0]:
        float[i] = bitand + nk_wrap + float[i - 1 if i > 0 else 0]


# -- where C's rules differ from numba's -------------------------------------------------------------------------
@cuda.jit
def overflow_mod(out):
    """(i + 1) * INT64_MAX wraps around (numba) and then floor-mods: not C's % of an undefined overflow."""
    i = cuda.grid(1)
    if i < out.shape[0]:
        out[i] = (i + 1) * INT64_MAX % 10


@cuda.jit
def floor_div_mod(a, b, q, r):
    """Python's // and % of signed integers, with negative operands and zero divisors (numba gives 0)."""
    i = cuda.grid(1)
    if i < a.shape[0]:
        q[i] = a[i] // b[i]
        r[i] = a[i] % b[i]


@cuda.jit
def signed_shifts(a, out):
    i = cuda.grid(1)
    if i < a.shape[0]:
        out[i, 0] = a[i] << 3
        out[i, 1] = a[i] >> 2


@cuda.jit
def mixed_signedness(u, s, out):
    """uint32 vs int32: numba compares and adds as int64; C would convert the int32 to unsigned."""
    i = cuda.grid(1)
    if i < u.shape[0]:
        out[i, 0] = u[i] < s[i]
        out[i, 1] = u[i] + s[i]
        out[i, 2] = u[i] - np.uint32(7)


@cuda.jit
def chained_compare(a, y, out):
    """int32 < float64 inside a chain: each comparison has its own types (numba compares a with y as float64);
    the first comparison's int64 would truncate y, and 1 < 1.5 would be false."""
    i = cuda.grid(1)
    if i < a.shape[0]:
        out[i] = 1 if 0 < a[i] < y[i] else 0


@cuda.jit
def powers(x, n, out):
    """float ** int by repeated squaring (numba), int ** negative int, float ** float."""
    i = cuda.grid(1)
    if i < x.shape[0]:
        out[i, 0] = x[i] ** 3
        out[i, 1] = x[i] ** n[i]
        out[i, 2] = n[i] ** -1
        out[i, 3] = x[i] ** 0.5


@cuda.jit
def nan_min_max(a, b, out):
    """min/max of two floats are libdevice fmin/fmax in numba-cuda: a NaN operand is ignored."""
    i = cuda.grid(1)
    if i < a.shape[0]:
        out[i, 0] = max(a[i], b[i])
        out[i, 1] = min(a[i], b[i])
        r = a[i]
        if math.isnan(r):  # NaN to an integer is undefined (LLVM poison; 0 on today's GPUs): not compared
            r = 2.5
        out[i, 2] = round(r)


@cuda.jit
def casts_and_constants(x, out):
    i = cuda.grid(1)
    if i < x.shape[0]:
        v = np.float32(x[i])
        out[i, 0] = np.int32(v * 1000)
        out[i, 1] = v if v < math.inf else -math.inf
        out[i, 2] = math.e * v + math.tau


@cuda.jit
def retyped_accumulator(x, out):
    """`s` is an int64 (0), then a float64 in the loop: numba converts at the loop's entry."""
    i = cuda.grid(1)
    if i < out.shape[0]:
        s = 0
        for j in range(x.shape[1]):
            s += x[i, j]
        out[i] = s


@cuda.jit
def global_array(quantities, totals):
    i = cuda.grid(1)
    if i < totals.size:
        totals[i] = quantities[i] * PRICES[i % 5]


# -- as people write them after the PMPP book and in public repositories ------------------------------------------

@cuda.jit
def brent_kung_scan(x, out):
    """Inclusive scan of each block's 2 * blockDim elements (PMPP ch. 11, Brent-Kung), in dynamic shared memory."""
    s = cuda.shared.array(0, np.float32)
    t = cuda.threadIdx.x
    n = 2 * cuda.blockDim.x
    base = cuda.blockIdx.x * n
    for h in range(2):
        j = t + h * cuda.blockDim.x
        s[j] = x[base + j] if base + j < x.shape[0] else np.float32(0)
    stride = 1
    while stride <= cuda.blockDim.x:  # the up-sweep: partial sums at strides 1, 2, 4, ...
        cuda.syncthreads()
        idx = (t + 1) * 2 * stride - 1
        if idx < n:
            s[idx] += s[idx - stride]
        stride *= 2
    stride = cuda.blockDim.x // 2
    while stride > 0:  # the down-sweep: each partial sum into the positions after it
        cuda.syncthreads()
        idx = (t + 1) * 2 * stride - 1
        if idx + stride < n:
            s[idx + stride] += s[idx]
        stride //= 2
    cuda.syncthreads()
    for h in range(2):
        j = t + h * cuda.blockDim.x
        if base + j < out.shape[0]:
            out[base + j] = s[j]


@cuda.jit
def dynamic_shared_wrap(x, idx, out):
    """An index into dynamic shared memory that may be negative: numba wraps it around the launch's extent."""
    s = cuda.shared.array(0, np.int64)
    t = cuda.threadIdx.x
    i = cuda.grid(1)
    s[t] = x[i] if i < x.shape[0] else 0
    cuda.syncthreads()
    if i < out.shape[0]:
        out[i] = s[idx[i]] + len(s)


@cuda.jit
def mandelbrot(out, max_iter):
    """Escape counts of the Mandelbrot set over [-2, 1] x [-1.5, 1.5] (complex128)."""
    i, j = cuda.grid(2)
    if i < out.shape[0] and j < out.shape[1]:
        c = complex(-2.0 + 3.0 * j / out.shape[1], -1.5 + 3.0 * i / out.shape[0])
        z = 0j
        n = 0
        while n < max_iter and abs(z) <= 2.0:
            z = z * z + c
            n += 1
        out[i, j] = n


@cuda.jit
def twiddle(x, out):
    """One DFT twiddle per element: x[k] * exp(-2 pi i k / n) (complex64 data, complex128 factors)."""
    k = cuda.grid(1)
    n = x.shape[0]
    if k < n:
        w = cmath.exp(-2j * cmath.pi * k / n)
        out[k] = x[k] * w


@cuda.jit
def complex_functions(z, out, mag):
    """cmath and complex methods numba-cuda compiles, on a complex array."""
    i = cuda.grid(1)
    if i < z.shape[0]:
        v = z[i]
        r, phi = cmath.polar(v)
        out[i] = cmath.sqrt(v) + cmath.log(v) * v.conjugate() - cmath.rect(r, phi) / (v + 1) + cmath.log10(v)
        mag[i] = abs(v) + cmath.phase(v) + v.real * v.imag + cmath.isfinite(v) - cmath.isnan(v)


@cuda.jit
def loop_name_reused(x, out):
    """A loop variable's name assigned afresh after its loop (a new variable to Python's reader, not the loop's)."""
    i = cuda.grid(1)
    if i < x.shape[0]:
        acc = 0.0
        for q in range(4):
            acc += x[i] * q
        q = 3
        out[i] = acc + q


def loop_bounds_own_name(x, taps, start, n, out):
    """Range bounds that read the loop variable's own earlier value (cusignal's upfirdn: `for x_conv_idx in
    range(x_conv_idx, x_idx + 1)`): Python computes them once, before the name is rebound."""
    i = cuda.grid(1)
    if i < out.shape[0]:
        j = i - taps + 1
        if j < 0:
            j = 0
        acc = 0.0
        for j in range(j, i + 1):
            acc += x[j] * (i - j + 1)
        for n in range(n):
            acc += n
        for start in range(1, 2 * taps, start):
            acc += start
        out[i] = acc


@numba.jit
def bin_number(x, lo, hi, nbins):
    """The bin of x, or None outside [lo, hi) (a @numba.jit helper returning an Optional)."""
    if x < lo or x >= hi:
        return None
    return int((x - lo) / (hi - lo) * nbins)


@cuda.jit
def histogram_optional(x, hist, lo, hi):
    i = cuda.grid(1)
    if i < x.shape[0]:
        b = bin_number(x[i], lo, hi, hist.shape[0])
        if b is not None:
            cuda.atomic.add(hist, b, 1)


@cuda.jit
def chained_index(x, out):
    """tile[a][b] of a 2-D shared array (a row, then its element), as many textbook kernels write it: each element
    plus the one before it along the first axis, the block's first thread of a row loading that halo element."""
    tile = cuda.shared.array((TILE, HALO), np.float32)
    tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
    r, c = cuda.grid(2)
    inside = r < x.shape[0] and c < x.shape[1]
    tile[ty][tx + 1] = x[r][c] if inside else np.float32(0)
    if tx == 0:
        tile[ty][0] = x[r - 1][c] if inside and r > 0 else np.float32(0)
    cuda.syncthreads()
    if inside:
        out[r][c] = tile[ty][tx + 1] + tile[ty][tx]



# -- value ranges: where the index may be negative after all (numba wraps it around), and where it cannot be ------
@cuda.jit
def break_state(x, y, out):
    """After a loop, a name may hold what it held at a `break` (-5 here), not only what an iteration ends with."""
    i = cuda.grid(1)
    if i < out.shape[0]:
        j = 0
        for q in range(4):
            j = -5
            if x[i, q] > 0:
                break
            j = q
        out[i] = y[j]


@cuda.jit
def elif_state(x, y, out):
    """An elif's test runs where the first test was false: there i < 10, so i - 10 is negative."""
    i = cuda.grid(1)
    if i < out.shape[0]:
        v = np.float32(0)
        if i >= 10:
            v = x[i]
        elif y[i - 10] > 0:
            v = np.float32(1)
        out[i] = v


@cuda.jit
def while_test_state(x, out):
    """A while test runs at every iteration: k is 5 only at the first, so k - 5 reaches -1, -2, ..."""
    i = cuda.grid(1)
    if i < out.shape[0]:
        k = 5
        n = 0
        while x[k - 5] > 0 and n < 3:
            k -= 1
            n += 1
        out[i] = k


@cuda.jit
def reversed_blocks(x, out):
    """gridDim.x - 1 - blockIdx.x is never negative (a block index is below the grid's size): no wraparound; and
    (lk + 31) // 32 of an extent is C's division."""
    qb = cuda.gridDim.x - 1 - cuda.blockIdx.x
    i = qb * cuda.blockDim.x + cuda.threadIdx.x
    nb = (x.shape[0] + 31) // 32
    if i < x.shape[0]:
        out[i] = x[qb] + nb


# -- constructs the second corpus (tests/translate/corpus2) met -------------------------------------------------
@cuda.jit
def shape_loop(x, out):
    """A tuple indexed at run time (numba's switch over the items): the product of every extent but the last."""
    i = cuda.grid(1)
    if i < out.shape[0]:
        n = 1
        for d in range(x.ndim - 1):
            n *= x.shape[d]
        out[i] = n + x[i % x.shape[0], 0, 0]


@cuda.jit(device=True)
def row_sum(row, out):
    s = 0.0
    for j in range(row.shape[0]):
        s += row[j]
    out[0] = s


@cuda.jit
def rows_to_device(x, out):
    """Rows of 2-D and 3-D arrays passed to a device function (numba's views: a pointer and the extents left)."""
    i = cuda.grid(1)
    if i < x.shape[0]:
        row_sum(x[i], out[i][1])


@cuda.jit
def const_of_argument(v, out):
    """cuda.const.array_like of an argument: numba gives back the array itself."""
    cv = cuda.const.array_like(v)
    i = cuda.grid(1)
    if i < out.shape[0]:
        out[i] = cv[i % 9]


@cuda.jit
def greek_names(μ, σ, out):
    """Python's letters beyond ASCII, which C does not read: by their names."""
    i = cuda.grid(1)
    if i < out.shape[0]:
        ρ = (out[i] - μ[i]) / σ[i]
        out[i] = ρ


@cuda.jit
def complex_trig(z, out):
    """cmath's trigonometric and hyperbolic functions and their inverses (numba-cuda's algorithms)."""
    i = cuda.grid(1)
    if i < z.shape[0]:
        v = z[i]
        out[i, 0] = cmath.sin(v) + cmath.cos(v) + cmath.tan(v)
        out[i, 1] = cmath.sinh(v) + cmath.cosh(v) + cmath.tanh(v)
        out[i, 2] = cmath.asin(v) + cmath.acos(v) + cmath.atan(v)
        out[i, 3] = cmath.asinh(v) + cmath.acosh(v) + cmath.atanh(v)


@cuda.jit
def stencil_guarded(x, out):
    """A 5-point stencil on a shared tile: the condition above each neighbour's index proves it >= 0, so no
    wraparound (PMPP's 3-D stencil writes its planes so)."""
    plane = cuda.shared.array((TILE, TILE), np.float32)
    tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
    r, c = cuda.grid(2)
    # the tile, zeros outside the array
    plane[ty][tx] = x[r, c] if r < x.shape[0] and c < x.shape[1] else np.float32(0)
    cuda.syncthreads()
    if tx >= 1 and tx < TILE - 1 and ty >= 1 and ty < TILE - 1:  # inner threads only
        if r < out.shape[0] and c < out.shape[1]:
            out[r, c] = plane[ty][tx - 1] + plane[ty][tx + 1] + plane[ty - 1][tx] + plane[ty + 1][tx]


# Kernels made by exec() of a string, as numba-cuda's own tests and code generators make them: there is no source
# file to read, so translate rebuilds their Python from numba's typed IR (and names them as this module binds them).
_MADE = """
def rows_dot(x, w, out):
    i = cuda.grid(1)
    if i < out.shape[0]:
        acc = 0.0
        for j in range(x.shape[1]):
            acc += {op}(x[i, j]) * w[j]
        out[i] = acc


def softplus(v):
    if v < 20.0:
        return math.log1p(math.exp(v))
    return v
"""
_made: dict = {}
exec(_MADE.format(op="abs"), {"cuda": cuda, "math": math}, _made)
made_rows_dot = cuda.jit(_made["rows_dot"])
made_softplus = cuda.jit(device=True)(_made["softplus"])


@cuda.jit
def calls_made_device(x, out):
    """A kernel in a file calling a device function made by exec()."""
    i = cuda.grid(1)
    if i < x.shape[0]:
        out[i] = made_softplus(x[i])


@cuda.jit(device=True)
def arrive_and_wait(bars, slot, phase):
    hopper.mbarrier_arrive(bars, slot)
    while not hopper.mbarrier_try_wait(bars, slot, phase):
        pass


@cuda.jit
def mbarrier_in_device_function(x, out):
    """A shared mbarrier array handed to a device function that arrives on it and waits (a pipeline step shared
    between kernels): every thread's value is in the tile before any thread reads its neighbour's."""
    bars = cuda.shared.array(1, np.uint64)
    tile = cuda.shared.array(128, np.float32)
    t = cuda.threadIdx.x
    i = cuda.grid(1)
    if t == 0:
        hopper.mbarrier_init(bars, 0, 128)
    cuda.syncthreads()
    tile[t] = x[i] if i < x.shape[0] else np.float32(0)
    arrive_and_wait(bars, 0, 0)
    if i < x.shape[0]:
        out[i] = tile[(t + 1) % 128] - tile[t]
