"""Structured output: ask for JSON matching a schema, check it ourselves, re-ask with one error.

Why a hand-written loop instead of Instructor: the product needs every failed parse to become an
``output_schema_validation_failed`` event *before* the retry decision, a stuck-loop stop after two
identical errors, re-asks that carry only the latest failure (the prompt never grows attempt by
attempt), a fallback model, transport errors that never trigger a schema re-ask, and every attempt
going through ``LLMGateway`` so usage is recorded. That is a small loop over pydantic (and
``jsonschema`` for plain-dict schemas, already a litellm dependency), and it keeps one code path for
the validator, the planner and agent answers with a declared output schema.

The response is parsed strictly: one JSON value, optionally inside a single markdown code fence.
Prose around the JSON is a parse failure, not something to dig a JSON object out of, because a
judge whose answer had to be excavated from prose (or from echoed prompt-injection text) is not a
reliable judge.
"""

from __future__ import annotations

import json
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Generic, Literal, TypeVar

from pydantic import BaseModel, ValidationError

from core.errors import ConfigurationError
from core.inputs import check_depth
from core.llm.errors import LLMError
from core.llm.gateway import LLMGateway, TokenUsage

__all__ = [
    "GENERIC_FEEDBACK",
    "SchemaFailure",
    "SchemaViolation",
    "StructuredOutcome",
    "check_structured",
    "complete_structured",
    "default_feedback",
    "validate_schema",
]

T = TypeVar("T")

Stage = Literal["json-parse", "schema-validate"]
OutcomeStatus = Literal["ok", "schema-stuck-loop", "schema-retry-exhausted", "transport-error", "empty"]

GENERIC_FEEDBACK = (
    "Your previous reply could not be used because it did not match the requested JSON schema. "
    "Reply again with only one JSON object that matches the schema: no prose, no code fences."
)

# The bad output is echoed back so the model sees its mistake; a multi-megabyte runaway answer is
# cut in the echo only (the failure event keeps it whole), or one bad reply could fill the window.
ECHO_LIMIT_CHARS = 20_000


class SchemaFailure(BaseModel):
    stage: Stage
    attempt: int  # 1-based call number within the current model's loop
    retries: int  # schema re-asks made so far in this request, across models
    message: str
    raw_output: str
    model: str


class SchemaViolation(ValueError):
    """A custom ``parse`` callable raises this to say which stage failed and why."""

    def __init__(self, message: str, *, stage: Stage = "schema-validate") -> None:
        super().__init__(message)
        self.stage: Stage = stage


@dataclass
class StructuredOutcome(Generic[T]):
    status: OutcomeStatus
    model_used: str
    value: T | None = None
    raw: str = ""
    retries: int = 0
    error: str | None = None
    error_kind: str | None = None  # LLMError.kind for transport errors
    failures: list[SchemaFailure] = field(default_factory=list)
    calls: int = 0
    usage: TokenUsage = field(default_factory=TokenUsage)
    latency_s: float = 0.0

    @property
    def ok(self) -> bool:
        return self.status == "ok" and self.value is not None


_FENCE = re.compile(r"^```[A-Za-z0-9_-]*[ \t]*\r?\n(?P<body>.*)\r?\n[ \t]*```$", re.DOTALL)


def _json_text(raw: str) -> str:
    text = raw.strip()
    match = _FENCE.match(text)
    return match.group("body") if match else text


def _pydantic_message(exc: ValidationError) -> str:
    # Input values are left out on purpose: two replies with the same mistake must give the same
    # message, which is what the stuck-loop check compares.
    errors = exc.errors(include_url=False, include_input=False)
    parts = [f"{'.'.join(str(p) for p in err['loc']) or '(top level)'}: {err['msg']}" for err in errors[:6]]
    more = f" (and {len(errors) - 6} more)" if len(errors) > 6 else ""
    return "; ".join(parts) + more


def _refuse_retrieval(uri: str) -> Any:
    from referencing.exceptions import NoSuchResource

    raise NoSuchResource(uri)


def _offline_registry() -> Any:
    """A registry that never fetches: jsonschema's default retrieves remote ``$ref`` URLs itself,
    outside the fetch_url tool's switch and allow-list. Schemas must be self-contained (the
    JSON Schema meta-schemas, bundled with jsonschema, are the only documents outside them)."""
    from referencing import Registry

    return Registry(retrieve=_refuse_retrieval)  # type: ignore[call-arg]


def _schema_validator(schema: dict[str, Any]) -> Any:
    from jsonschema import validators
    from jsonschema.exceptions import SchemaError

    cls = validators.validator_for(schema)
    try:
        cls.check_schema(schema)
    except SchemaError as exc:
        raise ConfigurationError(f"invalid output JSON schema: {exc.message}") from None
    except RecursionError:
        raise ConfigurationError("invalid output JSON schema: nested too deeply") from None
    return cls(schema, registry=_offline_registry())


