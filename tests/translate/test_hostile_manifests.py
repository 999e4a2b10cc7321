"""Hostile inputs for the paths that read a manifest (``translate --check``, ``translate``), through the real CLI.

The non-LLM counterpart of ``tests/llm/hostile.py``: planted and damaged manifests (kernels outside the project,
names that climb out of the folder, folders, links, FIFOs and huge files where files should be, a hand edit with
its hash forged, a verification record of other bytes), a ``--check`` racing a ``translate``, writers killed at
random points and a full disk. Each must end in a one-line error or problem, lose nothing, and run no code it was
not given by the project.
"""

from __future__ import annotations

import json
import os
import random
import resource
import signal
import subprocess
import sys
import time

import pytest

from tests import forked
from tests.environments import clean, with_path_first

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

KERNEL = '''from numba import cuda


@cuda.jit
def scale(x, out):
    i = cuda.grid(1)
    if i < x.shape[0]:
        out[i] = x[i] * 2
'''
#: what a planted module does when it is imported: leave a marker (a successful attack)
PLANT = "import pathlib\npathlib.Path({marker!r}).write_text('pwned')\n"
SIGNATURE = "void(float32[::1], float32[::1])"


def _cli(*args, cwd, limits=None, timeout=300):
    env = with_path_first(clean(cwd), ROOT)
    return forked.run([sys.executable, "-m", "translate.cli", *args], cwd=cwd, env=env, timeout=timeout,
                      preexec_fn=limits)


def _one_line(text: str) -> str:
    lines = [ln for ln in text.splitlines() if ln.strip()]
    assert "Traceback" not in text, text
    return lines[-1] if lines else ""


@pytest.fixture(scope="module")
def template(tmp_path_factory):
    """A project with one kernel module, translated once (copied for each test)."""
    root = tmp_path_factory.mktemp("template") / "proj"
    root.mkdir()
    (root / "pyproject.toml").write_text('[tool.numbakern]\nkernels = ["mykern"]\nout = "gen"\n')
    (root / "mykern.py").write_text(KERNEL)
    r = _cli("mykern:scale", "--signature", SIGNATURE, cwd=root)
    assert r.returncode == 0, r.stdout + r.stderr
    return root


@pytest.fixture
def project(template, tmp_path):
    dest = tmp_path / "proj"
    subprocess.run(["cp", "-r", str(template), str(dest)], check=True)
    return dest


def _manifest(project) -> dict:
    return json.loads((project / "gen" / "manifest.json").read_text())


def _write_manifest(project, data: dict) -> None:
    (project / "gen" / "manifest.json").write_text(json.dumps(data, indent=2))


def _plant_entry(project, filename: str, **changes) -> None:
    data = _manifest(project)
    entry = dict(data["files"]["scale.cu"])
    entry.update(changes)
    data["files"][filename] = entry
    _write_manifest(project, data)


@pytest.mark.parametrize("where", ["outside", "relative", "module"])
def test_check_never_imports_a_kernel_outside_the_project(project, tmp_path, where):
    marker = tmp_path / "pwned"
    if where == "module":  # a module next to the project's, importable by name, but not a kernel module
        (project / "evil.py").write_text(PLANT.format(marker=str(marker)) + KERNEL)
        target = "evil:scale"
    else:
        planted = tmp_path / "elsewhere" / "evil.py"
        planted.parent.mkdir()
        planted.write_text(PLANT.format(marker=str(marker)) + KERNEL)
        target = f"{planted}:scale" if where == "outside" else f"{os.path.relpath(planted, project)}:scale"
    shutil_copy = (project / "gen" / "scale.cu").read_bytes()
    (project / "gen" / "evil.cu").write_bytes(shutil_copy)
    _plant_entry(project, "evil.cu", target=target, kernel=target)
    r = _cli("--check", cwd=project)
    assert not marker.exists(), "--check ran code that the manifest named"
    assert r.returncode == 1
    assert "evil.cu" in r.stdout and "untrusted" in r.stdout and "nothing imported" in r.stdout, r.stdout
    assert "Traceback" not in r.stdout + r.stderr


def test_a_signature_in_a_manifest_is_never_evaluated(project, tmp_path):
    marker = tmp_path / "pwned"
    (project / "planted.py").write_text(PLANT.format(marker=str(marker)))
    data = _manifest(project)
    # a name that eval() of the signature would import, and an expression that would reach os through dunders
    for sig in ("void(planted)", "void(().__class__.__base__)"):
        data["files"]["scale.cu"]["signature"] = sig
        _write_manifest(project, data)
        r = _cli("--check", cwd=project)
        assert not marker.exists()
        assert r.returncode == 1 and "untrusted" in r.stdout, r.stdout + r.stderr


