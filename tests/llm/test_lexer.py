"""The C/C++ lexer (translation phases, then tokens) and the renderer that writes checked tokens back."""

from __future__ import annotations

import pytest

from translate.llm.lexer import LexError, lex, tokenize
from translate.llm.render import render


def texts(source: str) -> list[str]:
    return [t.text for t in tokenize(source) if t.kind != "comment"]


def kinds(source: str) -> list[tuple[str, str]]:
    return [(t.kind, t.text) for t in tokenize(source)]


def test_trigraphs_are_replaced_before_anything_else():
    assert texts("??=define X ??< ??>")[0] == "# define X { }"
    assert [t.kind for t in tokenize("??=include <a.h>")] == ["directive"]
    assert texts("a ??! b ??' c ??- d ??( ??)") == ["a", "|", "b", "^", "c", "~", "d", "[", "]"]


def test_line_splices_join_identifiers_directives_and_comments():
    assert texts("as\\\nm x;") == ["asm", "x", ";"]
    assert texts("as\\  \nm;") == ["asm", ";"]  # a backslash, spaces, then the newline: GCC's reading
    (directive,) = tokenize("#inc\\\nlude <stdio.h>\n")
    assert directive.kind == "directive" and [p.text for p in directive.parts][:2] == ["#", "include"]
    # a comment continued by a splice swallows the next line, for the lexer as for the compiler
    assert texts("// note \\\nsystem(x);\ny;") == ["y", ";"]
    assert texts("// note ??/\nsystem(x);\ny;") == ["y", ";"]


def test_digraphs_and_alternative_tokens_get_their_primary_spelling():
    assert texts("<% %> <: :> %: %:%:") == ["{", "}", "[", "]", "#", "##"]
    assert texts("a and b or not c bitor d xor_eq e compl f not_eq g") == \
        ["a", "&&", "b", "||", "!", "c", "|", "d", "^=", "e", "~", "f", "!=", "g"]
    (directive,) = tokenize("%:include <stdio.h>")
    assert directive.kind == "directive" and directive.text.startswith("# include")
    assert texts("a<::b>") == ["a", "<", "::", "b", ">"]  # C++11: "<::" is "<" "::" unless ':' or '>' follows
    assert texts("a<:::b") == ["a", "[", "::", "b"]


def test_a_directive_is_a_hash_first_on_its_logical_line():
    toks = tokenize("x; # define Y\n/* c */ #if 1\n  #pragma unroll 4\nz;")
    assert [t.kind for t in toks] == ["ident", "punct", "punct", "ident", "ident", "comment", "directive",
                                      "directive", "ident", "punct"]
    assert [p.text for p in toks[7].parts] == ["#", "pragma", "unroll", "4"]
    # a block comment's newline does not end the logical line: the '#' after it is not first on its line
    assert [t.kind for t in tokenize("x /*\n*/ # y")] == ["ident", "comment", "punct", "ident"]


def test_digit_separators_belong_to_the_number():
    assert kinds("int64_t x = 1'0; asm;") == [
        ("ident", "int64_t"), ("ident", "x"), ("punct", "="), ("number", "1'0"), ("punct", ";"),
        ("ident", "asm"), ("punct", ";")]
    assert texts("0x1'F 1.5e+3f .5 1e-3") == ["0x1'F", "1.5e+3f", ".5", "1e-3"]


def test_literals_with_prefixes_raw_strings_and_suffixes():
    assert kinds('u8"a" L\'b\' R"x(a ) " b)x" u8R"(q)" "s"_w') == [
        ("string", 'u8"a"'), ("char", "L'b'"), ("string", 'R"x(a ) " b)x"'), ("string", 'u8R"(q)"'),
        ("string", '"s"_w')]
    assert kinds('R"(line one\nline two)" x') == [("string", 'R"(line one\nline two)"'), ("ident", "x")]
    assert kinds("R x") == [("ident", "R"), ("ident", "x")]


@pytest.mark.parametrize("source, words", [
    ('"never closed\n"', "not closed"),
    ('R"x(never closed', "never closed"),
    ("/* never closed", "never closed"),
    ("\\u0061sm", "backslash"),
    ("m\u0430lloc(64)", "U+0430"),
    ("x = `y`", "not C++"),
    ('"caf\u00e9"', "non-ASCII"),
])
def test_lex_errors_name_the_line_and_the_problem(source, words):
    with pytest.raises(LexError) as info:
        tokenize("ok;\n" + source)
    assert info.value.line == 2 and words in str(info.value)


def test_non_ascii_is_fine_in_comments():
    assert texts("x; // caf\u00e9 \u2014 \u0430\ny;") == ["x", ";", "y", ";"]


def test_positions_are_physical_lines_and_columns():
    toks = tokenize("a\n  b \\\n c\n??=x")
    assert [(t.text, t.line, t.col) for t in toks[:3]] == [("a", 1, 0), ("b", 2, 2), ("c", 3, 1)]
    assert toks[3].kind == "directive" and toks[3].line == 4


# ---------------------------------------------------------------------------------------------------------------
# render


def rendered(source: str):
    logical, toks = lex(source)
    return render(toks, logical)


def test_render_keeps_the_layout_and_spells_every_token_canonically():
    source = ("__global__ void k(float* x) <%\n"
              "    int a = 1'000; x<:0:> = a and 1;   // sum\n"
              "\n\n\n"
              "    /* two\n       lines */ x[1] = 2;\n"
              "%>\n")
    out = rendered(source)
    assert out.text == ("__global__ void k(float* x) {\n"
                        "    int a = 1000; x[0] = a && 1;   // sum\n"
                        "\n"
                        "    /* two\n       lines */ x[1] = 2;\n"
                        "}\n")
    assert out.origin == (1, 2, 3, 6, 7, 8)


def test_render_separates_tokens_a_new_spelling_would_join():
    assert rendered("x&and y;").text == "x& && y;\n"
    assert rendered("a<:b:>;").text == "a[b];\n"


def test_render_makes_comments_inert():
    # at the end of the text a comment can end with a backslash; written back before a newline it would splice
    assert rendered("x; // ends with a backslash \\").text == "x; // ends with a backslash\n"
    out = rendered("y; // ?? trigraph ??/ and \u202e bidi\nz; /* a */\n")
    assert "??" not in out.text and "\u202e" not in out.text
    assert texts(out.text) == ["y", ";", "z", ";"]
    # a line comment continued by a splice stays one comment, on one line
    assert rendered("a; // one \\\n two\nb;").text == "a; // one  two\nb;\n"


def test_render_writes_directives_on_one_line():
    out = rendered("{\n  #pragma \\\n unroll 4\n  x;\n}\n")
    assert out.text == "{\n  #pragma unroll 4\n  x;\n}\n"
