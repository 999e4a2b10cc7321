"""Cases that run the same way in the simulator and on a GPU, for the comparison of the two
(``tests/hopper/test_gpu.py``): each is built from its name alone (seeded inputs), launched with its tensor maps
made from the arrays the launch uses, and returns its outputs.

    python -m tests.hopper.gpu_cases OUT.npz      # every case in this process's mode (the simulator's half)
"""

from __future__ import annotations

import sys

import numpy as np

from numbakern.mma import formats
from numbakern.tensormap import device_address, tensor_map, tensor_map_of
from tests.hopper import canonical, kernels, stage

SEED = 20261129
WGMMA = {  # name -> (instruction, n, trans_b, A swizzle (None: registers), B swizzle): tests/hopper/test_wgmma.py's
    "ss_bf16": ("wgmma_m64n64k16_bf16", 64, 0, 128, 128),
    "ss_f16_mn": ("wgmma_m64n32k16_f16", 32, 1, 32, 64),
    "ss_bf16_none": ("wgmma_m64n16k16_bf16", 16, 1, 0, 0),
    "rs_bf16_mn": ("wgmma_m64n64k16_bf16_rs", 64, 1, None, 128),
    "rs_f16": ("wgmma_m64n24k16_f16_rs", 24, 0, None, 32),
    "ss_tf32": ("wgmma_m64n32k8_tf32", 32, 0, 128, 64),
    "rs_tf32": ("wgmma_m64n16k8_tf32_rs", 16, 0, None, 0),
}
TMA = {  # name -> (dtype, swizzle, box rows, c0, c1)
    "tma_128": (np.uint16, 128, 16, 0, 0), "tma_64_edge": (np.uint16, 64, 24, 8, 40),
    "tma_32_before": (np.float32, 32, 8, -4, -5), "tma_128_f32": (np.float32, 128, 16, 20, 3),
    "tma_none_outside": (np.uint16, 0, 8, 72, 1),
}
TMA_3D = {  # name -> (dtype, swizzle, box (cols, rows, batch), c0, c1, c2): tests/hopper/test_tma.py's
    "tma3d_128": (np.uint16, 128, (64, 16, 1), 0, 20, 2), "tma3d_64": (np.uint16, 64, (32, 8, 2), 16, -3, 4),
    "tma3d_32_f32": (np.float32, 32, (8, 8, 3), 4, 30, -1),
}
#: cases whose outputs must be bit-identical (integer data, or sums exact in float32); the others are held to a
#: tolerance (the tensor cores' internal order and width are not documented)
EXACT = {*TMA, *TMA_3D, "tma_store", "turns", *(f"wgmma_{k}_int" for k in WGMMA), "stage_int",
         "matmul_wgmma_bf16_int"}
NAMES = (*TMA, *TMA_3D, "tma_store", "turns", *(f"wgmma_{k}_{v}" for k in WGMMA for v in ("int", "normal")),
         "stage_int", "stage_normal", "matmul_wgmma_bf16_int")


def _rng(name: str) -> np.random.Generator:
    return np.random.default_rng([SEED, *name.encode()])


def _bf16(rng, shape, integers: bool) -> np.ndarray:
    x = rng.integers(-4, 5, shape).astype(np.float32) if integers else rng.standard_normal(shape).astype(np.float32)
    return formats.f32_to_bf16_bits(x)


