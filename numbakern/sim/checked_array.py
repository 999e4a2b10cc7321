"""Arrays that check their own indexing: the proxy the simulator hands kernels when checks are on.

A ``CheckedArray`` wraps a numpy array (a kernel argument, a shared or local array, or a view of one). Every
element access is bounds-checked, and reported to the memory tracker by *address* (the numpy data pointer plus
index times strides), so views and slices of one buffer -- ``ms, ns = shar[:256], shar[256:]`` of the dynamic
shared memory -- are tracked as the underlying elements they alias. With checks off the simulator hands kernels
plain numpy arrays instead, and none of this runs.
"""

from __future__ import annotations

import dis
import os
import sys

import numpy as np

from .dtypes import as_dtype
from .errors import OutOfBoundsError, UninitializedReadError, describe_site, describe_thread, site_of

_INTS = (int, np.integer)
_SIM_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep


class ArrayLabel:
    """What messages call an array: its name, its kind, and how to turn an address back into its own index."""

    __slots__ = ("_root_ptr", "_span", "base", "kind", "mask", "mask_first", "name", "root", "root_shape",
                 "root_strides")

    def __init__(self, name: str, kind: str, root: np.ndarray, base: int = 0, mask=None, mask_first: int = 0):
        self.name = name
        self.kind = kind  # "global", "shared", "dynamic shared" or "local"
        # the root's address and span are read when needed (a view of it is made, the global tracker sizes its
        # records): a local array, made per thread and per call, reads neither (``CheckedArray`` knows its root)
        self.root = root
        self._root_ptr: int | None = None
        self._span: int | None = None
        self.root_shape = root.shape
        self.root_strides = root.strides
        # Element addresses are offsets from `base` rather than real pointers: each tracked array gets its own
        # range, and small ints (below 2**30) keep the address arithmetic on CPython's fast path.
        self.base = base
        # a device allocation made without data: its written-element mask, and where this array starts in it
        self.mask = mask
        self.mask_first = mask_first

    @property
    def root_ptr(self) -> int:
        if self._root_ptr is None:
            self._root_ptr = self.root.__array_interface__["data"][0]
        return self._root_ptr

    @property
    def span(self) -> int:
        """Bytes from the first element to the end of the last."""
        if self._span is None:
            root = self.root
            self._span = (sum((n - 1) * abs(st) for n, st in zip(root.shape, root.strides)) + root.itemsize
                          if root.size else 0)
        return self._span

    def __str__(self) -> str:
        return f"{self.kind} array '{self.name}'"

    def element(self, addr: int, itemsize: int) -> str:
        """The root array's index of the element at ``addr`` (for the dynamic buffer: in units of ``itemsize``)."""
        offset = addr - self.base
        if self.kind == "dynamic shared":
            return f"[{offset // itemsize}]"
        index = []
        for stride in self.root_strides:
            index.append(offset // stride if stride else 0)
            offset = offset % stride if stride else offset
        return "[" + ", ".join(map(str, index)) + "]"


class MemoryChecks:
    """The per-launch switches and identities CheckedArrays consult: bounds rules, the kernel, the running thread."""

    __slots__ = ("block_dim", "block_size", "bounds", "grid_dim", "kernel_name", "negative_ok", "scheduler")

    def __init__(self, kernel_name: str, bounds: bool, negative_ok: bool, scheduler, grid_dim=(1, 1, 1),
                 block_dim=(1, 1, 1)):
        self.kernel_name = kernel_name
        self.bounds = bounds
        self.negative_ok = negative_ok
        self.scheduler = scheduler
        self.grid_dim = tuple(grid_dim)
        self.block_dim = tuple(block_dim)
        self.block_size = block_dim[0] * block_dim[1] * block_dim[2]


class CheckedArray:
    """Bounds-checked access; writes and atomics reported to ``tracker`` if given (global and local arrays)."""

    __slots__ = (
        "_a",
        "_checks",
        "_cols",
        "_label",
        "_len1d",
        "_on_atomic",
        "_on_write",
        "_ptr",
        "_rows",
        "_shape",
        "_slices",
        "_stride0",
        "_stride1",
        "_strides",
    )
    #: what a view shares with the array it is taken from
    _INHERITED = ("_label", "_checks", "_on_write", "_on_atomic")

    def __init__(self, array: np.ndarray, label: ArrayLabel, checks: MemoryChecks, tracker=None):
        self._label = label
        self._set_array(array)
        self._checks = checks
        self._on_write = tracker.write if tracker is not None else None
        self._on_atomic = tracker.atomic if tracker is not None else None

    # -- element access ------------------------------------------------------------------------------------------

    def _set_array(self, array: np.ndarray) -> None:
        self._a = array
        self._slices = {}  # every thread of a block takes the same slices of a shared array: make each view once
        label = self._label
        self._ptr = label.base if array is label.root else (
            label.base + array.__array_interface__["data"][0] - label.root_ptr)
        self._shape = array.shape
        self._strides = array.strides
        # the hot case, a 1-D array indexed by an int in bounds, is handled inline in __getitem__/__setitem__
        self._len1d = array.shape[0] if array.ndim == 1 else -1
        self._stride0 = array.strides[0] if array.ndim else 0
        # and so is the 2-D case, a matrix indexed by two ints in bounds
        self._rows, self._cols = array.shape if array.ndim == 2 else (-1, -1)
        self._stride1 = array.strides[1] if array.ndim == 2 else 0

    def __getitem__(self, idx):
        # reads are only bounds-checked here (see TrackedArray for shared memory)
        if type(idx) is int:
            if 0 <= idx < self._len1d:
                return self._a[idx]
        elif type(idx) is tuple and len(idx) == 2:
            i, j = idx
            if type(i) is int and type(j) is int and 0 <= i < self._rows and 0 <= j < self._cols:
                return self._a[idx]
        if self._address(idx) is None:
            return self._view(idx)
        return self._a[idx]

    def __setitem__(self, idx, value):
        if type(idx) is int and 0 <= idx < self._len1d:
            addr = self._ptr + idx * self._stride0
        else:
            addr = self._address(idx)
        if addr is None:
            # a slice assignment writes every element of the view it selects
            view = self._view(idx)
            for sub in np.ndindex(view._shape):
                view[sub] = value if np.ndim(value) == 0 else value[sub]
            return
        if self._on_write is not None:
            self._on_write(self, addr, idx)
        self._a[idx] = value

    def _atomic_target(self, idx) -> np.ndarray:
        """For ``cuda.atomic.*``: check the index, report an atomic access, and hand back the raw array."""
        addr = self._address(idx)
        if addr is not None and self._on_atomic is not None:
            self._on_atomic(self, addr, idx)
        return self._a

    def _address(self, idx):
        """The element's address for a full integer index (after the bounds check); None for slices and views."""
        shape = self._shape
        if type(idx) is tuple:
            if len(idx) != len(shape):
                self._check_partial(idx)
                return None
            if len(idx) == 2:  # the 2-D hot case, without the general loop
                i, j = idx
                if type(i) is int and type(j) is int and 0 <= i < shape[0] and 0 <= j < shape[1]:
                    return self._ptr + i * self._strides[0] + j * self._strides[1]
            addr = self._ptr
            for dim, (i, n, stride) in enumerate(zip(idx, shape, self._strides)):
                if type(i) is not int:
                    if not isinstance(i, np.integer):
                        self._check_partial(idx)
                        return None
                    i = int(i)  # numpy integers would overflow (uint32 index * stride + pointer)
                if i < 0 or i >= n:
                    i = self._outside(idx, dim, i, n)
                addr += i * stride
            return addr
        if type(idx) is not int:
            if not isinstance(idx, np.integer):
                return None
            idx = int(idx)
        n = shape[0]
        if len(shape) != 1:
            if idx < 0 or idx >= n:
                self._outside(idx, 0, idx, n)
            return None
        if idx < 0 or idx >= n:
            idx = self._outside(idx, 0, idx, n)
        return self._ptr + idx * self._strides[0]

    def _check_partial(self, idx):
        # a[i, :] or a[i] on a 2-D array: the integer parts must still be in bounds
        for dim, i in enumerate(idx[: len(self._shape)]):
            if isinstance(i, _INTS) and (i < 0 or i >= self._shape[dim]):
                self._outside(idx, dim, i, self._shape[dim])
            elif not isinstance(i, slice):
                return

    def _outside(self, idx, dim: int, i: int, n: int) -> int:
        """Index ``i`` of dimension ``dim`` is outside [0, n): wrap it the numpy way where allowed, else raise.

        A negative index written as a literal (``x[-1]``) wraps as Numba wraps it: the last element is meant. One
        that was computed is reported (usually an off-by-one), unless negative indices are allowed."""
        checks = self._checks
        if i < 0 and i >= -n and (checks.negative_ok or not checks.bounds):
            return i + n
        if not checks.bounds:
            return i  # numpy raises its own IndexError when the access happens
        frame = sys._getframe(1)
        while frame.f_code.co_filename.startswith(_SIM_DIR):  # up to the kernel's line (also through atomics)
            frame = frame.f_back
        if i < 0 and i >= -n and literal_index(frame, dim, type(idx) is tuple):
            return i + n
        thread = checks.scheduler.current
        hint = (
            f" Numba wraps a negative index around as numpy does (this one would read index {i + n}), and so does "
            "numbakern's CUDA C (nk_wrap); a hand-written CUDA kernel would read before the array. It was computed, "
            "not written as a literal like x[-1]: if the wrap is intended, run it under "
            "numbakern.sim.allow_negative_indices()."
            if -n <= i < 0 else
            " Numba wraps a negative index around once (adding the size), and this one is out of bounds even then."
            if i < 0 else ""
        )
        raise OutOfBoundsError(
            f"in kernel '{checks.kernel_name}': index {_show(idx)} is out of bounds for {self._label} of shape "
            f"{self._shape} (dimension {dim} has size {n}, index {i}), by {describe_thread(thread)} at "
            f"{describe_site(site_of(frame))}.{hint}"
        )

    def _view(self, idx) -> CheckedArray:
        if type(idx) is slice:
            key = (idx.start, idx.stop, idx.step)
            view = self._slices.get(key)
            if view is None:
                view = self._slices[key] = self._new_view(idx)
                view._kept()
            return view
        return self._new_view(idx)

    def _kept(self) -> None:
        """This array is kept for the block (a shared array, or a slice every thread takes of one)."""

    def _new_view(self, idx) -> CheckedArray:
        return self._derived(self._a[idx])

    def _derived(self, array: np.ndarray) -> CheckedArray:
        """A checked view of memory this array covers (numpy views only: addresses identify elements)."""
        view = type(self).__new__(type(self))
        for name in self._INHERITED:
            setattr(view, name, getattr(self, name))
        view._set_array(array)
        return view

    @property
    def T(self):
        return self._derived(self._a.T)

    @property
    def real(self):
        return self._derived(self._a.real)

    @property
    def imag(self):
        return self._derived(self._a.imag)

    def transpose(self, *axes):
        return self._derived(self._a.transpose(*axes))

    def reshape(self, *shape):
        view = self._a.view()
        view.shape = shape[0] if len(shape) == 1 and isinstance(shape[0], tuple) else shape  # raises if it would copy
        return self._derived(view)

    def view(self, dtype):
        """The same memory read as another dtype (``byte_arr[a:b].view(np.int32)``), still checked."""
        return self._derived(self._a.view(as_dtype(dtype)))

    def ravel(self):
        # numba-cuda returns a view of a C-contiguous array and a copy otherwise (a copy needs the NRT)
        return self.reshape(self._a.size) if self._a.flags.c_contiguous else self.flatten()

    # Methods that make a new array (numba-cuda compiles them only with the NRT on): the elements are read through
    # the checks, and the result is plain memory of the calling thread's own, as a fresh allocation is.
    def copy(self):
        return self._read_all()

    def flatten(self):
        return self._read_all().reshape(-1)

    def astype(self, dtype):
        return self._read_all().astype(as_dtype(dtype))

    def conj(self):
        return self._read_all().conj()

    conjugate = conj

    def fill(self, value):
        for sub in np.ndindex(self._shape):
            self[sub if len(sub) != 1 else sub[0]] = value

    def item(self, *args):
        if not args:
            if self._a.size != 1:
                raise ValueError("can only convert an array of size 1 to a Python scalar")
            return self[(0,) * self._a.ndim if self._a.ndim != 1 else 0]
        return self._read_all().item(*args)

    # -- the rest of the array interface kernels use -------------------------------------------------------------

    # Explicit properties, not __getattr__: a class with __getattr__ makes every attribute lookup on its instances
    # slower, __getitem__'s own included (it doubled the cost of an element read).
    shape = property(lambda self: self._shape)
    ndim = property(lambda self: self._a.ndim)
    size = property(lambda self: self._a.size)
    dtype = property(lambda self: self._a.dtype)
    itemsize = property(lambda self: self._a.itemsize)
    strides = property(lambda self: self._strides)
    nbytes = property(lambda self: self._a.nbytes)

    def __len__(self):
        return self._shape[0]

    # reductions numba-cuda compiles in kernels: over the elements, each read through the checks
    def sum(self, *args, **kwargs):
        return self._read_all().sum(*args, **kwargs)

    def prod(self, *args, **kwargs):
        return self._read_all().prod(*args, **kwargs)

    def min(self, *args, **kwargs):
        return self._read_all().min(*args, **kwargs)

    def max(self, *args, **kwargs):
        return self._read_all().max(*args, **kwargs)

    def mean(self, *args, **kwargs):
        return self._read_all().mean(*args, **kwargs)

    def var(self, *args, **kwargs):
        return self._read_all().var(*args, **kwargs)

    def std(self, *args, **kwargs):
        return self._read_all().std(*args, **kwargs)

    def argmin(self, *args, **kwargs):
        return self._read_all().argmin(*args, **kwargs)

    def argmax(self, *args, **kwargs):
        return self._read_all().argmax(*args, **kwargs)

    def all(self, *args, **kwargs):
        return self._read_all().all(*args, **kwargs)

    def any(self, *args, **kwargs):
        return self._read_all().any(*args, **kwargs)

    def __iter__(self):
        for i in range(self._shape[0]):
            yield self[i]

    def __repr__(self):
        return f"CheckedArray({self._label}, shape={self._shape})"

    # -- numpy interoperation: a device ufunc such as ``np.sin(x, out)`` takes checked arrays as arrays ----------

    def __array__(self, dtype=None, copy=None):
        values = self._read_all()
        return values if dtype is None else values.astype(dtype)

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        """The ufunc on the elements, each read and written through the checks (numba-cuda allows ufuncs on
        arrays in kernels when every output is given)."""
        plain = [x._read_all() if isinstance(x, CheckedArray) else x for x in inputs]
        out = kwargs.pop("out", None)
        outs = out if isinstance(out, tuple) else (out,) if out is not None else ()
        if not outs:
            return getattr(ufunc, method)(*plain, **kwargs)
        temps = tuple(np.empty(o.shape, o.dtype) for o in outs)
        getattr(ufunc, method)(*plain, out=temps if len(temps) > 1 else temps[0], **kwargs)
        for o, t in zip(outs, temps):
            if isinstance(o, CheckedArray):
                for sub in np.ndindex(o.shape):
                    o[sub if len(sub) != 1 else sub[0]] = t[sub]
            else:
                o[...] = t
        return out

    def _read_all(self) -> np.ndarray:
        values = np.empty(self._shape, self._a.dtype)
        for sub in np.ndindex(self._shape):
            values[sub] = self[sub if len(sub) != 1 else sub[0]]
        return values


class TrackedArray(CheckedArray):
    """A shared-memory array: reads are reported too, to the block's ``SharedMemoryTracker``.

    Reads are most of a tiled kernel's accesses, so the commonest case is decided here without a call: the element
    has no writer this epoch and two distinct readers are already on record, so this read adds nothing. Such an
    element is *quiet* until the epoch ends or someone writes it; an array kept for the block (the shared array,
    the slices every thread takes of it) marks the quiet elements it reads by index (``_quiet``), so its next
    read of one is a bounds check and a byte. The tracker unmarks them all at a barrier and at a write to a quiet
    element (``SharedMemoryTracker.forget_quiet``).
    """

    __slots__ = ("_epoch", "_on_read", "_quiet", "_quiet_kept", "_tracker")
    _INHERITED = CheckedArray._INHERITED + ("_epoch", "_on_read", "_tracker")
    #: the marks of an array made per access (``s[i]`` of a 2-D ``s``): none, ever (nothing would unmark them)
    _NEVER_QUIET = bytes(1 << 18)

    def __init__(self, array: np.ndarray, label: ArrayLabel, checks: MemoryChecks, tracker):
        self._tracker = tracker
        super().__init__(array, label, checks, tracker)
        self._epoch = tracker.epoch_accesses
        self._on_read = tracker.read
        self._kept()

    def _set_array(self, array: np.ndarray) -> None:
        super()._set_array(array)
        size = self._marks()
        self._quiet = self._NEVER_QUIET if size <= len(self._NEVER_QUIET) else bytes(size)
        self._quiet_kept = False

    def _marks(self) -> int:
        """How many elements the fast paths of ``__getitem__`` (1-D and 2-D) can mark."""
        return self._len1d if self._len1d >= 0 else self._rows * self._cols if self._rows >= 0 else 0

    def _kept(self) -> None:
        self._quiet = bytearray(self._marks())
        self._quiet_kept = True
        self._tracker.keep_quiet_marks(self._quiet)

    def __getitem__(self, idx):
        if type(idx) is int and 0 <= idx < self._len1d:
            if self._quiet[idx]:
                return self._a[idx]
            addr = self._ptr + idx * self._stride0
            mark = idx
        else:
            addr = None
            if type(idx) is tuple and len(idx) == 2:
                i, j = idx
                if type(i) is int and type(j) is int and 0 <= i < self._rows and 0 <= j < self._cols:
                    mark = i * self._cols + j
                    if self._quiet[mark]:
                        return self._a[idx]
                    addr = self._ptr + i * self._stride0 + j * self._stride1
            if addr is None:
                addr = self._address(idx)
                if addr is None:
                    return self._view(idx)
                mark = -1
        seen = self._epoch.get(addr)
        if seen is None or seen[0] is not None or seen[2] is None:
            self._on_read(self, addr, idx)
        elif self._quiet_kept and mark >= 0:
            self._quiet[mark] = 1
        return self._a[idx]


class LocalTrackedArray(CheckedArray):
    """A ``cuda.local.array`` with the uninitialised-read check: one thread's array, so a read of an element this
    thread has not written is reported at once (no other thread can write it later in the interval).

    Its written-element mask is indexed by element offset from the array's start, so views (slices) of it share the
    mask; writes go through ``CheckedArray.__setitem__``, which reports them to ``LocalWrites``.
    """

    __slots__ = ("_base", "_item", "_written")
    _INHERITED = CheckedArray._INHERITED + ("_base", "_item", "_written")

    def __init__(self, array: np.ndarray, label: ArrayLabel, checks: MemoryChecks):
        super().__init__(array, label, checks, _LOCAL_WRITES)
        self._base = label.base
        self._item = array.itemsize
        self._written = bytearray(array.size)

    def __getitem__(self, idx):
        if type(idx) is int and 0 <= idx < self._len1d:
            addr = self._ptr + idx * self._stride0
        else:
            addr = self._address(idx)
            if addr is None:
                return self._view(idx)
        if not self._written[(addr - self._base) // self._item]:
            self._uninitialised(addr)
        return self._a[idx]

    def __setitem__(self, idx, value):
        if type(idx) is int and 0 <= idx < self._len1d:  # the hot case (a register array), without the hook's call
            self._written[(self._ptr + idx * self._stride0 - self._base) // self._item] = 1
            self._a[idx] = value
            return
        super().__setitem__(idx, value)

    def store_first(self, values) -> None:
        """``self[i] = values[i]`` for every i, at once (a thread's registers written together: wgmma's
        accumulators)."""
        n, step = len(values), self._stride0 // self._item
        if self._len1d < n or step <= 0:  # (not a 1-D run of n elements: one at a time, with the usual errors)
            for i in range(n):
                self[i] = values[i]
            return
        self._a[:n] = values
        first = (self._ptr - self._base) // self._item
        self._written[first:first + n * step:step] = b"\x01" * n

    def _uninitialised(self, addr: int):
        frame = sys._getframe(2)
        while frame.f_code.co_filename.startswith(_SIM_DIR):  # up to the kernel's line (also through helpers)
            frame = frame.f_back
        thread = self._checks.scheduler.current
        raise UninitializedReadError(
            f"in kernel '{self._checks.kernel_name}': {describe_thread(thread)} read {self._label} element "
            f"{self._label.element(addr, self._item)}, which this thread has not written, at "
            f"{describe_site(site_of(frame))} (local memory starts uninitialised on the GPU: write every element "
            "before reading it, e.g. zero an accumulator first)"
        )


#: (code, instruction offset, dimension, tuple index) -> whether that index of the subscript is a literal
_LITERAL: dict[tuple, bool] = {}


def literal_index(frame, dim: int, is_tuple: bool) -> bool:
    """Whether dimension ``dim`` of the subscript ``frame`` executes now (``x[...]`` read or written) is an integer
    literal in its code: ``x[-1]``, ``x[i, -1]``. Read from the bytecode, so kernels without source text are
    covered; an index the bytecode does not show as a constant is taken as computed."""
    code, at = frame.f_code, frame.f_lasti
    key = (code, at, dim, is_tuple)
    found = _LITERAL.get(key)
    if found is None:
        if len(_LITERAL) >= 1 << 12:
            _LITERAL.clear()  # kernels come and go in a long test run: keep no code object alive for ever
        found = _LITERAL[key] = _literal_at(code, at, dim, is_tuple)
    return found


def _literal_at(code, offset: int, dim: int, is_tuple: bool) -> bool:
    instructions = [i for i in dis.get_instructions(code) if i.opname != "CACHE"]
    # the instruction running: a specialised one reports the offset of its last inline cache entry
    at = max((k for k, ins in enumerate(instructions) if ins.offset <= offset), default=None)
    if at is None or "SUBSCR" not in instructions[at].opname or at == 0:
        return False
    index = instructions[at - 1]  # what pushed the index (the last operand before the subscript)
    if index.opname == "LOAD_CONST":
        value = index.argval
        if is_tuple:
            return isinstance(value, tuple) and dim < len(value) and type(value[dim]) is int
        return type(value) is int
    if not is_tuple or index.opname != "BUILD_TUPLE" or dim >= index.arg:
        return False
    # element ``dim`` of the tuple: skip the values pushed above it, walking back through straight-line code
    skip = index.arg - 1 - dim
    for ins in reversed(instructions[: at - 1]):
        if ins.is_jump_target or ins.opcode in dis.hasjrel or ins.opcode in dis.hasjabs:
            return False
        if skip == 0:
            return ins.opname == "LOAD_CONST" and type(ins.argval) is int
        skip -= dis.stack_effect(ins.opcode, ins.arg) if ins.opcode >= dis.HAVE_ARGUMENT else \
            dis.stack_effect(ins.opcode)
        if skip < 0:
            return False
    return False


class LocalWrites:
    """The tracker ``LocalTrackedArray``s report writes and atomics to: it marks the element written."""

    @staticmethod
    def write(array_, addr: int, idx) -> None:
        array_._written[(addr - array_._base) // array_._item] = 1

    @staticmethod
    def atomic(array_, addr: int, idx) -> None:
        element = (addr - array_._base) // array_._item
        if not array_._written[element]:
            array_._uninitialised(addr)
        array_._written[element] = 1


_LOCAL_WRITES = LocalWrites()


def _show(idx) -> str:
    if type(idx) is tuple:
        return "[" + ", ".join(map(str, idx)) + "]"
    return f"[{idx}]"


class GlobalTrackedArray(CheckedArray):
    """A global array allocated without data (``cuda.device_array``): reads of never-written elements are reported
    to the launch's ``GlobalMemoryTracker``."""

    __slots__ = ("_on_read",)
    _INHERITED = CheckedArray._INHERITED + ("_on_read",)

    def __init__(self, array: np.ndarray, label: ArrayLabel, checks: MemoryChecks, tracker):
        super().__init__(array, label, checks, tracker)
        self._on_read = tracker.read

    def __getitem__(self, idx):
        if type(idx) is int and 0 <= idx < self._len1d:
            addr = self._ptr + idx * self._stride0
        else:
            addr = self._address(idx)
            if addr is None:
                return self._view(idx)
        self._on_read(self, addr, idx)
        return self._a[idx]