@pytest.mark.parametrize("name", ["/etc/passwd", "../../../x.cu", "sub/dir.cu", ".hidden.cu", "a\nb.cu"])
def test_entry_names_are_plain_file_names(project, name):
    _plant_entry(project, name)
    for args in (("--check",), ("mykern:scale", "--signature", SIGNATURE)):
        r = _cli(*args, cwd=project)
        assert r.returncode == 2, r.stdout + r.stderr
        line = _one_line(r.stderr)
        assert "manifest.json" in line and "not a plain file name" in line and repr(name) in line


@pytest.mark.parametrize("kind", ["folder", "link out", "fifo"])
def test_what_stands_where_a_file_should_be(project, kind):
    cu = project / "gen" / "scale.cu"
    cu.unlink()
    if kind == "folder":
        cu.mkdir()
    elif kind == "link out":
        cu.symlink_to("/etc/hostname")
    else:
        os.mkfifo(cu)
    r = _cli("--check", cwd=project, timeout=120)
    assert r.returncode == 1
    assert "scale.cu" in r.stdout and "invalid" in r.stdout, r.stdout
    assert "Traceback" not in r.stdout + r.stderr
    r = _cli("mykern:scale", "--signature", SIGNATURE, cwd=project, timeout=120)
    assert r.returncode == 1
    assert "move it away" in r.stdout + r.stderr and "Traceback" not in r.stdout + r.stderr
    if kind == "link out":
        assert os.path.islink(cu)  # the link was not written through


def test_a_huge_manifest_is_refused_before_it_is_read(project):
    with open(project / "gen" / "manifest.json", "r+b") as f:
        f.truncate(65 << 20)  # sparse: no disk needed
    r = _cli("--check", cwd=project)
    assert r.returncode == 2
    assert "larger than 64 MiB" in _one_line(r.stderr)


def test_a_forged_hash_does_not_hide_a_hand_edit(project):
    """Finding 4: edit the file to compute something else and put its hash in the manifest."""
    cu = project / "gen" / "scale.cu"
    edited = cu.read_text().replace("* 2", "* 3")
    assert edited != cu.read_text()
    cu.write_text(edited)
    data = _manifest(project)
    import hashlib

    data["files"]["scale.cu"]["file_sha256"] = hashlib.sha256(edited.encode()).hexdigest()
    data["files"]["scale.cu"]["verification"] = {"ok": True, "file_sha256": data["files"]["scale.cu"]["file_sha256"],
                                                 "device": "forged"}
    _write_manifest(project, data)
    r = _cli("--check", cwd=project)
    assert r.returncode == 1
    assert "scale.cu" in r.stdout and "edited" in r.stdout, r.stdout


def test_a_verification_record_of_other_bytes_is_void(project):
    """A file that no translator re-derives (another backend's) keeps no GPU record of other bytes."""
    data = _manifest(project)
    entry = data["files"]["scale.cu"]
    entry["backend"] = {"name": "llm", "model": "m"}
    entry["verification"] = {"ok": True, "file_sha256": "0" * 64, "device": "NVIDIA H200"}
    _write_manifest(project, data)
    r = _cli("--check", cwd=project)
    assert r.returncode == 1
    assert "unverified" in r.stdout and "void" in r.stdout, r.stdout


def test_translate_does_not_overwrite_a_hand_edit(project):
    cu = project / "gen" / "scale.cu"
    cu.write_text(cu.read_text().replace("* 2", "* 3"))
    edited = cu.read_text()
    (project / "mykern.py").write_text(KERNEL.replace("* 2", "* 5"))
    r = _cli("mykern:scale", "--signature", SIGNATURE, cwd=project)
    assert r.returncode == 1
    assert "edited by hand" in r.stdout + r.stderr and "--force" in r.stdout + r.stderr
    assert cu.read_text() == edited
    r = _cli("mykern:scale", "--signature", SIGNATURE, "--force", cwd=project)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "* 5" in cu.read_text()


_RACER = """
import sys
from translate import api
for i in range(int(sys.argv[1])):
    sig = "void(float32[::1], float32[::1])" if i % 2 else "void(float64[::1], float64[::1])"
    api.translate_kernel("mykern:scale", signature=sig, out_dir="gen")
"""


