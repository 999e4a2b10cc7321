"""A scripted OpenAI-compatible server for the LLM backend's tests: real HTTP on 127.0.0.1, stdlib only.

``POST /v1/chat/completions`` answers from a queue of scripted responses (``Scripted``); every request's headers
and JSON body are recorded in ``server.requests``. A scripted chat completion is streamed as server-sent events
when the request asks for a stream (as the backend's client always does), in chunks, with the usage last. An empty
queue answers 500 with ``x-should-retry: false``, so a test that asks for more than it scripted fails loudly
instead of hanging. ``json_body`` answers a streaming request with the whole completion as one JSON body, as
some proxies and older local servers do. ``trickle`` sends the answer one byte at a time (``trickle_headers``: the
status line and headers too), for the tests of the client's total deadline.
"""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Scripted:
    status: int = 200
    body: bytes | str | dict | None = None
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0  # seconds to wait before answering (longer than the client timeout: a timeout)
    trickle: float = 0.0  # seconds between the bytes of the answer
    trickle_headers: bool = False  # trickle the status line and headers too
    json_body: bool = False  # a completion as one JSON body even when a stream was asked for (as some servers do)


@dataclass
class Recorded:
    path: str
    headers: dict[str, str]
    body: dict[str, Any] | None
    raw: bytes

    @property
    def messages(self) -> list[dict[str, Any]]:
        return (self.body or {}).get("messages", [])

    def text(self) -> str:
        """All message contents of the request, joined."""
        return "\n".join(str(m.get("content", "")) for m in self.messages)


def completion(content: str | None, *, model: str = "scripted-model", prompt_tokens: int = 100,
               completion_tokens: int = 50, finish_reason: str = "stop") -> Scripted:
    """A 200 chat completion with one choice whose message is ``content``."""
    body = {
        "id": "chatcmpl-scripted",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [{"index": 0, "finish_reason": finish_reason,
                     "message": {"role": "assistant", "content": content}}],
        "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                  "total_tokens": prompt_tokens + completion_tokens},
    }
    return Scripted(200, body)


def error(status: int, message: str = "scripted error", *, retry_after_ms: int | None = 1,
          headers: dict[str, str] | None = None) -> Scripted:
    """An OpenAI-style error body with ``status``; ``retry-after-ms`` keeps the client's retries fast."""
    h = dict(headers or {})
    if retry_after_ms is not None:
        h["retry-after-ms"] = str(retry_after_ms)
        h["Retry-After"] = "0"
    return Scripted(status, {"error": {"message": message, "type": "scripted", "code": None}}, h)


def sse_body(completion_body: dict[str, Any], piece: int = 2000) -> bytes:
    """A chat completion as the chunks of a stream: the content in pieces, the finish reason, then the usage."""
    choice = completion_body["choices"][0] if completion_body.get("choices") else None
    base = {"id": completion_body.get("id", "chatcmpl-scripted"), "object": "chat.completion.chunk",
            "created": completion_body.get("created", 0), "model": completion_body.get("model", "scripted-model")}
    chunks = []
    if choice is not None:
        content = choice.get("message", {}).get("content")
        pieces = [content[k:k + piece] for k in range(0, len(content),
                                                      piece)] or [""] if content is not None else [None]
        for k, text in enumerate(pieces):
            delta = {"content": text} if k else {"role": "assistant", "content": text}
            chunks.append({**base, "choices": [{"index": 0, "delta": delta, "finish_reason": None}]})
        chunks.append({**base, "choices": [{"index": 0, "delta": {}, "finish_reason": choice.get("finish_reason")}]})
    else:
        chunks.append({**base, "choices": []})
    if completion_body.get("usage"):
        chunks.append({**base, "choices": [], "usage": completion_body["usage"]})
    events = "".join(f"data: {json.dumps(c)}\n\n" for c in chunks) + "data: [DONE]\n\n"
    return events.encode()


class ScriptedServer:
    def __init__(self) -> None:
        self.queue: deque[Scripted] = deque()
        self.requests: list[Recorded] = []
        self._lock = threading.Lock()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler_class())
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05},
                                        daemon=True)

    @property
    def base_url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}/v1"

    def script(self, *responses: Scripted) -> None:
        with self._lock:
            self.queue.extend(responses)

    def start(self) -> ScriptedServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)

    def _next(self) -> Scripted:
        with self._lock:
            if self.queue:
                return self.queue.popleft()
        return Scripted(500, {"error": {"message": "the test scripted no more responses"}},
                        {"x-should-retry": "false"})

    def _record(self, rec: Recorded) -> None:
        with self._lock:
            self.requests.append(rec)

    def _handler_class(self):
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:  # keep the test output quiet
                pass

            def do_POST(self) -> None:  # noqa: N802 - the http.server spelling
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length)
                try:
                    body = json.loads(raw)
                except ValueError:
                    body = None
                server._record(Recorded(self.path, {k.lower(): v for k, v in self.headers.items()}, body, raw))
                if self.path.rstrip("/") != "/v1/chat/completions":
                    return self._send(Scripted(404, {"error": {"message": f"no route {self.path}"}}))
                self._send(server._next(), stream=bool((body or {}).get("stream")) if isinstance(body, dict) else False)

            def _send(self, r: Scripted, stream: bool = False) -> None:
                if r.delay:
                    time.sleep(r.delay)
                content_type = "application/json"
                if isinstance(r.body, dict):
                    if stream and r.status == 200 and "choices" in r.body and not r.json_body:
                        data, content_type = sse_body(r.body), "text/event-stream"
                    else:
                        data = json.dumps(r.body).encode()
                elif isinstance(r.body, str):
                    data = r.body.encode()
                else:
                    data = r.body or b""
                headers = {"Content-Type": content_type, "Content-Length": str(len(data)), **r.headers}
                head = [f"HTTP/1.1 {r.status} {self.responses.get(r.status, ('',))[0]}",
                        *(f"{k}: {v}" for k, v in headers.items())]
                raw_head = ("\r\n".join(head) + "\r\n\r\n").encode()
                try:
                    if r.trickle and r.trickle_headers:
                        self._trickle(raw_head + data, r.trickle)
                    else:
                        self.wfile.write(raw_head)
                        self.wfile.flush()
                        self._trickle(data, r.trickle) if r.trickle else self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):  # the client gave up (a timeout test)
                    self.close_connection = True

            def _trickle(self, data: bytes, pause: float) -> None:
                for k in range(len(data)):
                    self.wfile.write(data[k:k + 1])
                    self.wfile.flush()
                    time.sleep(pause)

        return Handler
