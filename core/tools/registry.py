"""Typed Python functions as LLM tools.

The agent loop hands whatever the model produced straight to :meth:`ToolRegistry.execute`. Models
send malformed JSON, wrong types and made-up tool names, and tools hit I/O errors; none of that may
end a run, so every such problem comes back as an error *result* the model can read and correct.
Only cancellation propagates, because it is the scheduler stopping the run, not the tool failing.

A tool that never returns is a problem of the same kind: every call has a time limit, and when it
passes the model gets an error result and the run goes on. Python cannot kill a thread, so a
blocking tool runs in a daemon thread of its own that is simply abandoned on timeout; a pooled
worker (``asyncio.to_thread``) would instead be joined when the event loop or interpreter shuts
down, and one hung read would keep the whole program from exiting. The daemon threads are reused
between calls (``core.tools.workers``): starting one per call cost every turn a thread start.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import inspect
import json
import logging
import re
import threading
import typing
from collections.abc import Callable, Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model

from core.errors import ConfigurationError
from core.tools.workers import DaemonWorkers

logger = logging.getLogger(__name__)

_NAME_RE = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
_MAX_INPUT_REPR = 120
DEFAULT_TOOL_TIMEOUT_S = 60.0


class ToolResult(BaseModel):
    """What the agent loop records as evidence; ``content`` is the complete text, never truncated."""

    content: str
    is_error: bool = False
    url: str | None = None
    title: str | None = None
    data: dict[str, Any] = Field(default_factory=dict)


class ToolError(Exception):
    """Raised by a tool for an expected problem; its message reaches the model without a type name."""


class UnknownToolError(ConfigurationError):
    """A plan or caller named tools the registry does not have."""

    def __init__(self, unknown: Sequence[str], available: Sequence[str]) -> None:
        self.unknown = list(unknown)
        self.available = list(available)
        super().__init__(
            f"unknown tool(s): {', '.join(self.unknown)}; "
            f"available tools: {', '.join(self.available) or 'none'}"
        )


def _first_paragraph(doc: str | None) -> str:
    if not doc:
        return ""
    cleaned = inspect.cleandoc(doc)
    return " ".join(cleaned.split("\n\n", 1)[0].split())


def _strip_titles(schema: Any) -> Any:
    """Drop pydantic's auto-generated ``title`` keys: they only repeat the property name."""
    if isinstance(schema, dict):
        out: dict[str, Any] = {}
        for key, value in schema.items():
            if key == "properties" and isinstance(value, dict):
                out[key] = {prop: _strip_titles(sub) for prop, sub in value.items()}
            elif key == "title" and isinstance(value, str):
                continue
            else:
                out[key] = _strip_titles(value)
        return out
    if isinstance(schema, list):
        return [_strip_titles(item) for item in schema]
    return schema


def _format_validation_error(exc: ValidationError) -> str:
    parts: list[str] = []
    for err in exc.errors():
        where = ".".join(str(p) for p in err["loc"]) or "arguments"
        text = f"{where}: {err['msg']}"
        if err["type"] != "missing":  # for a missing field the "input" is the whole argument object
            got = repr(err.get("input"))
            if len(got) > _MAX_INPUT_REPR:
                got = got[:_MAX_INPUT_REPR] + "..."
            text += f" (got {got})"
        parts.append(text)
    return "; ".join(parts)


def _to_result(value: Any) -> ToolResult:
    if isinstance(value, ToolResult):
        return value
    if isinstance(value, str):
        return ToolResult(content=value)
    if isinstance(value, BaseModel):
        return ToolResult(content=value.model_dump_json(), data=value.model_dump(mode="json"))
    text = json.dumps(value, ensure_ascii=False)  # TypeError for non-serialisable values
    return ToolResult(content=text, data=value if isinstance(value, dict) else {})


def _settle(future: asyncio.Future[Any], ok: bool, outcome: Any) -> None:
    if future.done():  # timed out or cancelled meanwhile: nobody is waiting for this any more
        return
    if ok:
        future.set_result(outcome)
    else:
        future.set_exception(outcome)


_WORKERS = DaemonWorkers()


