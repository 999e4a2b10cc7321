"""What numba-cuda compiles, construct by construct, as other people's kernels use it (issue 39's list): arrays as
views (slices of global, shared and local arrays, passed to device functions and returned from them, row views,
.real/.imag, .view(dtype), .dtype, .T), iteration over arrays, tuples, enumerate and zip, tuples as arguments and
values, unpacking, chained assignment, min/max/sum over arrays and tuples, x.sum(), x.mean(), pow(), `in` over
tuples, device functions' keyword and default arguments, cuda.libdevice, half-precision signatures. Each is
translated and NVRTC-compiled here (test_coverage.py) and verified against Numba on a GPU (test_corpus_gpu.py, the
``COVERAGE`` entries of coverage_entries.py)."""

import math
from collections import namedtuple

import numpy as np
from numba import cuda
from numba.cuda import libdevice
from numba.cuda.np.numpy_support import from_dtype

NPTS = 5
#: a record type, named for the signature (``void(PAIR[::1], ...)``)
PAIR_DTYPE = np.dtype([("a", np.float64), ("b", np.int32)], align=True)
PAIR = from_dtype(PAIR_DTYPE)


# -- slices of global arrays passed to device functions ------------------------------------------------------------
@cuda.jit(device=True)
def centroid(pts):
    """The mean of a 1-D view of NPTS values."""
    s = 0.0
    for k in range(pts.shape[0]):
        s += pts[k]
    return s / pts.shape[0]


@cuda.jit
def slice_to_device(xs, out):
    i = cuda.grid(1)
    if i < out.shape[0]:
        out[i] = centroid(xs[i * NPTS:i * NPTS + NPTS])


@cuda.jit(device=True)
def box_sum(win):
    """The sum of a 2-D window."""
    s = 0.0
    for a in range(win.shape[0]):
        for b in range(win.shape[1]):
            s += win[a, b]
    return s


@cuda.jit
def window_to_device(img, out):
    i, j = cuda.grid(2)
    if 1 <= i < img.shape[0] - 1 and 1 <= j < img.shape[1] - 1:
        out[i, j] = box_sum(img[i - 1:i + 2, j - 1:j + 2])


@cuda.jit
def local_slice(x, out, lens):
    """``seg = out[start:end]``: a view with a name, written through it."""
    i = cuda.grid(1)
    if i < lens.shape[0]:
        start = lens[i]
        end = start + 4
        seg = out[start:end]
        for k in range(seg.shape[0]):
            seg[k] = x[i] + k


@cuda.jit
def strided_slice(x, out):
    """Every other element, and a reversed view."""
    i = cuda.grid(1)
    if i == 0:
        evens = x[::2]
        back = x[::-1]
        for k in range(evens.shape[0]):
            out[k] = evens[k] + back[k]


@cuda.jit(device=True)
def longer(a, b):
    """An array returned from a device function (numba returns only arrays passed in)."""
    if a.shape[0] >= b.shape[0]:
        return a
    return b


@cuda.jit
def array_from_device(x, y, out):
    i = cuda.grid(1)
    if i < out.shape[0]:
        t = longer(x[i:], y[:i])
        out[i] = t[0] + t.shape[0] if t.shape[0] > 0 else -1.0


@cuda.jit
def shared_slices(x, out):
    """Slices of a shared and a local array passed on."""
    buf = cuda.shared.array((4, 32), np.float32)
    loc = cuda.local.array(8, np.float32)
    t = cuda.threadIdx.x
    i = cuda.grid(1)
    for q in range(4):
        buf[q, t] = x[i] * (q + 1) if i < x.shape[0] else 0.0
    for q in range(8):
        loc[q] = q
    cuda.syncthreads()
    if i < x.shape[0]:
        out[i] = centroid(buf[:, t]) + centroid(loc[2:6])


# -- rows ---------------------------------------------------------------------------------------------------------
@cuda.jit
def row_view(m, out):
    i = cuda.grid(1)
    if i < m.shape[0]:
        row = m[i]
        x, y, z = m[i]
        out[i] = row[0] * x + row[1] * y + row[2] * z


