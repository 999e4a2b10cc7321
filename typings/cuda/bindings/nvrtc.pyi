# cuda-bindings builds nvrtc as a compiled extension: the type checker sees its attributes as Any
from typing import Any

def __getattr__(name: str) -> Any: ...
