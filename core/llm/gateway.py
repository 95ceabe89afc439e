"""The one door to language models: litellm behind timeouts, observable retries and typed errors.

Retries happen here rather than inside litellm so that every attempt, failed ones included,
becomes a ``UsageRecord``: cost reports and the benchmark count what was really sent. litellm is
imported lazily (it takes seconds) and only in this package; the desk warms it up in the
background after the first paint.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
import os
import random
import re
import time
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from pydantic import BaseModel, Field

from core.config import Settings
from core.errors import ConfigurationError
from core.llm.contract import (
    BOOK,
    Negotiation,
    StructuredContract,
    contract_params,
    is_refusal,
    model_schema,
    schema_of,
)
from core.llm.cost import call_price
from core.llm.endpoints import EndpointResolver
from core.llm.errors import (
    LLMBadRequest,
    LLMConfigurationError,
    LLMConnectionError,
    LLMError,
    LLMMalformedResponse,
    LLMRateLimited,
    LLMServerError,
    LLMTimeout,
    LLMUsageAnomaly,
    ScriptError,
)
from core.llm.scripted import PROVIDER_NAME, load_script, request_chars, resolved_script_path
from core.llm.streaming import DeltaSink, stream_completion
from core.profiles import ModelRole
from core.secrets import mask_secrets

_SCRIPTED_PREFIX = f"{PROVIDER_NAME}/"
# More tokens than any model reads or writes in one call (the largest windows are a few million):
# a figure past it is a provider's bug, and counted as given it would end every budget at once.
MAX_CALL_TOKENS = 100_000_000


class ToolCallRequest(BaseModel):
    id: str
    name: str
    arguments: str  # JSON text exactly as the model produced it; parsing is the tool layer's job


class TokenUsage(BaseModel):
    prompt_tokens: int = 0
    completion_tokens: int = 0
    total_tokens: int = 0
    cost_usd: float = 0.0
    unpriced_calls: int = 0  # calls whose model has no known price: their cost is unknown, not 0


class LLMResponse(BaseModel):
    content: str | None = None
    tool_calls: list[ToolCallRequest] = Field(default_factory=list)
    finish_reason: str | None = None
    usage: TokenUsage = Field(default_factory=TokenUsage)
    latency_s: float = 0.0
    model: str
    provider: str
    # Asked for schema-shaped JSON: the contract the endpoint honoured (``core.llm.contract``) and
    # the refusals that led to it, so a verdict's debug record can say how its JSON was obtained.
    structured_contract: str | None = None
    contract_fallbacks: list[str] = Field(default_factory=list)


class UsageRecord(BaseModel):
    model: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_s: float = 0.0
    ok: bool
    error_kind: str | None = None
    attempt: int
    cost_usd: float = 0.0
    priced: bool = True  # False: no price is known for the model (its cost_usd is 0 for want of one)


# The answered calls of the block running ``LLMGateway.counting()``; a context variable so that
# concurrent tasks (parallel validations, team nodes) each count their own, and a block that is
# cancelled (a verdict out of time) still knows what it was answered.
_COUNTED: contextvars.ContextVar[list[UsageRecord] | None] = contextvars.ContextVar(
    "counted_calls", default=None
)


# Called just before each request of the block running ``before_sending`` goes out. The shadow
# replay's turn ends there: its verdicts do their local work up to the model call one after another
# rather than round-robin, so their calls go out staggered instead of in lockstep (``revalidate``).
_ON_SEND: contextvars.ContextVar[Callable[[], None] | None] = contextvars.ContextVar("on_send", default=None)


@contextmanager
def before_sending(callback: Callable[[], None]) -> Iterator[None]:
    """Call ``callback`` (it must be cheap and idempotent) before each request sent inside the block."""
    token = _ON_SEND.set(callback)
    try:
        yield
    finally:
        _ON_SEND.reset(token)


def counted_usage(records: list[UsageRecord]) -> TokenUsage:
    """The sum of answered calls (``ok`` records), as one usage."""
    answered = [r for r in records if r.ok]
    prompt = sum(r.prompt_tokens for r in answered)
    completion = sum(r.completion_tokens for r in answered)
    return TokenUsage(
        prompt_tokens=prompt,
        completion_tokens=completion,
        total_tokens=prompt + completion,
        cost_usd=sum(r.cost_usd for r in answered),
        unpriced_calls=sum(1 for r in answered if not r.priced),
    )


_litellm: Any = None


def _import_litellm() -> Any:
    global _litellm
    if _litellm is None:
        os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
        import litellm as litellm_module

        litellm: Any = litellm_module
        litellm.telemetry = False
        litellm.suppress_debug_info = True
        litellm.set_verbose = False
        # litellm's success logging of a stream feeds callbacks this product never registers (usage
        # and cost come from the assembled reply: core.llm.streaming, core.llm.cost). In 1.110 this
        # switch only stops the sync stream's per-chunk logging thread; the async wrapper's cost is
        # avoided by reading openai streams past it (core.llm.streaming._read_sdk_stream).
        litellm.disable_streaming_logging = True
        # Debug logs can carry request headers; keep litellm's loggers at WARNING whatever the root says.
        for name in ("LiteLLM", "LiteLLM Router", "LiteLLM Proxy", "litellm"):
            logging.getLogger(name).setLevel(logging.WARNING)
        from core.llm.scripted import register_scripted_provider

        register_scripted_provider()
        _litellm = litellm
    return _litellm


# litellm's first call to a provider imports that provider's client stack (the OpenAI SDK's ~450
# modules, Ollama's handler): 0.3-0.7 s on an idle machine, seconds on a busy one. That is set-up,
# not the provider being slow, so the first call per provider family in the process gets this much
# extra room on the outer guard; litellm's own ``timeout`` (httpx) still bounds its HTTP exchange.
FIRST_CALL_SETUP_S = 30.0
MAX_RETRY_AFTER_S = 120.0  # a longer Retry-After ends the call at once instead of holding the task
_WARMED_PROVIDERS: set[str] = set()
_WARM_MODULES = ("openai.resources", "openai.lib.streaming.chat", "litellm.llms.openai.openai")


class FirstCallTimeout(TimeoutError):
    """The outer guard ran out on a provider's first call: its message must name the allowance,
    or "no answer within 10 s" would be said of a call that was given 40."""

    def __init__(self, limit_s: float, setup_s: float) -> None:
        super().__init__(f"no answer within {limit_s + setup_s:g} s")
        self.limit_s = limit_s
        self.setup_s = setup_s


def warm_up_litellm() -> None:
    """Pay litellm's import cost early (the desk calls this off the UI thread after painting)."""
    _import_litellm()
    import importlib

    for name in _WARM_MODULES:  # most of the first call's set-up; the rest is allowed for per provider
        try:
            importlib.import_module(name)
        except ImportError:
            continue


