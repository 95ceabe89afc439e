"""A loopback fake of an OpenAI-compatible and an Ollama-compatible model server, for tests.

Built on pytest-httpserver (Werkzeug) and bound to 127.0.0.1, so tests drive litellm's real HTTP
path, request building, response parsing and error mapping included, without the network and
without mocking anything in the project. Replies are scripted per request: a queue of
:class:`Reply` objects (or a ``responder`` callable that picks one from the request) is consumed in
arrival order. Every request is recorded (path, headers, JSON body, arrival time and order) so a
test can count what was really sent and when.

Use the ``fake_llm`` fixture (one server) or ``fake_llm_factory`` (several, e.g. one per role).
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from pytest_httpserver import HTTPServer
from werkzeug import Request, Response

__all__ = [
    "FakeLLMServer",
    "RecordedRequest",
    "Reply",
    "fake_llm",
    "fake_llm_factory",
]

OPENAI_CHAT = "/v1/chat/completions"
OLLAMA_CHAT = "/api/chat"
OLLAMA_TAGS = "/api/tags"
OLLAMA_SHOW = "/api/show"
OPENAI_MODELS = "/v1/models"


@dataclass
class RecordedRequest:
    """One request as it arrived: what litellm really sent."""

    index: int
    path: str
    method: str
    headers: dict[str, str]
    body: dict[str, Any] | None
    at: float  # time.monotonic() on arrival

    @property
    def stream(self) -> bool:
        return bool((self.body or {}).get("stream"))

    @property
    def messages(self) -> list[dict[str, Any]]:
        return list((self.body or {}).get("messages") or [])

    @property
    def text(self) -> str:
        """All message contents joined, for responders that pick a reply by what was asked."""
        parts = []
        for m in self.messages:
            content = m.get("content")
            if isinstance(content, list):
                content = " ".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
            parts.append(str(content or ""))
        return "\n".join(parts)


@dataclass
class ToolCall:
    name: str
    arguments: dict[str, Any]
    id: str = field(default_factory=lambda: f"call_{uuid.uuid4().hex[:12]}")


@dataclass
class Reply:
    """One scripted answer. Build with the class methods; each renders for either dialect."""

    kind: str  # "message" | "fault"
    content: str | None = None
    tool_calls: list[ToolCall] = field(default_factory=list)
    finish_reason: str = "stop"
    prompt_tokens: int = 11
    completion_tokens: int = 7
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    raw_body: str | None = None  # a fault's exact body
    hold: bool = False  # a hung provider: the reply waits until the server stops (timeout tests)
    # A stream the server ends early: "no_finish" sends the text, then ``[DONE]`` with no finish
    # reason and no usage (llama-cpp-python's server when a second request interrupts a stream);
    # "drop" sends the text, then closes the connection mid-body; "finish_no_done" and
    # "finish_then_drop" send a finish reason, then end without ``[DONE]`` (cleanly, or by closing
    # the connection); "stall" sends the text, then nothing until the server stops (a read timeout
    # mid-answer). Non-streamed requests ignore it.
    cut: str | None = None
    stream_usage: bool = True  # False: a stream without the usage chunk (llama-cpp-python's server)

    # ------------------------------------------------------------------ constructors
    @classmethod
    def text(cls, content: str, *, finish_reason: str = "stop", **usage: int) -> Reply:
        return cls(kind="message", content=content, finish_reason=finish_reason, **usage)

    @classmethod
    def tools(
        cls, *calls: tuple[str, dict[str, Any]], finish_reason: str = "tool_calls", **usage: int
    ) -> Reply:
        return cls(
            kind="message",
            tool_calls=[ToolCall(name, args) for name, args in calls],
            finish_reason=finish_reason,
            **usage,
        )

    @classmethod
    def cut_stream(cls, content: str, *, how: str = "no_finish") -> Reply:
        """A streamed answer the server cuts short (see ``cut``)."""
        return cls(kind="message", content=content, cut=how)

    @classmethod
    def held(cls, content: str = "late") -> Reply:
        """A provider that hangs: nothing comes back until the test's server is stopped."""
        return cls(kind="message", content=content, hold=True)

    @classmethod
    def structured(cls, value: Any, **usage: int) -> Reply:
        """A structured answer (a verdict, chunk findings) as the message's JSON text."""
        return cls(kind="message", content=json.dumps(value), **usage)

    @classmethod
    def rate_limited(cls, retry_after_s: int = 1) -> Reply:
        body = {
            "error": {
                "message": "Rate limit reached",
                "type": "rate_limit_error",
                "code": "rate_limit_exceeded",
            }
        }
        return cls(
            kind="fault", status=429, headers={"Retry-After": str(retry_after_s)}, raw_body=json.dumps(body)
        )

    @classmethod
    def empty_choices(cls) -> Reply:
        return cls(kind="fault", raw_body="__empty_choices__")

    @classmethod
    def missing_message(cls) -> Reply:
        return cls(kind="fault", raw_body="__missing_message__")

    @classmethod
    def context_exceeded(cls, window: int = 4096, asked: int = 9000) -> Reply:
        body = {
            "error": {
                "message": f"This model's maximum context length is {window} tokens. However, your messages "
                f"resulted in {asked} tokens. Please reduce the length of the messages.",
                "type": "invalid_request_error",
                "param": "messages",
                "code": "context_length_exceeded",
            }
        }
        return cls(kind="fault", status=400, raw_body=json.dumps(body))

    @classmethod
    def malformed(cls) -> Reply:
        return cls(kind="fault", raw_body='{"id": "x", "choices": [ {"message": ')

    @classmethod
    def unauthorized(cls) -> Reply:
        body = {
            "error": {
                "message": "Incorrect API key provided",
                "type": "invalid_request_error",
                "code": "invalid_api_key",
            }
        }
        return cls(kind="fault", status=401, raw_body=json.dumps(body))

    @classmethod
    def server_error(cls) -> Reply:
        return cls(
            kind="fault",
            status=500,
            raw_body=json.dumps({"error": {"message": "boom", "type": "server_error"}}),
        )