def build(name: str):
    """``(kernel, grid, block, shared bytes, args, maps, outputs)``: ``maps`` {argument: (array argument, box rows,
    box cols, swizzle)} (a 2-D map), or {argument: (array argument, box innermost first, swizzle)} (a map of the
    array's every dimension) are made at launch from the arrays launched with."""
    rng = _rng(name)
    if name in TMA:
        dtype, swizzle, rows, c0, c1 = TMA[name]
        eb = np.dtype(dtype).itemsize
        cols = (swizzle or 32) // eb
        x = rng.integers(1, 2**15, (45, 40)).astype(dtype) if dtype == np.uint16 else \
            rng.standard_normal((45, 40)).astype(dtype)
        nbytes = rows * cols * eb
        args = [x, np.zeros(nbytes, np.uint8), None, c0, c1, 0, nbytes]
        return kernels.tma_box, 1, 64, nbytes + 2048, args, {2: (0, rows, cols, swizzle)}, (1,)
    if name in TMA_3D:
        dtype, swizzle, box, c0, c1, c2 = TMA_3D[name]
        x = rng.integers(1, 2**15, (5, 27, 72)).astype(dtype) if dtype == np.uint16 else \
            rng.standard_normal((5, 27, 72)).astype(dtype)
        nbytes = int(np.prod(box)) * np.dtype(dtype).itemsize
        args = [x, np.zeros(nbytes, np.uint8), None, c0, c1, c2, nbytes]
        return kernels.tma_box, 1, 64, nbytes + 2048, args, {2: (0, box, swizzle)}, (1,)
    if name == "turns":
        return kernels.turns, 1, 64, 0, [np.zeros((4, 32), np.int32), 4, 0], {}, (0,)
    if name == "tma_store":
        y = rng.integers(1, 2**15, (40, 56)).astype(np.uint16)
        image = canonical.box_image(rng.integers(1, 2**15, (16, 64)).astype(np.uint16), 2, 128)
        return kernels.tma_store_box, 1, 64, image.size + 2048, [image, y, None, 8, 30], {2: (1, 16, 64, 128)}, (1,)
    if name.startswith("wgmma_"):
        key, kind = name[6:].rsplit("_", 1)
        return _wgmma(rng, *WGMMA[key], integers=kind == "int")
    if name.startswith("stage_"):
        integers = name == "stage_int"
        a, b = _bf16(rng, (64, 64), integers), _bf16(rng, (64, 64), integers)
        out = np.zeros((64, 64), np.float32)
        maps = {3: (0, 64, 64, 128), 4: (1, 64, 64, 128), 5: (2, 64, 32, 0)}
        return stage.one_stage, 1, 256, stage.SHARED, [a, b, out, None, None, None, 0], maps, (2,)
    if name == "matmul_wgmma_bf16_int":
        import numbakern

        spec = numbakern.get("matmul_wgmma_bf16")
        h, k, w = 130, 200, 264
        a, b = _bf16(rng, (h, k), True), _bf16(rng, (k, w), True)
        case = spec.make_case({"h": h, "k": k, "w": w}, rng, "normal")
        cfg = case.launch
        return spec.kernel, cfg.grid, cfg.block, cfg.shared_bytes, [a, b, *case.args[2:]], "declared", (2,)
    raise KeyError(name)


A_AT, B_AT = 0, 16384  # where a wgmma case's operands lie in its image (bytes from its 1024-aligned start)