# -- complex parts, bits, dtype, transpose ---------------------------------------------------------------------------
@cuda.jit
def complex_parts(z, re, im, acc):
    i = cuda.grid(1)
    if i < z.shape[0]:
        re[i] = z.real[i]
        im[i] = z.imag[i]
        cuda.atomic.add(acc.real, 0, z[i].real)


@cuda.jit(device=True)
def atomic_max_float(arr, v):
    """A float max by compare-and-swap on the bits (the usual route when no float atomic max exists)."""
    bits = arr.view(np.int32)
    old = bits[0]
    while True:
        cur = old
        if np.int32(cur).view(np.float32) >= v:
            break
        old = cuda.atomic.compare_and_swap(bits, cur, np.float32(v).view(np.int32))
        if old == cur:
            break


@cuda.jit
def float_bits_max(x, out):
    i = cuda.grid(1)
    if i < x.shape[0]:
        atomic_max_float(out, x[i])


@cuda.jit
def dtype_of(x, out):
    i = cuda.grid(1)
    if i < x.shape[0]:
        tmp = cuda.local.array(3, dtype=x.dtype)
        for k in range(3):
            tmp[k] = x[i] * k
        out[i] = tmp[0] + tmp[1] + tmp[2]


@cuda.jit
def transpose_view(a, out):
    i, j = cuda.grid(2)
    t = a.T
    if i < t.shape[0] and j < t.shape[1]:
        out[i, j] = t[i, j]


# -- iteration ----------------------------------------------------------------------------------------------------
@cuda.jit
def iterate_array(x, excludes, out):
    i = cuda.grid(1)
    if i < x.shape[0]:
        keep = 1
        for ex in excludes:
            if x[i] == ex:
                keep = 0
        out[i] = keep


@cuda.jit
def iterate_tuple(x, out):
    i = cuda.grid(1)
    if i < x.shape[0]:
        s = 0.0
        for w in (0.25, 0.5, 0.25):
            s += w * x[i]
        out[i] = s


@cuda.jit
def enumerate_zip(x, y, out):
    i = cuda.grid(1)
    if i == 0:
        s = 0.0
        for k, v in enumerate(x):
            s += k * v
        for a, b in zip(x, y):
            s += a * b
        for j, (p, q) in enumerate(zip(y, x), 1):  # zip's pairs unpacked in enumerate's target
            s += j * p - q
        out[0] = s


@cuda.jit(device=True)
def scaled(x, factor=2.0, shift=0):
    return x * factor + shift


@cuda.jit
def device_keywords(x, out):
    """A device function's arguments by name and by its defaults: a C function per set of defaults used."""
    i = cuda.grid(1)
    if i < x.shape[0]:
        out[i] = scaled(x[i], shift=1) + scaled(x[i]) + scaled(factor=-0.5, x=x[i])


# -- tuples, namedtuples, records ------------------------------------------------------------------------------------
@cuda.jit
def tuple_argument(x, shape, out):
    """A UniTuple(int64 x 2) argument and a tuple value."""
    i = cuda.grid(1)
    h, w = shape
    if i < h * w:
        r, c = divmod(i, w)
        p = (r, c)
        out[i] = x[i] * p[0] + p[1]


Point = namedtuple("Point", ["x", "y"])


@cuda.jit(device=True)
def norm2(p):
    return p.x * p.x + p.y * p.y


@cuda.jit
def namedtuple_value(xs, ys, out):
    i = cuda.grid(1)
    if i < xs.shape[0]:
        out[i] = norm2(Point(xs[i], ys[i]))


@cuda.jit
def record_scalars(recs, out):
    i = cuda.grid(1)
    if i < recs.shape[0]:
        r = recs[i]
        out[i] = r.a * r.b


# -- assignment, reductions ------------------------------------------------------------------------------------------
@cuda.jit
def chained_assignment(x, out):
    i = cuda.grid(1)
    if i < x.shape[0]:
        a = b = 0
        c = d = x[i]
        a += 1
        out[i] = a + b + c + d


