"""Bad arguments end in a TypeError/ValueError that names the argument and what was expected."""

import numpy as np
import pytest

from numbakern import array_info, check_array, check_matmul_shapes, check_same_device, mode
from numbakern.kernels.matmul import matmul


class FakeDeviceArray:
    """Any object exposing __cuda_array_interface__, as CuPy arrays and numba device arrays do."""

    def __init__(self, shape, device=0, typestr="<f4", strides=None):
        self.__cuda_array_interface__ = {"shape": shape, "typestr": typestr, "data": (0, False), "version": 3,
                                         "strides": strides}
        self.device = type("Device", (), {"id": device})()


def f32(rng, *shape):
    return rng.standard_normal(shape).astype(np.float32)


def test_wrong_dtype_names_argument(rng):
    with pytest.raises(TypeError, match=r"argument 'b' must have dtype float32, got float64"):
        matmul(f32(rng, 3, 4), rng.standard_normal((4, 5)))


def test_wrong_rank_names_argument(rng):
    with pytest.raises(ValueError, match=r"argument 'a' must be 2-D, got 1-D with shape \(12,\)"):
        matmul(f32(rng, 12), f32(rng, 4, 5))


def test_mismatched_inner_dimensions(rng):
    with pytest.raises(ValueError, match=r"inner dimensions differ: 'a' is 3x4 and 'b' is 5x6"):
        matmul(f32(rng, 3, 4), f32(rng, 5, 6))


def test_non_contiguous_numpy(rng):
    with pytest.raises(ValueError, match=r"argument 'a' must be C-contiguous .*np.ascontiguousarray"):
        matmul(f32(rng, 4, 3).T, f32(rng, 4, 5))


def test_non_contiguous_torch(rng):
    torch = pytest.importorskip("torch")
    device = "cpu" if mode.in_simulator() else "cuda"
    a, b = (torch.from_numpy(f32(rng, *shape)).to(device) for shape in ((3, 4), (5, 4)))
    with pytest.raises(ValueError, match=r"argument 'b' must be C-contiguous .*\.contiguous\(\)"):
        matmul(a, b.t())


def test_not_an_array():
    with pytest.raises(TypeError, match=r"argument 'a' must be a torch tensor, a CuPy array .* got builtins.list"):
        matmul([[1.0]], np.ones((1, 1), np.float32))


def test_out_of_wrong_shape(rng):
    with pytest.raises(ValueError, match=r"argument 'out' must have shape \(3, 5\)"):
        matmul(f32(rng, 3, 4), f32(rng, 4, 5), out=np.empty((5, 3), np.float32))


def test_tile_width_out_of_range(rng):
    with pytest.raises(ValueError, match="argument 'tile_width' must be an int from 1 to 32"):
        matmul(f32(rng, 3, 4), f32(rng, 4, 5), tile_width=64)


def test_cpu_tensor_given_to_a_gpu_launch(monkeypatch, rng):
    torch = pytest.importorskip("torch")
    monkeypatch.setattr(mode, "in_simulator", lambda: False)
    with pytest.raises(TypeError,
                       match=r"argument 'a' is a CPU tensor but this launch runs on the GPU; move it with a.cuda\(\)"):
        check_array("a", torch.from_numpy(f32(rng, 2, 2)), dtype=np.float32, ndim=2)


def test_device_array_in_the_simulator(monkeypatch):
    monkeypatch.setattr(mode, "in_simulator", lambda: True)
    with pytest.raises(TypeError,
                       match=r"argument 'x' lives on the GPU \(cuda:0\) but kernels run in the CUDA simulator"):
        check_array("x", FakeDeviceArray((4,)))


def test_mixed_devices():
    infos = {"a": array_info("a", FakeDeviceArray((2, 2), device=0)), "b": array_info("b", FakeDeviceArray((2, 2),
                                                                                                           device=1))}
    with pytest.raises(ValueError, match=r"arguments must all be on one device, got 'a' on cuda:0, 'b' on cuda:1"):
        check_same_device(**infos)
    host = array_info("c", np.ones((2, 2), np.float32))
    with pytest.raises(ValueError, match=r"'a' on cuda:0, 'c' on cpu"):
        check_same_device(a=infos["a"], c=host)


def test_cuda_array_interface_is_described_correctly():
    info = array_info("x", FakeDeviceArray((3, 4), device=2, typestr="<f8", strides=(8, 24)))
    assert (info.shape, info.dtype, info.on_gpu, info.device, info.c_contiguous) == ((3, 4), np.float64, True,
                                                                                     "cuda:2", False)
    dense = array_info("y", FakeDeviceArray((3, 4), strides=(16, 4)))
    assert dense.c_contiguous


def test_matmul_shapes_helper_returns_dims():
    a = array_info("a", np.ones((7, 3), np.float32))
    b = array_info("b", np.ones((3, 2), np.float32))
    assert check_matmul_shapes("a", a, "b", b) == (7, 3, 2)


def test_allowed_dtype_list(rng):
    check_array("x", np.ones(3, np.int32), dtype=(np.int32, np.int64))
    with pytest.raises(TypeError, match="must have dtype int32 or int64, got float32"):
        check_array("x", np.ones(3, np.float32), dtype=(np.int32, np.int64))
