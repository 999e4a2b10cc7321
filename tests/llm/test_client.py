"""The client over real HTTP against the scripted server: replies, retries, and every failure as a clear LLMError
that never contains the key."""

from __future__ import annotations

import time

import pytest

from translate.llm.client import ChatClient, LLMError, endpoint_host, read_api_key, resolve_base_url

from .conftest import TEST_KEY
from .server import Scripted, completion, error

MESSAGES = [{"role": "user", "content": "convert this"}]


def client(**kw) -> ChatClient:
    kw.setdefault("timeout", 2.0)
    kw.setdefault("max_retries", 2)
    return ChatClient(model="scripted-model", **kw)


def test_reply_usage_and_the_key_only_in_the_authorization_header(no_key_leak, llm_env):
    llm_env.script(completion("```cuda\n```", prompt_tokens=11, completion_tokens=7))
    with client() as c:
        reply = c.chat(MESSAGES)
    assert reply.content == "```cuda\n```"
    assert reply.usage.as_dict() == {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18}
    (req,) = llm_env.requests
    assert req.path == "/v1/chat/completions"
    assert req.headers["authorization"] == f"Bearer {TEST_KEY}"
    assert req.body["model"] == "scripted-model" and req.body["messages"] == MESSAGES
    assert TEST_KEY not in repr(c)
    # no facts about the machine: no platform headers, a user agent that names only the project
    assert req.headers["user-agent"] == "numbakern"
    assert not [h for h in req.headers if h in ("x-stainless-os", "x-stainless-arch", "x-stainless-runtime",
                                                "x-stainless-runtime-version", "x-stainless-package-version")]


def test_rate_limit_is_retried_by_the_client(no_key_leak, llm_env):
    llm_env.script(error(429, "slow down"), error(429, "slow down"), completion("ok"))
    with client(max_retries=2) as c:
        assert c.chat(MESSAGES).content == "ok"
    assert len(llm_env.requests) == 3


def test_rate_limit_beyond_retries(no_key_leak, llm_env):
    llm_env.script(error(429, "slow down"), error(429, "slow down"))
    with client(max_retries=1) as c, pytest.raises(LLMError, match=r"rate limited .*HTTP 429.*slow down"):
        c.chat(MESSAGES)
    assert len(llm_env.requests) == 2


def test_server_error_beyond_retries(no_key_leak, llm_env):
    llm_env.script(error(500, "boom"), error(500, "boom"), error(500, "boom"))
    with client(max_retries=2) as c, pytest.raises(LLMError, match=r"answered HTTP 500: boom"):
        c.chat(MESSAGES)
    assert len(llm_env.requests) == 3


def test_timeout(no_key_leak, llm_env):
    llm_env.script(Scripted(delay=1.5, body=completion("late").body))
    t0 = time.monotonic()
    with client(timeout=0.3, max_retries=0) as c, pytest.raises(LLMError, match=r"timed out after 0.3 s"):
        c.chat(MESSAGES)
    assert time.monotonic() - t0 < 1.4


def test_bad_key_message_does_not_echo_the_server(no_key_leak, llm_env):
    # a hosted API echoes (part of) the key in its 401 message; the error must not pass it on
    llm_env.script(error(401, f"Incorrect API key provided: {TEST_KEY}"))
    with client() as c, pytest.raises(LLMError) as info:
        c.chat(MESSAGES)
    assert "rejected the API key (HTTP 401)" in str(info.value) and "OPENAI_API_KEY" in str(info.value)
    assert TEST_KEY not in str(info.value)


def test_key_echoed_in_other_errors_is_redacted(no_key_leak, llm_env):
    llm_env.script(error(400, f"bad request for key {TEST_KEY}"))
    with client() as c, pytest.raises(LLMError) as info:
        c.chat(MESSAGES)
    assert "HTTP 400" in str(info.value) and "***" in str(info.value)
    assert TEST_KEY not in str(info.value)


@pytest.mark.parametrize("scripted, match", [
    (Scripted(200, "{this is not json"), "malformed reply.*the JSON body is not valid JSON"),
    (Scripted(200, "<html>hello</html>", headers={"Content-Type": "text/html"}),
     "malformed reply.*server-sent events.*or a JSON chat completion, got 'text/html'"),
    (Scripted(200, {"object": "chat.completion", "choices": []}, json_body=True), "malformed reply.*no choices"),
    (Scripted(200, completion(None).body, json_body=True), "malformed reply.*no text content"),
    (Scripted(200, completion("  ").body, json_body=True), "empty reply"),
    (Scripted(200, "data: {not json\n\n", headers={"Content-Type": "text/event-stream"}),
     "malformed reply.*not valid JSON"),
    (Scripted(200, {"object": "chat.completion", "choices": []}), "malformed reply.*no choices"),
    (completion(None), "malformed reply.*no text content"),
    (completion("   \n"), "empty reply"),
])
def test_malformed_and_empty_replies(no_key_leak, llm_env, scripted, match):
    llm_env.script(scripted)
    with client() as c, pytest.raises(LLMError, match=match):
        c.chat(MESSAGES)