@cuda.jit
def array_sums(a, m, out):
    """x.sum() and x.mean() of 1-D arrays: a slice of int32 (summed in int64; its mean in float64), a row and a
    strided row of float32 (summed in float32); pow() of numbers."""
    i = cuda.grid(1)
    if i < out.shape[0]:
        out[i] = a[i:i + 4].sum() + m[i].sum() + m[i, ::2].sum()
        out[i] += a[i:i + 3].mean() * m[i].mean() + pow(m[i, 0], 3) + pow(out[i], 0.5) + pow(a[i] % 5, 2)


@cuda.jit
def array_sums_nd(m, t, out):
    """x.sum() and x.mean() of N-D arrays, their items in numba's order: a 2-D window of float32 rows and its
    transpose (numba types that as strided, "A": C order, the window's columns first), the transpose of three whole
    rows (numba types that as Fortran-ordered: the first index fastest, the rows' memory order), a 2-D row of an
    int32 3-D array (summed in int64) and the mean of a 3-D window."""
    i = cuda.grid(1)
    if i < out.shape[0]:
        w = m[i:i + 3, 1:6]
        out[i] = w.sum() + w.T.sum() * 0.5 + m[i:i + 3].T.sum() * 0.25 + t[i].sum()
        out[i] += t[i:i + 2, 1:, ::2].mean()


@cuda.jit
def membership(x, out):
    """`in` and `not in` over tuples of the value's type: a tuple variable and a literal tuple."""
    i = cuda.grid(1)
    if i < x.shape[0]:
        k = x[i] % 7
        odd = (1, 3, 5)
        hit = 0
        if k in odd:
            hit += 1
        if x[i] not in (0, -3, 6):
            hit += 2
        out[i] = hit


@cuda.jit
def complex_equality(z, w, out):
    """== and != of complex numbers (numba compares both parts; cuComplex has no operator ==), a complex64 against a
    complex128 in complex128, and `in` over a tuple of them."""
    i = cuda.grid(1)
    if i < z.shape[0]:
        hit = 0
        if z[i] == w[i]:
            hit += 1
        if z[i] != 1j:
            hit += 10
        if w[i] in (1j, 2 + 0j, w[0]):
            hit += 100
        out[i] = hit


@cuda.jit
def membership_containers(x, big, table, out):
    """`in` over arrays (each item against the value in the type of np.equal's loop: an int64 value against float32
    items in float32, so 16777217 is found where 16777216.0 is) and over range(...) (numba's test: inside the span,
    on the step; a float only when it is integral)."""
    i = cuda.grid(1)
    if i < x.shape[0]:
        hit = 0
        if x[i] in table[1:4]:
            hit += 1
        if big[i] in x[:4]:
            hit += 10
        if x[i] not in table:
            hit += 100
        if big[i] in range(3, 40, 3):
            hit += 1000
        if x[i] in range(-5, 5):
            hit += 10000
        if i in range(60, 10, -7):
            hit += 100000
        out[i] = hit


@cuda.jit
def membership_mixed(x, n, out):
    """`in` over tuples of another type than the value: numba compares each item and the value with == in the type
    the two unify to (a float32 value and int64 items in float64: 1.5 is not 1; an int32 value and float64 items)."""
    i = cuda.grid(1)
    if i < x.shape[0]:
        hit = 0
        if x[i] in (1, 2):
            hit += 1
        if n[i] not in (3.5, -1.0):
            hit += 10
        if n[i] in (3, 7):
            hit += 100
        out[i] = hit


@cuda.jit
def reductions(x, out):
    i = cuda.grid(1)
    if i < x.shape[0]:
        row = x[i]
        t = (row[0], row[1], row[2])
        out[i, 0] = min(row)
        out[i, 1] = max(t)
        out[i, 2] = sum(t)
        out[i, 3] = min(t[0], t[1])


