"""wgmma's shared-memory operand layouts and the TMA swizzle written out again from the PTX ISA's and CuTe's
descriptions (core matrices, swizzle atoms: rows of the swizzle's width, their 16-byte chunks permuted by the row's
place in its 8-row atom), independently of ``numbakern.sim.hopper.layout`` and ``numbakern.tensormap``: the tests
build shared-memory images with these and check the library against them."""

from __future__ import annotations

import numpy as np


def chunk_xor(row: int, swizzle: int) -> int:
    """The 16-byte chunk permutation of row ``row`` (of ``swizzle``-byte rows) within its 8-row atom: the rows of
    a 128-byte atom permute by their index, of a 64-byte atom by pairs, of a 32-byte atom by fours."""
    if swizzle == 0:
        return 0
    rows_per_128 = 128 // swizzle
    return (row // rows_per_128) % (swizzle // 16)


def place_rows(image: np.ndarray, at: int, rows: list[bytes], swizzle: int) -> None:
    """Rows of ``swizzle`` bytes (or of any width without a swizzle) stored from byte ``at`` of ``image``, one
    after the other, each row's 16-byte chunks permuted by ``chunk_xor`` of its place in its atom."""
    for r, row in enumerate(rows):
        width = len(row)
        for c in range(width // 16):
            dest = c ^ chunk_xor(r % 8, swizzle) if swizzle else c
            image[at + r * width + dest * 16: at + r * width + dest * 16 + 16] = np.frombuffer(row[c * 16:c * 16 + 16],
                                                                                               np.uint8)


def k_major(image: np.ndarray, values_bits: np.ndarray, element_bytes: int, swizzle: int, sbo: int,
            lbo: int = 0) -> None:
    """An (mn × k) operand, k = 32 bytes, K-major: 8-row groups ``sbo`` apart. Without a swizzle each group is two
    core matrices (8 rows × 16 bytes, contiguous) ``lbo`` apart along k; with one each row is a ``swizzle``-byte
    row of its atom holding the 32 bytes of k at its start."""
    mn = values_bits.shape[0]
    data = _row_bytes(values_bits, element_bytes)  # (mn, 32) bytes
    for g in range(mn // 8):
        if swizzle == 0:
            for half in range(2):
                core = b"".join(bytes(data[8 * g + r, 16 * half:16 * half + 16]) for r in range(8))
                image[g * sbo + half * lbo: g * sbo + half * lbo + 128] = np.frombuffer(core, np.uint8)
        else:
            rows = [bytes(data[8 * g + r]) + bytes(swizzle - 32) for r in range(8)]
            place_rows(image, g * sbo, rows, swizzle)


def mn_major(image: np.ndarray, values_bits: np.ndarray, element_bytes: int, swizzle: int, sbo: int,
             lbo: int) -> None:
    """An (mn × k) operand stored MN-major (16-bit elements, k = 16): without a swizzle, core matrices of 8 k-rows
    × 8 mn-values (16 bytes), ``sbo`` apart along mn and ``lbo`` apart along k; with one, each k-row holds
    ``swizzle`` bytes of mn values, 8 k-rows an atom, atoms ``sbo`` apart along k and panels of mn ``lbo`` apart."""
    mn, k = values_bits.shape
    per_row = max(swizzle, 16) // element_bytes  # mn values per row of an atom (a core matrix row without swizzle)
    t = values_bits.T  # (k, mn)
    for p in range(mn // per_row):
        for kg in range(k // 8):
            rows = [_row_bytes(t[8 * kg + r:8 * kg + r + 1, p * per_row:(p + 1) * per_row], element_bytes)[0]
                    .tobytes() for r in range(8)]
            if swizzle == 0:
                image[p * sbo + kg * lbo: p * sbo + kg * lbo + 128] = np.frombuffer(b"".join(rows), np.uint8)
            else:
                place_rows(image, p * lbo + kg * sbo, rows, swizzle)


def _row_bytes(bits: np.ndarray, element_bytes: int) -> np.ndarray:
    dtype = np.uint16 if element_bytes == 2 else np.uint32
    return np.ascontiguousarray(bits.astype(dtype)).view(np.uint8).reshape(bits.shape[0], -1)


def descriptor(start: int, lbo: int, sbo: int, swizzle: int) -> int:
    """The 64-bit matrix descriptor, field by field as the PTX ISA's table lists them."""
    layout = {0: 0, 128: 1, 64: 2, 32: 3}[swizzle]
    return (start >> 4) | ((lbo >> 4) << 16) | ((sbo >> 4) << 32) | (layout << 62)


def box_image(box_bits: np.ndarray, element_bytes: int, swizzle: int) -> np.ndarray:
    """A TMA box (rows × cols) as shared memory holds it from a pattern-aligned address: dense rows, each row's
    16-byte chunks permuted as ``place_rows`` does."""
    data = _row_bytes(box_bits, element_bytes)
    image = np.zeros(data.size, np.uint8)
    if swizzle == 0:
        return data.reshape(-1).copy()
    place_rows(image, 0, [bytes(row) for row in data], swizzle)
    return image


def a_positions(t: int, tf32: bool) -> list[tuple[int, int]]:
    """The (row, col) of A each element of thread ``t``'s A registers holds (the PTX ISA's wgmma register fragment:
    each warp's 16 rows an mma.m16n8k16 / m16n8k8 A fragment): 8 for 16-bit (two per register, low half first),
    4 for tf32."""
    w, lane = t // 32, t % 32
    g, q = lane >> 2, lane % 4
    if tf32:
        return [(16 * w + g + (8 if i in (1, 3) else 0), q + (4 if i >= 2 else 0)) for i in range(4)]
    return [(16 * w + g + (8 if i in (2, 3, 6, 7) else 0), 2 * q + (i & 1) + (8 if i >= 4 else 0)) for i in range(8)]


def d_positions(t: int, n: int) -> list[tuple[int, int]]:
    """The (row, col) of D each of thread ``t``'s n/2 float32 accumulators holds."""
    w, lane = t // 32, t % 32
    g, q = lane >> 2, lane % 4
    return [(16 * w + g + 8 * ((i % 4) // 2), 8 * (i // 4) + 2 * q + i % 2) for i in range(n // 2)]
