"""The code in a model's reply: its fenced C/C++/CUDA blocks, joined in order, in one pass over the lines.

A reply is Markdown: code sits between a line opening with three or more backticks (and a language) and a line of
at least as many backticks. Blocks tagged ``cuda``/``c``/``cpp``/... are the code; untagged blocks count only when
no block is tagged; blocks in other languages (``python``, ``bash``, ``text``) are explanation. Several code blocks
are joined, so a helper in a second block is not lost; messages then name the block (``block 2, line 3``). A reply
with no fence at all is taken as code when it reads like code. Linear in the reply's length.
"""

from __future__ import annotations

from dataclasses import dataclass

CODE_LANGUAGES = frozenset({"cuda", "cu", "c", "cpp", "c++", "cxx", "cc", "h", "hpp", "cuh"})


class ReplyError(ValueError):
    """The reply holds no usable code; ``str(e)`` says why."""


@dataclass(frozen=True)
class Code:
    text: str
    starts: tuple[int, ...] = (1,)  # the line of ``text`` where each block starts

    def where(self, line: int) -> str:
        """``line`` of ``text`` as the model can find it: ``line 12``, or ``block 2, line 3``."""
        if len(self.starts) == 1:
            return f"line {line}"
        block = max(k for k, start in enumerate(self.starts) if start <= line)
        return f"block {block + 1}, line {line - self.starts[block] + 1}"


@dataclass
class _Block:
    language: str
    fence: int  # the number of backticks that opened it
    line: int  # the reply's line of the opening fence
    lines: list[str]


def extract_code(reply: str) -> Code:
    blocks: list[_Block] = []
    open_block: _Block | None = None
    for number, line in enumerate(reply.split("\n"), start=1):
        stripped = line.strip()
        ticks = len(stripped) - len(stripped.lstrip("`"))
        if open_block is None:
            if ticks >= 3:
                info = stripped[ticks:].strip()
                language = info.split()[0].lower() if info else ""
                open_block = _Block(language, ticks, number, [])
        elif ticks >= open_block.fence and ticks == len(stripped):
            blocks.append(open_block)
            open_block = None
        else:
            open_block.lines.append(line)
    if open_block is not None:
        raise ReplyError(f"the code block opened on line {open_block.line} of the reply is not closed: end it with "
                         f"{'`' * open_block.fence}")
    code = [b for b in blocks if b.language in CODE_LANGUAGES] or [b for b in blocks if not b.language]
    if not code:
        if blocks:
            languages = ", ".join(sorted({b.language for b in blocks}))
            raise ReplyError(f"the reply has no ```cuda code block (only: {languages})")
        if "__global__" in reply and reply.lstrip().startswith(("#", "__", "template", "constexpr", "/", "%:")):
            return Code(reply.strip("\n") + "\n")
        raise ReplyError("the reply has no ```cuda code block")
    texts, starts, line = [], [], 1
    for block in code:
        starts.append(line)
        texts.extend(block.lines)
        line += len(block.lines)
    return Code("\n".join(texts) + "\n", tuple(starts))
