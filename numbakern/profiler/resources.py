"""What the compiled kernel uses per thread and per block (registers, static shared memory, local memory), found
without a GPU: numba-cuda compiles the kernel in the front end's helper process (it has numba's real CUDA target),
and nvJitLink compiles it to SASS for the GPU's architecture and reports its resources, as on a GPU.

The kernel is compiled the way numba-cuda compiles it for a launch: with link-time optimisation when its ``lto``
option says so (numba-cuda's default wherever nvJitLink is installed), that is to LTO-IR that nvJitLink optimises
and compiles with ``-lto``; else to PTX. The two give different code: vector_add takes 30 registers from PTX and 28
with LTO (as the GPU runs it), layer_norm 118 and 60.

The GPU compiles the kernel with its ``cuda.jit`` options, and the simulator's ``cuda.jit`` drops the ones that only
steer code generation (``launch_bounds``, ``max_registers``: ``numbakern.fastpath``). So the helper imports the
kernel's module as a GPU would see it (the ``@specialize`` factory called with the kernel's constants, for a
specialized one) and takes the options from that kernel; when it cannot, the simulator kernel's own options are
used and the result says so. Results are cached on disk beside the front end's facts.
"""

from __future__ import annotations

import base64
import hashlib
import importlib
import json
import pickle
import re

from ..frontend import cache, client
from ..specialize import constants_of, factory_of

#: the functions of this module the helper process may run (``numbakern.frontend.worker``)
HELPER_FUNCTIONS = ("compiled_resources",)
_VERSION = 3


def resources(kernel, fn, request, cc: tuple[int, int]) -> dict:
    """``{"registers", "static_shared", "local_bytes", "options", "source"}`` of ``kernel`` (a simulator kernel whose
    Python function is ``fn``) compiled for ``cc`` from its typing ``request``; ``{"error": ...}`` when it cannot
    be compiled here."""
    locate = locator(kernel, fn)
    key = hashlib.sha256(json.dumps([_VERSION, request.key, list(cc), locate], sort_keys=True,
                                    default=str).encode()).hexdigest()
    name = f"resources-{key}"
    found = cache.load(name)
    if found is not None:
        return found
    try:
        reply = client.call(f"{__name__}:compiled_resources",
                            payload=base64.b64encode(request.payload).decode(),
                            argtypes=base64.b64encode(_by_value(request.argtypes)).decode(),
                            cc=list(cc), locate=locate, fastmath=bool(getattr(kernel, "_fastmath", False)))
    except (client.HelperCallError, RuntimeError) as e:
        return {"error": str(e)}
    if "error" not in reply:
        cache.store(name, reply)
    return reply


def locator(kernel, fn) -> dict:
    """How the helper finds the kernel as a GPU sees it: its module and name, and a factory's constants."""
    factory = factory_of(kernel)
    if factory is not None:
        made_by = factory.factory
        return {"module": made_by.__module__, "qualname": made_by.__qualname__, "constants": constants_of(kernel)}
    return {"module": fn.__module__, "qualname": fn.__qualname__, "constants": None}


def _by_value(obj) -> bytes:
    from ..frontend import typer

    return typer.module("cloudpickle").dumps(obj, protocol=5)


# ---------------------------------------------------------------------------------------------------------------
# in the helper process


def compiled_resources(*, payload: str, argtypes: str, cc: list, locate: dict, fastmath: bool) -> dict:
    """(In the helper.) Compile the request's kernel to PTX with the kernel's GPU options, then to SASS with
    nvJitLink, and read ptxas's report."""
    from ..frontend.request import begin_request, load_payload
    from ..frontend.target import cuda_typing

    try:
        begin_request()
        pyfunc, _ = load_payload(base64.b64decode(payload))
        types = pickle.loads(base64.b64decode(argtypes))
        # numba's real CUDA target: only in the helper process
        from numba.cuda import compile as compile_kernel
        from numba.cuda.cudadrv.driver import _have_nvjitlink

        options, source = _gpu_options(locate)
        if options is None:
            options, source = {"fastmath": fastmath}, "the simulator kernel's options (launch_bounds unknown)"
        if options.get("lto") is None:  # numba-cuda's default
            options["lto"] = _have_nvjitlink() and not options.get("debug")
        output = "ltoir" if options["lto"] else "ptx"
        with cuda_typing(tuple(cc)):
            code, _ = compile_kernel(pyfunc, tuple(types), device=False, abi="numba", output=output, cc=tuple(cc),
                                     fastmath=bool(options.get("fastmath")), launch_bounds=options.get("launch_bounds"))
        report = ptxas_report(code, tuple(cc), options.get("max_registers"), lto=bool(options["lto"]))
    except Exception as e:  # noqa: BLE001 - whatever failed, the caller gets its text and goes on without
        return {"error": f"{type(e).__name__}: {e}"}
    report["options"] = {k: v for k, v in options.items() if v}
    report["source"] = source
    return report


