"""What model-written device code may contain: one table, each entry with its verdict and the reason for it.

``translate.llm.gate`` applies the table to the reply's tokens (``translate.llm.lexer``); a refusal quotes the
entry's reason, so the model is told why, and ``docs/llm.md`` shows the same table to people.

The principle behind it: the model writes device code only. The project's emitter writes every line that runs on
the host (the includes, the ``extern "C"`` launchers), so anything that could put host code into the file, make
the compiler read something the gate did not (macros, conditional compilation, includes), change the types the
launcher passes (aliases), or reach the machine (files, processes, the environment) is refused, wherever it is
and whether or not it is called.
"""

from __future__ import annotations

from dataclasses import dataclass

ALLOWED, DROPPED, REFUSED = "allowed", "dropped", "refused"

#: the largest count of a ``#pragma unroll N`` (the "pragma_unroll" and "unroll_count" rules)
MAX_UNROLL = 256


@dataclass(frozen=True)
class Rule:
    key: str
    what: str  # what the entry covers, as a person reads it
    verdict: str  # ALLOWED | DROPPED | REFUSED
    reason: str  # why; a refusal's message ends with it
    words: tuple[str, ...] = ()  # identifiers the entry covers, wherever they appear
    prefixes: tuple[str, ...] = ()  # identifier prefixes it covers ("cu" + a capital letter is written "cu[A-Z]")


