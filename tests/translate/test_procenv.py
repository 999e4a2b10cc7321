"""``translate.procenv``: a secret leaves what ``/proc/<pid>/environ`` shows, and stays in the program's environment.

Each check runs in a fresh process whose environment block holds the secret (the way a shell's export puts it
there), so this test process's own block is never rewritten.
"""

import json
import os
import subprocess
import sys

import pytest

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc/<pid>/environ is Linux's")

SECRET = "v4lue-of-a-secret-9d2c61"

CHILD = r"""
import ctypes, json, os, subprocess
from translate import procenv
before = open("/proc/self/environ", "rb").read().decode(errors="replace")
concealed = procenv.conceal(["NK_SECRET_TOKEN"])
after = open("/proc/self/environ", "rb").read().decode(errors="replace")
libc = ctypes.CDLL(None)
libc.getenv.restype = ctypes.c_char_p
libc.prctl.restype = ctypes.c_int
dumpable_before = libc.prctl(3, 0, 0, 0, 0)  # PR_GET_DUMPABLE
procenv.make_non_dumpable()
print(json.dumps({
    "concealed": concealed, "in_block_before": "@SECRET@" in before, "in_block_after": "@SECRET@" in after,
    "os_environ": os.environ["NK_SECRET_TOKEN"], "path_like": os.environ["NK_PATHLIKE"],
    "getenv": libc.getenv(b"NK_SECRET_TOKEN").decode(), "getenv_path_like": libc.getenv(b"NK_PATHLIKE").decode(),
    "child": subprocess.run(["sh", "-c", "echo $NK_SECRET_TOKEN $NK_PATHLIKE"], capture_output=True,
                            text=True).stdout.strip(),
    "dumpable": [dumpable_before, libc.prctl(3, 0, 0, 0, 0)], "other": os.environ["NK_PLAIN"]}))
""".replace("@SECRET@", SECRET)


def test_a_secret_leaves_the_environment_block_and_stays_in_the_environment(tmp_path):
    env = {**os.environ, "NK_SECRET_TOKEN": SECRET, "NK_PATHLIKE": f"/opt/lib:{SECRET}:/usr/lib",
           "NK_PLAIN": "nothing-secret-here"}
    run = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True, env=env, cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    seen = json.loads(run.stdout)
    assert seen["concealed"] and seen["in_block_before"] and not seen["in_block_after"]
    # a copy of the value inside another variable is gone from the block too; the program sees both as before
    assert seen["os_environ"] == seen["getenv"] == SECRET
    assert seen["path_like"] == seen["getenv_path_like"] == f"/opt/lib:{SECRET}:/usr/lib"
    assert seen["child"] == f"{SECRET} /opt/lib:{SECRET}:/usr/lib"
    assert seen["other"] == "nothing-secret-here"
    assert seen["dumpable"] == [1, 0]
