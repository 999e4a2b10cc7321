"""The static gate: what a reply may contain, the reasons it gives, and the code it writes back."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from translate.llm.gate import check_reply, is_number_literal, signature_text
from translate.llm.lexer import tokenize
from translate.llm.rules import RULES, TABLE, markdown_table

from . import hostile, samples


def gate(text, **kw):
    return check_reply(text, kernel_name=samples.KERNEL, expected_signature=samples.SIGNATURE, **kw)


def gate_vector_add(text, **kw):
    return check_reply(text, kernel_name="vector_add", expected_signature=hostile.SIGNATURE, **kw)


def significant(code: str) -> list[str]:
    return [t.text for t in tokenize(code) if t.kind not in ("comment",)]


def test_good_reply_passes_and_loses_its_includes():
    r = gate(samples.GOOD_REPLY)
    assert r.ok, r.reason
    assert "#include" not in r.code
    assert r.code.startswith("__global__ void matmul_tiled(")
    assert r.functions == ("matmul_tiled",)
    assert significant(r.code) == significant(samples.KERNEL_CODE)
    # each line of the code says where it was in the reply (the include was line 1 of the block)
    assert r.origin[0] == "line 3" and len(r.origin) == len(r.code.splitlines())


def test_unfenced_code_is_accepted():
    r = gate(samples.KERNEL_CODE)
    assert r.ok, r.reason


def test_device_functions_constants_and_shared_memory_pass():
    code = samples.KERNEL_CODE.replace("float p = 0.0f;", "float p = zero_of(C[0]) + (float)(K * TWICE);")
    text = ("```cuda\n#include <cuda_runtime.h>\nconstexpr int64_t K = 3;\nstatic constexpr int64_t TWICE = K * 2;\n"
            "__constant__ float C[2] = {0.0f, 1.0f};\n__device__ float zero_of(float x, float y = 0.0f);\n"
            "extern __shared__ __align__(16) unsigned char spare[];\n"
            "template <typename T, int N>\n__device__ __forceinline__ T scaled(T x, T y = 0) { return x * N + y; }\n"
            f"{code}\n__device__ __forceinline__ float zero_of(float x, float y) {{ return x * 0.0f + y; }}\n```")
    r = gate(text)
    assert r.ok, r.reason
    assert r.functions == ("scaled", "matmul_tiled", "zero_of")


@pytest.mark.parametrize("name", list(hostile.GOOD_VARIANTS))
def test_unusual_spellings_of_harmless_code_pass_and_are_written_canonically(name):
    r = gate_vector_add(hostile.GOOD_VARIANTS[name])
    assert r.ok, r.reason
    for odd in ("<%", "%>", "<:", ":>", "1'0", " and ", "\\\n"):
        assert odd not in r.code
    assert significant(r.code)[:len(significant(hostile.SIGNATURE))] == significant(hostile.SIGNATURE) or \
        name == "two code blocks"


def test_a_comment_continued_by_a_splice_stays_a_comment():
    r = gate_vector_add(hostile.GOOD_VARIANTS["a code line commented out by a spliced comment"])
    assert r.ok, r.reason
    assert "system" not in significant(r.code)  # neither the gate nor the compiler reads it as code
    line = next(line for line in r.code.splitlines() if "system" in line)
    assert line.lstrip().startswith("//") and not line.endswith("\\")


@pytest.mark.parametrize("name", list(hostile.HOSTILE))
def test_hostile_replies_are_refused_with_a_reason(name):
    reply, fragment = hostile.HOSTILE[name]
    t0 = time.monotonic()
    r = gate_vector_add(reply)
    assert time.monotonic() - t0 < 1.0  # linear work, even for the 300 KB reply and the unclosed fence
    assert not r.ok and r.code == ""
    assert fragment in r.reason, r.reason


@pytest.mark.parametrize("reply, words", [
    (samples.ASM_REPLY, ["'asm'", "inline assembly escapes every check", "line "]),
    (samples.INCLUDE_REPLY, ["#include <stdio.h>", "preprocessor line"]),
    (samples.HOST_REPLY, ["cudaMalloc"]),
    (samples.WRONG_SIGNATURE_REPLY, ["signature", "expected:", "int64_t tw", "int tw"]),
    (samples.PROSE_REPLY, ["no ```cuda code block"]),
    ("", ["empty"]),
    ("```cuda\n__global__ void matmul_tiled(", ["not closed"]),
    ("```python\nprint(1)\n```", ["no ```cuda code block (only: python)"]),
])
def test_rejections_name_the_problem(reply, words):
    r = gate(reply)
    assert not r.ok and r.code == ""
    for w in words:
        assert w in r.reason, r.reason


@pytest.mark.parametrize("body, word", [
    ('printf("%d", 1);', "'printf'"),
    ("k<<<1, 1>>>();", "a kernel launch"),
    ("float* q = (float*)malloc(4);", "'malloc'"),
    ("int* q = new int[4];", "'new'"),
    ("cudaDeviceSynchronize();", "'cudaDeviceSynchronize'"),
    ("std::sort(out, out + 1);", "'::'"),
    ("__asm__(\"trap;\");", "'__asm__'"),
    ("static int calls = 0;", "'static' inside a function"),
    ("char c = 'x';", "the character literal 'x'"),
    ("float f = 1.0_km;", "not a C++ number literal"),
    ("#pragma GCC unroll 4", "preprocessor line"),
    ("x[[y]] = 0;", "attribute"),
])
def test_forbidden_constructs_inside_the_kernel(body, word):
    r = gate(samples.GOOD_REPLY.replace("__syncthreads();\n        for", body + "\n        for", 1))
    assert not r.ok and word in r.reason, r.reason
    assert r.reason.startswith("line ")


def test_printf_when_asked_and_forbidden_words_in_comments():
    with_printf = samples.GOOD_REPLY.replace("float p = 0.0f;", 'float p = 0.0f; printf("p=%f ??", p);')
    r = gate(with_printf, allow_printf=True)
    assert r.ok, r.reason
    assert 'printf("p=%f \\?\\?", p);' in r.code  # '?' escaped: no trigraph can form in the written string
    assert not gate(with_printf.replace('"p', 'u8"p'), allow_printf=True).ok  # only plain strings
    commented = samples.GOOD_REPLY.replace("float p = 0.0f;", "float p = 0.0f; // no asm, no cudaMalloc() here")
    assert gate(commented).ok


@pytest.mark.parametrize("extra, word", [
    ("void host_side(float* x) { x[0] = 1.0f; }", "neither __global__ nor __device__"),
    ("__host__ __device__ float f(float x) { return x; }", "'__host__'"),
    ("int counter = 0;", "not a constant"),
    ("struct S { int a; };", "'struct'"),
    ("#define SQ(x) ((x) * (x))", "preprocessor line"),
    ("#ifdef FOO\n#endif", "preprocessor line"),
    ("__global__ void other(float* x) { x[0] = 0.0f; }", "named 'other'"),
    ('extern "C" { }', "'extern'"),
    ("enum E { A, B };", "'enum'"),
    ("constexpr int A = 1, B = 2;", "one constant per declaration"),
    ("constexpr float* P = 0;", "scalar type"),
    ("const int N;", "needs an initialiser"),
    ("constexpr auto F = []{};", "initialiser of 'F'"),
    ("constexpr int int64_t = 3;", "the name 'int64_t'"),
    ("__device__ int launch_matmul_tiled(int x) { return x; }", "the name 'launch_matmul_tiled'"),
    ("__device__ int matmul_tiled(int x) { return x; }", "the name 'matmul_tiled'"),
    ("template <> __device__ int f<1>() { return 1; }", "template <>"),
    ("__shared__ float tile[16];", "not a constant"),
    ("static_assert(1, \"x\");", "string literal"),
])
def test_top_level_allows_only_functions_constants_and_shared_arrays(extra, word):
    r = gate(f"```cuda\n{extra}\n{samples.KERNEL_CODE}```")
    assert not r.ok and word in r.reason, r.reason


def test_kernel_name_and_reserved_helpers():
    r = gate(samples.GOOD_REPLY.replace("void matmul_tiled(", "void matmul(", 1))
    assert not r.ok and "named 'matmul', expected 'matmul_tiled'" in r.reason
    helper = "__device__ int64_t nk_floordiv(int64_t a, int64_t b) { return a / b; }\n"
    r = gate(f"```cuda\n{helper}{samples.KERNEL_CODE}```", reserved_names={"nk_floordiv"})
    assert not r.ok and "nk_floordiv" in r.reason and "already defines" in r.reason
    calls = samples.GOOD_REPLY.replace("int64_t idx = ph * tw;", "int64_t idx = nk_floordiv(ph * tw, 1);")
    assert gate(calls, reserved_names={"nk_floordiv"}).ok  # calling a helper is what it is for


def test_size_caps_come_before_any_parsing():
    big = samples.GOOD_REPLY.replace("float p = 0.0f;", "float p = 0.0f;" + " " * 40_000)
    r = gate(big)
    assert not r.ok and "limit" in r.reason and "bounded work" in r.reason
    r = gate(samples.GOOD_REPLY, max_lines=10)
    assert not r.ok and "line limit" in r.reason
    t0 = time.monotonic()
    r = gate("```cuda\n" * 200_000, max_reply_chars=10**7)  # 1.6 MB of unclosed fences: one linear pass
    assert not r.ok and time.monotonic() - t0 < 1.0


def test_several_code_blocks_are_joined_and_messages_name_the_block():
    two = samples.GOOD_REPLY + "\nand a test:\n```cuda\nint main() { return 0; }\n```\n"
    r = gate(two)
    assert not r.ok and r.reason.startswith("block 2, line 1:") and "'main'" in r.reason
    both = samples.GOOD_REPLY + samples.GOOD_REPLY
    r = gate(both)
    assert not r.ok and "2 __global__ functions" in r.reason
    prose_blocks = samples.GOOD_REPLY + "\nRun it with:\n```bash\nnvcc -o x x.cu\n```\n"
    assert gate(prose_blocks).ok  # other languages are explanation, not code


def test_the_written_code_is_exactly_the_checked_tokens():
    for name, reply in hostile.GOOD_VARIANTS.items():
        r = gate_vector_add(reply)
        again = gate_vector_add(f"```cuda\n{r.code}```")
        assert again.ok and again.code == r.code, name  # writing back is a fixed point


def test_number_literals():
    for ok in ("0", "10", "1'000", "0x1F", "0b101", "017", "1u", "1ULL", "1ll", "1.", ".5", "1.5e-3f", "1e5",
               "0x1.8p3", "2.0L"):
        assert is_number_literal(ok), ok
    for bad in ("1_km", "08", "1.0.0", "1e", "0x", "1uu", "1lL", "0x1.8"):
        assert not is_number_literal(bad), bad


def test_signature_text():
    assert signature_text("template <int tw>\n__global__ void k( const float *x ,\n int64_t n )") == \
        "template <int tw> __global__ void k(const float* x, int64_t n)"
    assert signature_text(samples.SIGNATURE) == samples.SIGNATURE


def test_the_rule_table_gives_every_entry_a_reason_and_the_docs_show_it():
    assert len(RULES) == len(TABLE)
    for rule in TABLE:
        assert rule.verdict in ("allowed", "dropped", "refused") and len(rule.reason) > 20, rule.key
    docs = (Path(__file__).resolve().parents[2] / "docs" / "llm.md").read_text()
    assert markdown_table() in docs, "docs/llm.md's rule table is out of date: paste rules.markdown_table()"
