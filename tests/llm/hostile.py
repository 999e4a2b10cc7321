"""Hostile replies for ``vector_add``, each with a fragment its refusal must name, and good variants that must pass.

Each hostile reply tries one way past a text-reading gate (found in a security review, or a variant of one):
host code hidden from NVRTC, files read at compile time, macros that change the launcher's types, banned words
assembled from pieces or written in another spelling, host symbols named without a call, oversized or broken
fences. The good variants use the same spellings for harmless code and must be accepted.
"""

from __future__ import annotations

SIGNATURE = ("__global__ void vector_add(const float* a, int64_t a_shape0, const float* b, int64_t b_shape0, "
             "float* out, int64_t out_shape0)")
BODY = """{
    int64_t start = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    int64_t stride = (int64_t)blockDim.x * gridDim.x;
    for (int64_t i = start; i < out_shape0; i += stride) {
        out[i] = a[i] + b[i];
    }
}
"""
KERNEL = f"{SIGNATURE}\n{BODY}"
GOOD = f"Here is the CUDA C:\n\n```cuda\n#include <stdint.h>\n\n{KERNEL}```\n"

#: the marker file a successful attack would create (it never may)
PWNED = "/tmp/numbakern-hostile-pwned"


def reply(code: str) -> str:
    return f"Here is the kernel.\n\n```cuda\n{code}```\n"


def in_body(statement: str) -> str:
    """The kernel with ``statement`` as its first statement."""
    return reply(KERNEL.replace("{\n", "{\n    " + statement + "\n", 1))


DIGRAPH_KERNEL = KERNEL.replace("{\n", "<%\n", 1)[::-1].replace("}", ">%", 1)[::-1]

#: name -> (reply, a fragment of the one-line refusal)
HOSTILE: dict[str, tuple[str, str]] = {
    "host code after digraph braces, under #if !defined(__CUDACC_RTC__)": (reply(
        DIGRAPH_KERNEL + "#if !defined(__CUDACC_RTC__)\n#include <stdlib.h>\n"
        f'static int pwned = system("touch {PWNED}");\n#endif\n'), "'#if !defined(__CUDACC_RTC__)'"),
    "the same with %:if": (reply(
        DIGRAPH_KERNEL + "%:if !defined(__CUDACC_RTC__)\n%:include <stdlib.h>\n"
        f'static int pwned = system("touch {PWNED}");\n%:endif\n'), "'%:if !defined(__CUDACC_RTC__)'"),
    "#include of the environment inside the kernel": (in_body('#include "/proc/self/environ"'),
                                                        "'#include \"/proc/self/environ\"'"),
    "#include of an env file at the top": (reply('#include ".env"\n' + KERNEL), "'#include \".env\"'"),
    "#define float double": (reply("#define float double\n" + KERNEL), "'#define float double'"),
    "#define int64_t int": (reply("#define int64_t int\n" + KERNEL), "'#define int64_t int'"),
    "a numeric #define": (reply("#define N 16\n" + KERNEL), "'#define N 16'"),
    "asm pasted by a macro": (reply("#define CAT(x, y) x##y\n" + KERNEL.replace(
        "{\n", '{\n    CAT(as, m)("trap;");\n', 1)), "'#define CAT(x, y) x##y'"),
    "asm pasted without a macro": (in_body('as ## m volatile("trap;");'), "'##'"),
    "a digit separator before asm on the same line": (in_body("int64_t ten = 1'0; asm(\"trap;\");"), "'asm'"),
    "%:include at the top": (reply("%:include <stdio.h>\n" + KERNEL), "'%:include <stdio.h>'"),
    "??=include (a trigraph)": (reply('??=include "/proc/self/environ"\n' + KERNEL), "'#include"),
    "asm built by a line splice": (in_body('as\\\nm volatile("trap;");'), "'asm'"),
    "#include built by a line splice": (reply('#inc\\\nlude "/proc/self/environ"\n' + KERNEL), "'#include"),
    "(malloc)(64)": (in_body("float* q = (float*)(malloc)(64);"), "'malloc'"),
    "__nv_aligned_device_malloc": (in_body("float* q = (float*)__nv_aligned_device_malloc(64, 16);"),
                                   "'__nv_aligned_device_malloc'"),
    "assert": (in_body("assert(out_shape0 >= 0);"), "'assert': a failed device assert is a trap"),
    "__assertfail": (in_body("if (out_shape0 < 0) { __assertfail(0, 0, 0, 0, 1); }"), "'__assertfail'"),
    "#pragma unroll 2000000000": (reply(KERNEL.replace("    for (", "    #pragma unroll 2000000000\n    for (", 1)),
                                  "'#pragma unroll 2000000000'"),
    "a function pointer to malloc": (in_body("void* (*get)(size_t) = malloc;"), "'malloc'"),
    "&system": (in_body("auto run = &system;"), "'system'"),
    'extern "C" __device__ int vprintf(...)': (reply(
        'extern "C" __device__ int vprintf(const char*, const char*);\n' + KERNEL), "'extern'"),
    "a raw string": (in_body('const char* s = R"x(rm -rf /)x";'), 'the string literal R"x(rm -rf /)x"'),
    "a universal character name for asm": (in_body('\\u0061sm volatile("trap;");'), "backslash"),
    "a homoglyph malloc": (in_body("float* q = (float*)m\u0430lloc(64);"), "U+0430"),
    "__attribute__((constructor))": (reply(
        "__attribute__((constructor)) __device__ void pwn() { }\n" + KERNEL), "'__attribute__'"),
    "[[gnu::constructor]]": (reply("[[gnu::constructor]] __device__ void pwn() { }\n" + KERNEL), "attribute"),
    "a host function": (reply("void pwn() { }\n" + KERNEL), "neither __global__ nor __device__"),
    "__host__ __device__": (reply("__host__ __device__ int f() { return 0; }\n" + KERNEL), "'__host__'"),
    "a file-scope initialiser that calls": (reply(
        "__device__ int f() { return 1; }\nconst int x = f();\n" + KERNEL), "initialiser of 'x'"),
    "a static initialiser at file scope": (reply(
        f'static int pwned = system("touch {PWNED}");\n' + KERNEL), "'system'"),
    "mutable global state": (reply("__device__ int counter = 0;\n" + KERNEL), "not a constant"),
    "_Pragma": (in_body('_Pragma("unroll")'), "'_Pragma'"),
    "__CUDACC_RTC__ in the code": (in_body("if (__CUDACC_RTC__) { out[0] = 0.0f; }"), "'__CUDACC_RTC__'"),
    "__FILE__": (in_body("(void)__FILE__;"), "'__FILE__'"),
    "a kernel launch": (in_body("vector_add<<<1, 1>>>(a, a_shape0, b, b_shape0, out, out_shape0);"),
                        "a kernel launch"),
    "std::system": (in_body('std::system("id");'), "'::'"),
    "cudaMalloc": (in_body("cudaMalloc((void**)&out, 16);"), "'cudaMalloc'"),
    "printf": (in_body('printf("%f", a[0]);'), "'printf'"),
    "a typedef of a launcher type": (reply("typedef int int64_t;\n" + KERNEL), "'typedef'"),
    "__launch_bounds__": (reply(KERNEL.replace("__global__ void", "__global__ void __launch_bounds__(64)")),
                          "'__launch_bounds__'"),
    "a second __global__ function": (reply("__global__ void pwn() { }\n" + KERNEL), "named 'pwn'"),
    "a changed parameter type": (reply(KERNEL.replace("int64_t out_shape0", "int out_shape0")),
                                 "signature does not match"),
    "a user-defined literal": (in_body("float s = 1.0_sec;"), "'1.0_sec' is not a C++ number literal"),
    "an explicit instantiation": (reply(KERNEL + "template __global__ void vector_add(const float*, int64_t, "
                                        "const float*, int64_t, float*, int64_t);\n"), "explicit instantiation"),
    "a huge reply": ("```cuda\n" + KERNEL + "// " + "x" * 300_000 + "\n```\n", "262144"),
    "an unclosed fence": ("```cuda\n" + "int64_t x;\n" * 20_000, "not closed"),
}