Responder = Callable[[RecordedRequest], Reply]


class FakeLLMServer:
    """One fake provider on 127.0.0.1 speaking both dialects; see the module docstring."""

    def __init__(self, *, models: list[str] | None = None, context_length: int = 8192) -> None:
        # Threaded: parallel team nodes and a held (slow) reply must not queue the other requests.
        self.server = HTTPServer(host="127.0.0.1", port=0, threaded=True)
        self.models = models or ["fake-model"]
        self.context_length = context_length
        self.requests: list[RecordedRequest] = []
        self.responder: Responder | None = None
        self._queue: deque[Reply] = deque()
        self._lock = threading.Lock()
        self._released = threading.Event()  # lets held replies go when the server stops
        for path in (OPENAI_CHAT, OLLAMA_CHAT, OLLAMA_TAGS, OLLAMA_SHOW, OPENAI_MODELS):
            self.server.expect_request(path).respond_with_handler(self._handle)

    # ------------------------------------------------------------------ lifecycle
    def start(self) -> FakeLLMServer:
        self.server.start()
        return self

    def stop(self) -> None:
        self._released.set()
        if self.server.is_running():
            self.server.stop()

    @property
    def url(self) -> str:
        """Ollama's api_base (``http://127.0.0.1:PORT``)."""
        return f"http://127.0.0.1:{self.server.port}"

    @property
    def openai_base(self) -> str:
        """An OpenAI-compatible api_base (``.../v1``)."""
        return f"{self.url}/v1"

    # ------------------------------------------------------------------ scripting
    def push(self, *replies: Reply) -> None:
        with self._lock:
            self._queue.extend(replies)

    @property
    def pending(self) -> int:
        with self._lock:
            return len(self._queue)

    def chat_requests(self) -> list[RecordedRequest]:
        return [r for r in self.requests if r.path in (OPENAI_CHAT, OLLAMA_CHAT)]

    def _next_reply(self, recorded: RecordedRequest) -> Reply:
        with self._lock:
            if self._queue:
                return self._queue.popleft()
        if self.responder is not None:
            return self.responder(recorded)
        return Reply(
            kind="fault",
            status=500,
            raw_body=json.dumps(
                {"error": {"message": "fake server: no scripted reply left", "type": "server_error"}}
            ),
        )

    # ------------------------------------------------------------------ handling
    def _handle(self, request: Request) -> Response:
        try:
            body = json.loads(request.get_data(as_text=True) or "null")
        except ValueError:
            body = None
        with self._lock:
            recorded = RecordedRequest(
                index=len(self.requests),
                path=request.path,
                method=request.method,
                headers={k.lower(): v for k, v in request.headers.items()},
                body=body if isinstance(body, dict) else None,
                at=time.monotonic(),
            )
            self.requests.append(recorded)
        if request.path == OLLAMA_TAGS:
            return _json_response({"models": [_ollama_tag(m) for m in self.models]})
        if request.path == OPENAI_MODELS:
            return _json_response(
                {"object": "list", "data": [{"id": m, "object": "model"} for m in self.models]}
            )
        if request.path == OLLAMA_SHOW:
            return _json_response(
                {
                    "modelfile": "",
                    "parameters": "",
                    "template": "{{ .Prompt }}",
                    "details": {"family": "llama", "format": "gguf", "parameter_size": "8B"},
                    "model_info": {
                        "general.architecture": "llama",
                        "llama.context_length": self.context_length,
                    },
                    "capabilities": ["completion", "tools"],
                }
            )
        reply = self._next_reply(recorded)
        if reply.hold:
            self._released.wait()
        model = str((recorded.body or {}).get("model") or self.models[0])
        if reply.kind == "fault":
            return self._fault(reply, recorded, model)
        if request.path == OLLAMA_CHAT:
            return _ollama_reply(reply, model, recorded.stream)
        return _openai_reply(
            reply, model, recorded.stream, request.environ.get("werkzeug.socket"), self._released
        )

    def _fault(self, reply: Reply, recorded: RecordedRequest, model: str) -> Response:
        ollama = recorded.path == OLLAMA_CHAT
        if reply.raw_body == "__empty_choices__":
            if ollama:
                return _json_response({"model": model, "created_at": _now(), "done": True})
            return _json_response({**_openai_envelope(model), "choices": [], "usage": _usage(reply)})
        if reply.raw_body == "__missing_message__":
            if ollama:
                return _json_response(
                    {"model": model, "created_at": _now(), "done": True, "done_reason": "stop"}
                )
            return _json_response(
                {
                    **_openai_envelope(model),
                    "choices": [{"index": 0, "finish_reason": "stop"}],
                    "usage": _usage(reply),
                }
            )
        return Response(
            reply.raw_body or "", status=reply.status, headers=reply.headers, content_type="application/json"
        )