# -- libdevice, half precision --------------------------------------------------------------------------------------
@cuda.jit
def libdevice_calls(x, out):
    i = cuda.grid(1)
    if i < x.shape[0]:
        v = x[i]
        s, c = libdevice.sincosf(v)
        out[i, 0] = s + c
        out[i, 1] = libdevice.expf(v) + libdevice.fast_sinf(v) + libdevice.rsqrtf(v + 1.0)
        out[i, 2] = libdevice.fmaf(v, v, 1.0) + libdevice.hypotf(v, 2.0) + libdevice.erfcinvf(0.5)
        m, e = libdevice.frexpf(v)
        out[i, 3] = m + e + libdevice.popc(i) + libdevice.float2int_rn(v)


@cuda.jit
def half_arrays(x, out):
    i = cuda.grid(1)
    if i < x.shape[0]:
        out[i] = x[i] * x[i] + math.sqrt(np.float32(i))


@cuda.jit
def bfloat16_arrays(x, out, s):
    """bfloat16 in a signature: numba computes bf16 * float32 in float32 and stores the bf16 rounding."""
    i = cuda.grid(1)
    if i < x.shape[0]:
        out[i] = x[i] * s + x[i]


# -- launchers refuse only what numba leaves undefined ---------------------------------------------------------------
@cuda.jit
def window_mask(flags, beg, end, out, n):
    """Marks a window [beg, end) around each flagged position, wrapping past the start (a portfolio's masking, as
    finance code writes it): ``beg`` is negative by design, and every index stays inside the array."""
    i = cuda.grid(1)
    if i < n:
        if flags[i] == 1:
            if beg + i >= 0:
                for j in range(beg + i, min(end + i, n)):
                    out[j] = math.nan
            else:
                for j in range(beg + i + n, min(end + i + n, n)):
                    out[j] = math.nan
                for j in range(0, min(end + i, n)):
                    out[j] = math.nan


@cuda.jit
def slice_fill(x, out):
    """``v[:] = 0.0`` of a local array, ``out[i, :] = -1.0`` and ``out[i, 1:3] = s`` of an argument's row (numba's
    setitem of a view with a number)."""
    i = cuda.grid(1)
    if i < out.shape[0]:
        acc = cuda.local.array(4, np.float64)
        acc[:] = 0.0
        for k in range(x.shape[1]):
            acc[k % 4] += x[i, k]
        out[i, :] = -1.0
        out[i, 1:3] = acc[0] + acc[1] + acc[2] + acc[3]


IMG = np.complex64(1j)


@cuda.jit
def annotated_rotate(z, phase, out):
    """A local with an annotation (``k: int = ...``, numba ignores it) and a module-level complex constant (pylops'
    ``IMG = cp.complex64(1j)``): ``z * (c + IMG * s)``."""
    i = cuda.grid(1)
    k: int = i
    if k < z.shape[0]:
        s = math.sin(phase[k])
        c = math.cos(phase[k])
        out[k] = z[k] * (c + IMG * s)


@cuda.jit(device=True, inline=True)
def inside(x, y, box):
    return box[0] <= x and x <= box[2] and box[1] <= y and y <= box[3]


@cuda.jit
def inlined_predicate(xs, ys, box, out):
    """An inlined device function as a condition (second.pytorch's ``if point_in_quadrilateral(...)``): numba inlines
    the call and tests its result with ``bool()``, another call at the call's position."""
    i = cuda.grid(1)
    if i < xs.shape[0]:
        if inside(xs[i], ys[i], box):
            out[i] = 1
        else:
            out[i] = -1


@cuda.jit(device=True)
def bounds_and_sums(a, b):
    """A tuple of tuples returned: numba's nested UniTuple, through one pointer per number in C."""
    return (min(a, b), max(a, b)), (a + b, a - b)


@cuda.jit(device=True)
def weighted(pair, weights):
    """Tuples of tuples passed: one C parameter per number."""
    (w0, w1), bias = weights
    return pair[0] * w0 + pair[1] * w1 + bias


