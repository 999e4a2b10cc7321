"""The address and fragment formulas of ``numbakern.sim.hopper.layout`` and ``numbakern.tensormap`` against the PTX
ISA's layouts written out again (``tests/hopper/canonical.py``): no kernel, no simulator."""

from __future__ import annotations

import numpy as np
import pytest

from numbakern.sim.hopper.layout import MatrixDescriptor, a_fragment, d_fragment, operand_addresses
from numbakern.tensormap import swizzle_address
from tests.hopper import canonical

SWIZZLES = (0, 32, 64, 128)


@pytest.mark.parametrize("swizzle", SWIZZLES)
def test_swizzle_round_trip(swizzle, rng):
    """Swizzling an address twice gives it back (the XOR's source bits are untouched), and within each pattern
    the swizzle permutes 16-byte chunks: whole chunks move, none collide."""
    pattern = 8 * swizzle if swizzle else 16
    base = 1024 * int(rng.integers(0, 100))
    addresses = base + np.arange(4 * pattern)
    once = swizzle_address(addresses, swizzle)
    assert np.array_equal(swizzle_address(once, swizzle), addresses)
    assert np.array_equal(np.sort(once), addresses)
    assert np.array_equal(once % 16, addresses % 16)
    assert np.array_equal(once // pattern, addresses // pattern)


@pytest.mark.parametrize("swizzle", SWIZZLES)
@pytest.mark.parametrize("element_bytes", [2, 4])
def test_a_box_read_back_through_the_swizzle_is_the_box(swizzle, element_bytes, rng):
    """What the copy engine stores (canonical.box_image) is what the simulator's swizzle reads back."""
    cols = (swizzle or 64) // element_bytes
    box = rng.integers(1, 2**15, (24, cols)).astype(np.uint32)
    image = canonical.box_image(box, element_bytes, swizzle)
    logical = np.arange(image.size)
    dense = image[swizzle_address(logical, swizzle)]
    dtype = np.uint16 if element_bytes == 2 else np.uint32
    assert np.array_equal(dense.view(dtype).reshape(box.shape), box.astype(dtype))


def test_descriptor_fields_round_trip(rng):
    for _ in range(50):
        start, lbo, sbo = (int(x) * 16 for x in rng.integers(0, 2**14, 3))
        swizzle = int(rng.choice(SWIZZLES))
        value = canonical.descriptor(start, lbo, sbo, swizzle)
        d = MatrixDescriptor.decode(value)
        assert (d.start, d.lbo, d.sbo, d.swizzle, d.base_offset) == (start, lbo, sbo, swizzle, 0)
        assert d.encode() == value


def _operand_cases():
    # (element bytes, mn, mn_major, swizzle, lbo, sbo)
    cases = []
    for eb in (2, 4):
        for swizzle in SWIZZLES:
            cases.append((eb, 64, False, swizzle, 256, 8 * swizzle if swizzle else 512))
    for swizzle in SWIZZLES:
        per_row = max(swizzle, 16) // 2
        cases.append((2, max(2 * per_row, 32), True, swizzle,
                      8 * max(swizzle, 16) * 2 if swizzle else 512, 8 * swizzle if swizzle else 128))
    return cases


@pytest.mark.parametrize("element_bytes, mn, mn_major, swizzle, lbo, sbo", _operand_cases())
def test_operand_addresses_find_every_element_of_the_canonical_layouts(element_bytes, mn, mn_major, swizzle, lbo,
                                                                       sbo, rng):
    """Each element of an operand placed in shared memory by the ISA's layout is found where the descriptor's
    formula says, from a tile at a 1024-byte boundary."""
    k = 32 // element_bytes
    ids = rng.permutation(mn * k).reshape(mn, k).astype(np.uint32) + 1
    image = np.zeros(1 << 16, np.uint8)
    if mn_major:
        canonical.mn_major(image, ids, element_bytes, swizzle, sbo, lbo)
    else:
        canonical.k_major(image, ids, element_bytes, swizzle, sbo, lbo)
    start = 2048
    desc = MatrixDescriptor.decode(canonical.descriptor(start, lbo, sbo, swizzle))
    addresses = operand_addresses(desc, mn, element_bytes, mn_major) - start
    lo = image[addresses].astype(np.uint32) | (image[addresses + 1].astype(np.uint32) << 8)
    if element_bytes == 4:
        lo |= (image[addresses + 2].astype(np.uint32) << 16) | (image[addresses + 3].astype(np.uint32) << 24)
    assert np.array_equal(lo, ids & (0xFFFF if element_bytes == 2 else 0xFFFFFFFF))


def test_register_fragments_are_the_isas():
    """A (m64nNk16 16-bit, m64nNk8 tf32) and D: each warp's 16 rows as an mma.m16n8k16 / m16n8k8 fragment, the
    warpgroup's four warps stacked; every element held by exactly one thread."""
    rows, cols = a_fragment(False)
    rows8, cols8 = a_fragment(True)
    for t in range(128):
        assert list(zip(rows[t], cols[t])) == canonical.a_positions(t, False)
        assert list(zip(rows8[t], cols8[t])) == canonical.a_positions(t, True)
    assert len(set(zip(rows.ravel(), cols.ravel()))) == 64 * 16
    assert len(set(zip(rows8.ravel(), cols8.ravel()))) == 64 * 8
    for n in (8, 64, 256):
        drows, dcols = d_fragment(n)
        for t in range(128):
            assert list(zip(drows[t], dcols[t])) == canonical.d_positions(t, n)
        assert len(set(zip(drows.ravel(), dcols.ravel()))) == 64 * n
