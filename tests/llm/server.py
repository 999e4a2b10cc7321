"""A scripted OpenAI-compatible server for the LLM backend's tests: real HTTP on 127.0.0.1, stdlib only.

``POST /v1/chat/completions`` answers from a queue of scripted responses (``Scripted``); every request's headers
and JSON body are recorded in ``server.requests``. An empty queue answers 500 with ``x-should-retry: false``, so a
test that asks for more than it scripted fails loudly instead of hanging.
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

    def start(self) -> "ScriptedServer":
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

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length)
                try:
                    body = json.loads(raw)
                except ValueError:
                    body = None
                server._record(Recorded(self.path, {k.lower(): v for k, v in self.headers.items()}, body, raw))
                if self.path.rstrip("/") != "/v1/chat/completions":
                    return self._send(Scripted(404, {"error": {"message": f"no route {self.path}"}}))
                self._send(server._next())

            def _send(self, r: Scripted) -> None:
                if r.delay:
                    time.sleep(r.delay)
                if isinstance(r.body, dict):
                    data = json.dumps(r.body).encode()
                elif isinstance(r.body, str):
                    data = r.body.encode()
                else:
                    data = r.body or b""
                try:
                    self.send_response(r.status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    for k, v in r.headers.items():
                        self.send_header(k, v)
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):  # the client gave up (a timeout test)
                    pass

        return Handler
