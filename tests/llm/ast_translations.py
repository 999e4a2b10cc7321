"""What the front end's helper process runs for ``test_verified_guard.py`` (``HELPER_FUNCTIONS``); never imported by
the tests: the ast backend's translation of kernels, with the device code it generated (numba's real CUDA target is
there, and the llm translations that follow in the same helper reuse the kernels' typed records)."""

from __future__ import annotations

HELPER_FUNCTIONS = ("ast_translations",)


def ast_translations(names: list[str]) -> dict[str, dict]:
    """Each kernel's device code with its constants (a model reply that is right), its entry's dependencies and its
    source hash."""
    from translate import api, emit
    from translate.backends import ast_backend

    made = []
    generate = ast_backend.generate

    def recording(request, checks):
        made.append(generate(request, checks))
        return made[-1]

    ast_backend.generate = recording
    try:
        out = {}
        for name in names:
            result = api.translate_kernel(name, write=False)
            device = made.pop()
            constants = [emit._const_decl(n, k, v) for n, (k, v) in device.constants.items()]
            out[name] = {"device_code": "".join(c + "\n" for c in constants) + device.code,
                         "depends": result.entry["depends"], "source_sha256": result.entry["source_sha256"]}
        return out
    finally:
        ast_backend.generate = generate
