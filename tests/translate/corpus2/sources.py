"""Where the second corpus's kernels come from: public repositories, each read at a recorded commit.

The kernels' code is not in this repository (this repository holds only its own code): each entry names a file of a
repository at a commit, and the runner reads it from a local git copy of that repository. Point
``NUMBAKERN_CORPUS2_MIRRORS`` at a folder holding the copies, one per repository, named ``owner+name`` (a clone, a
bare clone, or a folder with one of those in ``repo/``); ``git clone https://github.com/<owner>/<name>
"$NUMBAKERN_CORPUS2_MIRRORS/<owner>+<name>"`` makes one. Without them the corpus's tests skip.

The folder may instead hold an export: the files the corpus reads, at ``<owner>+<name>@<commit>/<path>``, which
``python -m tests.translate.corpus2.sources export DIR`` writes from the git copies (a few hundred kilobytes, for
a machine that cannot fetch the repositories, such as a GPU host).
"""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

MIRRORS_ENV = "NUMBAKERN_CORPUS2_MIRRORS"


@dataclass(frozen=True)
class Source:
    repo: str        # owner/name on GitHub
    commit: str      # the commit every entry of it is read at
    license: str     # SPDX identifier of the files' licence (redistributable ones only)
    what: str        # what kind of code it is, for the report


SOURCES = {
    "numba-examples": Source("numba/numba-examples", "c423f5419a459f5ab8874fda6d39bb5ea05d04b2", "BSD-2-Clause",
                             "Numba's example collection (current and legacy examples)"),
    "cusignal": Source("rapidsai/cusignal", "f02f8e65b3b84935f64aa639c88aafae1151fbc9", "Apache-2.0",
                       "a signal-processing library (its Numba kernels, before it moved to CuPy)"),
    "stumpy": Source("TDAmeritrade/stumpy", "423c679fdfcdd547744d2b9a2aed7565124fd6e1", "BSD-3-Clause",
                     "a time-series library (matrix profile)"),
    "sgkit": Source("sgkit-dev/sgkit", "72f7588f341b441666b0a0a04577cfba9704c64f", "Apache-2.0",
                    "a statistical-genetics library (pairwise distances)"),
    "bric-a-brac": Source("vincentbonnetcg/Numerical-Bric-a-Brac", "2e30844cc9d6097d4b739059b246782cd09e8e4c", "MIT",
                          "a collection of numerical methods (stencil codes)"),
    "enccs-hpda": Source("ENCCS/hpda-python", "7c33127e39fed9e6639b7f455f7b87264f74d5ad", "MIT",
                         "course material (ENCCS, high-performance data analytics in Python)"),
    "enccs-gpu": Source("ENCCS/gpu-programming", "87fab1cb29329f6fcf5bf592b96b22ca1c61cec6", "MIT",
                        "course material (ENCCS, GPU programming: why, when and how)"),
    "lbm-gpu": Source("bourbonut/lbm-gpu", "284bf32c00a7227726501c1265ae3dcef5c00111", "LGPL-2.1",
                      "a lattice Boltzmann solver"),
}


def mirrors() -> Path | None:
    folder = os.environ.get(MIRRORS_ENV)
    return Path(folder) if folder and Path(folder).is_dir() else None


def git_dir(repo: str) -> Path | None:
    """The local git copy of ``repo`` (owner/name), or None."""
    root = mirrors()
    if root is None:
        return None
    base = root / repo.replace("/", "+")
    for candidate in (base / "repo" / ".git", base / "repo", base / ".git", base):
        if (candidate / "HEAD").is_file() and (candidate / "objects").is_dir():
            return candidate
    return None


def exported(key: str) -> Path | None:
    """The export folder of source ``key`` at its commit (see the module doc), or None."""
    root = mirrors()
    source = SOURCES[key]
    folder = root / f"{source.repo.replace('/', '+')}@{source.commit}" if root is not None else None
    return folder if folder is not None and folder.is_dir() else None


def available(key: str) -> bool:
    return exported(key) is not None or git_dir(SOURCES[key].repo) is not None


def read(key: str, path: str) -> str:
    """The text of ``path`` in source ``key`` at its recorded commit."""
    source = SOURCES[key]
    folder = exported(key)
    if folder is not None:
        file = folder / path
        if not file.is_file():
            raise FileNotFoundError(f"{source.repo}@{source.commit[:12]}:{path}: not in the export {folder}")
        return file.read_text()
    gd = git_dir(source.repo)
    if gd is None:
        raise FileNotFoundError(f"no local copy of {source.repo} under ${MIRRORS_ENV}")
    r = subprocess.run(["git", "--git-dir", str(gd), "show", f"{source.commit}:{path}"], capture_output=True,
                       text=True, check=False)
    if r.returncode:
        raise FileNotFoundError(f"{source.repo}@{source.commit[:12]}:{path}: {r.stderr.strip()}")
    return r.stdout


def export(folder: Path) -> list[Path]:
    """Write every file the second and third corpora read (their entries' files and the files they call into) from
    the git copies to ``folder`` in the export layout; returns the files written."""
    from ..corpus3.index import ENTRIES as THIRD
    from . import sources as registry  # (the imported module, which the third corpus adds its sources to, also
    from .index import ENTRIES as SECOND  # where this one runs as __main__)

    ENTRIES = SECOND + THIRD
    wanted = sorted({(e.source, e.path) for e in ENTRIES} | {(e.source, p) for e in ENTRIES for p, _ in e.also})
    written = []
    for key, path in wanted:
        source = registry.SOURCES[key]
        target = folder / f"{source.repo.replace('/', '+')}@{source.commit}" / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(registry.read(key, path))
        written.append(target)
    return written


if __name__ == "__main__":
    import argparse

    parser = argparse.ArgumentParser(description="the second corpus's sources")
    parser.add_argument("command", choices=["export"])
    parser.add_argument("folder", type=Path, help="where the export goes (then NUMBAKERN_CORPUS2_MIRRORS=FOLDER)")
    args = parser.parse_args()
    files = export(args.folder)
    print(f"{len(files)} files written under {args.folder}")
