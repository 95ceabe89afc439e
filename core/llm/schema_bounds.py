"""Bounded JSON-schema validation: no output schema can hang a run.

jsonschema checks ``pattern`` and ``patternProperties`` with Python's ``re``, which backtracks: the
pattern ``^(a+)+$`` against 32 ``a``s and a ``!`` was still running after four minutes. Here those
keywords use the ``regex`` module with a timeout per match, and every keyword of a validation runs
under one deadline, so a slow schema ends in a clear schema error instead of a stuck task.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

__all__ = [
    "PATTERN_TIMEOUT_S",
    "VALIDATION_BUDGET_S",
    "ValidationBudgetExceeded",
    "bounded_validator_class",
    "validation_deadline",
]

PATTERN_TIMEOUT_S = 1.0  # one pattern against one value
VALIDATION_BUDGET_S = 10.0  # one whole validation of one reply

_DEADLINE: ContextVar[float | None] = ContextVar("schema_validation_deadline", default=None)


class ValidationBudgetExceeded(Exception):
    """A validation step ran out of time, or a pattern the regex engine cannot run: a schema error."""


@contextmanager
def validation_deadline(budget_s: float = VALIDATION_BUDGET_S) -> Iterator[None]:
    """Every keyword checked inside this block gives up once ``budget_s`` has passed."""
    token = _DEADLINE.set(time.monotonic() + budget_s)
    try:
        yield
    finally:
        _DEADLINE.reset(token)


def _check_deadline() -> None:
    deadline = _DEADLINE.get()
    if deadline is not None and time.monotonic() > deadline:
        raise ValidationBudgetExceeded(
            f"checking the reply against the output schema took over {VALIDATION_BUDGET_S:g} s; "
            "the schema is too costly to check (simplify its patterns or nesting)"
        )


def _search(pattern: str, text: str) -> bool:
    import regex

    _check_deadline()
    try:
        return regex.search(pattern, text, timeout=PATTERN_TIMEOUT_S) is not None
    except TimeoutError:
        raise ValidationBudgetExceeded(
            f"the schema's pattern {pattern[:80]!r} took over {PATTERN_TIMEOUT_S:g} s on a "
            f"{len(text):,}-character value; simplify the pattern"
        ) from None
    except regex.error as exc:
        raise ValidationBudgetExceeded(
            f"the schema's pattern {pattern[:80]!r} cannot be used: {exc}"
        ) from None


def _pattern(validator: Any, pattern: str, instance: Any, schema: Any) -> Iterator[Any]:
    from jsonschema.exceptions import ValidationError

    if validator.is_type(instance, "string") and not _search(pattern, instance):
        yield ValidationError(f"{instance!r} does not match {pattern!r}")


def _pattern_properties(
    validator: Any, properties: dict[str, Any], instance: Any, schema: Any
) -> Iterator[Any]:
    if not validator.is_type(instance, "object"):
        return
    for pattern, subschema in properties.items():
        for key, value in instance.items():
            if _search(pattern, key):
                yield from validator.descend(value, subschema, path=key, schema_path=pattern)


def _timed(keyword: Callable[..., Any]) -> Callable[..., Iterator[Any]]:
    def checked(validator: Any, value: Any, instance: Any, schema: Any) -> Iterator[Any]:
        _check_deadline()
        errors = keyword(validator, value, instance, schema)
        if errors is not None:
            yield from errors

    return checked


@functools.cache
def bounded_validator_class(cls: Any) -> Any:
    """``cls`` (a jsonschema validator class) with bounded patterns and a deadline on every keyword."""
    from jsonschema import validators

    keywords: dict[str, Any] = {name: _timed(fn) for name, fn in cls.VALIDATORS.items()}
    if "pattern" in keywords:
        keywords["pattern"] = _pattern
    if "patternProperties" in keywords:
        keywords["patternProperties"] = _pattern_properties
    return validators.extend(cls, keywords)