def operand_values(rng, shape, operand: str, integers: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """Random operand values: (bits as the hardware reads them, float64 values)."""
    x = rng.integers(-8, 9, shape).astype(np.float32) if integers else rng.standard_normal(shape).astype(np.float32)
    if operand == "bf16":
        bits = formats.f32_to_bf16_bits(x)
        return bits.astype(np.uint32), formats.bf16_bits_to_f32(bits).astype(np.float64)
    if operand == "f16":
        bits = formats.f32_to_f16_bits(x)
        return bits.astype(np.uint32), formats.f16_bits_to_f32(bits).astype(np.float64)
    t = formats.f32_to_tf32(x)
    return t.view(np.uint32), t.astype(np.float64)


def place(image, at, bits, eb, swizzle, mn_major) -> tuple[int, int]:
    """The operand (mn × k) at ``at`` of the image, laid out by ``canonical``; returns its (lbo, sbo)."""
    view = image[at:]
    if mn_major:
        assert bits.shape[0] % (max(swizzle, 16) // eb) == 0
        lbo = 8 * max(swizzle, 16) * 2 if swizzle else 512
        sbo = 8 * swizzle if swizzle else 128
        canonical.mn_major(view, bits, eb, swizzle, sbo, lbo)
    else:
        lbo, sbo = 256, (8 * swizzle if swizzle else 512)
        canonical.k_major(view, bits, eb, swizzle, sbo, lbo)
    return lbo, sbo


def wgmma_operands(rng, instruction, n, trans_b, a_swizzle, b_swizzle, integers):
    """One wgmma's operands: ``[image (uint32 words), descriptors, A registers, C registers, D]`` for
    ``kernels.wgmma_from_image``, and A, B, C as float64 matrices."""
    operand = instruction.split("_")[2]
    eb = 4 if operand == "tf32" else 2
    k = 32 // eb
    a_bits, a = operand_values(rng, (64, k), operand, integers)
    b_bits, b = operand_values(rng, (k, n), operand, integers)
    c = (rng.integers(-64, 65, (64, n)) if integers else rng.standard_normal((64, n))).astype(np.float32)
    image = np.zeros(32768, np.uint8)
    descs = np.zeros(2, np.uint64)
    if a_swizzle is not None:
        descs[0] = canonical.descriptor(A_AT, *place(image, A_AT, a_bits, eb, a_swizzle, False), a_swizzle)
    descs[1] = canonical.descriptor(B_AT, *place(image, B_AT, b_bits.T, eb, b_swizzle, bool(trans_b)), b_swizzle)
    tf32 = operand == "tf32"
    a_in = np.zeros((128, 4), np.float32 if tf32 else np.uint32)
    for t in range(128):
        held = [a_bits[r, col] for r, col in canonical.a_positions(t, tf32)]
        a_in[t] = np.array(held, np.uint32).view(np.float32) if tf32 else \
            [held[2 * i] | (held[2 * i + 1] << 16) for i in range(4)]
    c_in = np.array([[c[r, col] for r, col in canonical.d_positions(t, n)] for t in range(128)], np.float32)
    args = [image.view(np.uint32), descs, a_in, c_in, np.zeros((128, n // 2), np.float32)]
    return args, a, b, c.astype(np.float64)


def _wgmma(rng, instruction, n, trans_b, a_swizzle, b_swizzle, integers):
    args, *_ = wgmma_operands(rng, instruction, n, trans_b, a_swizzle, b_swizzle, integers)
    kernel = kernels.wgmma_from_image(instruction, n, trans_b)
    return kernel, 1, 128, args[0].nbytes + 2048, [*args, 1], {}, (4,)


def run(name: str) -> dict[int, np.ndarray]:
    """The case's outputs, launched in this process's mode."""
    from numbakern import mode

    kernel, grid, block, shared, args, maps, outputs = build(name)
    gpu = not mode.in_simulator()
    if gpu:
        from numba import cuda

        args = [cuda.to_device(a) if isinstance(a, np.ndarray) else a for a in args]
    if maps == "declared":
        from numbakern.tensormap import launch_arguments

        names = kernel.py_func.__code__.co_varnames[:kernel.py_func.__code__.co_argcount]
        args = launch_arguments(kernel, names, args, shared, cuda.to_device if gpu else None)
    else:
        for i, spec in maps.items():
            made = tensor_map_of(args[spec[0]], *spec[1:]) if len(spec) == 4 else _map_of_every_dimension(
                args[spec[0]], *spec[1:])
            args[i] = cuda.to_device(made) if gpu else made
    kernel[grid, block, 0, shared](*args)
    if gpu:
        cuda.synchronize()
        return {i: args[i].copy_to_host() for i in outputs}
    return {i: np.asarray(args[i]) for i in outputs}


def _map_of_every_dimension(array, box, swizzle):
    itemsize = np.dtype(array.dtype).itemsize
    return tensor_map(device_address(array), tuple(array.shape)[::-1], tuple(array.strides)[::-1][1:], box, itemsize,
                      swizzle)


def main(argv) -> int:
    results = {}
    for name in NAMES:
        for i, value in run(name).items():
            results[f"{name}:{i}"] = value
    np.savez(argv[0], **results)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