TABLE: tuple[Rule, ...] = (
    # -- preprocessing ------------------------------------------------------------------------------------------
    Rule("include", "`#include <cuda_runtime.h>`, `<stdint.h>`, `<cstdint>`, `<math.h>`, `<cmath>`, `<float.h>` or "
         "`<cfloat>`, alone at the top level", DROPPED,
         "the project's file already includes what device code needs; models write these lines by habit, so they "
         "are accepted and left out of the file"),
    Rule("pragma_unroll", f"`#pragma unroll`, or `#pragma unroll N` with N from 1 to {MAX_UNROLL}, inside a function "
         "body", ALLOWED, "a loop-unrolling hint that changes no result (the project's own translator writes it)"),
    Rule("unroll_count", f"`#pragma unroll N` with N over {MAX_UNROLL}", REFUSED,
         "a huge unroll count makes the compiler work for minutes (unrolling a loop two billion times) and no kernel "
         "needs it (the project's own kernels unroll a few times)"),
    Rule("directive", "any other preprocessor line: `#define`, `#if`/`#ifdef`, `#include \"...\"`, other "
         "`#pragma`, in any spelling (`%:`, `??=`, spliced lines)", REFUSED,
         "macros and conditional compilation make the compiler read other code than the checks read (`#define "
         "float double` changes the launcher's types; `#if !defined(__CUDACC_RTC__)` hides host code from NVRTC; "
         "`#include` reads files); write `constexpr` constants and `__device__` functions instead"),
    Rule("paste", "`#` and `##` outside a directive", REFUSED,
         "stringizing and token pasting only exist in macros, which are refused"),
    Rule("pragma_operator", "`_Pragma`, `__pragma`", REFUSED, "a directive written as an operator",
         words=("_Pragma", "__pragma")),
    # -- literals -----------------------------------------------------------------------------------------------
    Rule("string", "string literals (with or without `u8`/`u`/`U`/`L`/`R` prefixes, raw strings)", REFUSED,
         "a kernel that mirrors a Numba kernel needs no text, and strings are how `extern \"C\"`, `asm` templates "
         "and `printf` formats are written (plain `\"...\"` strings are accepted only for `printf`, when it is "
         "allowed)"),
    Rule("char", "character literals", REFUSED, "Numba kernels have no characters"),
    Rule("number", "number literals other than C++ integer and floating literals (user-defined suffixes)", REFUSED,
         "a user-defined literal calls an `operator\"\"` function"),
    Rule("ascii", "non-ASCII characters outside comments, backslashes outside literals", REFUSED,
         "an identifier with a look-alike letter or a universal character name reads differently to people, "
         "tools and compilers; code must be plain ASCII"),
    # -- host code and the machine ------------------------------------------------------------------------------
    Rule("asm", "`asm`, `__asm`, `__asm__`", REFUSED, "inline assembly escapes every check",
         words=("asm", "__asm", "__asm__")),
    Rule("host", "`__host__`", REFUSED,
         "host code runs on the user's machine when the library is loaded or called; the project writes the only "
         "host code of the file (the launcher)", words=("__host__",)),
    Rule("extern", "`extern`, except `extern __shared__ T name[];`", REFUSED,
         "extern declarations reach host symbols (`extern \"C\" ... vprintf`, `system`); dynamic shared memory is "
         "its one use in a kernel", words=("extern",)),
    Rule("launch", "kernel launches (`<<<`)", REFUSED,
         "the project's launcher launches the kernel; device code launches nothing"),
    Rule("runtime_api", "CUDA runtime, driver and library APIs: `cuda[A-Z]...`, `cu[A-Z]...`, `nvrtc...`, "
         "`cublas...`, `cudnn...`, `cufft...`, `curand...`, `cusparse...`, `cusolver...`, `nccl...`, `nvml...`",
         REFUSED, "host APIs are host code; the launcher is the project's",
         prefixes=("cuda[A-Z]", "cu[A-Z]", "nvrtc", "cublas", "cudnn", "cufft", "curand", "cusparse", "cusolver",
                   "nccl", "nvml")),
    Rule("memory", "`malloc`, `__nv_aligned_device_malloc`, `calloc`, `realloc`, `free`, `aligned_alloc`, "
         "`posix_memalign`, `memalign`, `alloca`, `mmap`, `new`, `delete`", REFUSED,
         "heap allocation from a kernel (the device heap is small, shared by every thread and launch, and fails "
         "with a null pointer); refused even when only named (`(malloc)(64)`, `&malloc`)",
         words=("malloc", "__nv_aligned_device_malloc", "calloc", "realloc", "free", "aligned_alloc",
                "posix_memalign", "memalign", "alloca", "mmap", "new", "delete")),
    Rule("output", "`printf`, `vprintf`, `puts`, `fputs`, `fprintf`, `sprintf`, `snprintf`, `vfprintf`", REFUSED,
         "output from a kernel is a side channel and no part of its result (`printf` is accepted when the backend "
         "is made with `allow_printf`)",
         words=("printf", "vprintf", "puts", "fputs", "fprintf", "sprintf", "snprintf", "vfprintf")),
    Rule("process", "`system`, `popen`, `fork`, `vfork`, `exec*`, `getenv`, `secure_getenv`, `setenv`, `putenv`, "
         "`environ`, `dlopen`, `dlsym`, `syscall`, `fopen`, `freopen`, `fread`, `fwrite`, `exit`, `_exit`, "
         "`_Exit`, `abort`, `atexit`, `main`", REFUSED,
         "processes, files and the environment belong to the host, never to a kernel",
         words=("system", "popen", "fork", "vfork", "execl", "execlp", "execle", "execv", "execvp", "execve",
                "getenv", "secure_getenv", "setenv", "putenv", "environ", "dlopen", "dlsym", "syscall", "fopen",
                "freopen", "fread", "fwrite", "exit", "_exit", "_Exit", "abort", "atexit", "main")),
    Rule("trap", "`__trap`, `__brkpt`", REFUSED, "they stop the GPU context instead of computing",
         words=("__trap", "__brkpt")),
    Rule("assert", "`assert`, `__assertfail`, `__assert_fail`", REFUSED,
         "a failed device assert is a trap (`__assertfail`): it stops the GPU context instead of computing; a "
         "kernel's checks belong to its Python, where the simulator runs them",
         words=("assert", "__assertfail", "__assert_fail")),
    Rule("builtin", "compiler builtins (`__builtin_...`)", REFUSED,
         "builtins reach below C++ (`alloca`, traps, frame addresses)", prefixes=("__builtin_",)),
    Rule("cuda_qualifiers", "`__global__` (on the kernel only), `__device__`, `__shared__`, `__constant__`, "
         "`__restrict__`, `__forceinline__`, `__noinline__`, `__align__`, `__grid_constant__` (a Hopper kernel's "
         "tensor maps, passed by value)", ALLOWED, "CUDA's own qualifiers",
         words=("__global__", "__device__", "__shared__", "__constant__", "__restrict__", "__forceinline__",
                "__noinline__", "__align__", "__grid_constant__")),
    Rule("reserved", "any other `__name__`: predefined macros (`__FILE__`, `__DATE__`, `__CUDA_ARCH__`, "
         "`__CUDACC_RTC__`, ...), `__attribute__`, `__launch_bounds__`, `__managed__`, ...", REFUSED,
         "`__FILE__` and `__DATE__` carry facts of the machine, `__CUDA_ARCH__` and `__CUDACC_RTC__` make NVRTC and "
         "nvcc read different code, `__attribute__((constructor))` runs host code when the library is loaded, and "
         "the project sets launch bounds itself"),
    # -- C++ that a kernel does not need ------------------------------------------------------------------------
    Rule("aliases", "`typedef`, `using`, `namespace`, `struct`, `class`, `union`, `enum`", REFUSED,
         "new type names and aliases can change what the launcher's types mean (its ABI); a kernel needs none",
         words=("typedef", "using", "namespace", "struct", "class", "union", "enum")),
    Rule("cxx", "`operator`, `this`, `virtual`, `friend`, `mutable`, `explicit`, `throw`, `try`, `catch`, `typeid`, "
         "`dynamic_cast`, `thread_local`, `export`, `import`, `module`, `concept`, `requires`, `co_await`, "
         "`co_yield`, `co_return`", REFUSED, "C++ features a Numba kernel does not need",
         words=("operator", "this", "virtual", "friend", "mutable", "explicit", "throw", "try", "catch", "typeid",
                "dynamic_cast", "thread_local", "export", "import", "module", "concept", "requires", "co_await",
                "co_yield", "co_return")),
    Rule("template", "`template`, except `template <int N, ...>` on the kernel as the signature says and "
         "`template <typename T, int N, ...>` on `__device__` functions", REFUSED,
         "specialisations and explicit instantiations are the project's (it instantiates the kernel)"),
    Rule("static", "`static` inside a function body", REFUSED,
         "a static local is state shared by every thread and launch"),
    Rule("scope", "qualified names (`::`)", REFUSED,
         "they reach namespaces (`std::`, `::system`); device code needs none"),
    Rule("attribute", "attribute specifiers (`[[...]]`)", REFUSED,
         "attributes such as `[[gnu::constructor]]` change how and when code runs"),
    # -- the shape of the code ----------------------------------------------------------------------------------
    Rule("top_level", "at the top level: `__global__`/`__device__` function definitions, `__device__` prototypes, "
         "constants (`constexpr`, `const` or `__constant__`, initialised from numbers, operators and earlier "
         "constants) and `extern __shared__ T name[];`", ALLOWED,
         "anything else at file scope is host code or state: a variable initialised by a call runs host code when "
         "the library is loaded"),
    Rule("names", "a definition named like a C++ keyword, a type, a CUDA built-in, a project helper, the kernel "
         "(other than the kernel itself), `main`, or `launch_...`", REFUSED,
         "it would change what the project's code around the reply refers to"),
    Rule("kernel", "exactly one `__global__` function: the kernel, with exactly the signature the launcher calls "
         "(compared token by token)", ALLOWED, "the launcher calls it with that ABI"),
    Rule("size", "a reply over 256 KiB, code over 32 KiB or 800 lines", REFUSED,
         "bounded work: the size is checked before anything reads the reply"),
)

