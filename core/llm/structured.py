"""Structured output: ask for JSON matching a schema, check it ourselves, re-ask with one error.

Why a hand-written loop instead of Instructor: the product needs every failed parse to become an
``output_schema_validation_failed`` event *before* the retry decision, a stuck-loop stop after two
identical errors, re-asks that carry only the latest failure (the prompt never grows attempt by
attempt), a fallback model, transport errors that never trigger a schema re-ask, and every attempt
going through ``LLMGateway`` so usage is recorded. That is a small loop over pydantic (and
``jsonschema`` for plain-dict schemas, already a litellm dependency), and it keeps one code path for
the validator, the planner and agent answers with a declared output schema.

Every caller gets the same rules (seed 003): attempts are numbered 1, 2, 3 across the request (a
reply the caller already holds, such as an agent's final answer, is attempt 1 and costs no call);
``max_retries=0`` means one reply is checked and nothing is re-asked; a tier stops after
``stuck_after`` identical errors in a row; tier 2 is a fallback model asked for a simplified schema
(required fields only); tier 3 is the caller's canned fallback, used when ``ok`` is false.

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
from core.llm.schema_bounds import ValidationBudgetExceeded, bounded_validator_class, validation_deadline
from core.profiles import ModelRole

__all__ = [
    "GENERIC_FEEDBACK",
    "SchemaFailure",
    "SchemaViolation",
    "StructuredOutcome",
    "check_structured",
    "complete_structured",
    "default_feedback",
    "simplified_schema",
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
    attempt: int  # 1-based reply number within the whole request, across tiers
    retries: int  # schema re-asks made so far in this request, across tiers
    message: str
    raw_output: str
    model: str
    path: str | None = None  # where in the JSON the first error is ("/" joined); None for parse errors
    tier: int = 1  # 1: the model with the full schema; 2: the fallback model with the simplified one


class SchemaViolation(ValueError):
    """A custom ``parse`` callable raises this to say which stage failed and why."""

    def __init__(self, message: str, *, stage: Stage = "schema-validate", path: str | None = None) -> None:
        super().__init__(message)
        self.stage: Stage = stage
        self.path = path


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
    tier: int = 1  # the tier that produced the outcome (3 is the caller's canned fallback)
    attempts: int = 0  # replies checked, the caller's own reply included
    # The structured-output contract the endpoint honoured, and the refusals that led to it.
    contract: str | None = None
    contract_fallbacks: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.status == "ok" and self.value is not None


_FENCE = re.compile(r"^```[A-Za-z0-9_-]*[ \t]*\r?\n(?P<body>.*)\r?\n[ \t]*```$", re.DOTALL)


class _NotJsonNumber(ValueError):
    pass


def _refuse_constant(name: str) -> Any:
    """``NaN``, ``Infinity`` and ``-Infinity`` are Python's JSON extensions, not JSON: refused, or
    they would pass a schema's ``"type": "number"`` and reach every consumer of the answer."""
    raise _NotJsonNumber(f"{name} is not a JSON number (JSON has no NaN or Infinity)")


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


def _pydantic_path(exc: ValidationError) -> str | None:
    errors = exc.errors(include_url=False, include_input=False)
    return "/".join(str(p) for p in errors[0]["loc"]) or None if errors else None


