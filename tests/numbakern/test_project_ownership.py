"""Project discovery never reads a project someone else could have written (issue 38, finding 2): a
``pyproject.toml`` another user planted in a shared folder would make ``translate`` import its kernel modules as you.
The walk stops at a folder or file owned by another user, or writable by others without the sticky bit, as git's
``safe.directory`` does (CVE-2022-24765), and says so."""

from __future__ import annotations

import os
import re
import sys

import pytest

from numbakern import project
from tests import forked
from tests.environments import clean, with_path_first

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OTHER_UID = 65534  # nobody
#: a kernel module that leaves a marker when it is imported: a successful attack
PLANTED = "import pathlib\npathlib.Path({marker!r}).write_text('pwned')\n"


def _give_away(*paths) -> None:
    for path in paths:
        try:
            os.chown(path, OTHER_UID, -1)
        except PermissionError:
            pytest.skip(f"this process (uid {os.geteuid()}) cannot chown files to uid {OTHER_UID}: only root (or "
                        "CAP_CHOWN) can, so a file owned by another user cannot be made here")


def _plant(folder, marker) -> None:
    folder.mkdir(exist_ok=True)
    (folder / "pyproject.toml").write_text('[tool.numbakern]\nkernels = ["evilkernels"]\n')
    (folder / "evilkernels.py").write_text(PLANTED.format(marker=str(marker)))


def test_a_project_owned_by_another_user_is_refused_by_the_cli(tmp_path):
    shared, marker = tmp_path / "shared", tmp_path / "pwned"
    _plant(shared, marker)
    _give_away(shared, shared / "pyproject.toml", shared / "evilkernels.py")
    work = shared / "mine"
    work.mkdir()
    env = with_path_first(clean(tmp_path), ROOT)
    for args in (("--list",), ("vector_add", "--out", str(tmp_path / "gen")), ("--check",)):
        r = forked.run([sys.executable, "-m", "translate.cli", *args], cwd=work, env=env, timeout=300)
        assert r.returncode == 2, r.stdout + r.stderr
        assert not marker.exists(), f"translate {' '.join(args)} imported a module another user planted"
        assert re.match(rf"translate: not using the project {shared / 'pyproject.toml'}: {shared} is owned by "
                        rf"(\w+ \()?uid {OTHER_UID}\)?, not by you", r.stderr), r.stderr
        assert "safe.directory" in r.stderr and project.SAFE_ENV in r.stderr
    # the user may say they trust the folder, as git's safe.directory does
    env[project.SAFE_ENV] = str(shared)
    r = forked.run([sys.executable, "-m", "translate.cli", "--list"], cwd=work, env=env, timeout=300)
    assert marker.exists() and r.returncode == 0, r.stdout + r.stderr


def test_a_pyproject_owned_by_another_user_in_a_folder_of_mine(tmp_path):
    mine = tmp_path / "proj"
    _plant(mine, tmp_path / "pwned")
    _give_away(mine / "pyproject.toml")
    owned = rf"pyproject.toml is owned by (\w+ \()?uid {OTHER_UID}\)?, not by you"
    with pytest.raises(project.ProjectError, match=owned):
        project.find(mine)


@pytest.mark.parametrize("mode", [0o777, 0o775])
def test_a_folder_others_can_write_without_the_sticky_bit_is_refused(tmp_path, mode):
    shared = tmp_path / "shared"
    _plant(shared, tmp_path / "pwned")
    os.chmod(shared, mode)
    if mode == 0o775:
        try:
            os.chown(shared, -1, _a_shared_group())
        except PermissionError:
            pytest.skip("this process cannot give its folder to a group it is not in")
    with pytest.raises(project.ProjectError) as refused:
        project.find(shared)
    assert "can be written by" in str(refused.value) and str(shared) in str(refused.value)


def _a_shared_group() -> int:
    """A group that is not a private group of this user (root's group 0 has no name match with other users)."""
    import grp

    for group in grp.getgrall():
        if group.gr_gid != os.getegid() and group.gr_name != "root":
            return group.gr_gid
    pytest.skip("no group other than this user's own exists here")


def test_a_sticky_world_writable_folder_of_mine_is_walked_through_and_my_project_used(tmp_path):
    """/tmp's case: others may add files to a sticky folder, not replace mine."""
    mine = tmp_path / "proj"
    mine.mkdir()
    (mine / "pyproject.toml").write_text('[tool.numbakern]\nkernels = ["mykernels"]\n')
    os.chmod(mine, 0o1777)
    found = project.find(mine)
    assert found.pyproject == mine / "pyproject.toml"


def test_a_foreign_folder_with_no_project_above_is_the_library(tmp_path):
    """Stopping the walk refuses nothing when there is no project to refuse: numbakern's library, as before."""
    foreign = tmp_path / "foreign"
    (foreign / "sub").mkdir(parents=True)
    _give_away(foreign)
    assert project.find(foreign / "sub").is_library


def test_a_project_above_a_foreign_folder_is_not_reached(tmp_path):
    """My project above a folder another user owns: the walk does not cross that folder (git's rule)."""
    (tmp_path / "pyproject.toml").write_text('[tool.numbakern]\nkernels = ["mykernels"]\n')
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    _give_away(foreign)
    with pytest.raises(project.ProjectError, match=rf"{foreign} is owned by (\w+ \()?uid {OTHER_UID}"):
        project.find(foreign)
