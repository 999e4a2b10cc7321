"""The ``llm`` backend's parts, one job each:

- ``prompt``, ``source``, ``request``: what the model is told (the kernel's code only, fenced as data);
- ``client``: the OpenAI-compatible endpoint, streamed under a total deadline;
- ``reply``, ``lexer``, ``rules``, ``gate``, ``render``: from a reply to checked device code, re-written from its
  tokens;
- ``feedback``: what of a compile or a verification may go back to the model;
- ``repair``: the loop; ``cli_args``: the ``translate`` options; ``helpers``: the project helpers it may call.

Importing this package does not import ``openai``; the client does, when one is made.
"""

from .client import LLMError

__all__ = ["LLMError"]