_KNOWN_FAMILIES = {"gpt-": "openai", "o1": "openai", "o3": "openai", "o4": "openai", "claude": "anthropic"}


def provider_family(model: str) -> str:
    """Which provider a model name belongs to, for snapshots and per-provider settings."""
    if model.startswith(_SCRIPTED_PREFIX):
        return PROVIDER_NAME
    try:
        _, provider, _, _ = _import_litellm().get_llm_provider(model=model)
        return str(provider)
    except Exception:
        if "/" in model:
            return model.split("/", 1)[0]
        for prefix, family in _KNOWN_FAMILIES.items():
            if model.startswith(prefix):
                return family
        return "unknown"


REDACTED_LIMIT = 4000  # a provider's whole message (a validation error lists every field) fits


def redact(text: str) -> str:
    """Mask every known credential and secret shape and flatten to one line of bounded length.

    A provider's 401 may echo the key it was sent, under whatever variable held it: the message is
    stored and printed, so the values the program holds are masked, not only keys of known shapes.
    Every line of the provider's message is kept, joined with spaces: a server's refusal often
    says what it refused only after its first line ("1 validation error for ...", then the field).
    """
    text = mask_secrets(text)
    text = " ".join(line.strip() for line in text.splitlines() if line.strip())
    return text if len(text) <= REDACTED_LIMIT else text[: REDACTED_LIMIT - 3] + "..."


