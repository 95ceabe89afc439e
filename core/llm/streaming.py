"""Streamed completions: text pieces go to a callback as they arrive, the caller gets one response.

The gateway hands a call here when the caller asked for streaming. The chunks are assembled with
litellm's own ``stream_chunk_builder`` (tool-call deltas included), so what comes back is the same
``ModelResponse`` shape a non-streamed call returns and everything after it (parsing, usage,
events) is one code path: a streamed run stores the same events as an unstreamed one.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

DeltaSink = Callable[[str], None]


def _delta_text(chunk: Any) -> str | None:
    choices = getattr(chunk, "choices", None)
    if not choices:
        return None
    delta = getattr(choices[0], "delta", None)
    text = getattr(delta, "content", None)
    return text if isinstance(text, str) and text else None


async def stream_completion(litellm: Any, kwargs: dict[str, Any], on_delta: DeltaSink | None) -> Any:
    """One streamed call, assembled; ``on_delta`` sees each non-empty text piece in order.

    ``include_usage`` asks OpenAI-compatible servers for the token counts they would otherwise
    leave out of a stream; the builder estimates them when a server ignores it.
    """
    stream = await litellm.acompletion(**kwargs, stream=True, stream_options={"include_usage": True})
    chunks: list[Any] = []
    try:
        async for chunk in stream:
            chunks.append(chunk)
            if on_delta is not None:
                text = _delta_text(chunk)
                if text is not None:
                    on_delta(text)
    except litellm.exceptions.MidStreamFallbackError as exc:
        # litellm wraps whatever the stream raised as a 503; the original says what happened (a
        # rate limit stays a rate limit, a refused request is not retried).
        original = getattr(exc, "original_exception", None)
        if isinstance(original, Exception):
            raise original from None
        raise
    if not chunks:
        # The same shape as a non-streamed reply with no choices, so one check handles both.
        return litellm.ModelResponse(choices=[])
    response = litellm.stream_chunk_builder(chunks, messages=kwargs.get("messages"))
    for choice in getattr(response, "choices", None) or []:
        message = getattr(choice, "message", None)
        if message is not None and message.content == "":
            # The builder joins zero text pieces into ""; an unstreamed reply says null, and the
            # stored event must not depend on which way the answer came.
            message.content = None
    return response


__all__ = ["DeltaSink", "stream_completion"]