def test_the_reply_is_streamed_in_chunks_and_joined(no_key_leak, llm_env):
    long = "x" * 4500 + "\n```cuda\n```"
    llm_env.script(completion(long, prompt_tokens=3, completion_tokens=4))
    with client() as c:
        reply = c.chat(MESSAGES)
    assert reply.content == long and reply.usage.total_tokens == 7 and reply.finish_reason == "stop"
    body = llm_env.requests[0].body
    assert body["stream"] is True and body["stream_options"] == {"include_usage": True}


@pytest.mark.parametrize("headers_too", [False, True])
def test_timeout_is_a_total_deadline_against_a_trickling_server(no_key_leak, llm_env, headers_too):
    # one byte every 50 ms: each read is quick, so only a deadline on the whole request stops it (about 30 s of
    # trickling for this reply; a per-read timeout would wait for all of it)
    llm_env.script(Scripted(body=completion("y" * 600).body, trickle=0.05, trickle_headers=headers_too))
    t0 = time.monotonic()
    with client(timeout=1.0, max_retries=0) as c, pytest.raises(LLMError, match=r"timed out after 1 s .*whole request"):
        c.chat(MESSAGES)
    assert time.monotonic() - t0 < 2.5


def test_a_reply_over_the_size_limit_is_cut_off(no_key_leak, llm_env):
    llm_env.script(completion("z" * 5000))
    with client(max_reply_chars=4096) as c, pytest.raises(LLMError, match="over 4096 characters"):
        c.chat(MESSAGES)


def test_chat_works_inside_a_running_event_loop(no_key_leak, llm_env):
    import asyncio

    llm_env.script(completion("from a notebook"))

    async def in_a_loop():
        with client() as c:
            return c.chat(MESSAGES).content

    assert asyncio.run(in_a_loop()) == "from a notebook"


def test_a_streaming_request_answered_with_one_json_body_is_read(no_key_leak, llm_env):
    # some proxies and older local servers ignore "stream": true and send the whole completion at once
    llm_env.script(Scripted(200, completion("```cuda\n```", prompt_tokens=5, completion_tokens=6, model="m-7").body,
                            json_body=True))
    with client() as c:
        reply = c.chat(MESSAGES)
    assert reply.content == "```cuda\n```" and reply.usage.total_tokens == 11 and reply.model == "m-7"
    assert reply.finish_reason == "stop" and llm_env.requests[0].body["stream"] is True


def test_a_json_body_over_the_size_limit_is_refused(no_key_leak, llm_env):
    llm_env.script(Scripted(200, completion("z" * 5000).body, json_body=True))
    with client(max_reply_chars=4096) as c, pytest.raises(LLMError, match="over 4096 characters"):
        c.chat(MESSAGES)


def test_the_probe_names_an_endpoint_that_takes_no_connection_at_once(no_key_leak, llm_env):
    port = int(llm_env.base_url.rsplit(":", 1)[1].split("/")[0])
    with client() as c:
        c.probe()  # the server is there: nothing is raised, and nothing was sent
    assert llm_env.requests == []
    llm_env.stop()
    t0 = time.monotonic()
    with client(base_url=f"http://127.0.0.1:{port}/v1", max_retries=3) as c, \
            pytest.raises(LLMError, match=rf"cannot reach the endpoint http://127.0.0.1:{port}/v1: connection refused"):
        c.probe()
    assert time.monotonic() - t0 < 1.0


def test_unreachable_endpoint(no_key_leak, llm_env):
    port = int(llm_env.base_url.rsplit(":", 1)[1].split("/")[0])
    llm_env.stop()
    with client(base_url=f"http://127.0.0.1:{port}/v1", max_retries=0) as c, \
            pytest.raises(LLMError, match=r"cannot reach the endpoint http://127.0.0.1:\d+/v1.*server running"):
        c.chat(MESSAGES)


def test_missing_key_sends_nothing(monkeypatch, llm_env):
    monkeypatch.delenv("OPENAI_API_KEY")
    with pytest.raises(LLMError, match="OPENAI_API_KEY is not set"):
        client()
    assert llm_env.requests == []


def test_missing_model():
    with pytest.raises(LLMError, match="--model"):
        ChatClient(model="", api_key="x", base_url="http://127.0.0.1:1/v1")


def test_endpoint_resolution():
    assert resolve_base_url("http://127.0.0.1:8000/v1/", {}) == "http://127.0.0.1:8000/v1"
    assert resolve_base_url(None, {"OPENAI_BASE_URL": "http://localhost:11434/v1"}) == "http://localhost:11434/v1"
    assert resolve_base_url(None, {}) == "https://api.openai.com/v1"
    assert endpoint_host("http://127.0.0.1:8080/v1") == "127.0.0.1:8080"
    assert endpoint_host("https://api.openai.com/v1") == "api.openai.com"
    with pytest.raises(LLMError, match="not an http"):
        resolve_base_url("ftp://host/v1", {})
    with pytest.raises(LLMError, match="must not carry credentials") as info:
        resolve_base_url(f"http://user:{TEST_KEY}@host/v1", {})
    assert TEST_KEY not in str(info.value)
    with pytest.raises(LLMError, match="not set"):
        read_api_key({"OPENAI_API_KEY": "  "})