def validate_schema(schema: dict[str, Any]) -> None:
    """``ConfigurationError`` naming the fault when ``schema`` is not a usable JSON schema.

    Every ``$ref`` is resolved here, before a task is stored: a remote one is refused (nothing
    is ever fetched for a schema), a dangling one is named, and a schema whose references loop
    without consuming any input (``{"$ref": "#"}``) is caught by a trial validation.
    """
    check_depth(schema, what="output JSON schema")
    validator = _schema_validator(schema)
    _check_refs(schema)
    samples: tuple[Any, ...] = (None, {}, [], "", 0)
    for sample in samples:
        try:
            next(iter(validator.iter_errors(sample)), None)
        except RecursionError:
            raise ConfigurationError(
                "invalid output JSON schema: its $refs refer to each other in an endless loop"
            ) from None
        except Exception as exc:  # a referencing failure the walk above did not reach
            raise ConfigurationError(f"invalid output JSON schema: {_ref_problem(exc)}") from None


def _check_refs(schema: dict[str, Any]) -> None:
    """Resolve every ``$ref`` the way validation will, walking subschemas with their base URIs."""
    from jsonschema_specifications import REGISTRY as SPECIFICATIONS
    from referencing.exceptions import Unresolvable
    from referencing.jsonschema import DRAFT202012, specification_with

    dialect = schema.get("$schema")
    spec = specification_with(dialect if isinstance(dialect, str) else "", default=DRAFT202012)
    root = spec.create_resource(schema)
    stack = [(SPECIFICATIONS.combine(_offline_registry()).resolver_with_root(root), root)]
    while stack:
        resolver, resource = stack.pop()
        ref = resource.contents.get("$ref") if isinstance(resource.contents, dict) else None
        if isinstance(ref, str):
            try:
                resolver.lookup(ref)
            except Unresolvable as exc:
                raise ConfigurationError(f"invalid output JSON schema: {_ref_problem(exc, ref)}") from None
        stack.extend((resolver.in_subresource(sub), sub) for sub in resource.subresources())


def _ref_problem(exc: BaseException, ref: str | None = None) -> str:
    from referencing.exceptions import NoSuchResource, Unresolvable

    cause = getattr(exc, "_wrapped", exc)
    ref = ref or str(getattr(cause, "ref", "") or "") or "?"
    if isinstance(cause, NoSuchResource) or "://" in ref.split("#", 1)[0]:
        return (
            f"$ref {ref!r} points outside the schema; remote references are never fetched, "
            "so put the definition in the schema itself (under $defs)"
        )
    if isinstance(cause, Unresolvable):
        return f"$ref {ref!r} cannot be resolved within the schema"
    return f"{type(cause).__name__}: {cause}"[:300]


def check_structured(
    raw: str,
    output: type[BaseModel] | dict[str, Any],
    *,
    parse: Callable[[str], Any] | None = None,
    validator: Any = None,
) -> tuple[Any, tuple[Stage, str] | None]:
    """Parse one reply: ``(value, None)`` or ``(None, (stage, message))``. Never raises for bad text.

    Public so the agent loop can check a terminal answer against a task's declared schema with the
    same rules the re-ask loop uses.
    """
    if not raw.strip():
        return None, ("json-parse", "the reply was empty; expected one JSON object")
    if parse is not None:
        try:
            return parse(raw), None
        except SchemaViolation as exc:
            return None, (exc.stage, str(exc) or type(exc).__name__)
        except json.JSONDecodeError as exc:
            return None, ("json-parse", f"{exc.msg} at line {exc.lineno} column {exc.colno}")
        except ValidationError as exc:
            return None, ("schema-validate", _pydantic_message(exc))
        except (ValueError, TypeError, KeyError, RecursionError) as exc:
            return None, ("schema-validate", f"{type(exc).__name__}: {exc}"[:500])
    try:
        data = json.loads(_json_text(raw))
    except json.JSONDecodeError as exc:
        hint = " (only the JSON object is allowed, without text around it)" if exc.msg == "Extra data" else ""
        return None, ("json-parse", f"{exc.msg} at line {exc.lineno} column {exc.colno}{hint}")
    except RecursionError:
        return None, ("json-parse", "the JSON is nested too deeply")
    if isinstance(output, dict):
        check = validator if validator is not None else _schema_validator(output)
        try:
            error = next(iter(sorted(check.iter_errors(data), key=lambda e: list(e.path))), None)
        except RecursionError:
            return None, ("schema-validate", "the JSON is nested too deeply for the schema")
        except Exception as exc:  # a $ref the schema cannot resolve (schemas stored before it was checked)
            from referencing.exceptions import Unresolvable

            if not isinstance(exc, Unresolvable):
                raise
            return None, ("schema-validate", f"the output schema is unusable: {_ref_problem(exc)}")
        if error is not None:
            where = "/".join(str(p) for p in error.path) or "(top level)"
            return None, ("schema-validate", f"{where}: {error.message}"[:500])
        return data, None
    if not isinstance(data, dict):
        return None, ("schema-validate", f"expected a JSON object, got {type(data).__name__}")
    try:
        return output.model_validate(data), None
    except ValidationError as exc:
        return None, ("schema-validate", _pydantic_message(exc))
    except RecursionError:
        return None, ("schema-validate", "the JSON is nested too deeply")