@cuda.jit
def nested_tuples(x, n, out):
    """Tuples of tuples as values: a table looped over (`for a, b in pairs`, with enumerate), indexed at run time
    (one conditional chain per number of the item), unpacked in a nested pattern, returned by and passed to device
    functions, swapped item by item, and `in` over them (numba's tuple ==: every pair of numbers in its own type,
    a float32 against an int64 in float64)."""
    i = cuda.grid(1)
    if i < x.shape[0] - 1:
        u = x[i] * 1.0  # (float64: a tuple of one type is numba's UniTuple, which a loop and an index take)
        v = x[i + 1] * 1.0
        pairs = ((u, 1.0), (2.0, v), (u * v, -0.5))
        acc = 0.0
        for a, b in pairs:
            acc += a * b
        for k, (a, b) in enumerate(pairs):
            acc += k * (a - b)
        for pair in pairs:
            acc += pair[1]
        j = n[i] % 3
        acc += pairs[j][0] * 10 + pairs[j - 1][1]
        (lo, hi), (s, d) = bounds_and_sums(x[i], x[i + 1])
        r = bounds_and_sums(x[i], n[i])
        acc += lo * 1000 + hi * 100 + s * 10 + d + r[0][1] - r[1][0]
        acc += weighted((x[i], x[i + 1]), ((0.5, 0.25), n[i]))
        swapped = ((x[i], n[i]), (x[i + 1], n[i + 1]))
        for _ in range(j):
            swapped = (swapped[1], swapped[0])
        acc += swapped[0][0] * 3 + swapped[1][1]
        if (x[i], n[i]) in ((1.0, 1), (2.0, 2), (0.5, 3)):
            acc += 10000
        if (n[i], (n[i + 1], x[i])) not in ((1, (2, 0.5)), (2, (2, 2.0))):
            acc += 100000
        out[i] = acc


@cuda.jit
def inner_functions(x, out, scale):
    """Functions defined inside a kernel (numba inlines them; the C gets a device function of each): one that reads
    only its arguments keeps its own text, one that reads the kernel's locals and arguments (a closure) takes them
    as leading parameters, one inner function calls another, one stores into a kernel argument, one is called with
    two argument types; and a conditional expression whose branches are tuples."""
    offset = x.shape[0] * 0.5

    def square(v):
        # the kernel's own comment, carried into the C
        return v * v

    shifted = lambda v: v * scale + offset  # noqa: E731

    def blend(v, w):
        # a closure's own comment, carried too
        return shifted(v) - square(w)

    def store(k, v):
        out[k] = v  # (into the kernel's argument)

    i = cuda.grid(1)
    if i < x.shape[0]:
        lo, hi = (x[i], 1.0) if x[i] < 0.25 else (1.0, x[i] * 2)
        store(i, blend(x[i], lo) + square(hi) + shifted(2.0) + square(np.int64(i % 3)))


@cuda.jit
def retyped_while(x, out, sign):
    """While loops whose test reads a name numba types twice: Python compiles the test before the loop, where `v` is
    float32, and again at the end of the body, where `v / 3` made it float64 (numba converts `v` before its first
    branch, so the name read after the loop is float64 whether the loop ran or not); with a `continue` the test is
    compiled once, at the loop's head. And nested conditional expressions."""
    i = cuda.grid(1)
    if i < x.shape[0]:
        v = x[i]
        n = 0
        while abs(v) * v > 1e-3 and n < 40:
            v = v / 3
            n += 1
        w = x[i]
        while w * w > 0.01:
            w = w / 2
            n += 1
            if n % 4 == 0:
                continue
            n += 1
        u = x[i]
        k = 0
        while abs(u) > 1e-3 and k < 50:  # (u is not read after the loop)
            u = u / 2
            k += 1
        out[i] = v + w + n + k
        sign[i] = -1 if x[i] < 0 else (0 if x[i] == 0 else (2 if x[i] > 0.5 else 1))