def _gpu_options(locate: dict):
    """The kernel's code-generation options as numba-cuda compiles it on a GPU, or (None, why not)."""
    try:
        target = importlib.import_module(locate["module"])
        for part in locate["qualname"].split("."):
            target = getattr(target, part)
        if locate.get("constants") is not None:
            target = target(**locate["constants"])
        options = dict(target.targetoptions)
    except Exception:  # noqa: BLE001 - a kernel made where an import cannot reach it
        return None, ""
    wanted = ("fastmath", "launch_bounds", "max_registers", "lto", "debug")
    return {k: options.get(k) for k in wanted}, f"{locate['module']}:{locate['qualname']} (its cuda.jit options)"


def ptxas_report(code: str | bytes, cc: tuple[int, int], max_registers: int | None = None, lto: bool = False) -> dict:
    """nvJitLink's report of ``code`` (PTX, or with ``lto`` numba's LTO-IR) compiled for ``sm_<cc>``: registers per
    thread, static shared memory and local memory per thread (spills included)."""
    from cuda.bindings import nvjitlink

    # 9.0 as sm_90a, as numba-cuda compiles a launch on a 9.0 device: the Hopper instructions need the "a" target
    arch = f"sm_{cc[0]}{cc[1]}{'a' if tuple(cc) == (9, 0) else ''}"
    options = [f"-arch={arch}", "-verbose", *(["-lto"] if lto else [])]
    if max_registers:
        options.append(f"-maxrregcount={int(max_registers)}")
    handle = nvjitlink.create(len(options), options)
    try:
        data = code.encode() if isinstance(code, str) else bytes(code)
        kind = nvjitlink.InputType.LTOIR if lto else nvjitlink.InputType.PTX
        nvjitlink.add_data(handle, kind, data, len(data), "kernel.ltoir" if lto else "kernel.ptx")
        nvjitlink.complete(handle)
        log = bytearray(nvjitlink.get_info_log_size(handle))
        nvjitlink.get_info_log(handle, log)
    finally:
        nvjitlink.destroy(handle)
    return parse_report(bytes(log).decode(errors="replace"))


def parse_report(log: str) -> dict:
    """``{"registers", "static_shared", "local_bytes"}`` from nvJitLink's verbose log.

    ptxas reports the kernel (``ptxas info : Used 28 registers, used 1 barriers, 4096 bytes smem`` and
    ``ptxas . 0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads``); a link of PTX adds the linker's
    summary (``info : used 28 registers, used 1 barriers, 0 stack, 5120 bytes smem, ... 0 bytes lmem``), whose
    shared memory is the only one given when ptxas gives none. The last function reported is the kernel."""
    lines = log.splitlines()
    ptxas = [line for line in lines if re.search(r"^ptxas\b.*\bUsed \d+ registers", line)]
    summary = [line for line in lines if re.search(r"^info\s*:\s*used \d+ registers", line)]
    if not ptxas and not summary:
        raise ValueError(f"no register count in the compiler's report:\n{log}")

    def number(pattern: str, line: str | None) -> int | None:
        m = re.search(pattern, line) if line else None
        return int(m.group(1)) if m else None

    kernel = ptxas[-1] if ptxas else None
    linked = summary[-1] if summary else None
    registers = number(r"(?i)used (\d+) registers", kernel or linked)
    shared = number(r"(\d+) bytes smem", kernel)
    if shared is None:
        shared = number(r"(\d+) bytes smem", linked) or 0
    frames = [int(m.group(1)) for line in lines if (m := re.search(r"^ptxas\b.*\b(\d+) bytes stack frame", line))]
    local = frames[-1] if frames else (number(r"(\d+) bytes lmem", linked) or 0) + (number(r"(\d+) stack", linked) or 0)
    return {"registers": registers, "static_shared": shared, "local_bytes": local}
