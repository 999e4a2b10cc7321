"""The static gate: what a reply may contain, and the reasons it gives."""

from __future__ import annotations

import pytest

from translate.llm.gate import check_reply, normalize_signature

from . import samples


def gate(text, **kw):
    return check_reply(text, kernel_name=samples.KERNEL, expected_signature=samples.SIGNATURE, **kw)


def test_good_reply_passes_and_loses_its_includes():
    r = gate(samples.GOOD_REPLY)
    assert r.ok, r.reason
    assert "#include" not in r.code
    assert r.code.startswith("__global__ void matmul_tiled(")
    assert r.functions == ("matmul_tiled",)


def test_unfenced_code_is_accepted():
    r = gate(samples.KERNEL_CODE)
    assert r.ok, r.reason


def test_device_functions_and_constants_pass():
    code = samples.KERNEL_CODE.replace("float p = 0.0f;", "float p = zero_of(C[0]);")
    text = ("```cuda\n#include <cuda_runtime.h>\n#define TILE 16\nconstexpr int64_t K = 3;\n"
            "__constant__ float C[2] = {0.0f, 1.0f};\n__device__ float zero_of(float x);\n"
            f"{code}\n__device__ __forceinline__ float zero_of(float x) {{ return x * 0.0f; }}\n```")
    r = gate(text)
    assert r.ok, r.reason
    assert r.functions == ("matmul_tiled", "zero_of")


@pytest.mark.parametrize("reply, words", [
    (samples.ASM_REPLY, ["inline assembly", "asm"]),
    (samples.INCLUDE_REPLY, ["#include <stdio.h>", "not allowed"]),
    (samples.HOST_REPLY, ["cudaMalloc"]),
    (samples.WRONG_SIGNATURE_REPLY, ["signature", "expected:", "int64_t tw", "int tw"]),
    (samples.PROSE_REPLY, ["no ```cuda code block"]),
    ("", ["empty"]),
    ("```cuda\n__global__ void matmul_tiled(", ["not closed"]),
])
def test_rejections_name_the_problem(reply, words):
    r = gate(reply)
    assert not r.ok and r.code == ""
    for w in words:
        assert w in r.reason


@pytest.mark.parametrize("body, word", [
    ('printf("%d", 1);', "printf"),
    ("k<<<1, 1>>>();", "kernel launches"),
    ("float* q = (float*)malloc(4);", "allocation"),
    ("int* q = new int[4];", "new"),
    ("cudaDeviceSynchronize();", "cudaDeviceSynchronize"),
    ("std::sort(out, out + 1);", "std"),
    ("__asm__(\"trap;\");", "inline assembly"),
])
def test_forbidden_constructs_inside_the_kernel(body, word):
    r = gate(samples.GOOD_REPLY.replace("__syncthreads();\n        for", body + "\n        for", 1))
    assert not r.ok and word in r.reason
    assert "line " in r.reason


def test_printf_when_asked_and_forbidden_words_in_comments_and_strings():
    with_printf = samples.GOOD_REPLY.replace("float p = 0.0f;", 'float p = 0.0f; printf("p");')
    assert gate(with_printf, allow_printf=True).ok
    commented = samples.GOOD_REPLY.replace("float p = 0.0f;", "float p = 0.0f; // no asm, no cudaMalloc() here")
    assert gate(commented).ok


@pytest.mark.parametrize("extra, word", [
    ("void host_side(float* x) { x[0] = 1.0f; }", "neither __global__ nor __device__"),
    ("__host__ __device__ float f(float x) { return x; }", "__host__"),
    ("int counter = 0;", "only __global__/__device__ functions and constants"),
    ("struct S { int a; };", "struct"),
    ("#define SQ(x) ((x) * (x))", "function-like macro"),
    ("#ifdef FOO\n#endif", "preprocessor directive"),
    ("__global__ void other(float* x) { x[0] = 0.0f; }", "2 __global__ functions"),
    ('extern "C" { }', "extern blocks are not accepted"),
    ("enum E { A, B };", "got a block"),
])
def test_top_level_allows_only_functions_and_constants(extra, word):
    r = gate(f"```cuda\n{extra}\n{samples.KERNEL_CODE}```")
    assert not r.ok and word in r.reason, r.reason


def test_kernel_name_and_reserved_helpers():
    r = gate(samples.GOOD_REPLY.replace("void matmul_tiled(", "void matmul(", 1))
    assert not r.ok and "named 'matmul', expected 'matmul_tiled'" in r.reason
    helper = "__device__ int64_t nk_floordiv(int64_t a, int64_t b) { return a / b; }\n"
    r = gate(f"```cuda\n{helper}{samples.KERNEL_CODE}```", reserved_names={"nk_floordiv"})
    assert not r.ok and "nk_floordiv" in r.reason and "already defines" in r.reason


def test_size_cap():
    big = samples.GOOD_REPLY.replace("float p = 0.0f;", "float p = 0.0f;" + " " * 40_000)
    r = gate(big)
    assert not r.ok and "limit" in r.reason
    r = gate(samples.GOOD_REPLY, max_lines=10)
    assert not r.ok and "line limit" in r.reason


def test_several_code_blocks():
    two = samples.GOOD_REPLY + "\nand a test:\n```cuda\nint main() { return 0; }\n```\n"
    assert gate(two).ok  # the block with the kernel is the one taken
    both = samples.GOOD_REPLY + samples.GOOD_REPLY
    r = gate(both)
    assert not r.ok and "one ```cuda block" in r.reason


def test_signature_normalization():
    assert normalize_signature('extern "C" __global__ void  k( const float *x ,\n int64_t n )') == \
        "__global__ void k(const float* x, int64_t n)"
    assert normalize_signature("template <int tw>\n__global__ void k(float * x)") == \
        "template<int tw> __global__ void k(float* x)"
    assert normalize_signature("__global__ void k(float* __restrict__ x)") != normalize_signature(
        "__global__ void k(float* x)")
