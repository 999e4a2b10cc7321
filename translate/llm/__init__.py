"""The ``llm`` backend's parts: prompt, static gate, OpenAI-compatible client, repair loop, CLI arguments.

Importing this package does not import ``openai``; the client does, when one is made.
"""

from .client import LLMError

__all__ = ["LLMError"]
