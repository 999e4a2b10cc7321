"""A shared library in the build cache is loaded (``ctypes.CDLL``: its constructors run) only when it is the user's
alone: one another user put there, or one others may rewrite, is built again (issue 38, finding 5's rule for
every cache that holds code)."""

from __future__ import annotations

import hashlib
import os

import pytest

from translate.verify import build


def _planted(tmp_path, how):
    cu = tmp_path / "k.cu"
    cu.write_text("extern \"C\" int k() { return 1; }\n")
    key = hashlib.sha256(cu.read_bytes() + repr((build.BASE_FLAGS, "sm_90", (), build.nvcc_version())).encode())
    target = tmp_path / "cache" / f"k-sm_90-{key.hexdigest()[:16]}.so"
    target.parent.mkdir()
    target.write_bytes(b"\x7fELF planted")
    if how == "owned by another user":
        try:
            os.chown(target, 65534, -1)
        except PermissionError:
            pytest.skip(f"this process (uid {os.geteuid()}) cannot chown to another uid (only root or CAP_CHOWN)")
    else:
        os.chmod(target, 0o666)
    return cu, target


@pytest.mark.parametrize("how", ["owned by another user", "writable by others"])
def test_a_library_someone_else_could_have_put_in_the_cache_is_not_reused(tmp_path, monkeypatch, how):
    cu, target = _planted(tmp_path, how)
    built = []

    def nvcc(cu_path, out, arch, extra):  # no nvcc here: a stand-in that "builds" by writing the output
        built.append(out)
        return ["sh", "-c", f"printf built > {out}"]

    monkeypatch.setattr(build, "nvcc_command", nvcc)
    assert build.build_shared_library(cu, cache_dir=tmp_path / "cache") == target
    assert built and target.read_bytes() == b"built", "the planted library was returned as the build"
    assert os.stat(target).st_uid == os.geteuid()
