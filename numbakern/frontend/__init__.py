"""The one front end: the only package that asks Numba (numba-cuda) what a kernel is, or starts a helper process.

Its two consumers read what it records per kernel and per argument types: the simulator (``numbakern.sim``) and
the translator (``translate``). Neither calls Numba's compiler or typing context itself.

Which front end, before numba is imported (importing this package must not import numba):

- ``choice``: numba-cuda or numba-cuda-mlir, which are installed, which one a kernel object belongs to;
- ``rebind``: the kernel library's modules loaded with numba-cuda-mlir's ``cuda`` where numba-cuda is missing;
- ``closures``: the one reader of a function's closure cells and globals.

Typing, in a process with numba's real CUDA target (the helper, or the translator's):

- ``typer``: whose copy of numba-cuda's front end types kernels here (numba-cuda's, else numba-cuda-mlir's own,
  ``mlir_typing``: its passes up to lowering, no driver), and the modules of numba's IR and types read from it;
- ``target``: ``TYPING_CC`` and ``cuda_typing`` (the target active, the device lookup answered without a GPU);
- ``compile``: the one call of numba-cuda's compiler, and its IR tagged by bytecode instruction;
- ``record``: the typed record of one function for one signature (the translator's): its syntax tree (``source``:
  the author's text, or the Python ``decompile`` rebuilds where there is none) with numba's decision on every
  operation, by the node that performs it;
- ``facts``: what numba decided per operation (the simulator's), on the Python ``decompile`` rebuilds from the typed
  IR (no source text needed), ``rejections``: numba's reason for refusing a kernel;
- ``signatures``: ``"void(float32[::1], int64)"`` to numba types and back;
- ``mlir_view``: a numba-cuda-mlir kernel rebound to numba-cuda, so numba-cuda types the same source.

For a process in simulator mode, which has no CUDA target: the one helper process.

- ``request``: a kernel, everything it reads and its argument types, pickled by value (its hash is the cache key);
- ``client``: facts through the disk ``cache``, then the helper; or a named function run there (``call``);
- ``helper``: starts, restarts and talks to the helper (``protocol``), replaced when ``helper_env`` changed;
- ``worker``: the helper itself (``python -m numbakern.frontend.worker``).
"""

from .request import TypingRequest, build_request

__all__ = ["TypingRequest", "build_request"]
