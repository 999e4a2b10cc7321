"""A thin wrapper over the ``openai`` client for any OpenAI-compatible chat endpoint.

Every failure becomes an ``LLMError`` whose message names the problem (unreachable endpoint, rejected key, rate
limit, timeout, server error, empty or malformed reply) and never contains the API key: the key is read from
``OPENAI_API_KEY``, handed to the ``openai`` client (which sends it in the ``Authorization`` header) and nowhere
else. Retries on 408/409/429/5xx and timeouts are the client's own (``max_retries``), honouring ``Retry-After``.

The reply is streamed, so that ``timeout`` bounds the whole request (connecting, waiting, retries and every chunk
of the reply: an event-loop deadline cancels whatever is in flight, even a server that trickles one byte a second)
and so that a reply over ``max_reply_chars`` is cut off while it arrives instead of being read whole. A server that
answers the streaming request with one JSON chat completion instead (some proxies and older local servers do) is
read as that completion, within the same limits.

``ChatClient.probe()`` connects to the endpoint once, without sending anything, so that a server that is not there
fails at once with one line naming the endpoint (the client's own retries would otherwise back off for seconds).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import math
import os
import socket
import urllib.request
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from .. import procenv

KEY_ENV = "OPENAI_API_KEY"
BASE_URL_ENV = "OPENAI_BASE_URL"
DEFAULT_BASE_URL = "https://api.openai.com/v1"
DEFAULT_TIMEOUT = 120.0
DEFAULT_MAX_RETRIES = 3
#: the longest reply read from the stream (the gate reads no more either)
MAX_REPLY_CHARS = 256 * 1024
#: the longest wait for the endpoint to accept a connection in ``probe``
PROBE_TIMEOUT = 5.0
#: headers the openai package adds about the machine it runs on, which this client leaves out
PLATFORM_HEADERS = ("X-Stainless-Lang", "X-Stainless-Package-Version", "X-Stainless-OS", "X-Stainless-Arch",
                    "X-Stainless-Runtime", "X-Stainless-Runtime-Version")


class LLMError(RuntimeError):
    """The LLM backend could not get a usable reply; ``str(e)`` says why (and never contains the key)."""


@dataclass(frozen=True)
class Usage:
    prompt_tokens: int = 0
    completion_tokens: int = 0
    total_tokens: int = 0

    def __add__(self, other: Usage) -> Usage:
        return Usage(self.prompt_tokens + other.prompt_tokens, self.completion_tokens + other.completion_tokens,
                     self.total_tokens + other.total_tokens)

    def as_dict(self) -> dict[str, int]:
        return {"prompt_tokens": self.prompt_tokens, "completion_tokens": self.completion_tokens,
                "total_tokens": self.total_tokens}


@dataclass(frozen=True)
class Reply:
    content: str
    usage: Usage = field(default_factory=Usage)
    finish_reason: str | None = None
    model: str | None = None  # the model the server says answered


def resolve_base_url(base_url: str | None = None, environ: Mapping[str, str] | None = None) -> str:
    """``--base-url`` if given, else ``OPENAI_BASE_URL``, else the hosted API; checked to be an http(s) URL."""
    environ = os.environ if environ is None else environ
    url = (base_url or environ.get(BASE_URL_ENV) or DEFAULT_BASE_URL).strip()
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - parsed here: a port out of range is a ValueError
    except ValueError as e:  # (the URL is not shown: it may hold credentials that could not be told apart)
        raise LLMError(f"the endpoint ({'--base-url' if base_url else BASE_URL_ENV}) is not a valid URL: {e} "
                       "(expected e.g. http://127.0.0.1:8000/v1)") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise LLMError(f"the endpoint '{_without_credentials(url)}' is not an http(s) URL "
                       "(expected e.g. http://127.0.0.1:8000/v1)")
    if parts.username or parts.password:
        raise LLMError("the endpoint URL must not carry credentials; put the key in OPENAI_API_KEY")
    return url.rstrip("/")


def endpoint_host(base_url: str) -> str:
    """What the manifest records about the endpoint: host and port only (no path, query or credentials)."""
    parts = urlsplit(base_url)
    host = parts.hostname or ""
    if ":" in host:  # IPv6
        host = f"[{host}]"
    return f"{host}:{parts.port}" if parts.port else host


def read_api_key(environ: Mapping[str, str] | None = None) -> str:
    environ = os.environ if environ is None else environ
    key = environ.get(KEY_ENV, "").strip()
    if not key:
        raise LLMError(f"{KEY_ENV} is not set: export the API key of the endpoint (for a local server that does "
                       f"not check keys, any value, e.g. {KEY_ENV}=local)")
    if environ is os.environ:  # read: from now on not in what /proc/<pid>/environ shows (translate.procenv)
        procenv.conceal([KEY_ENV])
    return checked_key(key)


def checked_key(key: str) -> str:
    """``key`` when an HTTP header can carry it (visible ASCII characters only); an ``LLMError`` that says what is
    wrong without showing the key otherwise. (httpx's own error for such a key shows the header, key and all, and
    one with a non-ASCII character read as a malformed reply.)"""
    bad = next((c for c in key if not 0x21 <= ord(c) <= 0x7E), None)
    if bad is not None:
        kind = "a newline" if bad in "\r\n" else "a space" if bad.isspace() else \
            "a control character" if ord(bad) < 0x20 or ord(bad) == 0x7F else "a non-ASCII character"
        raise LLMError(f"{KEY_ENV} holds {kind}, which no HTTP header can carry: export the key exactly as the "
                       "endpoint issued it (the key is not shown)")
    return key


class ChatClient:
    """Chat completions against one endpoint and model."""

    def __init__(self, *, model: str, base_url: str | None = None, api_key: str | None = None,
                 timeout: float = DEFAULT_TIMEOUT, max_retries: int = DEFAULT_MAX_RETRIES,
                 temperature: float | None = 0.0, max_tokens: int | None = None,
                 environ: Mapping[str, str] | None = None, max_reply_chars: int = MAX_REPLY_CHARS):
        if not model:
            raise LLMError("no model given: pass --model NAME (the name the endpoint serves, e.g. gpt-4.1 or "
                           "Qwen/Qwen2.5-Coder-32B-Instruct)")
        try:
            import openai
        except ImportError:
            raise LLMError("the llm backend needs the 'openai' package: pip install 'numbakern[llm]'") from None
        self._openai = openai
        self.model = model
        self.base_url = resolve_base_url(base_url, environ)
        self.endpoint_host = endpoint_host(self.base_url)
        self._key = checked_key(api_key) if api_key is not None else read_api_key(environ)
        if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not 0 < timeout < math.inf:
            raise LLMError(f"the timeout must be a number of seconds more than 0, got {timeout!r}")
        self.timeout = timeout
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.max_retries = max_retries
        self.max_reply_chars = max_reply_chars

    def __repr__(self) -> str:  # never show the key
        return f"ChatClient(model={self.model!r}, endpoint_host={self.endpoint_host!r})"

    def close(self) -> None:
        """Nothing to release: each request opens and closes its own connection."""

    def probe(self) -> None:
        """An ``LLMError`` naming the endpoint when nothing accepts a connection there (within ``PROBE_TIMEOUT``);
        nothing is sent. Through a proxy (``HTTPS_PROXY`` and the like) the proxy decides: no probe."""
        parts = urlsplit(self.base_url)
        host = parts.hostname or ""
        if _proxied(parts.scheme, host):
            return
        port = parts.port or (443 if parts.scheme == "https" else 80)
        try:
            with socket.create_connection((host, port), timeout=min(PROBE_TIMEOUT, self.timeout)):
                pass
        except OSError as e:
            why = "timed out" if isinstance(e, TimeoutError) else (e.strerror or type(e).__name__).lower()
            raise LLMError(f"cannot reach the endpoint {self.base_url}: {why}; is the server running? (--base-url or "
                           f"{BASE_URL_ENV} names it)") from None

    def __enter__(self) -> ChatClient:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def chat(self, messages: Sequence[Mapping[str, str]]) -> Reply:
        """One chat completion, streamed, within ``timeout`` seconds in all (connecting, waiting, the reply);
        an ``LLMError`` for any failure, with the key redacted from every message."""
        try:
            return run_coroutine(self._chat(messages))
        except LLMError as e:
            raise LLMError(self._redact(str(e))) from None

    async def _chat(self, messages: Sequence[Mapping[str, str]]) -> Reply:
        openai = self._openai
        where = f"{self.endpoint_host} (model '{self.model}')"
        # one client per request: an async client belongs to the event loop it first ran on
        client = openai.AsyncOpenAI(base_url=self.base_url, api_key=self._key, timeout=self.timeout,
                                    max_retries=self.max_retries, default_headers=self._headers())
        try:
            async with asyncio.timeout(self.timeout):  # the whole request, retries and the streamed reply included
                return await self._stream(client, messages, where)
        except (TimeoutError, openai.APITimeoutError):
            raise LLMError(f"the request to {where} timed out after {self.timeout:g} s (--timeout bounds the whole "
                           "request: connecting, waiting and the streamed reply); raise --timeout or check the "
                           "server") from None
        except openai.APIConnectionError as e:
            raise LLMError(f"cannot reach the endpoint {self.base_url}: {_cause(e)}; is the server running?") from None
        except openai.AuthenticationError as e:
            raise LLMError(f"the endpoint {self.endpoint_host} rejected the API key (HTTP {e.status_code}); "
                           f"check {KEY_ENV}") from None
        except openai.PermissionDeniedError as e:
            raise LLMError(f"the endpoint {self.endpoint_host} refused access (HTTP {e.status_code}): "
                           f"{_server_message(e)}") from None
        except openai.RateLimitError as e:
            raise LLMError(f"rate limited by {where} (HTTP 429) after the client's retries: "
                           f"{_server_message(e)}") from None
        except openai.NotFoundError as e:
            raise LLMError(f"the endpoint {self.base_url} has no chat completions for model '{self.model}' "
                           f"(HTTP 404): {_server_message(e)}") from None
        except openai.APIStatusError as e:
            raise LLMError(f"{where} answered HTTP {e.status_code}: {_server_message(e)}") from None
        except openai.APIResponseValidationError as e:
            raise LLMError(f"malformed reply from {where}: {_cause(e)}") from None
        except openai.OpenAIError as e:
            raise LLMError(f"request to {where} failed: {_cause(e)}") from None
        except ValueError as e:  # a chunk whose data is not JSON
            raise LLMError(f"malformed reply from {where}: a streamed chunk is not valid JSON ({_short(e)})") from None
        finally:
            await client.close()

    async def _stream(self, client: Any, messages: Sequence[Mapping[str, str]], where: str) -> Reply:
        kwargs: dict[str, Any] = {}
        if self.temperature is not None:
            kwargs["temperature"] = self.temperature
        if self.max_tokens is not None:
            kwargs["max_tokens"] = self.max_tokens
        stream = await client.chat.completions.create(model=self.model, messages=list(messages), stream=True,
                                                      stream_options={"include_usage": True}, **kwargs)
        async with stream:
            kind = stream.response.headers.get("content-type", "")
            if kind.startswith("application/json"):  # the whole completion at once, not streamed
                return await self._whole(stream.response, where)
            if not kind.startswith("text/event-stream"):
                raise LLMError(f"malformed reply from {where}: expected a stream of server-sent events "
                               f"(text/event-stream) or a JSON chat completion, got "
                               f"'{_short(kind) or 'no content type'}'")
            return await self._collect(stream, where)

    async def _whole(self, response: Any, where: str) -> Reply:
        """A chat completion sent as one JSON body, read up to the size limit."""
        raw = bytearray()
        async for piece in response.aiter_bytes():
            raw += piece
            if len(raw) > 4 * self.max_reply_chars + 65536:  # the JSON around the text, and escapes, within reason
                raise LLMError(f"the reply from {where} is over {self.max_reply_chars} characters; it was not read")
        try:
            body = json.loads(raw)
        except ValueError as e:
            raise LLMError(f"malformed reply from {where}: the JSON body is not valid JSON ({_short(e)})") from None
        choices = body.get("choices") if isinstance(body, dict) else None
        first = next((c for c in choices or () if isinstance(c, dict) and c.get("index", 0) == 0), None)
        if first is None:
            raise LLMError(f"malformed reply from {where}: no choices in the response")
        content = (first.get("message") or {}).get("content") if isinstance(first.get("message"), dict) else None
        if not isinstance(content, str):
            raise LLMError(f"malformed reply from {where}: the first choice has no text content")
        if len(content) > self.max_reply_chars:
            raise LLMError(f"the reply from {where} is over {self.max_reply_chars} characters")
        if not content.strip():
            raise LLMError(f"empty reply from {where}")
        usage = body.get("usage") if isinstance(body.get("usage"), dict) else {}
        return Reply(content=content,
                     usage=Usage(*(usage.get(k) if isinstance(usage.get(k), int) else 0
                                   for k in ("prompt_tokens", "completion_tokens", "total_tokens"))),
                     finish_reason=first.get("finish_reason"),
                     model=body.get("model") if isinstance(body.get("model"), str) else None)

    async def _collect(self, stream: Any, where: str) -> Reply:
        parts: list[str] = []
        size, chose, wrote = 0, False, False
        finish, usage, model = None, None, None
        async for chunk in stream:
            model = getattr(chunk, "model", None) or model
            usage = getattr(chunk, "usage", None) or usage
            for choice in getattr(chunk, "choices", None) or ():
                if getattr(choice, "index", 0) != 0:
                    continue
                chose = True
                text = getattr(getattr(choice, "delta", None), "content", None)
                if isinstance(text, str):
                    wrote = True
                    parts.append(text)
                    size += len(text)
                    if size > self.max_reply_chars:
                        raise LLMError(f"the reply from {where} is over {self.max_reply_chars} characters; the "
                                       "stream was closed")
                finish = getattr(choice, "finish_reason", None) or finish
        if not chose:
            raise LLMError(f"malformed reply from {where}: no choices in the response")
        if not wrote:
            raise LLMError(f"malformed reply from {where}: the first choice has no text content")
        content = "".join(parts)
        if not content.strip():
            raise LLMError(f"empty reply from {where}")
        return Reply(
            content=content,
            usage=Usage(_int(usage, "prompt_tokens"), _int(usage, "completion_tokens"), _int(usage, "total_tokens")),
            finish_reason=finish,
            model=model,
        )

    def _headers(self) -> dict[str, Any]:
        """No facts about this machine in the headers: the client's platform headers (OS, architecture, Python and
        package versions) are left out and the user agent names only the project."""
        omit = self._openai.Omit()
        return {"User-Agent": "numbakern", **{name: omit for name in PLATFORM_HEADERS}}

    def _redact(self, text: str) -> str:
        """``text`` without the key, also as a repr or JSON string would write it."""
        if not self._key:
            return text
        for form in {self._key, repr(self._key)[1:-1], repr(self._key.encode())[2:-1], json.dumps(self._key)[1:-1]}:
            text = text.replace(form, "***")
        return text


def _proxied(scheme: str, host: str) -> bool:
    """Whether the environment sends requests for ``host`` through a proxy (as httpx, under the openai client,
    reads it: ``HTTP(S)_PROXY``, ``ALL_PROXY``, ``NO_PROXY``)."""
    proxies = urllib.request.getproxies()
    if not (proxies.get(scheme) or proxies.get("all")):
        return False
    return not urllib.request.proxy_bypass(host)


def _int(obj: Any, name: str) -> int:
    value = getattr(obj, name, None)
    return value if isinstance(value, int) else 0


def _cause(e: BaseException) -> str:
    cause = e.__cause__ or e.__context__
    text = str(cause) if cause is not None and str(cause) else str(e)
    return " ".join(text.split())[:300] or type(e).__name__


def _server_message(e: Any) -> str:
    body = getattr(e, "body", None)
    if isinstance(body, dict):
        err = body.get("error", body)
        msg = err.get("message") if isinstance(err, dict) else err
        if msg:
            return " ".join(str(msg).split())[:300]
    return " ".join(str(getattr(e, "message", e)).split())[:300]


def run_coroutine(coroutine: Any) -> Any:
    """Run ``coroutine`` to the end from synchronous code, also where this thread already runs an event loop
    (a notebook): then on a thread of its own."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coroutine)
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, coroutine).result()


def _short(value: Any, limit: int = 120) -> str:
    return " ".join(str(value).split())[:limit]


def _without_credentials(url: str) -> str:
    parts = urlsplit(url)
    if parts.username or parts.password:
        netloc = parts.hostname or ""
        return parts._replace(netloc=netloc).geturl()
    return url