@cuda.jit
def downward_ranges(x, out, n):
    """Loops that count down to a run-time stop, with floating-point accumulators: the form in which CUDA 13.0's
    ptxas miscompiles a C loop ``for (k = m; k > -m; k -= 3)`` (docs/translate.md). A stop the body changes, a
    start the body changes, and a literal stop (the plain C loop)."""
    i = cuda.grid(1)
    if i < x.shape[0]:
        m = n // 2
        acc = 0.0
        for k in range(m, -m, -3):
            acc -= k
        low = np.float32(0)
        for j in range(i % 7 + m, -2 * m, -1):
            low += x[(j + 2 * m) % x.shape[0]]
        hi = i % 5
        for k in range(hi + 3, hi - 9, -2):
            hi -= 1
            acc += k * 0.25
        for q in range(m, -1, -4):
            acc += q
        out[i] = acc + low + hi


@cuda.jit
def held_ranges(x, out, n):
    """Ranges held in variables: Python computes their bounds where they are made, so a loop over one, ``in`` and
    ``len`` read those, whatever the names they were made of hold by then; one counting down to a run-time stop,
    and one of literals."""
    i = cuda.grid(1)
    if i < x.shape[0]:
        odd = range(1, n, 2)
        down = range(n + i % 3, -n, -3)
        n = n - 1  # (odd and down keep the bounds they were made with)
        acc = 0.0
        for k in odd:
            acc += x[k % x.shape[0]]
        for k in down:
            acc -= k
        eight = range(8)
        for q in eight:
            acc += q * 0.5
        out[i] = acc + (i in odd) + len(odd) * 100 + len(down) + (x[i] in down) + n


@cuda.jit
def zipped_ranges(x, out, n):
    """Ranges inside zip() and enumerate(), written in place or held in a variable: each item is the range's start
    plus the loop's count times its step, and zip stops at the shortest."""
    i = cuda.grid(1)
    if i < out.shape[0]:
        acc = 0.0
        for a, b in zip(range(3), range(5, 8)):
            acc += a * b
        for k, v in enumerate(range(n, i % 4 - n, -3)):
            acc += k * v * 0.5
        back = range(n - 1, -1, -1)
        for v, r in zip(x, back):
            acc += v * r
        for k, (v, r) in enumerate(zip(x, range(i % 5, n))):
            acc -= k + v * r
        out[i] = acc


@cuda.jit
def raising(x, out, limit):
    """``raise`` and ``assert`` in a kernel: numba-cuda (without debug=True) ends the thread there, so its output
    element keeps what it held."""
    i = cuda.grid(1)
    if i < x.shape[0]:
        v = x[i]
        if v > limit:
            raise ValueError("x above the limit")
        assert v > -limit, "x below minus the limit"
        out[i] = v * 2


@cuda.jit
def numpy_scalar_functions(x, out, flags):
    """numpy's ufuncs on numbers, whose CUDA loops are math's functions: float32 in, float32 out (np.arctan2 of a
    float32 and a float64 in float64), and np.isnan; and len() of a tuple."""
    i = cuda.grid(1)
    if i < x.shape[0]:
        v = x[i]
        parts = (v, np.sin(v), i)
        out[i] = np.sin(v) + np.arctan2(v, 0.5) + np.log(v + 2) + np.tanh(v) * np.hypot(v, np.float32(1.5)) + len(parts)
        flags[i] = np.isnan(np.log(v))


@cuda.jit
def array_reductions(m, t, out, picks):
    """numpy's reductions of whole arrays, as functions and as methods: prod, nansum (the NaN items left out),
    argmin and argmax (the index of the first NaN where there is one; over a window, in .flat's C order, also of a
    transpose numba types as Fortran-ordered), all, any and count_nonzero (NaN is true), var and std (two passes,
    the second in float64; over a Fortran-ordered transpose in its memory's order, as np.nditer goes), np.sum and
    np.mean; of float32 rows with NaN and zeros among their items and of int32 rows with zeros."""
    i = cuda.grid(1)
    if i < out.shape[0]:
        row = m[i]
        w = m[i:i + 3, 1:5]
        out[i] = np.prod(row[:3]) + row.prod() * 0.5 + np.nansum(row) + np.sum(t[i]) + np.mean(row[1:])
        out[i] += np.var(t[i]) + row.std() + w.var() * 2 + np.std(w.T) + m[i:i + 3].T.var() * 3
        picks[i, 0] = np.argmin(row)
        picks[i, 1] = row.argmax()
        picks[i, 2] = w.argmin()
        picks[i, 3] = np.argmax(w.T) + 10 * m[i:i + 3].T.argmax() + 1000 * t[i].argmin()
        picks[i, 4] = np.count_nonzero(row) + 10 * np.all(t[i]) + 100 * row.any() + 1000 * np.any(w)
        picks[i, 5] = 10 * t[i].all() + np.count_nonzero(t[i])


