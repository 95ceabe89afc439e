"""The ``scripted`` litellm provider: deterministic model answers read from a JSON script.

Tests, demos and benchmarks call ``litellm.acompletion(model="scripted/NAME", api_base=<script
path>)`` and go through litellm exactly like a real model, so the gateway's parameter handling,
exception mapping and response parsing are exercised with no network. The script path travels
in ``api_base`` (litellm hands it to the provider untouched), which lets one process use several
scripts at once.

The provider is stateless about conversations: the turn it answers with is the number of
assistant messages already in the request, so concurrent runs and replays of a stored session get
the same answers. The only state is a per-turn call counter for ``fail_times``.

The litellm subclass is built lazily in ``scripted_provider()`` because importing litellm costs
seconds and ``import core.llm`` must stay cheap.
"""

from __future__ import annotations

import asyncio
import functools
import json
import os
import re
import threading
import warnings
from collections import deque
from collections.abc import Coroutine, MutableSequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from core.errors import ConfigurationError
from core.inputs import load_json_file

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Callable, Generator, Sequence

PROVIDER_NAME = "scripted"

ErrorKind = Literal["timeout", "rate_limit", "server_error", "connection", "bad_request"]


class ScriptedToolCall(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1)
    arguments: dict[str, Any] = Field(default_factory=dict)


class ScriptedUsage(BaseModel):
    model_config = ConfigDict(extra="forbid")

    prompt_tokens: int = Field(ge=0)
    completion_tokens: int = Field(ge=0)


class Turn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    content: str | None = None
    tool_calls: list[ScriptedToolCall] = Field(default_factory=list)
    delay_s: float = Field(default=0.0, ge=0, le=3600)
    usage: ScriptedUsage | None = None
    error: ErrorKind | None = None
    fail_times: int | None = Field(default=None, ge=1)

    @model_validator(mode="after")
    def _has_an_outcome(self) -> Turn:
        answers = self.content is not None or bool(self.tool_calls)
        if not answers and self.error is None:
            raise ValueError("a turn needs content, tool_calls or error")
        if self.fail_times is not None:
            if self.error is None:
                raise ValueError("fail_times needs an error to fail with")
            if not answers:
                raise ValueError("fail_times needs content or tool_calls to answer with after the failures")
        return self


class Conversation(BaseModel):
    model_config = ConfigDict(extra="forbid")

    model: str = Field(min_length=1)
    match: str | None = None
    turns: list[Turn] = Field(min_length=1)

    @field_validator("match")
    @classmethod
    def _match_compiles(cls, v: str | None) -> str | None:
        if v is not None:
            try:
                re.compile(v)
            except re.error as exc:
                raise ValueError(f"invalid regex {v!r}: {exc}") from None
        return v


class Script(BaseModel):
    model_config = ConfigDict(extra="forbid")

    conversations: list[Conversation] = Field(min_length=1)


def _json_path(loc: Sequence[int | str]) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "(top level)"


_cache: dict[str, tuple[int, int, Script]] = {}
_cache_lock = threading.Lock()
_resolved: dict[str, Path] = {}


def resolved_script_path(path: Path | str) -> Path:
    """``path.resolve()``, remembered for absolute paths: resolving walks every directory with a
    system call, twice per scripted call (gateway and provider), and a script does not move while
    a process uses it. Relative paths depend on the working directory and are resolved each time.

    Remembered by the path's text: a ``Path`` built or hashed per call cost more than the stat."""
    key = os.fspath(path)
    hit = _resolved.get(key)
    if hit is not None:
        return hit
    resolved = Path(key).resolve()
    if os.path.isabs(key):
        _resolved[key] = resolved
    return resolved