# ---------------------------------------------------------------------- OpenAI dialect
def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def _usage(reply: Reply) -> dict[str, int]:
    return {
        "prompt_tokens": reply.prompt_tokens,
        "completion_tokens": reply.completion_tokens,
        "total_tokens": reply.prompt_tokens + reply.completion_tokens,
    }


def _openai_envelope(model: str, obj: str = "chat.completion") -> dict[str, Any]:
    return {
        "id": f"chatcmpl-{uuid.uuid4().hex[:16]}",
        "object": obj,
        "created": int(time.time()),
        "model": model,
    }


def _openai_reply(
    reply: Reply, model: str, stream: bool, sock: Any = None, released: threading.Event | None = None
) -> Response:
    if stream and reply.cut is not None:
        return Response(_openai_cut_stream(reply, model, sock, released), content_type="text/event-stream")
    if stream:
        return Response(_openai_stream(reply, model), content_type="text/event-stream")
    message: dict[str, Any] = {"role": "assistant", "content": reply.content}
    if reply.tool_calls:
        message["tool_calls"] = [
            {
                "id": c.id,
                "type": "function",
                "function": {"name": c.name, "arguments": json.dumps(c.arguments)},
            }
            for c in reply.tool_calls
        ]
    choice = {"index": 0, "message": message, "finish_reason": reply.finish_reason}
    return _json_response({**_openai_envelope(model), "choices": [choice], "usage": _usage(reply)})


