"""Streamed completions: text pieces go to a callback as they arrive, the caller gets one response.

The gateway hands a call here when the caller asked for streaming. The chunks are assembled into
the same ``ModelResponse`` shape a non-streamed call returns (by ``_Assembly``, or by litellm's own
``stream_chunk_builder`` for streams with parts it does not keep), so everything after it (parsing,
usage, events) is one code path: a streamed run stores the same events as an unstreamed one.
OpenAI-protocol streams (``openai/`` models) are read where the OpenAI SDK hands out its chunks,
past litellm's stream wrapper (see ``_read_sdk_stream``); other providers go through the wrapper.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

DeltaSink = Callable[[str], None]

# Our own finish reason for a stream that ended before the server said why it stopped: no finish
# reason arrived (llama-cpp-python's server ends a running stream with a bare ``[DONE]`` when a
# second request comes in) or the connection closed mid-answer. litellm fills in "stop" for such a
# stream, so the text would pass as a whole answer; the agent loop retries such a turn once and
# otherwise keeps it as truncated.
STREAM_CUT = "stream_cut"


class _Assembly:
    """The reply put together chunk by chunk, O(1) per chunk.

    ``litellm.stream_chunk_builder`` re-walks and deep-copies every chunk at the end: a streamed
    turn cost twice an unstreamed one, and litellm already runs that builder once itself for its
    own logging. The gateway reads only the text, the tool calls, the finish reason and the
    usage, so those are kept as they arrive; a stream with more than that (several choices,
    reasoning, audio) or with no usage is left to the builder.
    """

    __slots__ = ("calls", "finish_reason", "simple", "texts", "usage")

    def __init__(self) -> None:
        self.texts: list[str] = []
        self.calls: dict[int, list[str]] = {}  # index -> [id, name, arguments]
        self.finish_reason: str | None = None
        self.usage: Any = None
        self.simple = True

    def add(self, chunk: Any) -> str | None:
        """Keep what ``chunk`` adds; return its text piece, if any."""
        usage = getattr(chunk, "usage", None)
        if usage is not None:
            self.usage = usage
        choices = getattr(chunk, "choices", None)
        if not choices:
            return None
        if len(choices) > 1:
            self.simple = False
        choice = choices[0]
        if choice.finish_reason:
            self.finish_reason = choice.finish_reason
        delta = choice.delta
        if delta is None:
            return None
        if getattr(delta, "reasoning_content", None) or getattr(delta, "audio", None):
            self.simple = False
        for call in getattr(delta, "tool_calls", None) or []:
            self._add_call(call)
        text = delta.content
        if isinstance(text, str) and text:
            self.texts.append(text)
            return text
        return None

    def _add_call(self, call: Any) -> None:
        index = getattr(call, "index", None)
        kept = self.calls.setdefault(int(index or 0), ["", "", ""])
        function = getattr(call, "function", None)
        if call.id and not kept[0]:
            kept[0] = str(call.id)
        if function is not None:
            if function.name and not kept[1]:
                kept[1] = str(function.name)
            if function.arguments:
                kept[2] += str(function.arguments)

    def response(self, litellm: Any) -> Any:
        """The same ``ModelResponse`` a non-streamed call returns (content null when no text)."""
        message: dict[str, Any] = {"role": "assistant", "content": "".join(self.texts) or None}
        if self.calls:
            message["tool_calls"] = [
                {"id": cid, "type": "function", "function": {"name": name, "arguments": arguments}}
                for _, (cid, name, arguments) in sorted(self.calls.items())
            ]
        usage = self.usage
        prompt = int(getattr(usage, "prompt_tokens", 0) or 0)
        completion = int(getattr(usage, "completion_tokens", 0) or 0)
        response = litellm.ModelResponse(
            choices=[{"index": 0, "finish_reason": self.finish_reason or "stop", "message": message}],
            usage={
                "prompt_tokens": prompt,
                "completion_tokens": completion,
                "total_tokens": int(getattr(usage, "total_tokens", 0) or prompt + completion),
            },
        )
        return response


async def stream_completion(litellm: Any, kwargs: dict[str, Any], on_delta: DeltaSink | None) -> Any:
    """One streamed call, assembled; ``on_delta`` sees each non-empty text piece in order.

    ``include_usage`` asks OpenAI-compatible servers for the token counts they would otherwise
    leave out of a stream; they are estimated as litellm's builder does when a server ignores it.
    A stream the server
    cut (no finish reason, no ``[DONE]`` on the OpenAI protocol, or the connection closed after the
    answer began) comes back with ``finish_reason`` ``stream_cut`` and the part that arrived.
    """
    stream = await litellm.acompletion(**kwargs, stream=True, stream_options={"include_usage": True})
    terminator = _TerminatorWatch(stream)
    if terminator.applies and getattr(stream, "custom_llm_provider", None) == "openai":
        return await _read_sdk_stream(litellm, stream, terminator, kwargs, on_delta)
    chunks: list[Any] = []
    assembly = _Assembly()
    dropped = False
    try:
        async for chunk in stream:
            chunks.append(chunk)
            text = assembly.add(chunk)
            if on_delta is not None and text:
                on_delta(text)
    except litellm.exceptions.MidStreamFallbackError as exc:
        # litellm wraps whatever the stream raised as a 503; the original says what happened (a
        # rate limit stays a rate limit, a refused request is not retried).
        original = getattr(exc, "original_exception", None)
        dropped = bool(chunks) and _connection_lost(original)
        if not dropped:
            if isinstance(original, Exception):
                raise original from None
            raise
    if not chunks:
        # The same shape as a non-streamed reply with no choices, so one check handles both.
        return litellm.ModelResponse(choices=[])
    if assembly.usage is not None and assembly.simple:
        response = assembly.response(litellm)
    else:
        # No usage in the stream (a server that ignores ``include_usage``, or one cut before it)
        # or parts this assembly does not keep: litellm's builder estimates the tokens and merges.
        response = litellm.stream_chunk_builder(chunks, messages=kwargs.get("messages"))
        for choice in getattr(response, "choices", None) or []:
            message = getattr(choice, "message", None)
            if message is not None and message.content == "":
                # The builder joins zero text pieces into ""; an unstreamed reply says null, and the
                # stored event must not depend on which way the answer came.
                message.content = None
    if dropped or terminator.missing or not _server_finished(stream, assembly):
        # Set after construction: litellm maps a finish reason it does not know to "stop".
        response.choices[0].finish_reason = STREAM_CUT
    return response


async def _read_sdk_stream(
    litellm: Any,
    stream: Any,
    terminator: _TerminatorWatch,
    kwargs: dict[str, Any],
    on_delta: DeltaSink | None,
) -> Any:
    """An OpenAI-protocol stream read where the OpenAI SDK hands out its chunks, past litellm's wrapper.

    litellm's ``CustomStreamWrapper`` rebuilds every chunk as its own object, then at the end runs
    ``stream_chunk_builder`` in a worker thread, deep-copies the result and schedules its success
    logging with a cost calculation: against an instant server a streamed turn cost 2.3x an
    unstreamed one, the raw SDK's own streamed turn about 1.2x. The OpenAI protocol
    (``openai/`` models: OpenAI, llama.cpp, vLLM, LM Studio) needs none of that rework: its chunks
    already are the SDK's typed objects. litellm still makes the request (parameters, headers,
    its exception mapping for a refused or failed request); an error raised while reading is
    mapped by litellm's own ``exception_type`` as its wrapper does, and the wrapper is closed.
    """
    chunks: list[Any] = []  # only for litellm's builder, should the stream need it (see below)
    assembly = _Assembly()
    dropped = False
    pieces = stream.completion_stream.__aiter__()
    try:
        while True:
            try:
                chunk = await pieces.__anext__()
            except StopAsyncIteration:
                break
            except Exception as exc:  # only the reading: the sink's own errors are not the stream's
                dropped = bool(chunks) and _connection_lost(exc)
                if dropped:
                    break
                mapped = _mapped(litellm, stream, exc)
                if mapped is exc:
                    raise
                raise mapped from exc
            chunks.append(chunk)
            text = assembly.add(chunk)
            if on_delta is not None and text:
                on_delta(text)
    finally:
        await stream.aclose()
    if not chunks:
        return litellm.ModelResponse(choices=[])
    if not assembly.simple:
        response = _built(litellm, chunks, kwargs.get("messages"))
    else:
        response = assembly.response(litellm)
        if assembly.usage is None:
            _estimate_usage(
                litellm, response, str(getattr(chunks[0], "model", "") or ""), kwargs.get("messages")
            )
    if dropped or terminator.missing or assembly.finish_reason is None:
        response.choices[0].finish_reason = STREAM_CUT
    return response


def _mapped(litellm: Any, stream: Any, exc: Exception) -> Exception:
    """What litellm's stream wrapper would have raised for ``exc``: its own mapping of the error."""
    from openai import OpenAIError

    if isinstance(exc, OpenAIError):
        return exc
    try:
        mapped = litellm.exception_type(
            model=getattr(stream, "model", None),
            custom_llm_provider=getattr(stream, "custom_llm_provider", None),
            original_exception=exc,
        )
    except Exception as raised:  # exception_type raises the mapped error for most inputs
        mapped = raised
    return mapped if isinstance(mapped, Exception) else exc


