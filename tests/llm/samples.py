"""Replies a model might give for the lecture's ``matmul_tiled``, good and bad, and the prompt spec they answer."""

from __future__ import annotations

import inspect

from numbakern.kernels.matmul import matmul_tiled
from translate.llm.prompt import Argument, PromptSpec

KERNEL = "matmul_tiled"
SIGNATURE = (
    "__global__ void matmul_tiled(const float* m, int64_t m_shape0, int64_t m_shape1, "
    "const float* n, int64_t n_shape0, int64_t n_shape1, float* out, int64_t out_shape0, int64_t out_shape1, "
    "int64_t tw)"
)

#: the lecture's kernel as the library defines it (what the pipeline puts in the prompt)
PYTHON_SOURCE = inspect.getsource(matmul_tiled.py_func)


def spec(**overrides) -> PromptSpec:
    fields = dict(
        kernel_name=KERNEL,
        python_source=PYTHON_SOURCE,
        arguments=(
            Argument("m", "array(float32, 2d, C)", "const float* m, int64_t m_shape0, int64_t m_shape1"),
            Argument("n", "array(float32, 2d, C)", "const float* n, int64_t n_shape0, int64_t n_shape1"),
            Argument("out", "array(float32, 2d, C)", "float* out, int64_t out_shape0, int64_t out_shape1"),
            Argument("tw", "int64", "int64_t tw"),
        ),
        signature=SIGNATURE,
        variables={"p": "float32", "idx": "int64", "ph": "int64", "r": "int64", "c": "int64", "h": "int64",
                   "k": "int64", "shar": "array(float32, 1d, C)"},
        numba_signature="void(float32[:, ::1], float32[:, ::1], float32[:, ::1], int64)",
    )
    fields.update(overrides)
    return PromptSpec(**fields)


KERNEL_CODE = '''\
__global__ void matmul_tiled(const float* m, int64_t m_shape0, int64_t m_shape1,
                             const float* n, int64_t n_shape0, int64_t n_shape1,
                             float* out, int64_t out_shape0, int64_t out_shape1, int64_t tw)
{
    int64_t tc = threadIdx.x, tr = threadIdx.y;
    int64_t r = (int64_t)blockIdx.y * blockDim.y + tr, c = (int64_t)blockIdx.x * blockDim.x + tc;
    int64_t h = m_shape0, k = m_shape1;
    int64_t k2 = n_shape0, w = n_shape1;

    extern __shared__ float shar[];
    float* ms = shar;
    float* ns = shar + tw * tw;

    float p = 0.0f;
    for (int64_t ph = 0; ph < (int64_t)ceil((double)k / (double)tw); ph++) {
        int64_t idx = ph * tw;
        ms[tr * tw + tc] = (r < h && idx + tc < k) ? m[r * m_shape1 + tc + idx] : 0.0f;
        ns[tr * tw + tc] = (c < w && idx + tr < k) ? n[(tr + idx) * n_shape1 + c] : 0.0f;
        __syncthreads();
        for (int64_t i = 0; i < tw; i++) {
            p += ms[tr * tw + i] * ns[tw * i + tc];
        }
        __syncthreads();
    }
    if (r < h && c < w) {
        out[r * out_shape1 + c] = p;
    }
}
'''

GOOD_REPLY = f"Here is the CUDA C translation:\n\n```cuda\n#include <stdint.h>\n\n{KERNEL_CODE}```\n"

#: compiles nowhere: an undeclared identifier
BROKEN_REPLY = GOOD_REPLY.replace("float p = 0.0f;", "float p = zero;")

ASM_REPLY = GOOD_REPLY.replace("__syncthreads();\n        for", 'asm volatile("bar.sync 0;");\n        for', 1)
INCLUDE_REPLY = GOOD_REPLY.replace("#include <stdint.h>", "#include <stdio.h>")
HOST_REPLY = GOOD_REPLY.replace(
    "```\n", "\nvoid run(float* d) {\n    cudaMalloc((void**)&d, 16);\n}\n```\n")
WRONG_SIGNATURE_REPLY = GOOD_REPLY.replace("int64_t out_shape1, int64_t tw)", "int64_t out_shape1, int tw)")
PROSE_REPLY = "Sorry, I cannot convert this kernel."

#: compiles and passes the gate, but reads only the first tile of ``k``: wrong wherever k > tw
FIRST_TILE_ONLY_REPLY = GOOD_REPLY.replace("ph < (int64_t)ceil((double)k / (double)tw)", "ph < 1")
