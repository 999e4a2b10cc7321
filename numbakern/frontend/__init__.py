"""numba-cuda's own front end, for processes that cannot run it themselves.

A process in simulator mode (``NUMBA_ENABLE_CUDASIM=1``) has no CUDA target, yet the simulator must know what
numba-cuda would do with a kernel: whether it compiles at all, and the type of every expression. This package
asks a helper process with the real target (``worker``) and caches the answer on disk (``cache``):

- ``request``: a kernel, everything it reads and its argument types, pickled by value (its hash is the key);
- ``compile``: numba-cuda's typing and lowering, with every IR node tagged by its source column;
- ``facts``: what numba decided, keyed by AST node (``source`` parses the same text on both sides);
- ``client``: the cache, then the helper.

It knows nothing of the simulator: the simulator (``numbakern.sim.typing``) turns facts into its own rules, and the
translator could read the same facts.
"""

from .request import TypingRequest, build_request
from .source import Source, node_key, source_of

__all__ = ["Source", "TypingRequest", "build_request", "node_key", "source_of"]