def _estimate_usage(litellm: Any, response: Any, model: str, messages: Any) -> None:
    """Token counts for a stream that carried none, estimated as ``stream_chunk_builder`` does.

    llama-cpp-python's server ignores ``include_usage``, so every one of its streams ends without
    counts. The builder would estimate them with ``token_counter`` on the request's messages and on
    the reply (text, then each tool call's JSON), after re-walking and copying every chunk: 1.6 ms
    a stream of 14 chunks, against 0.06 ms for the two counts alone.
    """
    message = response.choices[0].message
    output = message.content or ""
    for call in getattr(message, "tool_calls", None) or []:
        output += call.model_dump_json()
    try:
        prompt = int(litellm.token_counter(model=model, messages=messages)) if messages else 0
    except Exception:  # as the builder: a counting failure must not lose the answer
        prompt = 0
    completion = int(litellm.token_counter(model=model, text=output, count_response_tokens=True))
    response.usage = litellm.Usage(
        prompt_tokens=prompt, completion_tokens=completion, total_tokens=prompt + completion
    )


def _built(litellm: Any, sdk_chunks: list[Any], messages: Any) -> Any:
    """litellm's builder over the SDK's chunks, for a stream without usage or with parts not kept."""
    chunks = [litellm.ModelResponseStream(**chunk.model_dump(exclude_none=True)) for chunk in sdk_chunks]
    response = litellm.stream_chunk_builder(chunks, messages=messages)
    for choice in getattr(response, "choices", None) or []:
        message = getattr(choice, "message", None)
        if message is not None and message.content == "":
            message.content = None  # as below: an unstreamed reply says null
    return response