def _start_in_daemon_thread(
    name: str, fn: Callable[..., Any], kwargs: dict[str, Any]
) -> tuple[asyncio.Future[Any], Callable[[], None]]:
    """Run ``fn`` on a daemon worker: a future the event loop can wait on with a limit, and ``abandon``.

    A call abandoned (a timeout, a cancelled run) is finished by its worker alone, which then exits
    instead of taking more work: it may be the thread a hung tool holds.
    """
    loop = asyncio.get_running_loop()
    future: asyncio.Future[Any] = loop.create_future()
    abandoned = threading.Event()

    def work() -> tuple[bool, Callable[[], None]]:
        ok = False
        outcome: Any
        try:
            outcome = fn(**kwargs)
            ok = True
        except Exception as exc:
            outcome = exc
        except BaseException as exc:  # never let e.g. SystemExit from a tool thread vanish unanswered
            outcome = RuntimeError(f"{type(exc).__name__} raised in the tool thread")

        def deliver() -> None:
            try:
                loop.call_soon_threadsafe(_settle, future, ok, outcome)
            except RuntimeError:  # the loop is closed: the run finished long ago without this result
                logger.info("tool %s finished after its run ended; result dropped", name)

        return not abandoned.is_set(), deliver

    context = contextvars.copy_context()  # as asyncio.to_thread does, so context variables carry over
    _WORKERS.submit(name, lambda: context.run(work))
    return future, abandoned.set


class Tool:
    """One callable tool: its JSON schema and an ``invoke`` that never raises for tool-level problems."""

    def __init__(self, fn: Callable[..., Any], *, name: str | None = None) -> None:
        self.fn = fn
        self.name = name or fn.__name__
        if not _NAME_RE.match(self.name):
            raise ValueError(f"tool name {self.name!r} must match {_NAME_RE.pattern}")
        self.description = _first_paragraph(fn.__doc__)
        self.is_async = inspect.iscoroutinefunction(fn)
        self.arguments_model = self._build_model(fn)
        self.argument_names = tuple(self.arguments_model.model_fields)  # read once, not per call
        parameters = _strip_titles(self.arguments_model.model_json_schema())
        parameters.setdefault("properties", {})
        self.schema: dict[str, Any] = {
            "type": "function",
            "function": {"name": self.name, "description": self.description, "parameters": parameters},
        }

    def _build_model(self, fn: Callable[..., Any]) -> type[BaseModel]:
        try:
            hints = typing.get_type_hints(fn, include_extras=True)
        except NameError as exc:
            raise TypeError(
                f"tool {self.name}: cannot resolve annotations ({exc}); define types at module level"
            ) from exc
        fields: dict[str, Any] = {}
        for param in inspect.signature(fn).parameters.values():
            if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD, param.POSITIONAL_ONLY):
                raise TypeError(
                    f"tool {self.name}: parameter {param.name!r} must be a named keyword parameter"
                )
            if param.name not in hints:
                raise TypeError(f"tool {self.name}: parameter {param.name!r} needs a type annotation")
            default = ... if param.default is inspect.Parameter.empty else param.default
            fields[param.name] = (hints[param.name], default)
        model_name = (
            "".join(part.capitalize() for part in self.name.replace("-", "_").split("_")) + "Arguments"
        )
        model: type[BaseModel] = create_model(
            model_name, __config__=ConfigDict(extra="forbid", arbitrary_types_allowed=False), **fields
        )
        return model

    def _parse(self, raw_arguments: str | dict[str, Any] | None) -> dict[str, Any]:
        if raw_arguments is None:
            return {}
        if isinstance(raw_arguments, dict):
            return raw_arguments
        if not raw_arguments.strip():
            return {}
        try:
            parsed = json.loads(raw_arguments)
        except json.JSONDecodeError as exc:
            raise ToolError(
                f"invalid arguments for {self.name}: not valid JSON ({exc}); send a JSON object"
            ) from None
        if not isinstance(parsed, dict):
            raise ToolError(
                f"invalid arguments for {self.name}: expected a JSON object, got {type(parsed).__name__}"
            )
        return parsed

    async def invoke(
        self, raw_arguments: str | dict[str, Any] | None, *, timeout_s: float = DEFAULT_TOOL_TIMEOUT_S
    ) -> ToolResult:
        try:
            arguments = self._parse(raw_arguments)
        except ToolError as exc:
            return ToolResult(content=str(exc), is_error=True)
        try:
            validated = self.arguments_model.model_validate(arguments)
        except ValidationError as exc:
            return ToolResult(
                content=f"invalid arguments for {self.name}: {_format_validation_error(exc)}", is_error=True
            )
        kwargs = {key: getattr(validated, key) for key in self.argument_names}
        running: asyncio.Future[Any]
        abandon: Callable[[], None] | None = None
        if self.is_async:
            running = asyncio.ensure_future(self.fn(**kwargs))
        else:
            running, abandon = _start_in_daemon_thread(self.name, self.fn, kwargs)
        try:
            finished = await _finishes_within(running, timeout_s)
        except asyncio.CancelledError:
            _abandon(running, abandon)
            raise
        if not finished:
            _abandon(running, abandon)  # stops a coroutine; a thread cannot be stopped and finishes alone
            logger.warning("tool %s exceeded its %g s limit and was abandoned", self.name, timeout_s)
            return ToolResult(
                content=(
                    f"{self.name} did not finish within the {timeout_s:g} s tool time limit "
                    f"(tool_timeout_s) and was abandoned, so its result is unknown. Do not repeat the same "
                    f"call; try another way or answer from the evidence you already have."
                ),
                is_error=True,
                data={"timed_out": True, "timeout_s": timeout_s},
            )
        try:
            return _to_result(running.result())
        except ToolError as exc:
            return ToolResult(content=f"{self.name} failed: {exc}", is_error=True)
        except Exception as exc:  # the model must see the failure; CancelledError is not an Exception
            return ToolResult(content=f"{self.name} failed: {type(exc).__name__}: {exc}", is_error=True)


