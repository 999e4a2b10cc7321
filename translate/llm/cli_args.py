"""The ``translate`` CLI's options for ``--backend llm``, the backend they make, and what the command says about
the backend's work on the terminal.

``translate/cli.py`` calls ``add_arguments(parser)`` once, and, when ``args.backend == "llm"``,
``check_endpoint(args)`` (which raises ``LLMError`` for a missing model or key, a bad URL or an endpoint that accepts
no connection, before any work) and ``backend_options(args)`` (what the pipeline's request carries to the backend).
While it translates, ``turn_notes(args, note)`` has each turn of the repair loop told as it ends, and
``summary(name, entry)`` is the line after a kernel: model, endpoint, turns, tokens, and whether the file is verified.
"""

from __future__ import annotations

import argparse
import contextlib
import math
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from ..trust import passed, printable
from .client import BASE_URL_ENV, DEFAULT_BASE_URL, DEFAULT_MAX_RETRIES, DEFAULT_TIMEOUT, KEY_ENV, LLMError
from .repair import DEFAULT_MAX_TURNS, describe


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
    group.add_argument("--show-prompt", action="store_true",
                       help="print the messages the llm backend would send for KERNEL and stop: nothing is sent or "
                            "written, no key or endpoint is needed")
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


def check_endpoint(args: argparse.Namespace, *, environ: Mapping[str, str] | None = None) -> None:
    """``LLMError`` unless model, key and URL are usable and the endpoint accepts a connection (nothing is sent)."""
    backend = make_backend(args, environ=environ)
    try:
        backend.client.probe()
    finally:
        backend.close()


@contextlib.contextmanager
def turn_notes(args: argparse.Namespace, note: Callable[[str], None]) -> Iterator[None]:
    """With ``--backend llm``: ``note(line)`` after each turn of each kernel's repair loop, as it ends."""
    if getattr(args, "backend", None) != "llm":
        yield
        return
    from translate.backends.llm import observe_turns  # imports numba: only once the CLI has chosen its target

    with observe_turns(lambda kernel, attempt: note(f"{kernel}: llm {describe(attempt)}")):
        yield


def summary(kernel: str, entry: Mapping[str, Any], out: str | None = None) -> str:
    """What the llm backend did for one kernel, from its manifest entry: the model and endpoint, the turns (and
    which were rejected where), the tokens, and whether the file is verified (an unverified one says how to)."""
    backend = entry.get("backend") or {}
    turns = backend.get("turns") or 0
    rejected = [f"turn {i} {_REJECTED.get(stage, stage)}"
                for i, stage in enumerate(backend.get("turn_outcomes") or (), 1) if stage != "ok"]
    usage = backend.get("usage") or {}
    verification = entry.get("verification") or {}
    if passed(verification, entry.get("file_sha256")):  # this run's record (a record of other bytes is void)
        state = f"verified on {printable(verification.get('device') or 'the GPU', 80)}"
    else:
        where = f" --dir {out}" if out else ""
        state = (f"the file is UNVERIFIED: check it on a GPU with `python -m translate.verify {kernel}{where}` "
                 "before you use it")
    return (f"{kernel}: llm model '{backend.get('model')}' at {backend.get('endpoint_host')}: {turns} "
            f"turn{'s' if turns != 1 else ''}" + (f" ({'; '.join(rejected)})" if rejected else "")
            + f", {usage.get('prompt_tokens', 0):,} prompt + {usage.get('completion_tokens', 0):,} completion "
            f"tokens; {state}")


_REJECTED = {"gate": "rejected by the static gate", "compile": "did not compile", "verify": "failed verification"}


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
    if not (value > 0 and math.isfinite(value)):
        raise argparse.ArgumentTypeError(f"must be a number of seconds more than 0, got {value}")
    return value