def _strip_litellm_prefix(text: str) -> str:
    """litellm's class-name prefix and the traceback it pastes into some messages are noise to a reader."""
    text = re.split(r"\s*Traceback \(most recent call last\)", text, maxsplit=1)[0]
    return re.sub(r"^litellm\.\w+:\s*", "", text)


# What litellm's message says when the cause is not its exception class: litellm 1.106 reports an
# unreadable body as APIConnectionError (Ollama) or InternalServerError (OpenAI), a refused
# connection as InternalServerError, and a missing key as InternalServerError too.
_MALFORMED_SIGNS = (
    "Expecting value",
    "Expecting property name",
    "Unterminated string",
    "Extra data",
    "Invalid response object",
    "argument after ** must be a mapping",
    "JSONDecodeError",
)
_CONNECTION_SIGNS = (
    "Connection error",
    "Cannot connect to host",
    "Connect call failed",
    "Connection refused",
)
_MISSING_KEY_SIGNS = ("Missing credentials", "api_key client option must be set", "Missing API Key")
_CONTEXT_SIGNS = ("context_length_exceeded", "maximum context length", "context window")


def _chain(exc: BaseException) -> list[BaseException]:
    seen: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and current not in seen and len(seen) < 8:
        seen.append(current)
        current = current.__cause__ or current.__context__
    return seen


def _header(source: Any, name: str) -> Any:
    try:
        return source.get(name) or source.get(name.title())
    except Exception:
        return None


def retry_after_s(exc: BaseException) -> float | None:
    """Seconds a provider asks us to wait: ``retry-after-ms`` (OpenAI, Azure; the more precise) or
    ``Retry-After`` in seconds or as a date (litellm keeps the headers on the exception)."""
    for source in (
        getattr(exc, "litellm_response_headers", None),
        getattr(getattr(exc, "response", None), "headers", None),
    ):
        if source is None:
            continue
        millis = _header(source, "retry-after-ms")
        if millis is not None:
            try:
                return max(0.0, float(millis) / 1000)
            except (TypeError, ValueError):
                pass
        value = _header(source, "retry-after")
        if value is None:
            continue
        try:
            return max(0.0, float(value))
        except (TypeError, ValueError):
            from email.utils import parsedate_to_datetime

            try:
                return max(0.0, parsedate_to_datetime(str(value)).timestamp() - time.time())
            except (TypeError, ValueError):
                continue
    return None