async def _finishes_within(running: asyncio.Future[Any], timeout_s: float) -> bool:
    """Whether the call ended before its deadline; never raises the call's own error (read later),
    so a TimeoutError the tool raised stays the tool's error, not a timeout.

    A thread's plain future is awaited straight under the deadline: cancelling it is immediate,
    and ``asyncio.wait`` cost a waiter future and an extra loop pass on every call. A coroutine's
    task is waited on with ``asyncio.wait``, which returns at the deadline even when the task is
    slow to honour its cancellation (awaiting it directly would wait for that).
    """
    if isinstance(running, asyncio.Task):
        done, _ = await asyncio.wait({running}, timeout=timeout_s)
        return bool(done)
    try:
        async with asyncio.timeout(timeout_s):
            with contextlib.suppress(Exception):  # the tool failed: its error is read by the caller
                await running
    except TimeoutError:
        return False
    return True


def _abandon(running: asyncio.Future[Any], abandon: Callable[[], None] | None) -> None:
    if abandon is not None:
        abandon()
    running.cancel()
    running.add_done_callback(_consume)


def _consume(future: asyncio.Future[Any]) -> None:
    """Retrieve an abandoned call's late outcome so asyncio does not log it as never retrieved."""
    if not future.cancelled():
        future.exception()


class ToolRegistry:
    """Named tools, plus names that exist but are switched off (so calling them explains why).

    ``timeout_s`` bounds every call made through :meth:`execute` (the ``tool_timeout_s`` setting).
    """

    def __init__(self, *, timeout_s: float = DEFAULT_TOOL_TIMEOUT_S) -> None:
        if timeout_s <= 0:
            raise ValueError(f"timeout_s must be positive, got {timeout_s}")
        self.timeout_s = timeout_s
        self._tools: dict[str, Tool] = {}
        self._disabled: dict[str, str] = {}

    def register(self, fn: Callable[..., Any], *, name: str | None = None) -> Tool:
        tool = Tool(fn, name=name)
        self.add(tool)
        return tool

    def add(self, tool: Tool) -> None:
        if tool.name in self._tools or tool.name in self._disabled:
            raise ValueError(f"tool {tool.name!r} is already registered")
        self._tools[tool.name] = tool

    def register_disabled(self, name: str, reason: str) -> None:
        """Keep a switched-off tool out of the schemas while still answering calls with ``reason``."""
        if name in self._tools or name in self._disabled:
            raise ValueError(f"tool {name!r} is already registered")
        self._disabled[name] = reason

    def get(self, name: str) -> Tool:
        try:
            return self._tools[name]
        except KeyError:
            raise UnknownToolError([name], self.names()) from None

    def names(self) -> list[str]:
        return list(self._tools)

    def _check_known(self, allowed: Sequence[str]) -> None:
        unknown = [n for n in allowed if n not in self._tools and n not in self._disabled]
        if unknown:
            raise UnknownToolError(unknown, self.names())

    def schemas(self, allowed: Sequence[str] | None = None) -> list[dict[str, Any]]:
        if allowed is None:
            return [tool.schema for tool in self._tools.values()]
        self._check_known(allowed)
        wanted = set(allowed)
        return [tool.schema for name, tool in self._tools.items() if name in wanted]

    def subset(self, allowed: Sequence[str]) -> ToolRegistry:
        self._check_known(allowed)
        wanted = set(allowed)
        sub = ToolRegistry(timeout_s=self.timeout_s)
        for name, tool in self._tools.items():
            if name in wanted:
                sub._tools[name] = tool
        for name, reason in self._disabled.items():
            if name in wanted:
                sub._disabled[name] = reason
        return sub

    async def execute(self, name: str, raw_arguments: str | dict[str, Any] | None) -> ToolResult:
        tool = self._tools.get(name)
        if tool is None:
            if name in self._disabled:
                return ToolResult(content=self._disabled[name], is_error=True)
            available = ", ".join(self.names()) or "none"
            return ToolResult(content=f"unknown tool {name!r}; available tools: {available}", is_error=True)
        return await tool.invoke(raw_arguments, timeout_s=self.timeout_s)