class _TerminatorWatch:
    """Whether an OpenAI-protocol stream ended with its ``data: [DONE]`` terminator.

    A finish reason is not the end of such a stream: the usage chunk and ``[DONE]`` follow, and a
    stream that stops after the finish reason without them (a proxy or a server closing the
    connection, cleanly or not) may have lost its usage and whatever else was due. The OpenAI SDK
    consumes ``[DONE]`` itself and litellm closes the stream quietly either way, so the terminator
    is watched where the SDK decodes the server-sent events. A stream that is not the SDK's (other
    wire protocols have no terminator) is not judged here.
    """

    __slots__ = ("applies", "seen")

    def __init__(self, stream: Any) -> None:
        self.applies = False
        self.seen = False
        inner = getattr(stream, "completion_stream", None)
        decoder: Any = getattr(inner, "_decoder", None)
        decode = getattr(decoder, "aiter_bytes", None)
        if type(inner).__name__ != "AsyncStream" or decoder is None or decode is None:
            return
        self.applies = True

        async def watched(raw: Any) -> Any:
            async for event in decode(raw):
                if str(getattr(event, "data", "")).startswith("[DONE]"):
                    self.seen = True
                yield event

        decoder.aiter_bytes = watched

    @property
    def missing(self) -> bool:
        """The stream was the SDK's and ended without its terminator."""
        return self.applies and not self.seen


def _server_finished(stream: Any, assembly: _Assembly) -> bool:
    """Whether the server itself said why the answer stopped.

    litellm's stream wrapper closes every stream with a chunk saying "stop" when the server sent no
    finish reason, so the chunks cannot tell; the wrapper keeps what the server really sent. A
    stream object without those attributes (not litellm's wrapper) is judged by its chunks.
    """
    if not hasattr(stream, "received_finish_reason"):
        return assembly.finish_reason is not None
    sent = getattr(stream, "received_finish_reason", None) or getattr(
        stream, "intermittent_finish_reason", None
    )
    return sent is not None


def _connection_lost(exc: BaseException | None) -> bool:
    """The stream broke because the connection did (the server died or closed it mid-answer)."""
    import httpx

    seen = 0
    while exc is not None and seen < 8:
        if isinstance(exc, (httpx.RemoteProtocolError, httpx.ReadError, ConnectionError)):
            return True
        if type(exc).__name__ == "APIConnectionError":
            return True
        exc, seen = exc.__cause__ or exc.__context__, seen + 1
    return False


__all__ = ["STREAM_CUT", "DeltaSink", "stream_completion"]