def default_feedback(failure: SchemaFailure) -> str:
    what = "was not valid JSON" if failure.stage == "json-parse" else "did not match the schema"
    return (
        f"Your previous reply {what}: {failure.message}\n"
        "Reply again with only one JSON object that matches the requested schema: "
        "no prose before or after it, no code fences."
    )


def _response_format(output: type[BaseModel] | dict[str, Any]) -> dict[str, Any] | type[BaseModel]:
    if isinstance(output, dict):
        name = str(output.get("title") or "output")
        safe = re.sub(r"[^A-Za-z0-9_-]", "_", name)[:64] or "output"
        return {"type": "json_schema", "json_schema": {"name": safe, "schema": output}}
    return output


def _echo(raw: str) -> str:
    if len(raw) <= ECHO_LIMIT_CHARS:
        return raw
    return (
        raw[:ECHO_LIMIT_CHARS]
        + f"\n[... {len(raw) - ECHO_LIMIT_CHARS} more characters of this reply omitted ...]"
    )


async def complete_structured(
    gateway: LLMGateway,
    *,
    model: str,
    messages: list[dict[str, Any]],
    output: type[BaseModel] | dict[str, Any],
    max_retries: int,
    fallback_model: str | None = None,
    on_failure: Callable[[SchemaFailure], Awaitable[None]] | None = None,
    timeout_s: float | None = None,
    feedback_builder: Callable[[SchemaFailure], str] | None = None,
    parse: Callable[[str], Any] | None = None,
) -> StructuredOutcome[Any]:
    """One structured answer, re-asking on schema failures and falling back to another model.

    ``messages`` is never modified: re-ask messages live only in the request, so nothing of a
    failed attempt reaches a session transcript. Transport failures (timeouts, rate limits, server
    and connection errors, after the gateway's own retries) go straight to the fallback model, if
    any, never to a schema re-ask. ``CancelledError`` propagates.
    """
    validator = _schema_validator(output) if isinstance(output, dict) and parse is None else None
    outcome: StructuredOutcome[Any] = StructuredOutcome(status="empty", model_used=model)
    models = [model] + ([fallback_model] if fallback_model and fallback_model != model else [])
    for current in models:
        outcome.model_used = current
        await _run_model(
            gateway,
            outcome,
            model=current,
            messages=messages,
            output=output,
            max_retries=max_retries,
            on_failure=on_failure,
            timeout_s=timeout_s,
            feedback_builder=feedback_builder,
            parse=parse,
            validator=validator,
        )
        if outcome.status == "ok":
            break
    return outcome


async def _run_model(
    gateway: LLMGateway,
    outcome: StructuredOutcome[Any],
    *,
    model: str,
    messages: list[dict[str, Any]],
    output: type[BaseModel] | dict[str, Any],
    max_retries: int,
    on_failure: Callable[[SchemaFailure], Awaitable[None]] | None,
    timeout_s: float | None,
    feedback_builder: Callable[[SchemaFailure], str] | None,
    parse: Callable[[str], Any] | None,
    validator: Any,
) -> None:
    response_format = _response_format(output) if gateway.supports_response_format(model) else None
    extra: list[dict[str, Any]] = []
    previous: tuple[Stage, str] | None = None
    all_empty = True
    for attempt in range(1, max_retries + 2):
        try:
            response = await gateway.complete(
                model=model,
                messages=[*messages, *extra],
                response_format=response_format,
                timeout_s=timeout_s,
            )
        except LLMError as exc:
            outcome.status, outcome.error, outcome.error_kind = "transport-error", str(exc), exc.kind
            return
        outcome.calls += 1
        outcome.latency_s += response.latency_s
        outcome.usage = TokenUsage(
            prompt_tokens=outcome.usage.prompt_tokens + response.usage.prompt_tokens,
            completion_tokens=outcome.usage.completion_tokens + response.usage.completion_tokens,
            total_tokens=outcome.usage.total_tokens + response.usage.total_tokens,
        )
        raw = response.content or ""
        outcome.raw = raw
        value, problem = check_structured(raw, output, parse=parse, validator=validator)
        if problem is None:
            outcome.status, outcome.value, outcome.error = "ok", value, None
            return
        all_empty = all_empty and not raw.strip()
        stage, message = problem
        failure = SchemaFailure(
            stage=stage,
            attempt=attempt,
            retries=outcome.retries,
            message=message,
            raw_output=raw,
            model=model,
        )
        outcome.failures.append(failure)
        outcome.error = f"{model}: {stage}: {message}"
        if on_failure is not None:
            await on_failure(failure)
        if problem == previous:
            outcome.status = "empty" if all_empty else "schema-stuck-loop"
            return
        if attempt > max_retries:
            outcome.status = "empty" if all_empty else "schema-retry-exhausted"
            return
        previous = problem
        try:
            feedback = (
                feedback_builder(failure) if feedback_builder is not None else default_feedback(failure)
            )
        except Exception:
            feedback = GENERIC_FEEDBACK
        # Only the latest failure travels: the request is the original plus one exchange.
        extra = [{"role": "assistant", "content": _echo(raw)}, {"role": "user", "content": feedback}]
        outcome.retries += 1
