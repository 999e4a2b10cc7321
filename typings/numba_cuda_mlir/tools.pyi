# numba-cuda replaces its modules at import time (numba.cuda.utils.redirect_numba_module), and numba-cuda-mlir
# may be absent: the type checker sees their attributes as Any (pyright, [tool.pyright] in pyproject.toml)
from typing import Any

def __getattr__(name: str) -> Any: ...