@cuda.jit
def numpy_elementwise(x, y, k, z, out, flags):
    """numpy's ufuncs that numba-cuda's CUDA loops give a meaning of their own: maximum and minimum (a NaN operand
    wins), fmax and fmin (a NaN operand loses; of a float32 and an int32 in float64, the loop's type), degrees and
    radians (an integer in float64), the logical ones on the numbers' truth (NaN is true, 0.0 and -0.0 false), and
    np.real / np.imag of real and complex numbers."""
    i = cuda.grid(1)
    if i < x.shape[0]:
        a, b = x[i], y[i]
        out[i, 0] = np.maximum(a, b)
        out[i, 1] = np.minimum(a, b)
        out[i, 2] = np.fmax(a, b)
        out[i, 3] = np.fmin(a, k[i])
        out[i, 4] = np.degrees(a) + np.radians(k[i]) + np.rad2deg(k[i]) + np.deg2rad(b)
        out[i, 5] = np.real(z[i]) + np.imag(z[i]) * 2 + np.real(a) + np.imag(a)
        out[i, 6] = np.maximum(k[i], 3) - np.minimum(k[i], -2)
        flags[i] = np.logical_and(a, b) + 2 * np.logical_or(a, k[i]) + 4 * np.logical_xor(b, k[i]) + \
            8 * np.logical_not(a)


@cuda.jit
def loop_else(a, out, found):
    """for ... else and while ... else: the else runs where the loop ends without a break (a flag the loop's own
    breaks set; the break of a loop inside it is that loop's), and always after a loop without a break; -1 from an
    else is an index numba wraps."""
    i = cuda.grid(1)
    if i < out.shape[0]:
        k = 0
        for v in a[i]:
            if v < 0:
                break
            k += 1
        else:
            k = -1
        out[i] = a[i, k]
        j = 0
        while j < a.shape[1]:
            for w in range(3):
                if a[i, w] > 0.5:
                    break
            if a[i, j] > 0.9:
                found[i] = j
                break
            j += 1
        else:
            found[i] = -5
        for q in range(2):
            out[i] += q
        else:
            out[i] *= 2


@cuda.jit
def number_limits(x, out, lim):
    """np.iinfo and np.finfo of a number type or of an array's dtype: numba reads their fields as constants."""
    i = cuda.grid(1)
    if i < out.shape[0]:
        big = np.iinfo(lim.dtype).max
        out[i] = min(x[i] * 1e38, np.finfo(np.float32).max) + np.finfo(x.dtype).eps * i
        lim[i] = big - i + np.iinfo(np.int8).min


@cuda.jit
def numpy_operators(a, b, x, y, out, bits, flags):
    """numpy's ufuncs that are operators of the loop numba picks for the operands' types: bitwise and shifts of
    int32 and int64 (int64's loop), np.invert of a number and of a boolean, np.divide of two integers (the
    double loop: a zero divisor gives inf or NaN, as numpy does) and of float32, the comparisons (a float32 and an
    int64 in float32's loop) and np.conjugate of real and complex numbers."""
    i = cuda.grid(1)
    if i < out.shape[0]:
        bits[i] = np.bitwise_and(a[i], b[i]) + np.bitwise_or(a[i], 3) * 2 + np.bitwise_xor(b[i], a[i])
        bits[i] += np.left_shift(a[i], 3) + np.right_shift(b[i], 2) + np.invert(a[i]) + np.invert(a[i] > 0)
        out[i, 0] = np.divide(a[i], b[i] % 3)
        out[i, 1] = np.true_divide(x[i], y[i]) + np.conjugate(x[i]) + np.conjugate(complex(x[i], y[i])).imag
        flags[i] = np.greater(x[i], b[i]) + 2 * np.less_equal(x[i], y[i]) + 4 * np.equal(a[i], b[i] % 3) + \
            8 * np.not_equal(x[i], 0.5) + 16 * np.greater_equal(a[i], 0) + 32 * np.less(y[i], x[i])