def _openai_stream(reply: Reply, model: str) -> Iterator[str]:
    envelope = _openai_envelope(model, "chat.completion.chunk")

    def chunk(delta: dict[str, Any], finish: str | None = None, **extra: Any) -> str:
        data = {**envelope, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}], **extra}
        return f"data: {json.dumps(data)}\n\n"

    yield chunk({"role": "assistant", "content": ""})
    if reply.content:
        text = reply.content
        step = max(1, len(text) // 4)
        for start in range(0, len(text), step):
            yield chunk({"content": text[start : start + step]})
    for i, call in enumerate(reply.tool_calls):
        arguments = json.dumps(call.arguments)
        half = len(arguments) // 2
        yield chunk(
            {
                "tool_calls": [
                    {
                        "index": i,
                        "id": call.id,
                        "type": "function",
                        "function": {"name": call.name, "arguments": ""},
                    }
                ]
            }
        )
        for part in (arguments[:half], arguments[half:]):
            yield chunk({"tool_calls": [{"index": i, "function": {"arguments": part}}]})
    yield chunk({}, reply.finish_reason)
    if reply.stream_usage:
        yield f"data: {json.dumps({**envelope, 'choices': [], 'usage': _usage(reply)})}\n\n"
    yield "data: [DONE]\n\n"


def _openai_cut_stream(
    reply: Reply, model: str, sock: Any, released: threading.Event | None = None
) -> Iterator[str]:
    envelope = _openai_envelope(model, "chat.completion.chunk")
    text = reply.content or ""
    step = max(1, len(text) // 4)
    for start in range(0, len(text), step):
        delta = {"content": text[start : start + step]}
        yield f"data: {json.dumps({**envelope, 'choices': [{'index': 0, 'delta': delta, 'finish_reason': None}]})}\n\n"
    if reply.cut == "no_finish":
        yield "data: [DONE]\n\n"
        return
    if reply.cut == "stall":
        if released is not None:
            released.wait()
        return
    if reply.cut.startswith("finish_"):
        # The finish reason arrives, then the stream ends without ``[DONE]``: closed cleanly
        # ("finish_no_done", a proxy that drops the terminator) or mid-body ("finish_then_drop").
        yield f"data: {json.dumps({**envelope, 'choices': [{'index': 0, 'delta': {}, 'finish_reason': 'stop'}]})}\n\n"
        if reply.cut == "finish_no_done":
            return
    # "drop": the body was sent in chunks; close the socket before the closing chunk, as a server
    # that dies mid-answer does, so the client sees an incomplete chunked body.
    import socket

    sock.shutdown(socket.SHUT_RDWR)


# ---------------------------------------------------------------------- Ollama dialect
def _ollama_tag(name: str) -> dict[str, Any]:
    return {
        "name": name,
        "model": name,
        "modified_at": "2025-01-01T00:00:00Z",
        "size": 4_000_000_000,
        "digest": uuid.uuid5(uuid.NAMESPACE_URL, name).hex,
        "details": {
            "family": "llama",
            "format": "gguf",
            "parameter_size": "8B",
            "quantization_level": "Q4_K_M",
        },
    }


def _ollama_done_reason(reply: Reply) -> str:
    return "length" if reply.finish_reason == "length" else "stop"


def _ollama_message(reply: Reply) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": reply.content or ""}
    if reply.tool_calls:
        message["tool_calls"] = [
            {"function": {"name": c.name, "arguments": c.arguments}} for c in reply.tool_calls
        ]
    return message


def _ollama_reply(reply: Reply, model: str, stream: bool) -> Response:
    final = {
        "model": model,
        "created_at": _now(),
        "done": True,
        "done_reason": _ollama_done_reason(reply),
        "prompt_eval_count": reply.prompt_tokens,
        "eval_count": reply.completion_tokens,
    }
    if not stream:
        return _json_response({**final, "message": _ollama_message(reply)})

    def lines() -> Iterator[str]:
        text = reply.content or ""
        step = max(1, len(text) // 4)
        for start in range(0, len(text), step):
            part = {"role": "assistant", "content": text[start : start + step]}
            yield json.dumps({"model": model, "created_at": _now(), "message": part, "done": False}) + "\n"
        if reply.tool_calls:
            calls = {"role": "assistant", "content": "", "tool_calls": _ollama_message(reply)["tool_calls"]}
            yield json.dumps({"model": model, "created_at": _now(), "message": calls, "done": False}) + "\n"
        yield json.dumps({**final, "message": {"role": "assistant", "content": ""}}) + "\n"

    return Response(lines(), content_type="application/x-ndjson")


def _json_response(data: Any) -> Response:
    return Response(json.dumps(data), status=200, content_type="application/json")


# ---------------------------------------------------------------------- fixtures
@pytest.fixture
def fake_llm_factory() -> Iterator[Callable[..., FakeLLMServer]]:
    """Start as many fake servers as a test needs (e.g. one for the agent, one for the validator)."""
    started: list[FakeLLMServer] = []

    def make(**kwargs: Any) -> FakeLLMServer:
        server = FakeLLMServer(**kwargs).start()
        started.append(server)
        return server

    yield make
    for server in started:
        server.stop()


@pytest.fixture
def fake_llm(fake_llm_factory: Callable[..., FakeLLMServer]) -> FakeLLMServer:
    """One fake provider on loopback for this test."""
    return fake_llm_factory()
