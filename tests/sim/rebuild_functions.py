"""What the front end's helper process runs for ``test_rebuild.py`` (``HELPER_FUNCTIONS``): the Python it rebuilds
from numba's typed IR for a function of a test module, structured or as a loop over its blocks."""

from __future__ import annotations

HELPER_FUNCTIONS = ("rebuilt",)


def rebuilt(module: str, name: str, signature: str, blocks: bool) -> str:
    import importlib

    from numbakern.frontend import decompile
    from numbakern.frontend.compile import CodeRegistry, compile_kernel
    from numbakern.frontend.facts import kernel_facts
    from numbakern.frontend.signatures import parse_signature

    pyfunc = getattr(importlib.import_module(module), name)
    _, argtypes = parse_signature(signature)
    structured = decompile._Structurer.function
    if blocks:
        def unstructured(self):
            raise decompile._Unstructured

        decompile._Structurer.function = unstructured
    try:
        registry = CodeRegistry()
        facts = kernel_facts(compile_kernel(pyfunc, tuple(argtypes), registry), registry)
    finally:
        decompile._Structurer.function = structured
    return facts["functions"][0]["python"]["text"]