def test_check_never_sees_a_translate_half_done(project):
    """Finding 5: a --check while another process translates reads the manifest and the files under the lock."""
    env = with_path_first(clean(project), ROOT, project)
    env["NUMBA_ENABLE_CUDASIM"] = "0"
    writer = subprocess.Popen([sys.executable, "-c", _RACER, "12"], cwd=project, env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    reports = []
    try:
        while writer.poll() is None:
            r = _cli("--check", cwd=project)
            reports.append(r.stdout + r.stderr)
    finally:
        out, err = writer.communicate(timeout=600)
    assert writer.returncode == 0, err
    assert len(reports) >= 2, "the check never overlapped the writer"
    assert all("edited" not in rep and "Traceback" not in rep for rep in reports), reports


def test_check_waits_for_a_writer_that_holds_the_folder(project):
    """Finding 5, deterministically: a writer has replaced the file but not yet its entry (it holds the folder's
    lock meanwhile, as translate does); a --check started then must wait and report nothing."""
    import fcntl

    gen = project / "gen"
    cu = gen / "scale.cu"
    old_text = cu.read_text()
    new_text = old_text.replace("* 2", "* 2.0f") if "* 2.0f" not in old_text else old_text + "// x\n"
    fd = os.open(gen, os.O_RDONLY | os.O_DIRECTORY)
    fcntl.flock(fd, fcntl.LOCK_EX)
    try:
        cu.write_text(new_text)  # mid-write: the file is new, the manifest still describes the old one
        env = with_path_first(clean(project), ROOT)
        checker = subprocess.Popen([sys.executable, "-m", "translate.cli", "--check"], cwd=project, env=env,
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        _wait_until_blocked_on_a_lock(checker)
        assert checker.poll() is None, "--check read the folder while a writer held it"
        cu.write_text(old_text)  # the writer finishes (here: back to what the manifest lists)
    finally:
        os.close(fd)
    out, err = checker.communicate(timeout=300)
    assert checker.returncode == 0, out + err


def _wait_until_blocked_on_a_lock(process: subprocess.Popen, limit: float = 120.0) -> None:
    """Until ``process`` waits for a file lock (Linux lists each waiting request in /proc/locks with ``->`` and its
    pid), it exits, or ``limit`` seconds pass; without /proc/locks, 15 s: long enough for --check to start, import
    and reach the folder."""
    if not os.path.exists("/proc/locks"):
        time.sleep(15)
        return
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline and process.poll() is None:
        with open("/proc/locks") as f:
            if any(fields[1] == "->" and fields[5] == str(process.pid)
                   for fields in (line.split() for line in f) if len(fields) > 5):
                return
        time.sleep(0.05)


def test_the_next_writer_removes_what_a_killed_one_left(project):
    stray = project / "gen" / ".tmp-a1b2c3manifest.json"
    stray.write_text('{"half": ')
    r = _cli("mykern:scale", "--signature", SIGNATURE, cwd=project)
    assert r.returncode == 0, r.stdout + r.stderr
    assert not stray.exists()


_KILLED = """
import sys
from translate import api
api.translate_kernel("mykern:scale", signature=sys.argv[1], out_dir="gen")
"""


def test_a_writer_killed_at_random_points_loses_nothing(project):
    env = with_path_first(clean(project), ROOT, project)
    env["NUMBA_ENABLE_CUDASIM"] = "0"
    rng = random.Random(20261126)
    before = _manifest(project)["files"].keys()
    for round_ in range(6):
        sig = SIGNATURE if round_ % 2 else SIGNATURE.replace("float32", "float64")
        proc = subprocess.Popen([sys.executable, "-c", _KILLED, sig], cwd=project, env=env,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(rng.uniform(0.5, 6.0))
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        data = _manifest(project)  # still whole JSON
        assert set(before) <= set(data["files"])
    r = _cli("mykern:scale", "--signature", SIGNATURE, cwd=project)
    assert r.returncode == 0, r.stdout + r.stderr
    assert not [n for n in os.listdir(project / "gen") if n.startswith(".tmp-")]
    r = _cli("--check", cwd=project)
    assert r.returncode == 0, r.stdout + r.stderr


def _small_files():
    resource.setrlimit(resource.RLIMIT_FSIZE, (2000, 2000))


def test_a_full_disk_loses_nothing(project):
    cu = project / "gen" / "scale.cu"
    manifest_before = (project / "gen" / "manifest.json").read_text()
    before = cu.read_text()
    (project / "mykern.py").write_text(KERNEL.replace("* 2", "* 7"))
    r = _cli("mykern:scale", "--signature", SIGNATURE, cwd=project, limits=_small_files)
    assert r.returncode != 0
    assert "Traceback" not in r.stdout + r.stderr
    assert cu.read_text() == before
    assert (project / "gen" / "manifest.json").read_text() == manifest_before
    assert not [n for n in os.listdir(project / "gen") if n.startswith(".tmp-")]