#: replies the gate accepts that make NVRTC work without end (each was still compiling after a minute or more, at
#: gigabytes, when NVRTC ran in the translating process): name -> reply
STALLS: dict[str, str] = {
    "exponential template instantiation": reply(
        "template <int A, int B> __device__ float grow(float x)\n{\n"
        "    if constexpr (A == 0) { return x + B; }\n"
        "    else { return grow<A - 1, 2 * B>(x) + grow<A - 1, 2 * B + 1>(x); }\n"
        "}\n" + KERNEL.replace("a[i] + b[i]", "grow<30, 0>(a[i]) + b[i]")),
    "a 1 GiB constant array with two initialisers": reply(
        "__device__ const float table[1 << 28] = {1, 2};\n"
        + KERNEL.replace("a[i] + b[i]", "a[i] + b[i] + table[i & 1]")),
}

#: good replies in unusual spellings: name -> reply (all must be accepted, and read as the kernel)
GOOD_VARIANTS: dict[str, str] = {
    "digraph braces and brackets": reply(DIGRAPH_KERNEL.replace("a[i] + b[i]", "a<:i:> + b<:i:>")),
    "a digit separator": reply(KERNEL.replace("i += stride", "i += stride * 1'0 / 10")),
    "a line splice inside an identifier": reply(KERNEL.replace("stride;", "str\\\nide;")),
    "alternative tokens": reply(KERNEL.replace("i < out_shape0", "i < out_shape0 and not (i < 0)")),
    "a #pragma unroll": reply(KERNEL.replace("    for (", "    #pragma unroll 4\n    for (", 1)),
    "a code line commented out by a spliced comment": reply(KERNEL.replace(
        "{\n", f'{{\n    // a comment ending in a splice \\\n    system("touch {PWNED}");\n', 1)),
    "two code blocks": ("First a helper:\n```cuda\n__device__ float add(float x, float y) { return x + y; }\n```\n"
                        "then the kernel:\n```cuda\n" + KERNEL.replace("a[i] + b[i]", "add(a[i], b[i])") + "```\n"),
}
