"""Build a generated ``.cu`` into a shared library with plain ``nvcc -shared`` (the deployable path), cached.

``build_shared_library(cu)`` returns the ``.so`` path; the cache key is the source's SHA-256, the flags and the
nvcc version, so an edited file is always rebuilt; a cached library is loaded only when it is the user's alone
(the rule of numbakern's own caches, ``numbakern.frontend.cache``). Standard library only (the standalone runner
imports no numba).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import stat
import subprocess
import tempfile
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

DEFAULT_ARCH = "sm_90"
#: where builds are kept unless ``NUMBAKERN_BUILD_DIR`` names another folder (read at each build)
DEFAULT_CACHE = Path(__file__).resolve().parents[2] / "build" / "verify"
BASE_FLAGS = ("-shared", "-Xcompiler", "-fPIC", "-O3", "-lineinfo")


class BuildError(RuntimeError):
    def __init__(self, cu: Path, command: Sequence[str], output: str):
        self.cu, self.command, self.output = cu, list(command), output
        super().__init__(f"nvcc failed for {cu}:\n$ {' '.join(command)}\n{output.strip()}")


def nvcc_path() -> str | None:
    default = Path("/usr/local/cuda/bin/nvcc")
    return shutil.which("nvcc") or (str(default) if default.exists() else None)


def nvcc_version() -> str:
    """``"13.0"`` from ``nvcc --version`` ("" when nvcc is missing)."""
    nvcc = nvcc_path()
    if not nvcc:
        return ""
    out = subprocess.run([nvcc, "--version"], capture_output=True, text=True).stdout
    for token in out.replace(",", " ").split():
        if token.startswith("V") and token[1:2].isdigit():
            return ".".join(token[1:].split(".")[:2])
    return ""


def nvcc_command(cu: Path, out: Path, arch: str = DEFAULT_ARCH, extra: Iterable[str] = ()) -> list[str]:
    nvcc = nvcc_path()
    if not nvcc:
        raise FileNotFoundError("nvcc is not on PATH (needed to build the generated .cu into a shared library)")
    extra = list(extra)
    # a file's own -arch (the manifest's build flags: sm_90a for wgmma and TMA) takes the place of the device's
    own = [f for f in extra if f.startswith(("-arch=", "-gencode"))]
    return [nvcc, *BASE_FLAGS, *([] if own else [f"-arch={arch}"]), *extra, "-o", str(out), str(cu)]


def build_shared_library(
    cu: str | os.PathLike,
    *,
    arch: str = DEFAULT_ARCH,
    cache_dir: str | os.PathLike | None = None,
    extra_flags: Iterable[str] = (),
) -> Path:
    """``nvcc -shared -Xcompiler -fPIC -O3 -arch=<arch> -o <cache>/<stem>-<key>.so <cu>``; reuses a cached build."""
    cu = Path(cu).resolve()
    extra = tuple(extra_flags)
    source = cu.read_bytes()
    key = hashlib.sha256(source + repr((BASE_FLAGS, arch, extra, nvcc_version())).encode()).hexdigest()[:16]
    cache = Path(cache_dir or os.environ.get("NUMBAKERN_BUILD_DIR") or DEFAULT_CACHE)
    cache.mkdir(parents=True, exist_ok=True)
    target = cache / f"{cu.stem}-{arch}-{key}.so"
    if _private_file(target):  # a library someone else could have put there is built again, never loaded
        return target
    fd, tmp = tempfile.mkstemp(suffix=".so", dir=cache)
    os.close(fd)
    command = nvcc_command(cu, Path(tmp), arch, extra)
    proc = subprocess.run(command, capture_output=True, text=True)
    if proc.returncode != 0:
        Path(tmp).unlink(missing_ok=True)
        raise BuildError(cu, command, proc.stdout + proc.stderr)
    os.replace(tmp, target)
    return target


def _private_file(path: Path) -> bool:
    """A regular file, not a link, owned by the user and writable by no one else."""
    try:
        st = os.lstat(path)
    except OSError:
        return False
    return stat.S_ISREG(st.st_mode) and st.st_uid == os.geteuid() and not st.st_mode & (stat.S_IWGRP | stat.S_IWOTH)


def build_many(cus: Iterable, *, arch: str = DEFAULT_ARCH, jobs: int | None = None,
               **kw) -> dict[Path, Path | BuildError]:
    """Build several files in parallel (paths, or candidates with ``.cu`` and ``.nvcc_flags``); each ``.cu`` maps to
    its ``.so`` or the ``BuildError``."""
    items = [(Path(c.cu), tuple(c.nvcc_flags)) if hasattr(c, "cu") else (Path(c), ()) for c in cus]

    def one(item):
        cu, flags = item
        try:
            return build_shared_library(cu, arch=arch, extra_flags=flags, **kw)
        except BuildError as exc:
            return exc

    with ThreadPoolExecutor(max_workers=jobs or min(16, os.cpu_count() or 4)) as pool:
        return dict(zip((cu for cu, _ in items), pool.map(one, items)))


def sha256_file(path: str | os.PathLike) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()
