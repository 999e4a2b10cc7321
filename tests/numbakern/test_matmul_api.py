"""``numbakern.kernels.matmul.matmul``: the product for numpy, torch and CuPy inputs, of the same kind back."""

import numpy as np
import pytest

from numbakern.kernels.matmul import matmul

SHAPES = [(33, 70, 45), (1, 1, 1), (5, 17, 3)]


def reference(a, b):
    return np.asarray(a, dtype=np.float64) @ np.asarray(b, dtype=np.float64)


def f32(rng, *shape):
    return rng.standard_normal(shape).astype(np.float32)


def close(got, a, b):
    scale = np.abs(np.asarray(a, np.float64)) @ np.abs(np.asarray(b, np.float64))
    assert (np.abs(np.asarray(got, np.float64) - reference(a, b)) <= 1e-5 * scale + 1e-30).all()


@pytest.mark.sim
@pytest.mark.parametrize("h, k, w", SHAPES)
def test_numpy_in_numpy_out(h, k, w, rng):
    a, b = f32(rng, h, k), f32(rng, k, w)
    c = matmul(a, b)
    assert isinstance(c, np.ndarray) and c.shape == (h, w) and c.dtype == np.float32
    close(c, a, b)


@pytest.mark.sim
def test_torch_cpu_tensors_in_the_simulator(rng):
    torch = pytest.importorskip("torch")
    a, b = torch.from_numpy(f32(rng, 20, 30)), torch.from_numpy(f32(rng, 30, 7))
    c = matmul(a, b)
    assert isinstance(c, torch.Tensor) and c.shape == (20, 7)
    close(c.numpy(), a.numpy(), b.numpy())


@pytest.mark.sim
def test_out_is_written_and_returned(rng):
    a = rng.random((9, 4), dtype=np.float32)
    b = rng.random((4, 6), dtype=np.float32)
    out = np.full((9, 6), np.nan, np.float32)
    assert matmul(a, b, out=out, tile_width=4) is out
    close(out, a, b)


@pytest.mark.gpu
@pytest.mark.parametrize("h, k, w", SHAPES + [(257, 129, 131)])
def test_torch_cuda_tensors(h, k, w, rng):
    torch = pytest.importorskip("torch")
    a = torch.from_numpy(f32(rng, h, k)).cuda()
    b = torch.from_numpy(f32(rng, k, w)).cuda()
    c = matmul(a, b)
    assert c.is_cuda and c.shape == (h, w)
    close(c.cpu().numpy(), a.cpu().numpy(), b.cpu().numpy())


@pytest.mark.gpu
def test_cupy_arrays(rng):
    cupy = pytest.importorskip("cupy")
    a = cupy.asarray(f32(rng, 40, 50))
    b = cupy.asarray(f32(rng, 50, 33))
    c = matmul(a, b)
    assert isinstance(c, cupy.ndarray)
    close(cupy.asnumpy(c), cupy.asnumpy(a), cupy.asnumpy(b))


@pytest.mark.gpu
def test_numpy_arrays_on_the_gpu_are_copied_there_and_back(rng):
    a, b = f32(rng, 30, 20), f32(rng, 20, 10)
    c = matmul(a, b)
    assert isinstance(c, np.ndarray)
    close(c, a, b)


@pytest.mark.gpu
def test_gpu_rejects_cpu_tensor_and_mixed_devices(rng):
    torch = pytest.importorskip("torch")
    a, b = torch.from_numpy(f32(rng, 4, 4)), torch.from_numpy(f32(rng, 4, 4))
    with pytest.raises(TypeError, match=r"argument 'b' is a CPU tensor but this launch runs on the GPU"):
        matmul(a.cuda(), b)
    if torch.cuda.device_count() > 1:
        with pytest.raises(ValueError, match="must all be on one device"):
            matmul(a.to("cuda:0"), b.to("cuda:1"))