RULES = {rule.key: rule for rule in TABLE}

#: identifier -> the rule that covers it
WORDS: dict[str, Rule] = {word: rule for rule in TABLE for word in rule.words}


def word_rule(word: str) -> Rule | None:
    """The rule an identifier falls under (an exact word, a prefix, or a reserved ``__name__``), or None."""
    rule = WORDS.get(word)
    if rule is not None:
        return rule
    for rule in TABLE:
        for prefix in rule.prefixes:
            if prefix.endswith("[A-Z]"):
                stem = prefix[:-5]
                if word.startswith(stem) and len(word) > len(stem) and word[len(stem)].isupper():
                    return rule
            elif word.startswith(prefix):
                return rule
    if len(word) > 4 and word.startswith("__") and word.endswith("__"):
        return RULES["reserved"]
    return None


def refusal(key: str, detail: str) -> str:
    """A refusal's message: what was found, then the table's reason."""
    return f"{detail}: {RULES[key].reason}"


#: C++ keywords, type names and CUDA built-ins a definition may not be named after (see the "names" rule)
KEYWORDS = frozenset("""
    alignas alignof asm auto bool break case catch char char16_t char32_t class const constexpr const_cast continue
    decltype default delete do double dynamic_cast else enum explicit export extern false float for friend goto if
    inline int long mutable namespace new noexcept nullptr operator private protected public register
    reinterpret_cast return short signed sizeof static static_assert static_cast struct switch template this
    thread_local throw true try typedef typeid typename union unsigned using virtual void volatile wchar_t while
    and and_eq bitand bitor compl not not_eq or or_eq xor xor_eq
""".split())
TYPE_NAMES = frozenset("""
    int8_t int16_t int32_t int64_t uint8_t uint16_t uint32_t uint64_t size_t ptrdiff_t intptr_t uintptr_t
    half half2 dim3 cudaStream_t cudaError_t
""".split())
CUDA_BUILTINS = frozenset("threadIdx blockIdx blockDim gridDim warpSize".split())
#: the scalar types a constant's initialiser may cast to
CAST_TYPES = frozenset("bool char short int long signed unsigned float double".split()) | frozenset(
    "int8_t int16_t int32_t int64_t uint8_t uint16_t uint32_t uint64_t size_t".split())
#: allowed include headers (the "include" rule)
INCLUDES = frozenset({"cuda_runtime.h", "stdint.h", "cstdint", "math.h", "cmath", "float.h", "cfloat"})


def markdown_table() -> str:
    """The table as docs/llm.md shows it (a test keeps the page and this table the same)."""

    def cell(text: str) -> str:
        parts = text.replace("|", "\\|").split("`")
        return "`".join(p.replace("<", "&lt;") if k % 2 == 0 else p for k, p in enumerate(parts))

    rows = ["| what | verdict | why |", "|------|---------|-----|"]
    rows += [f"| {cell(rule.what)} | {rule.verdict} | {cell(rule.reason)} |" for rule in TABLE]
    return "\n".join(rows)
