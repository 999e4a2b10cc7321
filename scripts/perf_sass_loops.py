"""The instruction mix of each loop of a kernel's SASS, without a GPU: what an issue-bound kernel spends next to
its FFMAs.

For Numba's ``matmul_pipelined`` and attention kernels (PTX from ``numba.cuda.compile_ptx`` with the real CUDA
target, assembled by ``ptxas``), their translated ``generated_cuda/*.cu`` (nvcc) and the hand CUDA C reference
``sgemm_async<128,128,16,8,8,2>`` of ``scripts/perf_vec4.py`` (nvcc): every backward branch of the SASS is a loop,
and for each the script counts its instructions, FFMAs, shared loads, cp.async (LDGSTS), MUFU, shuffles and integer
instructions. Needs ``ptxas``/``nvcc`` and ``nvdisasm`` (``pip install nvidia-cuda-nvdisasm``).

    python scripts/perf_sass_loops.py [--json FILE]
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from collections import Counter

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

NVCC_FAST = ["-ftz=true", "-prec-div=false", "-prec-sqrt=false", "-fmad=true"]
INTEGER = ("IMAD", "IADD3", "LEA", "SHF", "LOP3", "ISETP", "SEL", "MOV", "PLOP3")
SHOWN = ("FFMA", "FMUL", "LDS", "LDGSTS", "MUFU", "SHFL", "BAR")


def nvdisasm() -> str | None:
    found = shutil.which("nvdisasm")
    if found:
        return found
    hits = glob.glob(os.path.join(sysconfig.get_paths()["purelib"], "nvidia", "*", "bin", "nvdisasm"))
    return hits[0] if hits else None


def numba_cubins(tmp: str) -> dict[str, str]:
    """Numba's kernels as cubins (the PTX assembled by ptxas), compiled in a helper process without the simulator."""
    script = r"""
import json, sys
from numba import cuda
from numbakern.kernels import attention as at, matmul_pipe as mp
out = {}
k = mp.matmul_pipelined(**mp.PIPE_DEFAULT_CONFIG)
out["numba matmul_pipelined"] = cuda.compile_ptx(k.py_func, "void(float32[:, ::1], float32[:, ::1], float32[:, ::1])",
    cc=(9, 0), fastmath=True, launch_bounds=k.targetoptions["launch_bounds"])[0]
for d in (64, 128):
    k = at.flash_attention(**at.config_for(d, False))
    out[f"numba attention_d{d}"] = cuda.compile_ptx(k.py_func, at.SIGNATURE[0], cc=(9, 0), fastmath=True,
                                                    launch_bounds=k.targetoptions["launch_bounds"])[0]
json.dump(out, sys.stdout)
"""
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"}
    r = subprocess.run([sys.executable, "-c", script], cwd=ROOT, env=env, capture_output=True, text=True, check=True)
    cubins = {}
    for name, ptx in json.loads(r.stdout).items():
        p = os.path.join(tmp, re.sub(r"\W+", "_", name))
        with open(p + ".ptx", "w") as f:  # numba-cuda's NVVM stamps a newer .version than ptxas 13.0 reads
            f.write(re.sub(r"^\.version \d+\.\d+", ".version 9.0", ptx, count=1, flags=re.M))
        subprocess.run(["ptxas", "-arch=sm_90", "-O3", p + ".ptx", "-o", p + ".cubin"], check=True)
        cubins[name] = p + ".cubin"
    return cubins


def nvcc_cubins(tmp: str) -> dict[str, str]:
    import perf_vec4

    cubins = {}
    for stem in ("matmul_pipelined", "attention_d64", "attention_d128"):
        out = os.path.join(tmp, stem + "_c.cubin")
        subprocess.run(["nvcc", "-arch=sm_90", "-cubin", "-O3", *NVCC_FAST,
                        os.path.join(ROOT, "generated_cuda", stem + ".cu"), "-o", out], check=True)
        cubins[f"translated C {stem}.cu"] = out
    src = os.path.join(tmp, "hand.cu")
    with open(src, "w") as f:
        f.write(perf_vec4.CUDA_C + "\ntemplate __global__ void sgemm_async<128,128,16,8,8,2>"
                "(const float*, const float*, float*, int, int, int);\n")
    out = os.path.join(tmp, "hand.cubin")
    subprocess.run(["nvcc", "-arch=sm_90", "-cubin", "-O3", "--use_fast_math", "-std=c++17", src, "-o", out], check=True)
    cubins["hand CUDA C sgemm_async<128,128,16,8,8,2>"] = out
    return cubins


def loops(sass: str) -> list[dict]:
    """Each backward branch's body: instruction count and mix."""
    labels, ops = {}, []
    for line in sass.splitlines():
        m = re.match(r"^\s*\.(L_x_\d+):", line)
        if m:
            labels[m.group(1)] = len(ops)
        elif re.match(r"\s+/\*[0-9a-f]{4}\*/", line):
            ops.append(re.sub(r"^\s+/\*[0-9a-f]{4}\*/\s+", "", line).split(";")[0].strip())

    def name(op):
        t = op.split()
        if t[0].startswith("@"):
            t = t[1:]
        return t[0].split(".")[0]

    out = []
    for i, op in enumerate(ops):
        m = re.search(r"\(\.(L_x_\d+)\)", op)
        if name(op) == "BRA" and m and labels.get(m.group(1), i + 1) <= i:
            cnt = Counter(name(x) for x in ops[labels[m.group(1)]:i + 1])
            row = {"instructions": sum(cnt.values()), **{k: cnt[k] for k in SHOWN if cnt[k]},
                   "integer": sum(cnt[k] for k in INTEGER)}
            row["ffma_share"] = round(cnt["FFMA"] / row["instructions"], 3)
            out.append(row)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--json", help="write the loop table here")
    args = ap.parse_args()
    dis = nvdisasm()
    if dis is None or not shutil.which("ptxas") or not shutil.which("nvcc"):
        print("needs ptxas, nvcc and nvdisasm (pip install nvidia-cuda-nvdisasm)", file=sys.stderr)
        return 2
    table = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name, cubin in {**numba_cubins(tmp), **nvcc_cubins(tmp)}.items():
            sass = subprocess.run([dis, "-c", cubin], capture_output=True, text=True, check=True).stdout
            table[name] = [lp for lp in loops(sass) if lp["instructions"] > 1]
    for name, lps in table.items():
        print(name)
        for lp in lps:
            print("   ", json.dumps(lp))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(table, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