def _map_error(exc: BaseException, model: str, timeout_s: float) -> LLMError:
    """Turn litellm's exception family into our typed errors, labelled by what actually happened.

    Order matters: Timeout is a connection error in litellm's tree, and litellm files a bad body, a
    refused connection and a missing key under classes that say something else, so the cause and
    the message are read before the class.
    """
    from core.llm.scripted import script_error_class

    litellm = _import_litellm()
    if isinstance(exc, script_error_class()):
        return ScriptError(redact(str(getattr(exc, "detail", exc))), model=model)
    if isinstance(exc, FirstCallTimeout):
        return LLMTimeout(
            f"{model}: no answer within {exc.limit_s + exc.setup_s:g} s (llm_timeout_s {exc.limit_s:g} s "
            f"plus {exc.setup_s:g} s allowed for the provider's first call in this process)",
            model=model,
        )
    if isinstance(exc, (asyncio.TimeoutError, TimeoutError)):
        return LLMTimeout(f"{model}: no answer within {timeout_s:g} s", model=model)
    detail = redact(_strip_litellm_prefix(str(exc))) or type(exc).__name__
    full = " ".join(str(e) for e in _chain(exc))
    if isinstance(exc, litellm.Timeout):  # its HTTP timeout is ``timeout_s``, first call or not
        return LLMTimeout(f"{model}: no answer within {timeout_s:g} s ({detail})", model=model)
    if any(sign in full for sign in _MISSING_KEY_SIGNS):
        return LLMConfigurationError(
            f"{model}: no API key is configured for this provider; set its key (or mark the endpoint "
            f"as keyless) in the settings",
            model=model,
        )
    if isinstance(exc, litellm.RateLimitError):
        error = LLMRateLimited(f"{model}: rate limited ({detail})", model=model)
        error.retry_after_s = retry_after_s(exc)
        return error
    if any(isinstance(e, ValueError) and type(e).__name__ == "JSONDecodeError" for e in _chain(exc)) or any(
        sign in full for sign in _MALFORMED_SIGNS
    ):
        return LLMMalformedResponse(
            f"{model}: the provider's reply could not be read ({detail})", model=model
        )
    if any(sign in full for sign in _CONNECTION_SIGNS):
        return LLMConnectionError(f"{model}: cannot reach the provider ({detail})", model=model)
    if isinstance(exc, litellm.ContextWindowExceededError) or (
        isinstance(exc, litellm.BadRequestError) and any(sign in full for sign in _CONTEXT_SIGNS)
    ):
        return LLMBadRequest(
            f"{model}: context window exceeded ({detail})", model=model, kind="context_window"
        )
    if isinstance(exc, (litellm.InternalServerError, litellm.ServiceUnavailableError)):
        return LLMServerError(f"{model}: provider server error ({detail})", model=model)
    if isinstance(exc, litellm.APIConnectionError):
        return LLMConnectionError(f"{model}: cannot reach the provider ({detail})", model=model)
    if isinstance(exc, litellm.AuthenticationError):
        return LLMBadRequest(f"{model}: authentication failed ({detail})", model=model, kind="authentication")
    if isinstance(exc, litellm.NotFoundError):
        return LLMBadRequest(f"{model}: model not found ({detail})", model=model, kind="not_found")
    if isinstance(
        exc, (litellm.BadRequestError, litellm.PermissionDeniedError, litellm.UnprocessableEntityError)
    ):
        return LLMBadRequest(f"{model}: request refused ({detail})", model=model)
    status = getattr(exc, "status_code", None)
    if isinstance(status, int) and status >= 500:
        return LLMServerError(f"{model}: provider server error {status} ({detail})", model=model)
    if isinstance(status, int) and 400 <= status < 500:
        return LLMBadRequest(f"{model}: request refused with {status} ({detail})", model=model)
    return LLMError(
        f"{model}: unexpected failure {type(exc).__name__} ({detail})", model=model, kind="unexpected"
    )


def _response_format_param(response_format: dict[str, Any] | type[BaseModel] | None) -> Any:
    if response_format is None or isinstance(response_format, dict):
        return response_format
    return {
        "type": "json_schema",
        "json_schema": {"name": response_format.__name__, "schema": model_schema(response_format)},
    }


def _negotiation(
    model: str,
    provider: str,
    kwargs: dict[str, Any],
    response_format: dict[str, Any] | type[BaseModel] | None,
) -> Negotiation | None:
    """This call's place in its endpoint's structured-output negotiation; None when it asks for no
    schema (or the scripted provider answers it, which honours every contract)."""
    wanted = schema_of(response_format) if response_format is not None else None
    if wanted is None or model.startswith(_SCRIPTED_PREFIX):
        return None
    key = (str(kwargs.get("api_base") or provider), model)
    contract, confirmed = BOOK.current(key)
    return Negotiation(key=key, name=wanted[0], schema=wanted[1], contract=contract, confirmed=confirmed)


