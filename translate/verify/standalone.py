"""Deployability check: build a ``.cu`` with plain ``nvcc -shared`` and run it through ctypes -- no Numba.

``python -m translate.verify.standalone CASE.npz ...``: each ``.npz`` (written by ``write_case``) holds the
``.cu`` path, the launcher description, the launch shape, the arguments and the expected outputs. This process
imports only the standard library, numpy and this package's ``build``/``abi``/``driver`` modules, and fails if
``numba`` was imported anyway. Prints one JSON line per case and exits 0 when every case matched.
"""

from __future__ import annotations

import ctypes
import json
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from . import abi, driver
from .build import build_shared_library


def write_case(path, *, cu, launcher: Mapping[str, Any], case, nvcc_flags=(), expected: Mapping[int, np.ndarray],
               scale: Mapping[int, np.ndarray] | None, rtol: float, atol: float, outputs, poison=np.nan) -> None:
    """Save a case for the standalone runner (called on the side that has the registry)."""
    data: dict[str, Any] = {
        "meta": np.array(json.dumps({
            "cu": str(cu), "nvcc_flags": list(nvcc_flags), "launcher": dict(launcher),
            "grid": list(case.launch.grid), "block": list(case.launch.block),
            "shared_bytes": int(case.launch.shared_bytes), "outputs": list(outputs), "rtol": rtol, "atol": atol,
            "nargs": len(case.args),
            # numpy scalars (an attention kernel's float32 scale) as Python numbers: the launcher's types convert back
            "scalars": {str(i): a.item() if isinstance(a, np.generic) else a
                        for i, a in enumerate(case.args) if not isinstance(a, np.ndarray)},
        })),
    }
    for i, a in enumerate(case.args):
        if isinstance(a, np.ndarray):
            data[f"arg{i}"] = a
    for i, e in expected.items():
        data[f"expected{i}"] = np.asarray(e)
        if scale and i in scale:
            data[f"scale{i}"] = np.asarray(scale[i])
    np.savez(path, **data)


def _close(got: np.ndarray, want: np.ndarray, scale, rtol: float, atol: float) -> tuple[bool, float]:
    g, w = got.astype(np.float64), want.astype(np.float64)
    s = np.abs(w) if scale is None else np.abs(scale.astype(np.float64))
    err = np.abs(g - w)
    ok = bool(np.all(err <= atol + rtol * s))  # NaN (an unwritten element) is never <=
    return ok, float(np.nanmax(np.where(np.isnan(err), np.inf, err), initial=0.0))


def run_case(path: str | Path, arch: str | None = None) -> dict[str, Any]:
    z = np.load(path)
    meta = json.loads(str(z["meta"]))
    arch = arch or str(driver.device_info()["arch"])
    so = build_shared_library(meta["cu"], arch=arch, extra_flags=meta.get("nvcc_flags", ()))
    fn = abi.bind(ctypes.CDLL(str(so)), meta["launcher"])
    outputs = set(meta["outputs"])
    args: list[Any] = []
    buffers: dict[int, driver.DeviceArray] = {}
    for i in range(meta["nargs"]):
        if f"arg{i}" in z:
            host = z[f"arg{i}"]
            buffers[i] = driver.DeviceArray.from_host(host)
            args.append(buffers[i])
        else:
            args.append(meta["scalars"][str(i)])
    err = abi.launch(fn, meta["launcher"], args, meta["grid"], meta["block"], meta["shared_bytes"])
    driver.synchronize()
    result = {"case": str(path), "symbol": meta["launcher"]["symbol"], "so": str(so), "launch_error": err,
              "ok": err == 0}
    for i in sorted(outputs):
        got = buffers[i].to_host()
        scale = z[f"scale{i}"] if f"scale{i}" in z else None
        exact = got.dtype.kind in "iub"
        ok, max_err = _close(got, z[f"expected{i}"], scale, 0.0 if exact else meta["rtol"],
                             0.0 if exact else meta["atol"])
        result["ok"] = result["ok"] and ok
        result[f"max_abs_error_{i}"] = max_err
    return result


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    results = [run_case(p) for p in argv]
    numba_loaded = "numba" in sys.modules
    for r in results:
        print(json.dumps(r), flush=True)
    print(json.dumps({"numba_imported": numba_loaded, "cases": len(results), "ok": all(r["ok"] for r in results)}))
    return 0 if results and all(r["ok"] for r in results) and not numba_loaded else 1


if __name__ == "__main__":
    raise SystemExit(main())
