"""What one validation's LLM part produced, and the small constructors shared by every strategy.

Kept apart from the service so the single-pass and the chunked strategies build the same
``Judgement`` the same way (an unusable reply is always a ``validator_error``, never a verdict).
"""

from __future__ import annotations

import contextvars
from collections.abc import Callable
from typing import Any

from pydantic import BaseModel, Field

from core.domain.status import ValidationStatus
from core.domain.validation import FailureCategory, ValidationResult
from core.llm.structured import StructuredOutcome
from core.validation.prompt import system_prompt
from core.validation.schema import ValidatorOutput

__all__ = [
    "Judgement",
    "PromptLog",
    "SplicedRequest",
    "add_usage",
    "close_prompt_log",
    "error_result",
    "from_outcome",
    "open_prompt_log",
    "precheck",
    "prompt_parts",
    "prompt_pending",
    "prompt_text",
    "skip",
    "spliced_request",
    "validator_messages",
]


class PromptLog:
    """The prompts of the verdict being reached, as they are sent: what is stored when the verdict's
    budget cuts it short (the prompts of the chunk calls that did run are evidence of the attempt).

    ``pending`` builds the text of a single request that is out and not yet logged (``parts`` is
    then empty): its text is a second copy of a huge answer, built only when it must be stored."""

    def __init__(self) -> None:
        self.parts: list[str] = []
        self.pending: Callable[[], str] | None = None

    def texts(self) -> list[str]:
        if not self.parts and self.pending is not None:
            return [self.pending()]
        return self.parts


_PROMPTS: contextvars.ContextVar[PromptLog | None] = contextvars.ContextVar("validator_prompts", default=None)


def open_prompt_log() -> tuple[PromptLog, contextvars.Token[PromptLog | None]]:
    log = PromptLog()
    return log, _PROMPTS.set(log)


def close_prompt_log(token: contextvars.Token[PromptLog | None]) -> None:
    _PROMPTS.reset(token)


def prompt_parts(parts: list[str] | None = None) -> list[str]:
    """The list the running verdict's prompts go in (``parts`` becomes it when given)."""
    log = _PROMPTS.get()
    chosen = parts if parts is not None else []
    if log is not None:
        log.parts, log.pending = chosen, None
    return chosen


def prompt_pending(build: Callable[[], str]) -> None:
    """The running verdict's prompt is ``build()``, built only if the verdict is cut short."""
    log = _PROMPTS.get()
    if log is not None:
        log.parts, log.pending = [], build


def error_result(message: str, raw: str = "") -> ValidationResult:
    return ValidationResult(
        status=ValidationStatus.VALIDATOR_ERROR,
        score=0.0,
        issues=[message],
        raw_response=raw,
    )


def validator_messages(user: str, *, rubric: bool = True) -> list[dict[str, Any]]:
    return [{"role": "system", "content": system_prompt(rubric=rubric)}, {"role": "user", "content": user}]


class SplicedRequest:
    """A single-request validator prompt kept as pieces around the answer, which is not copied.

    ``messages()`` joins the user message once, for sending; ``text()`` joins the stored prompt
    (``prompt_text`` of those messages) from the same pieces, so the caller can drop the sent
    message first: a 50 MB answer is then in memory once besides the answer itself, never three
    times (wrapped, rendered, and stored)."""

    def __init__(self, system: str, user_pieces: list[str]) -> None:
        self.system = system
        self.user_pieces = user_pieces

    def messages(self) -> list[dict[str, Any]]:
        return [
            {"role": "system", "content": self.system},
            {"role": "user", "content": "".join(self.user_pieces)},
        ]

    def text(self) -> str:
        return "".join(["--- system ---\n", self.system, "\n\n--- user ---\n", *self.user_pieces])


def spliced_request(user: str, slot: str, body: tuple[str, str, str]) -> SplicedRequest:
    """The validator's request for ``user``, a prompt rendered with ``slot`` standing for the fenced
    answer ``body`` (opening line, answer, closing line). The slot is the last one in the text:
    the answer comes after every quoted text, so a slot forged inside one cannot be the one used."""
    before, found, after = user.rpartition(slot)
    pieces = [before, *body, after] if found else [user]
    return SplicedRequest(system_prompt(), pieces)