def load_script(path: Path | str) -> Script:
    """Parse and validate a script, cached per file until its mtime or size changes.

    Raises ``ConfigurationError`` naming the file and the JSON path of the first faults, so an
    analyst editing a replay script can find the mistake without reading a traceback.
    """
    try:
        resolved = resolved_script_path(path)
        key = str(resolved)  # kept by the Path after its first use
        stat = os.stat(key)
        with _cache_lock:
            hit = _cache.get(key)
        if hit is not None and hit[0] == stat.st_mtime_ns and hit[1] == stat.st_size:
            return hit[2]
    except OSError as exc:
        raise ConfigurationError(f"cannot read script {path}: {exc.strerror or exc}") from None
    data = load_json_file(resolved, what="script")
    try:
        script = Script.model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(f"{_json_path(err['loc'])}: {err['msg']}" for err in exc.errors()[:5])
        more = f" (and {exc.error_count() - 5} more)" if exc.error_count() > 5 else ""
        raise ConfigurationError(f"invalid script {path}: {problems}{more}") from None
    with _cache_lock:
        _cache[key] = (stat.st_mtime_ns, stat.st_size, script)
    return script


class ScriptLookupError(Exception):
    """The script has no answer for a request; becomes a non-retried ``ScriptError`` in the gateway."""


