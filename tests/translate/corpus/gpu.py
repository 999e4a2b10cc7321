"""Verify the corpus on a GPU: each translated kernel against its Numba kernel, on the same random inputs.

Three stages, so that a kernel that hangs costs one kernel and not the run:

1. ``prepare``: translate every entry into a directory (NVRTC, no GPU) and build the translated files into shared
   libraries with nvcc (``translate.verify.build``, in parallel);
2. ``run`` (a helper process, ``python -m tests.translate.corpus.gpu``): for each entry and seed, the C through its
   ``extern "C"`` launcher in buffers of its own (``translate.verify.driver``) and the Numba kernel in separate
   buffers (``numba.cuda``), both on copies of the same inputs; then every array argument is compared;
3. ``verify_all``: runs stage 2 under a watchdog (an entry that makes no progress for ``TIMEOUT`` seconds is
   recorded as a timeout and the helper restarts after it) and returns one ``Verdict`` per entry.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field

import numpy as np

SEEDS = (0, 1)
TIMEOUT = 60.0  # seconds without progress before an entry counts as hung


@dataclass
class Prepared:
    id: str
    cu: str = ""
    so: str = ""
    launcher: dict = field(default_factory=dict)
    stage: str = "translated"   # translated | refused | compile-error | crash | build-error
    reason: str = ""
    nvcc_flags: tuple = ()


@dataclass
class Verdict:
    id: str
    stage: str                  # as Prepared, then verified | mismatch | launch-error | reference-error | timeout
    reason: str = ""
    max_abs_error: float = 0.0

    @property
    def verified(self) -> bool:
        return self.stage == "verified"


def once_per_run(tmp_path_factory, name: str, compute) -> dict[str, Verdict]:
    """``compute()``'s verdicts, computed by one process of the test run: with pytest-xdist, every worker that runs
    one of the corpus's tests needs them, and each computing them (a translation pool and nvcc builds of its own)
    would multiply the run's work by the number of workers. The first worker computes them under a lock and leaves
    them in the run's shared temporary folder; the others wait for it and read them (pytest-xdist's recipe for a
    session fixture run once)."""
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        return compute()
    import fcntl

    shared = tmp_path_factory.getbasetemp().parent / f"{name}.json"
    with open(shared.with_suffix(".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if shared.exists():
            return {k: Verdict(**v) for k, v in json.loads(shared.read_text()).items()}
        out = compute()
        shared.write_text(json.dumps({k: asdict(v) for k, v in out.items()}))
        return out


# -- stage 1 ---------------------------------------------------------------------------------------------------
def write_results(info: dict, out: dict[str, Verdict]) -> None:
    """The verdicts, for the reports, where ``NUMBAKERN_CORPUS_RESULTS`` says (the format of verified.json)."""
    path = os.environ.get("NUMBAKERN_CORPUS_RESULTS")
    if path:
        with open(path, "w") as f:
            json.dump({"_device": info["device"], **{k: v.verified for k, v in out.items()},
                       "_verdicts": {k: [v.stage, v.reason] for k, v in out.items()}}, f, indent=1)


def verify_mirrored(tmp_path_factory, name: str, entries, sources, title: str) -> dict[str, Verdict]:
    """The verdicts of a corpus read from local copies of its sources (the second and third): the entries whose
    sources have copies, verified on this GPU; the table printed under ``title``."""
    import pytest

    from translate.verify.driver import device_info

    entries = [e for e in entries if sources.available(e.source)]
    if not entries:
        pytest.skip(f"no local copies of the {title}'s sources (${sources.MIRRORS_ENV})")
    work = str(tmp_path_factory.mktemp(name))
    info = device_info()
    out = verify_all(entries, prepare(entries, work, info["arch"]), work)
    print("\n" + table(entries, out).replace("corpus on the GPU", f"{title} on the GPU"))
    write_results(info, out)
    return out


def check_verdict(entry_id: str, verdicts: dict[str, Verdict]) -> None:
    import pytest

    if entry_id not in verdicts:
        pytest.skip("no local copy of its source")
    v = verdicts[entry_id]
    if v.stage == "refused":
        pytest.skip(f"not translated: {v.reason}")
    assert v.verified, f"{entry_id}: {v.stage}: {v.reason}"


def _translate_chunk(ids: list, work_dir: str) -> list[dict]:
    """Translate some entries (in a worker process): their Prepared records."""
    os.environ["NUMBA_ENABLE_CUDASIM"] = "0"
    from .report import translate_entry

    entries = all_entries()
    out = []
    for entry_id in ids:
        e = entries[entry_id]
        outcome, result = translate_entry(e, write_dir=os.path.join(work_dir, _slug(e.id)))
        p = Prepared(e.id, stage=outcome.status, reason=outcome.reason)
        if result is not None:
            p.cu, p.launcher = result.path, result.entry["launchers"][0]
            p.nvcc_flags = tuple(result.entry["build"]["nvcc_flags"])
        out.append(asdict(p))
    return out


def all_entries() -> dict:
    """The corpus, the extra kernels, and the second and third corpora's kernels whose sources have local copies,
    by id (what a worker of ``prepare`` may be asked to translate)."""
    from ..corpus2 import sources
    from ..corpus2.index import ENTRIES as SECOND
    from ..corpus3.index import ENTRIES as THIRD
    from ..coverage_entries import COVERAGE
    from ..extra_entries import EXTRA
    from .index import ENTRIES

    mirrored = [e for e in SECOND + THIRD if sources.available(e.source)]
    return {e.id: e for e in ENTRIES + EXTRA + COVERAGE + mirrored}


def prepare(entries, work_dir: str, arch: str, jobs: int | None = None) -> dict[str, Prepared]:
    """Translate (in parallel worker processes, started afresh: the caller may hold a CUDA context) and build
    every entry."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    from translate.verify.build import build_many

    jobs = jobs or max(1, min(8, (os.cpu_count() or 2) // 2))
    ids = [e.id for e in entries]
    chunks = [ids[k::jobs] for k in range(jobs) if ids[k::jobs]]
    out: dict[str, Prepared] = {}
    with ProcessPoolExecutor(max_workers=len(chunks), mp_context=multiprocessing.get_context("spawn")) as pool:
        for records in pool.map(_translate_chunk, chunks, [work_dir] * len(chunks)):
            for rec in records:
                rec["nvcc_flags"] = tuple(rec["nvcc_flags"])
                out[rec["id"]] = Prepared(**rec)
    out = {i: out[i] for i in ids}
    built = [p for p in out.values() if p.cu]

    class _Cand:  # what build_many takes: .cu and .nvcc_flags
        def __init__(self, p):
            self.cu, self.nvcc_flags = p.cu, p.nvcc_flags

    sos = build_many([_Cand(p) for p in built], arch=arch)
    for p in built:
        so = sos.get(_path(p.cu))
        if isinstance(so, Exception):
            p.stage, p.reason = "build-error", str(so).splitlines()[-1][:300]
        else:
            p.so = str(so)
    return out


def _path(cu):
    from pathlib import Path

    return Path(cu).resolve()


def _slug(entry_id: str) -> str:
    return "".join(c if c.isalnum() else "_" for c in entry_id)


# -- stage 2 (in the helper process) ---------------------------------------------------------------------------
def _upload(a: np.ndarray):
    """A device copy of ``a`` keeping its memory order; (device array, element strides)."""
    from translate.verify import abi, driver

    if a.flags.c_contiguous:
        return driver.DeviceArray.from_host(a), abi.c_strides(a.shape)
    if a.flags.f_contiguous:  # the bytes of a Fortran array are those of its transpose in C order
        d = driver.DeviceArray.from_host(np.ascontiguousarray(a.T))
        return d, abi.element_strides(a)
    raise ValueError("corpus inputs are C- or Fortran-contiguous")


def _download(d, like: np.ndarray) -> np.ndarray:
    host = d.to_host()
    return host.T if (like.flags.f_contiguous and not like.flags.c_contiguous) else host


def candidate(entry, prep: Prepared, args):
    import ctypes

    from translate.verify import abi

    lib = ctypes.CDLL(prep.so)
    fn = abi.bind(lib, prep.launcher)
    buffers, call = [], []

    def uploaded(a):
        d, strides = _upload(a)
        buffers.append((d, a))
        return abi.ArrayArg(d.address, a.shape, a.dtype, strides)

    for a in args:
        if isinstance(a, np.ndarray):
            call.append(uploaded(a))
        elif _array_tuple(a):
            call.append(tuple(uploaded(x) for x in a))
        else:
            call.append(a)
    try:
        launch = entry.launch
        err = abi.launch(fn, prep.launcher, call, launch.grid, launch.block, launch.shared_bytes)
        if err:
            raise RuntimeError(f"the launcher returned cudaError {err}")
        from translate.verify import driver

        driver.synchronize()
        return [_download(d, a) for d, a in buffers]
    finally:
        for d, _ in buffers:
            d.free()


_REFERENCES: dict = {}


def reference(entry, args):
    """The Numba kernel, compiled for the entry's signature, on device copies of ``args``."""
    from numba import cuda

    if entry.id not in _REFERENCES:
        from numbakern.frontend.signatures import parse_signature
        from translate.targets import resolve

        tgt = resolve(entry.target)
        _, argtypes = parse_signature(entry.signature, tgt.pyfunc.__globals__)
        _REFERENCES[entry.id] = cuda.jit(tuple(argtypes))(tgt.pyfunc)
    kernel = _REFERENCES[entry.id]
    downloads = []

    def uploaded(a):
        if isinstance(a, np.ndarray):
            d, download = _numba_upload(cuda, a)
            downloads.append(download)
            return d
        return tuple(uploaded(x) for x in a) if _array_tuple(a) else a

    given = [uploaded(a) for a in args]
    launch = entry.launch
    kernel[launch.grid, launch.block, 0, launch.shared_bytes](*given)
    cuda.synchronize()
    return [download() for download in downloads]


def _array_tuple(a) -> bool:
    """A tuple of arrays: an argument whose arrays travel (and come back) one by one."""
    return isinstance(a, tuple) and len(a) > 0 and all(isinstance(x, np.ndarray) for x in a)


def _copied(args) -> list:
    """Fresh copies of the arrays of ``args`` (each run writes its own)."""
    return [a.copy(order="K") if isinstance(a, np.ndarray) else
            tuple(x.copy(order="K") for x in a) if _array_tuple(a) else a for a in args]


def _numba_upload(cuda, a: np.ndarray):
    """``(what the Numba kernel is given, how to read it back)`` for a host array."""
    if a.dtype.str == "<V2":  # ml_dtypes.bfloat16: numpy's buffer protocol cannot carry it, so move its bit patterns
        bits = cuda.to_device(a.view(np.uint16))
        return bits.view(a.dtype), lambda: bits.copy_to_host().view(a.dtype)
    d = cuda.to_device(a)
    return d, d.copy_to_host


def compare(entry, got: list, want: list) -> tuple[bool, str, float]:
    worst = 0.0
    for k, (g, w) in enumerate(zip(got, want)):
        if g.shape != w.shape or g.dtype != w.dtype:
            return False, f"array {k}: shape/dtype {g.shape}/{g.dtype} vs Numba's {w.shape}/{w.dtype}", np.inf
        why, err = _difference(entry, g, w)
        worst = max(worst, err)
        if why:
            return False, f"array {k} {why}", worst
    return True, "", worst


def _difference(entry, g: np.ndarray, w: np.ndarray) -> tuple[str, float]:
    """Where ``g`` differs from Numba's ``w`` ("" if nowhere) and the largest absolute difference: floats within the
    entry's tolerance, records field by field (their padding bytes are no value: numpy's copies leave them as they
    find them), anything else bit for bit."""
    if g.dtype.names:
        worst = 0.0
        for name in g.dtype.names:
            why, err = _difference(entry, g[name], w[name])
            worst = max(worst, err)
            if why:
                return f"field {name!r} {why}", worst
        return "", worst
    if g.dtype.kind in "fc" or g.dtype.str == "<V2":  # "<V2": ml_dtypes.bfloat16
        rtol = entry.rtol if entry.rtol is not None else {2: 1e-3, 4: 1e-5, 8: 1e-12}.get(
            g.dtype.itemsize if g.dtype.kind != "c" else g.dtype.itemsize // 2, 1e-5)
        atol = rtol * 0.1
        wide = np.complex128 if g.dtype.kind == "c" else np.float64
        gf, wf = g.astype(wide), w.astype(wide)
        same_nan = np.isnan(gf) == np.isnan(wf)
        close = np.isclose(gf, wf, rtol=rtol, atol=atol, equal_nan=True)
        finite = np.isfinite(gf) & np.isfinite(wf)
        worst = float(np.max(np.abs(gf - wf)[finite])) if finite.any() else 0.0
        if not (same_nan.all() and close.all()):
            return f"differs from Numba's at {np.argwhere(~close)[:3].tolist()} (rtol {rtol})", worst
        return "", worst
    # byte views need a contiguous last axis: compare C-ordered copies (Fortran-ordered outputs included)
    if not np.array_equal(np.ascontiguousarray(g).view(np.uint8), np.ascontiguousarray(w).view(np.uint8)):
        return f"differs from Numba's at {np.argwhere(g != w)[:3].tolist()}", 0.0
    return "", 0.0


def run_one(entry, prep: Prepared, seeds=SEEDS) -> Verdict:
    worst = 0.0
    for seed in seeds:
        args = entry.make_args(seed)
        try:
            got = candidate(entry, prep, _copied(args))
        except Exception as e:  # noqa: BLE001 - reported per entry
            return Verdict(entry.id, "launch-error", f"seed {seed}: {type(e).__name__}: {e}")
        try:
            want = reference(entry, _copied(args))
        except Exception as e:  # noqa: BLE001 - the Numba kernel itself failed: nothing to compare with
            return Verdict(entry.id, "reference-error", f"seed {seed}: {type(e).__name__}: {str(e)[:300]}")
        ok, why, err = compare(entry, got, want)
        worst = max(worst, err)
        if not ok:
            return Verdict(entry.id, "mismatch", f"seed {seed}: {why}", err)
    return Verdict(entry.id, "verified", "", worst)


def main(argv=None) -> int:
    """The helper process: ``python -m tests.translate.corpus.gpu PREPARED.json RESULTS.jsonl ID...``."""
    argv = sys.argv[1:] if argv is None else argv
    prepared_file, results_file, *ids = argv
    with open(prepared_file) as f:
        prepared = {k: Prepared(**v) for k, v in json.load(f).items()}
    entries = all_entries()
    for entry_id in ids:
        with open(results_file, "a") as out:
            out.write(json.dumps({"started": entry_id}) + "\n")
        verdict = run_one(entries[entry_id], prepared[entry_id])
        with open(results_file, "a") as out:
            out.write(json.dumps(asdict(verdict)) + "\n")
        if verdict.stage in ("launch-error", "reference-error"):
            return 3  # a CUDA error may have left the context unusable: the next entries get a fresh process
    return 0


# -- stage 3 ---------------------------------------------------------------------------------------------------
def verify_all(entries, prepared: dict[str, Prepared], work_dir: str, timeout: float = TIMEOUT) -> dict[str, Verdict]:
    verdicts = {p.id: Verdict(p.id, p.stage, p.reason) for p in prepared.values() if not p.so}
    todo = [e.id for e in entries if prepared[e.id].so]
    prepared_file = os.path.join(work_dir, "prepared.json")
    with open(prepared_file, "w") as f:
        json.dump({k: asdict(v) for k, v in prepared.items()}, f)
    results_file = os.path.join(work_dir, "results.jsonl")
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    while todo:
        open(results_file, "w").close()
        proc = subprocess.Popen([sys.executable, "-m", "tests.translate.corpus.gpu", prepared_file, results_file,
                                 *todo], cwd=root, env={**os.environ, "NUMBA_ENABLE_CUDASIM": "0"})
        last, seen, killed = time.monotonic(), 0, False
        while proc.poll() is None:
            time.sleep(0.5)
            lines = _lines(results_file)
            if len(lines) != seen:
                seen, last = len(lines), time.monotonic()
            elif time.monotonic() - last > timeout:
                proc.kill()
                proc.wait()
                killed = True
                break
        lines = _lines(results_file)
        started = None
        for rec in lines:
            if "started" in rec:
                started = rec["started"]
            else:
                verdicts[rec["id"]] = Verdict(**rec)
                started = None
        done = {rec["id"] for rec in lines if "id" in rec}
        if started is not None and started not in done:  # it hung (or crashed the helper)
            verdicts[started] = Verdict(started, "timeout", f"no result after {timeout:.0f} s") if killed else \
                Verdict(started, "launch-error", f"the helper process exited with {proc.returncode}")
            done.add(started)
        elif proc.returncode not in (0, None) and not done:
            for i in todo:
                verdicts[i] = Verdict(i, "launch-error", f"the helper process exited with {proc.returncode}")
            break
        todo = [i for i in todo if i not in done]
    return verdicts


def _lines(path) -> list:
    out = []
    with open(path) as f:
        for line in f:
            line = line.strip()
            if line:
                try:
                    out.append(json.loads(line))
                except json.JSONDecodeError:
                    pass  # a line being written
    return out


def shard(entries) -> list:
    """The entries of this shard: NUMBAKERN_CORPUS_SHARD=k/n runs every n-th entry from the k-th (1-based), so a
    run fits a time limit; unset, all of them."""
    spec = os.environ.get("NUMBAKERN_CORPUS_SHARD")
    if not spec:
        return list(entries)
    k, n = (int(x) for x in spec.split("/"))
    if not 1 <= k <= n:
        raise ValueError(f"NUMBAKERN_CORPUS_SHARD must be k/n with 1 <= k <= n, got {spec!r}")
    return list(entries)[k - 1::n]


def table(entries, verdicts: dict[str, Verdict]) -> str:
    entries = [e for e in entries if e.id in verdicts]
    n = max(1, len(entries))
    translated = sum(1 for e in entries if verdicts[e.id].stage not in ("refused", "crash", "compile-error"))
    compiled = sum(1 for e in entries if verdicts[e.id].stage not in ("refused", "crash", "compile-error",
                                                                     "build-error"))
    verified = sum(1 for e in entries if verdicts[e.id].verified)
    lines = [f"corpus on the GPU: {n} kernels",
             f"  translated (and NVRTC-compiled): {translated:4d}  ({100 * translated / n:.0f}%)",
             f"  built with nvcc:                 {compiled:4d}  ({100 * compiled / n:.0f}%)",
             f"  verified against Numba:          {verified:4d}  ({100 * verified / n:.0f}%)"]
    for e in entries:
        v = verdicts[e.id]
        if not v.verified and v.stage != "refused":
            lines.append(f"  {v.stage:15s} {e.id}: {v.reason}")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
