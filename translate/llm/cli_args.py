"""The ``translate`` CLI's options for ``--backend llm``, and the backend they make.

``translate/cli.py`` calls ``add_arguments(parser)`` once, and, when ``args.backend == "llm"``, ``make_backend(args)``
(which raises ``LLMError`` for a missing model or key or a bad URL, before any work) and ``backend_options(args)``
(what the pipeline's request carries to the backend).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Mapping
from typing import Any

from .client import BASE_URL_ENV, DEFAULT_BASE_URL, DEFAULT_MAX_RETRIES, DEFAULT_TIMEOUT, KEY_ENV, LLMError
from .repair import DEFAULT_MAX_TURNS


def add_arguments(parser: argparse.ArgumentParser) -> argparse._ArgumentGroup:
    group = parser.add_argument_group(
        "llm backend (--backend llm)",
        f"device code from a model behind an OpenAI-compatible endpoint; the key is read from {KEY_ENV} only",
    )
    group.add_argument("--model", metavar="NAME",
                       help="the model name the endpoint serves (required with --backend llm)")
    group.add_argument("--base-url", metavar="URL", default=None,
                       help=f"the endpoint, e.g. http://127.0.0.1:8000/v1 "
                            f"(default: ${BASE_URL_ENV}, else {DEFAULT_BASE_URL})")
    group.add_argument("--max-turns", type=_positive_int, default=DEFAULT_MAX_TURNS, metavar="N",
                       help=f"at most N request/repair rounds (default {DEFAULT_MAX_TURNS})")
    group.add_argument("--timeout", type=_positive_float, default=DEFAULT_TIMEOUT, metavar="SECONDS",
                       help=f"the most one turn may take in all: the model request (connecting, waiting, retries, "
                            f"the streamed reply) and the compile of its reply (default {DEFAULT_TIMEOUT:g})")
    group.add_argument("--max-retries", type=_non_negative_int, default=DEFAULT_MAX_RETRIES, metavar="N",
                       help=f"client retries on rate limits, 5xx and timeouts (default {DEFAULT_MAX_RETRIES})")
    return group


def backend_options(args: argparse.Namespace) -> dict[str, Any]:
    """The options ``translate_kernel(..., backend_options=...)`` forwards to the backend (never the key)."""
    if not getattr(args, "model", None):
        raise LLMError("--backend llm needs --model NAME (the model the endpoint serves)")
    return {"model": args.model, "base_url": args.base_url, "max_turns": args.max_turns, "timeout": args.timeout,
            "max_retries": args.max_retries}


def make_backend(args: argparse.Namespace, *, environ: Mapping[str, str] | None = None,
                 on_turn: Callable[[Any], None] | None = None):
    """The ``LLMBackend`` the options describe; the client checks model, endpoint and key when it is made."""
    # the backend imports translate's data model and numba with it: not at the CLI's import, before it has chosen
    # numba's CUDA target
    from translate.backends.llm import LLMBackend

    if not getattr(args, "model", None):
        raise LLMError("--backend llm needs --model NAME (the model the endpoint serves)")
    return LLMBackend(model=args.model, base_url=args.base_url, max_turns=args.max_turns, timeout=args.timeout,
                      max_retries=args.max_retries, environ=environ, on_turn=on_turn)


def _positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def _non_negative_int(text: str) -> int:
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more, got {value}")
    return value


def _positive_float(text: str) -> float:
    value = float(text)
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be more than 0, got {value}")
    return value