def _with_contract(kwargs: dict[str, Any], negotiation: Negotiation | None, provider: str) -> dict[str, Any]:
    """The call's arguments with the negotiated contract's parameters (a profile's ``extra_body`` kept)."""
    if negotiation is None:
        return kwargs
    local = bool(kwargs.get("api_base"))
    added = contract_params(negotiation.contract, negotiation.name, negotiation.schema, provider, local)
    merged = {**kwargs, **added}
    if "extra_body" in added and isinstance(kwargs.get("extra_body"), dict):
        merged["extra_body"] = {**kwargs["extra_body"], **added["extra_body"]}
    return merged


def _step_down(negotiation: Negotiation | None, exc: BaseException, error: LLMError) -> bool:
    """A refusal of the contract moves the endpoint one rung down; True when there was one to take."""
    if negotiation is None or negotiation.contract is StructuredContract.PROMPT_ONLY:
        return False
    status = getattr(exc, "status_code", None)
    text = " ".join(str(e) for e in _chain(exc))
    if not is_refusal(
        error.kind, status if isinstance(status, int) else None, text, confirmed=negotiation.confirmed
    ):
        return False
    negotiation.contract = BOOK.refused(negotiation.key, negotiation.contract, str(error))
    negotiation.confirmed = BOOK.current(negotiation.key)[1]
    return True


USAGE_KEPT = 1000
"""How many of its latest calls' records a gateway keeps in memory (``LLMGateway.usage``).

A workspace has one gateway for as long as the desk or a worker runs, and it kept every call's
record: a worker's memory grew with every task it ever ran. The records that count are stored
(each call's usage is in its run's or validation's events, ``core.domain.usage``); these are for
``on_usage`` listeners and tests, which read the last few.
"""