@dataclass(frozen=True)
class _Problem:
    stage: Stage
    message: str  # without the path, which travels apart
    path: str | None = None

    def legacy(self) -> tuple[Stage, str]:
        return self.stage, (f"{self.path}: {self.message}" if self.path else self.message)


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

    cls = bounded_validator_class(validators.validator_for(schema))
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
            with validation_deadline():
                next(iter(validator.iter_errors(sample)), None)
        except ValidationBudgetExceeded as exc:
            raise ConfigurationError(f"invalid output JSON schema: {exc}") from None
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
    same rules the re-ask loop uses; the message names the JSON path first when there is one.
    """
    value, problem = _check(raw, output, parse=parse, validator=validator)
    return value, (problem.legacy() if problem is not None else None)


def _check(
    raw: str,
    output: type[BaseModel] | dict[str, Any],
    *,
    parse: Callable[[str], Any] | None = None,
    validator: Any = None,
) -> tuple[Any, _Problem | None]:
    if not raw.strip():
        return None, _Problem("json-parse", "the reply was empty; expected one JSON object")
    if parse is not None:
        try:
            return parse(raw), None
        except SchemaViolation as exc:
            return None, _Problem(exc.stage, str(exc) or type(exc).__name__, exc.path)
        except json.JSONDecodeError as exc:
            return None, _Problem("json-parse", f"{exc.msg} at line {exc.lineno} column {exc.colno}")
        except ValidationError as exc:
            return None, _Problem("schema-validate", _pydantic_message(exc), _pydantic_path(exc))
        except (ValueError, TypeError, KeyError, RecursionError) as exc:
            return None, _Problem("schema-validate", f"{type(exc).__name__}: {exc}"[:500])
    try:
        # strict=False: a raw newline or tab inside a string is a formatting slip (a grammar-constrained
        # small model writes them), not prose around the JSON; everything else stays strict.
        data = json.loads(_json_text(raw), strict=False, parse_constant=_refuse_constant)
    except _NotJsonNumber as exc:
        return None, _Problem("json-parse", str(exc))
    except json.JSONDecodeError as exc:
        hint = " (only the JSON object is allowed, without text around it)" if exc.msg == "Extra data" else ""
        return None, _Problem("json-parse", f"{exc.msg} at line {exc.lineno} column {exc.colno}{hint}")
    except RecursionError:
        return None, _Problem("json-parse", "the JSON is nested too deeply")
    if isinstance(output, dict):
        check = validator if validator is not None else _schema_validator(output)
        try:
            with validation_deadline():
                error = next(iter(sorted(check.iter_errors(data), key=lambda e: list(e.path))), None)
        except ValidationBudgetExceeded as exc:
            return None, _Problem("schema-validate", str(exc))
        except RecursionError:
            return None, _Problem("schema-validate", "the JSON is nested too deeply for the schema")
        except Exception as exc:  # a $ref the schema cannot resolve (schemas stored before it was checked)
            from referencing.exceptions import Unresolvable

            if not isinstance(exc, Unresolvable):
                raise
            return None, _Problem("schema-validate", f"the output schema is unusable: {_ref_problem(exc)}")
        if error is not None:
            where = "/".join(str(p) for p in error.path) or "(top level)"
            return None, _Problem("schema-validate", str(error.message)[:500], where)
        return data, None
    if not isinstance(data, dict):
        return None, _Problem("schema-validate", f"expected a JSON object, got {type(data).__name__}")
    try:
        return output.model_validate(data), None
    except ValidationError as exc:
        return None, _Problem("schema-validate", _pydantic_message(exc), _pydantic_path(exc))
    except RecursionError:
        return None, _Problem("schema-validate", "the JSON is nested too deeply")


def simplified_schema(output: type[BaseModel] | dict[str, Any]) -> dict[str, Any]:
    """The schema tier 2 asks for: required fields only, no nested optional objects.

    A model that keeps failing the full shape often manages a smaller one; what it leaves out is
    what the caller can live without (the optional fields). ``$defs`` are kept so references in
    the remaining fields still resolve.
    """
    schema = output.model_json_schema() if not isinstance(output, dict) else output
    return _simplify(schema)


def _simplify(schema: dict[str, Any]) -> dict[str, Any]:
    props = schema.get("properties")
    if not isinstance(props, dict):
        return dict(schema)
    required = [r for r in schema.get("required") or [] if r in props]
    out = {k: v for k, v in schema.items() if k not in ("properties", "required")}
    out["properties"] = {
        name: _simplify(props[name]) if isinstance(props[name], dict) else props[name] for name in required
    }
    out["required"] = required
    return out


def default_feedback(failure: SchemaFailure) -> str:
    what = "was not valid JSON" if failure.stage == "json-parse" else "did not match the schema"
    where = f" at {failure.path}" if failure.path else ""
    return (
        f"Your previous reply {what}{where}: {failure.message}\n"
        "Reply again with only one JSON object that matches the requested schema: "
        "no prose before or after it, no code fences."
    )


def simplified_request(schema: dict[str, Any]) -> str:
    """The instruction tier 2 adds to the request, naming the simplified schema in full."""
    return (
        "Earlier replies did not match the requested format. Reply with only one JSON object that "
        "matches this simplified JSON schema (required fields only), with no prose and no code fences:\n"
        + json.dumps(schema, ensure_ascii=False, sort_keys=True)
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


@dataclass
class _Tier:
    number: int
    model: str
    role: ModelRole | None
    output: type[BaseModel] | dict[str, Any]
    validator: Any
    parse: Callable[[str], Any] | None
    messages: list[dict[str, Any]]
    response_format: dict[str, Any] | type[BaseModel] | None


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
    stuck_after: int = 2,
    first_reply: str | None = None,
    deadline: float | None = None,
    role: ModelRole | None = None,
    fallback_role: ModelRole | None = None,
) -> StructuredOutcome[Any]:
    """One structured answer: re-ask on schema failures (tier 1), then a fallback model (tier 2).

    ``messages`` is never modified: re-ask messages live only in the request, so nothing of a
    failed attempt reaches a session transcript. ``first_reply`` is a reply the caller already
    has (it must not be the last message of ``messages``): it is checked as attempt 1 without a
    call. Transport failures (timeouts, rate limits, server and connection errors, after the
    gateway's own retries) go straight to tier 2, if any, never to a schema re-ask. ``deadline``
    (``loop.time()``) caps every call's timeout at what is left of the caller's budget.
    ``CancelledError`` propagates; when ``ok`` is false the caller applies its tier 3.
    """
    outcome: StructuredOutcome[Any] = StructuredOutcome(status="empty", model_used=model)
    tiers = [
        _Tier(
            number=1,
            model=model,
            role=role,
            output=output,
            validator=_schema_validator(output) if isinstance(output, dict) and parse is None else None,
            parse=parse,
            messages=messages,
            response_format=_response_format(output) if gateway.supports_response_format(model) else None,
        )
    ]
    if fallback_model and fallback_model != model:
        simple = simplified_schema(output)
        # A plain-dict schema is checked against its simplified form; a pydantic model's optional
        # fields have defaults, so the model class (and the caller's parser) still applies.
        tiers.append(
            _Tier(
                number=2,
                model=fallback_model,
                role=fallback_role,
                output=simple if isinstance(output, dict) else output,
                validator=_schema_validator(simple) if isinstance(output, dict) and parse is None else None,
                parse=parse,
                messages=[*messages, {"role": "user", "content": simplified_request(simple)}],
                response_format=_response_format(simple)
                if gateway.supports_response_format(fallback_model)
                else None,
            )
        )
    for tier in tiers:
        outcome.model_used, outcome.tier = tier.model, tier.number
        await _run_tier(
            gateway,
            outcome,
            tier,
            max_retries=max_retries,
            stuck_after=max(2, stuck_after),
            on_failure=on_failure,
            timeout_s=timeout_s,
            deadline=deadline,
            feedback_builder=feedback_builder,
            first_reply=first_reply if tier.number == 1 else None,
        )
        if outcome.status == "ok":
            break
    return outcome


def _call_timeout(timeout_s: float | None, deadline: float | None) -> float | None:
    if deadline is None:
        return timeout_s
    import asyncio

    left = max(0.001, deadline - asyncio.get_running_loop().time())
    return left if timeout_s is None else min(timeout_s, left)


async def _ask(
    gateway: LLMGateway,
    outcome: StructuredOutcome[Any],
    tier: _Tier,
    extra: list[dict[str, Any]],
    timeout_s: float | None,
) -> str | None:
    """One reply of the tier's model, its usage added to ``outcome``; None after a transport error
    (recorded in ``outcome``: a timeout or rate limit is never a reason to re-ask the schema).

    Which structured-output contract the endpoint honours (schema, JSON mode, or the prompt
    alone) is the gateway's negotiation (``core.llm.contract``); the outcome records its answer.
    """
    try:
        response = await gateway.complete(
            model=tier.model,
            role=tier.role,
            messages=[*tier.messages, *extra],
            response_format=tier.response_format,
            timeout_s=timeout_s,
        )
    except LLMError as exc:
        outcome.status, outcome.error, outcome.error_kind = "transport-error", str(exc), exc.kind
        return None
    if response.structured_contract is not None:
        outcome.contract = response.structured_contract
        outcome.contract_fallbacks = response.contract_fallbacks
    outcome.calls += 1
    outcome.latency_s += response.latency_s
    outcome.usage = TokenUsage(
        prompt_tokens=outcome.usage.prompt_tokens + response.usage.prompt_tokens,
        completion_tokens=outcome.usage.completion_tokens + response.usage.completion_tokens,
        total_tokens=outcome.usage.total_tokens + response.usage.total_tokens,
        cost_usd=outcome.usage.cost_usd + response.usage.cost_usd,
    )
    return response.content or ""


async def _run_tier(
    gateway: LLMGateway,
    outcome: StructuredOutcome[Any],
    tier: _Tier,
    *,
    max_retries: int,
    stuck_after: int,
    on_failure: Callable[[SchemaFailure], Awaitable[None]] | None,
    timeout_s: float | None,
    deadline: float | None,
    feedback_builder: Callable[[SchemaFailure], str] | None,
    first_reply: str | None,
) -> None:
    extra: list[dict[str, Any]] = []
    recent: list[_Problem] = []
    all_empty = True
    for reply_number in range(1, max_retries + 2):
        if reply_number == 1 and first_reply is not None:
            raw = first_reply
        else:
            asked = await _ask(gateway, outcome, tier, extra, _call_timeout(timeout_s, deadline))
            if asked is None:
                return
            raw = asked
        outcome.attempts += 1
        outcome.raw = raw
        value, problem = _check(raw, tier.output, parse=tier.parse, validator=tier.validator)
        if problem is None:
            outcome.status, outcome.value, outcome.error = "ok", value, None
            return
        all_empty = all_empty and not raw.strip()
        failure = SchemaFailure(
            stage=problem.stage,
            attempt=outcome.attempts,
            retries=outcome.retries,
            message=problem.message,
            path=problem.path,
            raw_output=raw,
            model=tier.model,
            tier=tier.number,
        )
        outcome.failures.append(failure)
        where = f" at {problem.path}" if problem.path else ""
        outcome.error = f"{tier.model}: {problem.stage}{where}: {problem.message}"
        if on_failure is not None:
            await on_failure(failure)
        recent = [*recent[-(stuck_after - 1) :], problem] if stuck_after > 1 else [problem]
        if len(recent) >= stuck_after and all(p == problem for p in recent):
            outcome.status = "empty" if all_empty else "schema-stuck-loop"
            return
        if reply_number > max_retries:
            outcome.status = "empty" if all_empty else "schema-retry-exhausted"
            return
        try:
            feedback = (
                feedback_builder(failure) if feedback_builder is not None else default_feedback(failure)
            )
        except Exception:
            feedback = GENERIC_FEEDBACK
        # Only the latest failure travels: the request is the original plus one exchange.
        extra = [{"role": "assistant", "content": _echo(raw)}, {"role": "user", "content": feedback}]
        outcome.retries += 1
