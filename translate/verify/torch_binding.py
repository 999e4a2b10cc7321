"""A small PyTorch binding for a generated launcher: torch CUDA tensors in, the launch on torch's current stream.

    matmul = torch_launcher(so_path, launcher)               # launcher: the manifest's description
    matmul(a, b, out, 16, grid=(gx, gy), block=(16, 16), shared_bytes=2048)

No C++ extension build is needed: the ``.so`` from ``nvcc -shared`` is called through ctypes with the tensors'
``data_ptr()`` and ``torch.cuda.current_stream().cuda_stream``. Arguments are checked against the launcher's
parameter description (CUDA device, dtype, rank, contiguity) before the call.
"""

from __future__ import annotations

import ctypes
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from . import abi


class TensorArg:
    def __init__(self, name: str, t: Any, param: abi.Param):
        import torch  # an optional dependency (numbakern[torch]): needed only by who calls with tensors

        if not isinstance(t, torch.Tensor):
            raise TypeError(f"argument '{name}' must be a torch tensor, got {type(t).__name__}")
        if t.device.type != "cuda":
            raise TypeError(f"argument '{name}' must be a CUDA tensor, got one on {t.device}")
        if not t.is_contiguous():
            raise ValueError(f"argument '{name}' must be contiguous; call .contiguous() first")
        dtype = np.dtype(str(t.dtype).removeprefix("torch."))
        if dtype != np.dtype(param.dtype) or t.dim() != param.ndim:
            raise TypeError(f"argument '{name}' must be a {param.ndim}-D {param.dtype} tensor, got {t.dim()}-D {dtype}")
        self.address, self.shape, self.dtype = t.data_ptr(), tuple(t.shape), dtype


def torch_launcher(so_path: str, launcher: Mapping[str, Any]):
    """A Python callable for one launcher of a built ``.so``, taking torch tensors."""
    fn = abi.bind(ctypes.CDLL(str(so_path)), launcher)
    params = abi.params_of(launcher)

    def call(*args: Any, grid: Sequence[int], block: Sequence[int], shared_bytes: int = 0, stream: Any = None) -> None:
        import torch  # an optional dependency (numbakern[torch]), as above

        if len(args) != len(params):
            names = ", ".join(p.name for p in params)
            raise TypeError(f"{launcher['symbol']} takes {len(params)} arguments ({names}), got {len(args)}")
        conv = [TensorArg(p.name, a, p) if p.kind == "array" else a for p, a in zip(params, args)]
        s: Any = stream if stream is not None else torch.cuda.current_stream()
        handle = s.cuda_stream if hasattr(s, "cuda_stream") else int(s)
        err = abi.launch(fn, launcher, conv, grid, block, shared_bytes, handle)
        if err:
            raise RuntimeError(f"{launcher['symbol']} failed to launch: cudaError {err}")

    call.__name__ = str(launcher["symbol"])
    call.__doc__ = abi.c_declaration(launcher)
    return call
