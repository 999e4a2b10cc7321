"""Which elements of a device allocation made without data (``cuda.device_array``) have been written.

Each such allocation's root numpy buffer gets a mask of one byte per element; host writes and kernel stores mark
it, and the uninitialised-read checker reads it. Shared by both front ends' adapters (``cudasim``, ``mlirsim``).
"""

from __future__ import annotations

import weakref

import numpy as np

#: root numpy buffer of a device allocation made without data -> its "element written" mask (1 byte each)
_written_masks: dict[int, tuple] = {}


def written_mask(buffer: np.ndarray):
    """For a device array's buffer (or a view of one) made by ``cuda.device_array``: ``(mask, first element)``,
    the root allocation's written-element mask and where ``buffer`` starts in it; None for anything else."""
    root = buffer
    while isinstance(root.base, np.ndarray):
        root = root.base
    entry = _written_masks.get(id(root))
    if entry is None or entry[0]() is not root:
        return None
    delta = buffer.__array_interface__["data"][0] - root.__array_interface__["data"][0]
    return entry[1], delta // buffer.itemsize


def mask_view(buffer: np.ndarray):
    found = written_mask(buffer)
    if found is None:
        return None
    mask, first = found
    if buffer.ndim == 0:
        return mask[first:first + 1]
    return np.ndarray(buffer.shape, np.bool_, mask, first, tuple(s // buffer.itemsize for s in buffer.strides))


def track(array):
    root = array._ary
    if type(root) is np.ndarray and root.size and root.base is None and root.dtype.fields is None:
        mask = np.zeros(root.nbytes // root.itemsize, np.bool_)
        key = id(root)  # the callback forgets the mask when the array goes
        _written_masks[key] = (weakref.ref(root, lambda _, key=key: _written_masks.pop(key, None)), mask)
    return array