class LLMGateway:
    """Completion with timeouts, retries that are all recorded, and errors callers can branch on."""

    def __init__(
        self,
        settings: Settings,
        on_usage: Callable[[UsageRecord], None] | None = None,
        *,
        retry_backoff_s: float = 0.5,
    ) -> None:
        self.settings = settings
        self.on_usage = on_usage
        self.retry_backoff_s = retry_backoff_s
        self.usage: deque[UsageRecord] = deque(maxlen=USAGE_KEPT)  # the latest calls' records
        self.endpoints = EndpointResolver(settings)

    def _record(self, record: UsageRecord) -> None:
        self.usage.append(record)
        counted = _COUNTED.get()
        if counted is not None:
            counted.append(record)
        if self.on_usage is not None:
            self.on_usage(record)

    @staticmethod
    @contextmanager
    def counting() -> Iterator[list[UsageRecord]]:
        """Collect every call this block (and the tasks it starts) makes, answered or not.

        For calls made outside an agent run (the planner, an output schema's re-asks, a validation)
        so each answered call is counted once in the task's totals, even when the block is cut
        short by a timeout. Blocks nest: an inner block's calls count in the outer one too.
        """
        outer = _COUNTED.get()
        records: list[UsageRecord] = []
        token = _COUNTED.set(records)
        try:
            yield records
        finally:
            _COUNTED.reset(token)
            if outer is not None:
                outer.extend(records)

    def _script_api_base(self, model: str) -> str:
        script = self.settings.script
        if script is None:
            raise ConfigurationError(f"model {model} needs a script: set EVIDENCE_DESK_SCRIPT or --script")
        load_script(script)  # a broken script is a configuration problem, reported before any call
        return str(resolved_script_path(script))

    async def complete(
        self,
        *,
        model: str,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None = None,
        tool_choice: str | None = None,
        response_format: dict[str, Any] | type[BaseModel] | None = None,
        timeout_s: float | None = None,
        max_tokens: int | None = None,
        temperature: float | None = None,
        num_retries: int | None = None,
        role: ModelRole | None = None,
        stream: bool = False,
        on_delta: DeltaSink | None = None,
    ) -> LLMResponse:
        """One model call: transient failures retried with backoff (a provider's Retry-After
        honoured), every try recorded in the usage log, the answer parsed and priced."""
        timeout = timeout_s if timeout_s is not None else self.settings.llm_timeout_s
        retries = num_retries if num_retries is not None else self.settings.llm_num_retries
        litellm = _import_litellm()
        provider = provider_family(model)
        kwargs = await self._call_kwargs(
            litellm,
            model=model,
            messages=messages,
            role=role,
            provider=provider,
            timeout_s=timeout,
            tools=tools,
            tool_choice=tool_choice,
            response_format=response_format,
            max_tokens=max_tokens,
            temperature=temperature,
        )
        negotiation = _negotiation(model, provider, kwargs, response_format)
        attempt = tries = 0  # every request; the requests with the current contract
        while True:
            attempt += 1
            tries += 1
            started = time.perf_counter()
            try:
                raw = await self._send(
                    litellm,
                    _with_contract(kwargs, negotiation, provider),
                    provider,
                    timeout,
                    stream,
                    on_delta,
                )
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                error = _map_error(exc, model, timeout)
                self._record(
                    UsageRecord(
                        model=model,
                        latency_s=time.perf_counter() - started,
                        ok=False,
                        error_kind=error.kind,
                        attempt=attempt,
                    )
                )
                if _step_down(negotiation, exc, error):
                    tries = 0  # the weaker contract is a new request, not a retry of the refused one
                    continue
                delay = self._retry_delay(error, model, tries, retries)
                if delay is None:
                    if error.transient and tries > 1:
                        error = type(error)(f"{error} after {tries} attempts", model=model, kind=error.kind)
                    raise error from None
                await asyncio.sleep(delay)
                continue
            response = self._answered(
                litellm, raw, model, provider, role, time.perf_counter() - started, attempt
            )
            if negotiation is not None:
                response.structured_contract = negotiation.contract.value
                response.contract_fallbacks = BOOK.confirm(negotiation.key, negotiation.contract)
            return response

    async def _call_kwargs(
        self,
        litellm: Any,
        *,
        model: str,
        messages: list[dict[str, Any]],
        role: ModelRole | None,
        provider: str,
        timeout_s: float,
        tools: list[dict[str, Any]] | None,
        tool_choice: str | None,
        response_format: dict[str, Any] | type[BaseModel] | None,
        max_tokens: int | None,
        temperature: float | None,
    ) -> dict[str, Any]:
        """litellm's arguments: the role's endpoint, key and tuning, then the caller's values.

        litellm's own retries are off (``num_retries=0``): ours record every try and honour
        Retry-After, and two layers of retries would multiply.
        """
        kwargs: dict[str, Any] = {
            "model": model,
            "messages": messages,
            "timeout": timeout_s,
            "num_retries": 0,
        }
        if model.startswith(_SCRIPTED_PREFIX):
            kwargs["api_base"] = self._script_api_base(model)
        else:  # endpoint, key and tuning per call from the role's profile; the caller's values win
            kwargs |= await self.endpoints.call_kwargs(
                litellm, model=model, role=role, provider=provider, messages=messages, max_tokens=max_tokens
            )
        if tools:
            kwargs["tools"] = tools
            if tool_choice is not None:
                kwargs["tool_choice"] = tool_choice
        if response_format is not None and (
            model.startswith(_SCRIPTED_PREFIX) or schema_of(response_format) is None
        ):
            kwargs["response_format"] = _response_format_param(response_format)
        if max_tokens is not None:
            kwargs["max_tokens"] = max_tokens
        if temperature is not None:
            kwargs["temperature"] = temperature
        return kwargs

    @staticmethod
    async def _send(
        litellm: Any,
        kwargs: dict[str, Any],
        provider: str,
        limit_s: float,
        stream: bool,
        on_delta: DeltaSink | None,
    ) -> Any:
        """One try. A provider's first call may take set-up time (client, imports) on top of the
        timeout; any answer, an error included, shows that set-up is done."""
        warm = provider in _WARMED_PROVIDERS or provider == PROVIDER_NAME
        setup = 0.0 if warm else FIRST_CALL_SETUP_S
        on_send = _ON_SEND.get()
        if on_send is not None:
            on_send()
        try:
            # asyncio.timeout, not wait_for: no extra task and loop pass per call.
            async with asyncio.timeout(limit_s + setup):
                if stream:
                    raw = await stream_completion(litellm, kwargs, on_delta)
                else:
                    raw = await litellm.acompletion(**kwargs)
        except asyncio.CancelledError:
            raise
        except TimeoutError as exc:  # the outer guard (litellm's own Timeout is not a TimeoutError)
            if setup:
                raise FirstCallTimeout(limit_s, setup) from exc
            raise
        except Exception:
            _WARMED_PROVIDERS.add(provider)
            raise
        _WARMED_PROVIDERS.add(provider)
        return raw

    def _retry_delay(self, error: LLMError, model: str, attempt: int, retries: int) -> float | None:
        """How long to wait before trying again, or None when this error ends the call.

        A provider's Retry-After longer than ``MAX_RETRY_AFTER_S`` ends it at once, naming the wait:
        holding a task for many minutes helps nobody.
        """
        wait: float | None = error.retry_after_s if isinstance(error, LLMRateLimited) else None
        if wait is not None and wait > MAX_RETRY_AFTER_S:
            raise LLMRateLimited(
                f"{error}; the provider asks to wait {wait:g} s (Retry-After), more than "
                f"{MAX_RETRY_AFTER_S:g} s, so it was not retried",
                model=model,
            ) from None
        if not error.transient or attempt > retries:
            return None
        # Full jitter (a uniform draw up to the exponential step): callers that failed together
        # (a batch, parallel team nodes) spread out instead of retrying in lockstep.
        delay: float = random.uniform(0, self.retry_backoff_s * 2 ** (attempt - 1))
        return max(delay, wait) if wait is not None else delay  # the provider said when; sooner is refused

    def _answered(
        self,
        litellm: Any,
        raw: Any,
        model: str,
        provider: str,
        role: ModelRole | None,
        latency: float,
        attempt: int,
    ) -> LLMResponse:
        """The reply parsed, priced by the role's profile (or litellm's map) and recorded."""
        try:
            response = self._parse(raw, model, provider, latency)
        except LLMMalformedResponse as error:
            self._record(
                UsageRecord(model=model, latency_s=latency, ok=False, error_kind=error.kind, attempt=attempt)
            )
            raise
        usage = response.usage
        profile = None if model.startswith(_SCRIPTED_PREFIX) else self.endpoints.profile(model, role)
        price = call_price(
            litellm, model, usage.prompt_tokens, usage.completion_tokens, self.settings, profile
        )
        usage.cost_usd = price or 0.0
        usage.unpriced_calls = 0 if price is not None else 1
        self._record(
            UsageRecord(
                model=model,
                prompt_tokens=usage.prompt_tokens,
                completion_tokens=usage.completion_tokens,
                latency_s=latency,
                ok=True,
                attempt=attempt,
                cost_usd=usage.cost_usd,
                priced=price is not None,
            )
        )
        return response

    @staticmethod
    def _parse(raw: Any, model: str, provider: str, latency: float) -> LLMResponse:
        choices = getattr(raw, "choices", None) or []
        if not choices:
            raise LLMMalformedResponse(
                f"{model}: the provider's reply had no choices (empty answer list)", model=model
            )
        choice = choices[0]
        message = getattr(choice, "message", None)
        if message is None:
            raise LLMMalformedResponse(f"{model}: the provider's reply had no message", model=model)
        calls = [
            ToolCallRequest(
                id=str(tc.id), name=str(tc.function.name), arguments=str(tc.function.arguments or "")
            )
            for tc in (getattr(message, "tool_calls", None) or [])
        ]
        usage = getattr(raw, "usage", None)
        prompt = int(getattr(usage, "prompt_tokens", 0) or 0)
        completion = int(getattr(usage, "completion_tokens", 0) or 0)
        total = int(getattr(usage, "total_tokens", 0) or prompt + completion)
        if min(prompt, completion, total) < 0 or max(prompt, completion, total) > MAX_CALL_TOKENS:
            raise LLMUsageAnomaly(
                f"{model}: the provider reported impossible usage (prompt {prompt}, completion {completion}, "
                f"total {total} tokens); the reply was refused as a provider anomaly",
                model=model,
            )
        return LLMResponse(
            content=message.content,
            tool_calls=calls,
            finish_reason=choice.finish_reason,
            usage=TokenUsage(
                prompt_tokens=prompt,
                completion_tokens=completion,
                total_tokens=total,
            ),
            latency_s=latency,
            model=model,
            provider=provider,
        )

    def token_count(self, model: str, messages_or_text: list[dict[str, Any]] | str) -> int:
        """Tokens a request would use; scripted and unknown models get the chars/4 estimate."""
        if not model.startswith(_SCRIPTED_PREFIX):
            try:
                litellm = _import_litellm()
                if isinstance(messages_or_text, str):
                    return int(litellm.token_counter(model=model, text=messages_or_text))
                return int(litellm.token_counter(model=model, messages=messages_or_text))
            except Exception:
                pass
        if isinstance(messages_or_text, str):
            return len(messages_or_text) // 4
        return request_chars(messages_or_text) // 4  # the estimate, without joining the prompt

    def context_window(self, model: str, role: ModelRole | None = None) -> int | None:
        """Input token budget: the role's profile, else litellm's local model map; None when unknown."""
        if model.startswith(_SCRIPTED_PREFIX):
            return None
        known = self.endpoints.context_window(model, role)
        if known is not None or provider_family(model) in ("ollama", "ollama_chat"):
            return known  # never litellm's map lookup for Ollama: that is a blocking /api/show
        try:
            info = _import_litellm().get_model_info(model=model)
        except Exception:
            return None
        value = info.get("max_input_tokens") or info.get("max_tokens")
        return int(value) if value else None

    def max_output_tokens(self, model: str) -> int | None:
        """The model's own output token limit from litellm's map; None when unknown (or scripted)."""
        if model.startswith(_SCRIPTED_PREFIX):
            return None
        try:
            info = _import_litellm().get_model_info(model=model)
        except Exception:
            return None
        value = info.get("max_output_tokens")
        return int(value) if value else None

    def supports_response_format(self, model: str) -> bool:
        if model.startswith(_SCRIPTED_PREFIX):
            return True
        litellm = _import_litellm()
        try:
            _, provider, _, _ = litellm.get_llm_provider(model=model)
            # (litellm's map lookup for an Ollama model is a blocking /api/show: skip it)
            if provider not in ("ollama", "ollama_chat") and litellm.supports_response_schema(model=model):
                return True
            # A model litellm's map does not know: ask what its provider's API accepts.
            params = litellm.get_supported_openai_params(model=model, custom_llm_provider=provider) or []
            return "response_format" in params
        except Exception:
            return False

    async def check_ready(self, roles: list[ModelRole]) -> None:
        """Refuse, as a ``ConfigurationError`` naming the setting, a configuration these roles cannot call with."""
        for model, role in self.endpoints.models_for(roles):
            if model.startswith(_SCRIPTED_PREFIX):
                self._script_api_base(model)
            else:
                await self.endpoints.check_ready(await asyncio.to_thread(_import_litellm), model, role)

    async def prepare(self, model: str, role: ModelRole | None = None) -> None:
        """Fetch a local model's metadata off the loop's thread, so later lookups never block it."""
        if not model.startswith(_SCRIPTED_PREFIX):
            litellm = await asyncio.to_thread(_import_litellm)
            await self.endpoints.prepare(litellm, model, provider_family(model), role)