@cuda.jit
def numpy_angles_and_traces(z, x, m, out):
    """np.angle of complex64, float32 and integer numbers (in degrees too: float64), np.sinc (in float64 whatever
    its argument, 0 included), np.trace of a 2-D float32 array and of a window of it, on, above and below the
    diagonal (summed in float64)."""
    i = cuda.grid(1)
    if i < out.shape[0]:
        out[i, 0] = np.angle(z[i]) + np.angle(x[i], True) + np.angle(i - 50)
        out[i, 1] = np.sinc(x[i]) + np.sinc(0.0) * 0.5
        out[i, 2] = np.trace(m) + np.trace(m[i % 3:, 1:], i % 5 - 2)


@cuda.jit
def boolean_reductions(flags, out):
    """Reductions of boolean arrays, which numba counts in int64 (sum, prod, nansum) and averages in float64 (mean,
    var, std), over a row and a 2-D window."""
    i = cuda.grid(1)
    if i < out.shape[0]:
        row = flags[i]
        out[i] = row.sum() + np.sum(flags[i:i + 2]) * 10 + row.prod() * 100 + np.nansum(row) * 1000
        out[i] += row.mean() + row.var() + np.std(flags[i:i + 2, 1:]) * 0.5


# -- starred calls and tuples of arrays -----------------------------------------------------------------------------
@cuda.jit(device=True)
def affine(x, w, b):
    return x * w + b


@cuda.jit
def starred_call(x, out):
    """f(*t) and f(a, *t): numba passes the tuple's items as the callee's arguments."""
    i = cuda.grid(1)
    if i < out.shape[0]:
        t = (x[i], 2.0, -1.0)
        wb = (0.5, x[i])
        out[i] = affine(*t) + affine(x[i], *wb)


@cuda.jit(device=True)
def dot_pair(pair, i):
    a, b = pair
    return a[i, 0] * b[i, b.shape[1] - 1]


@cuda.jit(device=True)
def fill_pair(pair, i, v):
    for arr in pair:
        arr[i] = v


@cuda.jit
def tuple_of_arrays(x, y, m, n, out_a, out_b):
    """Tuples of arrays as values: named, unpacked, indexed, iterated over (zipped with numbers and enumerated too),
    and passed to device functions (which read them, unpack them and write through them)."""
    i = cuda.grid(1)
    if i < x.shape[0]:
        vecs = (x, y)
        u, v = vecs
        s = 0.0
        for arr in vecs:
            s += arr[i] * arr.shape[0]
        for k, (arr, w) in enumerate(zip(vecs, (0.5, 2.0))):
            s += arr[i] * w * (k + 1)
        mats = (m, n)
        fill_pair((out_a, out_b), i, s + u[i] - vecs[1][i] + dot_pair(mats, i))
        out_b[i] += v[i] * mats[1].shape[1]


@cuda.jit
def iterate_rows(m, w, out):
    """A loop over a 2-D array's rows (numba's views of layout A) and over a 3-D window's 2-D planes."""
    i = cuda.grid(1)
    if i < out.shape[0]:
        s = 0.0
        for row in m:
            s += row[i % row.shape[0]] * row.shape[0]
        for plane in w[:, 1:]:
            s += plane[i % plane.shape[0], plane.shape[1] - 1]
        out[i] = s


@cuda.jit
def array_tuple_argument(pair, out):
    """A tuple of arrays as the kernel's argument: each array is a launcher parameter of its own (one written)."""
    i = cuda.grid(1)
    a, b = pair
    if i < out.shape[0]:
        s = 0.0
        for arr in pair:
            s += arr[i]
        out[i] = s * a.shape[0] - pair[1][i]
        b[i] = a[i] * 2.0