def prompt_text(messages: list[dict[str, Any]]) -> str:
    """The messages as one text, joined once: a per-message f-string would copy a 50 MB answer
    before the join copies it again."""
    pieces: list[str] = []
    for m in messages:
        pieces += ["\n\n" if pieces else "", f"--- {m['role']} ---\n", m["content"]]
    return "".join(pieces)


class Judgement(BaseModel):
    """What the LLM part produced, before citation checks and persistence."""

    result: ValidationResult
    prompt: str
    strategy: str
    chunk_count: int = 0
    schema_retries: int = 0
    calls: int = 0
    prompt_tokens: int = 0
    verdict_prompt_tokens: int | None = None
    evidence_chars_in_input: int = 0
    model_used: str = ""
    chunk_raw_responses: list[str] = Field(default_factory=list)
    prompt_tokens_used: int = 0
    completion_tokens_used: int = 0
    cost_usd_used: float = 0.0
    unpriced_calls_used: int = 0
    # The judge's prompt budget in tokens and the room kept for its reply; None without a window.
    prompt_budget: int | None = None
    reply_reserve: int | None = None
    error: str | None = None
    # The judge's own words on each dimension (goal achievement, completeness, rule compliance): the
    # coherence checks read them against its status, and ``ValidationResult`` has no place for them.
    dimensions: dict[str, str] = Field(default_factory=dict)
    # Set when the provider refused the single-pass prompt as too long and the verdict was then
    # reached in chunks: the window we had assumed, the one re-measured, and the provider's words.
    overflow: dict[str, Any] | None = None
    # Chunked only: per chunk prompt, the (evidence id, first character, length) of every part it
    # carried, so an auditor can rebuild each prompt from the store and check coverage.
    chunk_ranges: list[list[tuple[str, int, int]]] = Field(default_factory=list)
    # Chunked only, when the chunks' findings did not fit the verdict's window: one record per merge
    # (level, chunks covered, findings in and out), so the fold is auditable after the fact.
    findings_fold: list[dict[str, Any]] = Field(default_factory=list)
    # Chunked only: the verdict's evidence index listed ranges of ids per attempt, not every item.
    index_summarised: bool = False
    # How the judge's JSON was asked for (``core.llm.contract``) and the refusals on the way there.
    structured_contract: str | None = None
    contract_fallbacks: list[str] = Field(default_factory=list)


def precheck(strategy: str, issue: str, category: FailureCategory) -> Judgement:
    result = ValidationResult(
        status=ValidationStatus.REJECTED,
        score=0.0,
        issues=[issue],
        category=category,
        recommended_revision_prompt="Complete the task and give a final answer based on the evidence you gather.",
    )
    return Judgement(result=result, prompt="", strategy=strategy)


def skip(strategy: str, issue: str) -> Judgement:
    result = ValidationResult(status=ValidationStatus.INSUFFICIENT_EVIDENCE, score=0.0, issues=[issue])
    return Judgement(result=result, prompt="", strategy=strategy)


def add_usage(judgement: Judgement, outcome: StructuredOutcome[Any]) -> None:
    judgement.calls += outcome.calls
    judgement.schema_retries += outcome.retries
    judgement.prompt_tokens_used += outcome.usage.prompt_tokens
    judgement.completion_tokens_used += outcome.usage.completion_tokens
    judgement.cost_usd_used += outcome.usage.cost_usd
    if outcome.contract is not None:
        judgement.structured_contract = outcome.contract
        judgement.contract_fallbacks = list(outcome.contract_fallbacks)


def from_outcome(outcome: StructuredOutcome[Any], *, prompt: str, strategy: str) -> Judgement:
    judgement = Judgement(result=error_result("no verdict"), prompt=prompt, strategy=strategy)
    add_usage(judgement, outcome)
    judgement.model_used = outcome.model_used
    if outcome.ok and isinstance(outcome.value, ValidatorOutput):
        judgement.result = outcome.value.to_result(outcome.raw)
        judgement.dimensions = outcome.value.dimensions()
    else:
        kind = f": {outcome.error_kind}" if outcome.error_kind else ""
        message = f"validator gave no usable verdict ({outcome.status}{kind}): {outcome.error or 'no answer'}"
        judgement.result = error_result(message, outcome.raw)
        judgement.error = message
    return judgement