def _part_text(content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = []
        for part in content:
            text = part.get("text") if isinstance(part, dict) else getattr(part, "text", None)
            if isinstance(text, str):
                texts.append(text)
        return "\n".join(texts)
    return str(content)


def _field(message: Any, name: str) -> Any:
    return message.get(name) if isinstance(message, dict) else getattr(message, name, None)


def request_text(messages: Sequence[Any]) -> str:
    """The text ``match`` regexes search: every message's content joined with newlines."""
    return "\n".join([_content_text(m) for m in messages])


def _content_text(message: Any) -> str:
    if type(message) is dict:  # nearly every message: a plain dict, its content text or None
        content = message.get("content")
        return content if type(content) is str else _part_text(content)
    return _part_text(_field(message, "content"))


def request_chars(messages: Sequence[Any]) -> int:
    """``len(request_text(messages))`` without building the text (a 50 MB prompt is not copied)."""
    return sum(len(_content_text(m)) for m in messages) + max(len(messages) - 1, 0)


def assistant_turns(messages: Sequence[Any]) -> int:
    return sum(
        1 for m in messages if (m.get("role") if type(m) is dict else _field(m, "role")) == "assistant"
    )


def select_turn(
    script: Script, path: Path, name: str, messages: Sequence[Any], text: str | None = None
) -> tuple[int, int, Turn]:
    """Pick (conversation index, turn index, turn): first conversation for NAME whose match is found.

    ``text`` is ``request_text(messages)`` when the caller has it; otherwise it is made only if a
    conversation of NAME has a ``match`` to search.
    """
    for ci, conv in enumerate(script.conversations):
        if conv.model != name:
            continue
        if conv.match is not None:
            if text is None:
                text = request_text(messages)
            if re.search(conv.match, text) is None:
                continue
        ti = assistant_turns(messages)
        if ti >= len(conv.turns):
            raise ScriptLookupError(
                f"script {path}: scripted/{name} has no turn {ti} in conversations[{ci}] "
                f"(it has {len(conv.turns)} turns; the request already holds {ti} assistant messages)"
            )
        return ci, ti, conv.turns[ti]
    models = sorted({c.model for c in script.conversations if c.model == name})
    why = "none of its match patterns is found in the request" if models else "no conversation has this model"
    raise ScriptLookupError(
        f"script {path}: no conversation answers scripted/{name} at turn {assistant_turns(messages)}: {why}"
    )


@dataclass(frozen=True)
class ScriptedRequest:
    """What one provider call received; tests assert on it instead of on litellm internals."""

    model: str
    message_count: int
    tool_names: tuple[str, ...]
    tool_choice: Any
    response_format: bool
    script: str
    conversation: int | None = None
    turn: int | None = None


REQUESTS_KEPT = 10_000
"""How many of the latest requests the provider remembers (``ScriptedStats.requests``).

The default models are scripted, so a desk or a worker on them makes scripted calls for as long as
it runs: every call's record used to stay. Tests and replays read the last few; what a run sent is
in its events.
"""


@dataclass
class ScriptedStats:
    in_flight: int = 0
    peak_in_flight: int = 0
    requests: MutableSequence[ScriptedRequest] = field(default_factory=list)
    calls: dict[tuple[str, int, int], int] = field(default_factory=dict)


_stats = ScriptedStats(requests=deque(maxlen=REQUESTS_KEPT))


def scripted_stats() -> ScriptedStats:
    """A snapshot of the provider's counters (copies, so later calls do not change it)."""
    return ScriptedStats(
        in_flight=_stats.in_flight,
        peak_in_flight=_stats.peak_in_flight,
        requests=list(_stats.requests),
        calls=dict(_stats.calls),
    )


def reset_scripted_stats() -> None:
    """Forget recorded requests, the peak and the ``fail_times`` counters (a replay starts fresh)."""
    _stats.peak_in_flight = _stats.in_flight
    _stats.requests.clear()
    _stats.calls.clear()


def _estimate_tokens(text: str) -> int:
    return len(text) // 4


def _tool_names(tools: Any) -> tuple[str, ...]:
    names: list[str] = []
    for tool in tools or []:
        fn = tool.get("function") if isinstance(tool, dict) else None
        name = fn.get("name") if isinstance(fn, dict) else None
        names.append(str(name) if name is not None else "?")
    return tuple(names)


def _prepare_litellm_import() -> None:
    # Without this litellm fetches its model cost map over the network at import time.
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")


def _raise_scripted_error(kind: str, model: str, detail: str) -> None:
    _prepare_litellm_import()
    from litellm.exceptions import (
        APIConnectionError,
        BadRequestError,
        InternalServerError,
        RateLimitError,
        Timeout,
    )

    message = f"scripted {kind}: {detail}"
    provider = PROVIDER_NAME
    if kind == "timeout":
        raise Timeout(message=message, model=model, llm_provider=provider)
    if kind == "rate_limit":
        raise RateLimitError(message=message, model=model, llm_provider=provider)
    if kind == "server_error":
        raise InternalServerError(message=message, model=model, llm_provider=provider)
    if kind == "connection":
        raise APIConnectionError(message=message, model=model, llm_provider=provider)
    raise BadRequestError(message=message, model=model, llm_provider=provider)


NOMINAL_RATE_USD = 1e-15
"""What litellm's own map says a scripted token costs. Never a price anyone pays: our prices come
from ``core.llm.cost``, which keeps every scripted call at zero whatever litellm's map says."""

_MAP_ENTRY = {
    "input_cost_per_token": NOMINAL_RATE_USD,
    "output_cost_per_token": NOMINAL_RATE_USD,
    "cache_creation_input_token_cost": NOMINAL_RATE_USD,
    "cache_read_input_token_cost": NOMINAL_RATE_USD,
    "litellm_provider": PROVIDER_NAME,
    "mode": "chat",
}
_registered: set[str] = set()


def _register_in_cost_map(litellm: Any, model: str) -> None:
    """Put ``scripted/<model>`` in litellm's cost map, once per name.

    After every call litellm prices the response; for a model its map lacks it falls through a
    ladder of name variants and ~600 capability regexes, a third of the provider's cost per turn
    in ``bench_loop_overhead``. An exact entry ends that lookup at its first step. The rate is
    nominal rather than zero because litellm follows every call it priced at zero with a
    diagnostic (a second map lookup, a walk of the usage and the entry) looking for a missing
    price: work a priced model never causes, and ~50 us of CPU per scripted call. litellm's
    figure is used nowhere: ``core.llm.cost.call_price`` prices scripted calls at zero itself.
    """
    if model in _registered:
        return
    with _cache_lock:
        if model not in _registered:
            litellm.register_model({f"{PROVIDER_NAME}/{model}": dict(_MAP_ENTRY)})
            _registered.add(model)


@functools.cache
def _script_path(api_base: str) -> Path:
    """The script named by a call's ``api_base``; one ``Path`` per text, its parsed parts kept."""
    return Path(api_base)


async def _answer(
    model: str, messages: list[Any], api_base: str | None, optional_params: dict[str, Any]
) -> Any:
    import litellm

    record = ScriptedRequest(
        model=model,
        message_count=len(messages),
        tool_names=_tool_names(optional_params.get("tools")),
        tool_choice=optional_params.get("tool_choice"),
        response_format=optional_params.get("response_format") is not None,
        script=api_base or "",
    )
    if not api_base:
        _stats.requests.append(record)
        raise ScriptLookupError(f"scripted/{model}: no script path given (pass it as api_base)")
    path = _script_path(api_base)
    try:
        script = load_script(path)
    except ConfigurationError as exc:
        _stats.requests.append(record)
        raise ScriptLookupError(str(exc)) from None
    try:
        ci, ti, turn = select_turn(script, path, model, messages)  # joins the text only for a match
    except ScriptLookupError:
        _stats.requests.append(record)
        raise
    _stats.requests.append(ScriptedRequest(**{**record.__dict__, "conversation": ci, "turn": ti}))
    _register_in_cost_map(litellm, model)
    key = (str(path), ci, ti)
    seen = _stats.calls.get(key, 0)
    _stats.calls[key] = seen + 1

    _stats.in_flight += 1
    _stats.peak_in_flight = max(_stats.peak_in_flight, _stats.in_flight)
    try:
        if turn.delay_s > 0:
            await asyncio.sleep(turn.delay_s)
    finally:
        _stats.in_flight -= 1

    if turn.error is not None and (turn.fail_times is None or seen < turn.fail_times):
        _raise_scripted_error(
            turn.error, model, f"scripted/{model} conversations[{ci}].turns[{ti}] call {seen + 1}"
        )

    tool_calls: list[dict[str, Any]] = [
        {
            "id": f"call_{ti}_{i}",
            "type": "function",
            "function": {"name": tc.name, "arguments": json.dumps(tc.arguments, ensure_ascii=False)},
        }
        for i, tc in enumerate(turn.tool_calls)
    ]
    if turn.usage is not None:
        prompt_tokens, completion_tokens = turn.usage.prompt_tokens, turn.usage.completion_tokens
    else:
        produced = (turn.content or "") + "".join(t["function"]["arguments"] for t in tool_calls)
        prompt_tokens = request_chars(messages) // 4
        completion_tokens = _estimate_tokens(produced)
    message: dict[str, Any] = {"role": "assistant", "content": turn.content}
    if tool_calls:
        message["tool_calls"] = tool_calls
    return litellm.ModelResponse(
        model=f"{PROVIDER_NAME}/{model}",
        choices=[{"index": 0, "finish_reason": "tool_calls" if tool_calls else "stop", "message": message}],
        usage={
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        },
    )


class _StartedWhenAwaited(Coroutine[Any, Any, Any]):
    """A coroutine that creates the real one only once something drives it.

    litellm calls a custom provider's ``acompletion`` in an executor thread and awaits what it
    returns back on the loop. A call cancelled in between (a timeout, an abandoned run) drops that
    result; a plain coroutine would then warn "never awaited" when collected.
    """

    def __init__(self, start: Callable[[], Coroutine[Any, Any, Any]]) -> None:
        self._start: Callable[[], Coroutine[Any, Any, Any]] | None = start
        self._coro: Coroutine[Any, Any, Any] | None = None

    def _started(self) -> Coroutine[Any, Any, Any]:
        if self._coro is None:
            assert self._start is not None
            self._coro, self._start = self._start(), None
        return self._coro

    def __await__(self) -> Generator[Any, None, Any]:
        return self._started().__await__()

    def send(self, value: Any) -> Any:
        return self._started().send(value)

    def throw(self, *args: Any) -> Any:
        return self._started().throw(*args)

    def close(self) -> None:
        if self._coro is not None:
            self._coro.close()
        self._start = None


STREAM_PIECE_CHARS = 24
"""Characters per streamed text piece: small enough that a desk shows text arriving."""


async def stream_chunks(pending: Coroutine[Any, Any, Any]) -> AsyncIterator[dict[str, Any]]:
    """The scripted answer as litellm ``GenericStreamingChunk`` dicts: text pieces, whole tool calls.

    The answer (and any scripted error) is settled before the first chunk, exactly as a real
    provider fails on the request rather than mid-stream; the last chunk carries the finish
    reason and usage, like an OpenAI stream with ``include_usage``.
    """
    response = await pending
    choice = response.choices[0]
    message = choice.message
    text = message.content or ""
    calls = list(getattr(message, "tool_calls", None) or [])
    pieces = [text[i : i + STREAM_PIECE_CHARS] for i in range(0, len(text), STREAM_PIECE_CHARS)]
    empty: dict[str, Any] = {
        "text": "",
        "tool_use": None,
        "is_finished": False,
        "finish_reason": "",
        "usage": None,
    }
    for piece in pieces:
        yield {**empty, "text": piece, "index": 0}
    for i, call in enumerate(calls):
        tool_use = {
            "id": call.id,
            "type": "function",
            "function": {"name": call.function.name, "arguments": call.function.arguments},
            "index": i,
        }
        yield {**empty, "tool_use": tool_use, "index": 0}
    usage = response.usage
    yield {
        **empty,
        "is_finished": True,
        "finish_reason": choice.finish_reason,
        "index": 0,
        "usage": {
            "prompt_tokens": usage.prompt_tokens,
            "completion_tokens": usage.completion_tokens,
            "total_tokens": usage.total_tokens,
        },
    }


_provider: Any = None
_script_error_class: Any = None


def script_error_class() -> type[Exception]:
    """litellm's BadRequestError subclass the provider raises for ``ScriptLookupError``.

    litellm re-wraps foreign exceptions from a custom provider as a (retryable) connection error
    with a traceback in the message; its own exception types pass through untouched, so the
    lookup failure travels as one of them and the gateway recognises it by class.
    """
    global _script_error_class
    if _script_error_class is None:
        _prepare_litellm_import()
        from litellm.exceptions import BadRequestError

        class ScriptedScriptError(BadRequestError):
            def __init__(self, detail: str, model: str) -> None:
                super().__init__(message=detail, model=model, llm_provider=PROVIDER_NAME)
                self.detail = detail

        _script_error_class = ScriptedScriptError
    cls: type[Exception] = _script_error_class
    return cls


def scripted_provider() -> Any:
    """The provider instance (created on first use; imports litellm)."""
    global _provider
    if _provider is None:
        _prepare_litellm_import()
        from litellm.llms.custom_llm import CustomLLM

        error_cls = script_error_class()

        async def answer(
            model: str, messages: list[Any], api_base: str | None, params: dict[str, Any]
        ) -> Any:
            try:
                return await _answer(model, messages, api_base, params)
            except ScriptLookupError as exc:
                raise error_cls(str(exc), model) from None

        class ScriptedLLM(CustomLLM):
            def acompletion(
                self, model: str, messages: list[Any], api_base: str | None, *args: Any, **kwargs: Any
            ) -> Any:
                optional_params = kwargs.get("optional_params")
                if optional_params is None and len(args) >= 7:
                    optional_params = args[6]
                params = dict(optional_params or {})
                return _StartedWhenAwaited(lambda: answer(model, messages, api_base, params))

            def astreaming(
                self, model: str, messages: list[Any], api_base: str | None, *args: Any, **kwargs: Any
            ) -> Any:  # an async iterator of chunks; litellm iterates what this returns
                optional_params = kwargs.get("optional_params")
                if optional_params is None and len(args) >= 7:
                    optional_params = args[6]
                params = dict(optional_params or {})
                return stream_chunks(answer(model, messages, api_base, params))

        _provider = ScriptedLLM()
    return _provider


_primed = False


def _prime_litellm_types(litellm: Any) -> None:
    """Build litellm's response types once with warnings silenced.

    pydantic emits a UserWarning about litellm's ``ReadOnly`` TypedDicts the first time a response
    with a message is constructed; doing it here keeps it out of user output and out of test runs
    that turn warnings into errors.
    """
    global _primed
    if _primed:
        return
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        litellm.ModelResponse(
            model="warm-up",
            choices=[
                {
                    "index": 0,
                    "finish_reason": "tool_calls",
                    "message": {
                        "role": "assistant",
                        "content": "",
                        "tool_calls": [
                            {"id": "c", "type": "function", "function": {"name": "f", "arguments": "{}"}}
                        ],
                    },
                }
            ],
            usage={"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
        )
    _primed = True


def register_scripted_provider() -> None:
    """Make ``scripted/*`` models resolvable in litellm; idempotent."""
    _prepare_litellm_import()
    import litellm

    _prime_litellm_types(litellm)
    provider = scripted_provider()
    entries = [e for e in litellm.custom_provider_map if e.get("provider") != PROVIDER_NAME]
    entries.append({"provider": PROVIDER_NAME, "custom_handler": provider})
    litellm.custom_provider_map = entries
