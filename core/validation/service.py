"""Evidence-grounded validation of one attempt: policy, prompt, budget, verdict, citations, snapshot.

Fail-open by design: every model problem (timeout, unparseable output, provider failure, a
chunk that could not be reviewed) becomes a ``validator_error`` result that still reaches the
analyst with the answer; only cancellation propagates. An unparseable or empty reply is never
counted as accepted.

Policy-skipped validations (``validation_mode`` off, or ``keywords`` with no trigger in the answer)
return ``skipped=True`` with status ``insufficient_evidence`` (the answer was not confirmed) and an
issue saying why; they write the snapshot event (so the audit trail says why nothing was judged)
but no validation row, so nothing is ever stored as an endorsement that did not happen.

Deterministic pre-checks (empty answer, run ended with tool calls pending) are not skips: they are
clear task failures and return ``rejected`` without an LLM call, whatever the mode.
"""

from __future__ import annotations

import asyncio
import contextvars
import dataclasses
import logging
import re
import secrets
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, Field

from core.config import ValidationMode
from core.domain.event_codec import encode
from core.domain.event_payloads import SchemaCheckFailure, ValidationDebug, ValidationSnapshot
from core.domain.evidence import TaskEvidencePacket
from core.domain.facts import VerdictWarning, WarningCode
from core.domain.status import ValidationStatus
from core.domain.validation import CitationCheck, FailureCategory, ValidationResult
from core.evidence.content import index_packet, item_length
from core.evidence.render import RenderedEvidence, render_task
from core.llm import LLMGateway
from core.llm.families import model_family, same_family
from core.llm.gateway import UsageRecord, counted_usage
from core.llm.structured import SchemaFailure, StructuredOutcome, complete_structured
from core.profiles import ModelRole
from core.runtime import RunContext
from core.validation.chunked import judge_chunked
from core.validation.citations import check_citations_streaming
from core.validation.coherence import incoherence, incoherence_warning
from core.validation.context import execution_metadata, previous_feedback
from core.validation.identity import IdentityCache
from core.validation.judgement import (
    Judgement,
    SplicedRequest,
    close_prompt_log,
    error_result,
    from_outcome,
    open_prompt_log,
    precheck,
    prompt_parts,
    prompt_pending,
    skip,
    spliced_request,
)
from core.validation.prompt import (
    UNDER_REVIEW,
    TemplateSet,
    format_history,
    render_template,
    use_templates,
    wrap_answer,
    wrap_answer_parts,
)
from core.validation.schema import ValidatorOutput
from core.validation.sizing import full_rendering, referenced_tokens
from core.validation.workspace_templates import workspace_templates
from core.validation.workspace_validator import CONFIGURED, promoted_settings, promotions

__all__ = [
    "DEFAULT_TRIGGER_KEYWORDS",
    "DEFAULT_UNKNOWN_WINDOW",
    "INCOMPLETE_ANSWER",
    "SAFETY_MARGIN",
    "Assessment",
    "CaseInput",
    "ValidationReport",
    "ValidationService",
    "token_budget",
]

log = logging.getLogger(__name__)

SAFETY_MARGIN = 0.10  # token counters of different providers disagree by a few percent
MAX_OUTPUT_RESERVE = 4096
# How OpenAI-compatible servers state the window when they refuse a prompt as too long.
_REPORTED_WINDOW = re.compile(r"maximum context length is (\d+)", re.IGNORECASE)
# What an acceptance must cite when there is any: evidence the run gathered (tool results, team
# nodes' outputs), not an earlier attempt's answer or the transcript.
_GATHERED_KINDS = frozenset({"tool_result", "node_output"})
DEFAULT_UNKNOWN_WINDOW = 32_000  # a real model missing from litellm's map: assume a modest window
_SCRIPTED_PREFIX = "scripted/"
# The end (loop time) of the running verdict's budget; a context variable because one service
# validates several tasks at once in the desk.
_DEADLINE: contextvars.ContextVar[float | None] = contextvars.ContextVar("validator_deadline", default=None)


@dataclass(slots=True)
class _Budget:
    """The running verdict's whole budget: its start, its seconds, its timeout (to move its end when
    the evidence turns out to need chunks) and how many chunks it was grown for."""

    started: float
    seconds: float
    timeout: asyncio.Timeout | None = None
    chunks: int = 0

    @property
    def deadline(self) -> float:
        return self.started + self.seconds


_BUDGET: contextvars.ContextVar[_Budget | None] = contextvars.ContextVar("validator_budget", default=None)
# How a truncated answer's warning ends, after the words saying how it was cut (a replay reads them).
INCOMPLETE_ANSWER = "; the verdict judged an incomplete answer"
# Seed 004's list, used when keywords mode is on and no keyword is configured.
DEFAULT_TRIGGER_KEYWORDS = ("done", "completed", "finished", "ready", "here you go")


class ValidationReport(BaseModel):
    result: ValidationResult
    prompt: str
    debug: dict[str, Any]
    warnings: list[VerdictWarning] = Field(default_factory=list)
    skipped: bool = False


@dataclass(frozen=True, slots=True)
class Assessment:
    """A verdict reached and not yet recorded: the report, its snapshot payload and the prompt
    to store with it (None unless the debug setting keeps prompts). A live validation records it
    on the task; a shadow replay records it as a shadow verdict of its own."""

    report: ValidationReport
    snapshot: ValidationSnapshot
    stored_prompt: str | None


def reply_reserve(window: int, max_tokens: int | None = None) -> int:
    """Tokens kept free for the verdict: the validator profile's ``max_tokens`` when it sets one (the
    server generates no more), else a quarter of the window up to ``MAX_OUTPUT_RESERVE``."""
    if max_tokens is not None:
        return min(max_tokens, window // 2)
    return min(MAX_OUTPUT_RESERVE, window // 4)


def token_budget(window: int, max_tokens: int | None = None) -> int:
    """Input tokens usable in a ``window``: minus room for the verdict and a safety margin."""
    return max(1, int(window * (1 - SAFETY_MARGIN)) - reply_reserve(window, max_tokens))


class ValidationService:
    def __init__(self, ctx: RunContext, *, templates: TemplateSet | None = None) -> None:
        self.ctx = ctx
        self.store = ctx.store
        self.gateway = ctx.gateway
        self.settings = ctx.settings
        # A candidate's templates; None: the workspace's own, read for every verdict (an edit
        # applies to the next verdict, on every desk and worker of the workspace).
        self.templates = templates
        self._promoted: dict[int, ValidationService] = {}  # the promoted judge, by its promotion event
        # Windows learned from providers' context_length_exceeded replies, per model.
        self._measured_windows: dict[str, int] = {}
        self._identity = IdentityCache()  # the judge's identity, built once per templates and rules
        if self.settings.validation_mode == ValidationMode.KEYWORDS and not any(
            k.strip() for k in self.settings.trigger_keywords
        ):
            log.warning(
                "validation_mode is 'keywords' but trigger_keywords is empty: using the default list (%s)",
                ", ".join(DEFAULT_TRIGGER_KEYWORDS),
            )

    # ------------------------------------------------------------------ public
    async def validate(
        self,
        packet: TaskEvidencePacket,
        *,
        task_text: str,
        history: list[dict[str, Any]],
        task_id: str,
        attempt_id: str,
        attempt_index: int,
        session_id: str,
        agent_model: str,
        pending_tool_calls: bool = False,
        truncated: str | None = None,
        earlier: list[TaskEvidencePacket] | None = None,
        node_id: str | None = None,
    ) -> ValidationReport:
        """Judge ``packet``'s answer against the evidence of every attempt so far, and record the
        verdict on the task (its snapshot event, and its validation row unless skipped).

        ``earlier`` are the task's earlier packets, already indexed (``earlier_packets``): an
        answer may rest on a fact an earlier attempt found, so the validator sees their items
        under the ids they always had. ``truncated`` says how the answer was cut off, when it was.
        A team node's verdict (``node_id``) is a snapshot, no row.
        """
        case = CaseInput(
            packet=packet,
            task_text=task_text,
            history=history,
            task_id=task_id,
            attempt_id=attempt_id,
            attempt_index=attempt_index,
            session_id=session_id,
            agent_model=agent_model,
            pending_tool_calls=pending_tool_calls,
            truncated=truncated,
            earlier=earlier or [],
            node_id=node_id,
        )
        done = await self.assess(case)
        report, prompt = done.report, done.stored_prompt
        await self.store.append_event(session_id, *encode(done.snapshot), content=prompt, task_id=task_id)
        if not report.skipped and node_id is None:  # a team node's verdict is not the task's: no row
            await self._add_row(task_id, attempt_id, attempt_index, report.result, prompt, report.debug)
        return report

    async def assess(self, case: CaseInput, *, log_session_id: str | None = None) -> Assessment:
        """Reach a verdict on one case without recording it (schema failures are still logged:
        in the task's session, or in ``log_session_id`` with no task, for a shadow replay)."""
        started = time.perf_counter()
        judge, templates = (
            (self, self.templates) if self.templates is not None else await self._workspace_judge()
        )
        identity = await judge._identity.record(judge.settings, templates)
        with use_templates(templates):
            return await judge._assess(case, log_session_id, started, identity)

    async def _workspace_judge(self) -> tuple[ValidationService, TemplateSet]:
        """The workspace's validator now: the configured one with the workspace's templates, or the
        candidate promoted last (its profile, its own templates over the workspace's)."""
        templates = await workspace_templates(self.store)
        found = await promotions(self.store)
        if not found or found[-1].payload.candidate == CONFIGURED:
            return self, templates
        last = found[-1]
        own = last.payload.templates
        if own:
            templates = TemplateSet.of(
                {**dict(templates.overrides), **own}, f"promoted:{last.payload.candidate}"
            )
        judge = self._promoted.get(last.event_id)
        if judge is None or judge.templates != templates:
            settings = promoted_settings(self.settings, last.payload)
            gateway = LLMGateway(
                settings, self.gateway.on_usage, retry_backoff_s=self.gateway.retry_backoff_s
            )
            ctx = dataclasses.replace(self.ctx, settings=settings, gateway=gateway)
            judge = ValidationService(ctx, templates=templates)
            self._promoted = {last.event_id: judge}
        return judge, templates

    async def _assess(
        self, case: CaseInput, log_session_id: str | None, started: float, identity: dict[str, Any]
    ) -> Assessment:
        packet = case.packet
        model = self.settings.validator_model
        warnings = _opening_warnings(model, case.agent_model, case.truncated)
        # An index: outputs inline, big tool texts stay chunk references until a prompt needs them.
        packets = [*case.earlier, await index_packet(self.store, packet)]
        rendered = await asyncio.to_thread(render_task, packets)
        # Every item plus the answer under review (which render_task leaves out), without reading.
        gathered = sum(item_length(i) for i in rendered.items) + len(packet.final_output)
        debug: dict[str, Any] = {
            **_packet_facts(packets),
            **_evidence_debug(packets, rendered, gathered),
            "validator_model": model,
            "validator_version": identity["validator_version"],
            "validator": identity,
            "agent_model": case.agent_model,
            "validation_mode": str(self.settings.validation_mode),
        }
        judgement, skipped = self._gate(packet.final_output, case.pending_tool_calls)
        if judgement is None:
            judged = _Case(
                packets=packets,
                rendered=rendered,
                task_text=case.task_text,
                history=case.history,
                session_id=case.session_id,
                task_id=case.task_id,
                attempt_index=case.attempt_index,
                warnings=warnings,
                log_session_id=log_session_id,
                feedback_text=case.feedback_text,
            )
            judgement = await self._judge_within_budget(judged)
        result = await self._finish_result(judgement, rendered, warnings, debug)
        debug |= _judgement_debug(judgement, warnings, gathered)
        debug |= {
            "latency_s": round(time.perf_counter() - started, 4),
            "skipped": skipped,
            "attempt_id": case.attempt_id,
        }
        store_prompt = self.settings.debug_store_validation_prompt and bool(judgement.prompt)
        snapshot = ValidationSnapshot(
            **debug,
            result=result,
            status=result.status,
            attempt_index=case.attempt_index,
            raw_response=result.raw_response,
            prompt_stored=store_prompt,
            node_id=case.node_id,
        )
        report = ValidationReport(
            result=result, prompt=judgement.prompt, debug=debug, warnings=warnings, skipped=skipped
        )
        return Assessment(report, snapshot, judgement.prompt if store_prompt else None)

    async def _add_row(
        self,
        task_id: str,
        attempt_id: str,
        attempt_index: int,
        result: ValidationResult,
        prompt: str | None,
        debug: dict[str, Any],
    ) -> None:
        await self.store.add_validation(
            task_id=task_id,
            attempt_id=attempt_id,
            attempt_index=attempt_index,
            result=result.model_dump(mode="json"),
            raw_response=result.raw_response,
            prompt=prompt,
            debug=ValidationDebug.model_validate(debug).model_dump(),
        )

    def _gate(self, answer: str, pending_tool_calls: bool) -> tuple[Judgement | None, bool]:
        """A verdict needing no judge (no answer, an unfinished run) or a policy skip, and whether
        it was skipped; ``(None, False)`` when the judge must look."""
        settings = self.settings
        if not answer.strip():
            judgement = precheck(
                "pre-check:empty-answer", "the agent produced no answer", FailureCategory.GOAL_MISSED
            )
            return judgement, False
        if pending_tool_calls:
            judgement = precheck(
                "pre-check:pending-tool-calls",
                "the run ended still asking for tools or only announcing more work, so the answer is unfinished",
                FailureCategory.INCOMPLETE,
            )
            return judgement, False
        if settings.validation_mode == ValidationMode.OFF:
            return skip("skipped:mode-off", "not validated: validation_mode is off"), True
        if settings.validation_mode == ValidationMode.KEYWORDS and not _has_trigger(
            answer, settings.trigger_keywords
        ):
            message = "not validated: the answer contains no trigger keyword"
            return skip("skipped:no-trigger-keyword", message), True
        return None, False

    async def _judge_within_budget(self, case: _Case) -> Judgement:
        """The judge under one budget, failing open: a timeout or a bug is a ``validator_error``.

        Two limits: ``validator_timeout_s`` bounds each call; one budget bounds the whole verdict
        (transport retries, schema re-asks and every chunk share it, and each call may use only what
        is left), ``validator_budget_s`` plus ``validator_budget_per_chunk_s`` for each chunk once the
        evidence is cut in chunks, so a slow local model can finish a chunked verdict and a hung
        judge still holds a task for a bounded time. Earlier verdicts are read before the budget
        starts: it bounds the judge, not the store.
        """
        feedback_text = case.feedback_text
        if feedback_text is None:
            feedback_text = await self._previous_feedback(case.task_id, case.attempt_index)
        with self.gateway.counting() as calls:  # every answered call, a timed-out verdict's too
            judgement = await self._judge_in_time(case, feedback_text)
        _count_calls(judgement, calls)
        return judgement

    async def _judge_in_time(self, case: _Case, feedback_text: str) -> Judgement:
        loop = asyncio.get_running_loop()
        budget = _Budget(started=loop.time(), seconds=self.settings.validator_budget_s)
        token, budget_token = _DEADLINE.set(budget.deadline), _BUDGET.set(budget)
        sent_log, log_token = open_prompt_log()
        try:
            async with asyncio.timeout_at(budget.deadline) as budget.timeout:
                judgement = await self._judge(case, feedback_text)
            if judgement.error is not None and loop.time() >= budget.deadline:
                judgement.error = judgement.result.issues[0] = _budget_message(budget, judgement.error)
            return judgement
        except TimeoutError:
            message = _budget_message(budget)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # fail open: a bug or a config problem must not hide the answer
            log.exception("validation failed unexpectedly")
            message = f"validator failed: {type(exc).__name__}: {exc}"
        finally:
            _DEADLINE.reset(token)
            _BUDGET.reset(budget_token)
            close_prompt_log(log_token)
            # Contexts copied during the verdict (threads, a library's background tasks) may outlive
            # it still holding the log: emptied, it keeps no prompt (a 50 MB one) alive with them.
            parts, sent_log.parts, sent_log.pending = sent_log.texts(), [], None
        # The prompts sent before the verdict was cut short (every chunk reviewed so far) are kept.
        sent = "\n\n".join(parts)
        return Judgement(result=error_result(message), prompt=sent, strategy="error", error=message)

    # ------------------------------------------------------------------ judging
    async def _judge(self, case: _Case, feedback_text: str) -> Judgement:
        """One request when the whole prompt fits the judge's window, else the evidence in chunks."""
        model = self.settings.validator_model
        packets, rendered, warnings = case.packets, case.rendered, case.warnings
        packet = packets[-1]
        try:
            rules_text = self._rules_text()
        except OSError as exc:
            message = f"cannot read the analyst rules file {self.settings.rules}: {exc}"
            return Judgement(result=error_result(message), prompt="", strategy="error", error=message)
        answer = packet.final_output
        common = {
            **_history_parts(case.history, rendered, case.session_id, answer),
            "task_text": case.task_text.strip(),
            "rules_text": rules_text,
            "metadata_text": execution_metadata(packets),
            "feedback_text": feedback_text,
            "final_answer": _ANSWER_SLOT,  # the single request splices the answer in (_request)
            "attempt_index": case.attempt_index,
        }
        request = _request(rendered.text, bool(rendered.items), common, answer)
        prompt_tokens = await asyncio.to_thread(self.gateway.token_count, model, request.messages())
        window, budget, reply_tokens = await self._window_and_budget(model, warnings)
        if any(i.content_ref is not None for i in rendered.items):
            request, prompt_tokens = await self._with_stored_items(
                packets, rendered, common, request, prompt_tokens, budget, answer
            )
        if case.log_session_id is None:
            emit = self._failure_emitter(case.session_id, case.task_id, case.attempt_index)
        else:  # a shadow replay: its failures are its own, never the task's events
            emit = self._failure_emitter(case.log_session_id, None, case.attempt_index)
        overflow: dict[str, Any] | None = None
        if budget is None or prompt_tokens <= budget:
            outcome = await self._ask_single(request, emit)
            if outcome.status != "transport-error" or outcome.error_kind != "context_window":
                judgement = from_outcome(outcome, prompt=prompt_parts([request.text()])[0], strategy="single")
                judgement.prompt_budget, judgement.reply_reserve = budget, _reserve(window, reply_tokens)
                judgement.prompt_tokens = prompt_tokens
                judgement.evidence_chars_in_input = sum(item_length(i) for i in rendered.items) + len(answer)
                return judgement
            overflow, budget = self._remeasure(
                model, window, prompt_tokens, outcome.error or "", warnings, reply_tokens
            )
        common["final_answer"] = wrap_answer(answer)  # every chunk's prompt carries the answer whole
        judgement = await judge_chunked(
            self,
            rendered.items,
            store=self.store,
            common=common,
            budget=budget,
            prompt_tokens=prompt_tokens,
            emit=emit,
            warnings=warnings,
            answer_chars=len(answer),
        )
        judgement.overflow = overflow
        judgement.prompt_budget, judgement.reply_reserve = budget, _reserve(window, reply_tokens)
        return judgement

    async def _ask_single(
        self, request: SplicedRequest, emit: Callable[[str], Callable[[SchemaFailure], Awaitable[None]]]
    ) -> StructuredOutcome[Any]:
        """The one-request verdict. The message sent (a copy of the answer) is gone when this returns,
        so the stored prompt the caller builds next is the only other copy; if the verdict is cut
        short meanwhile, the prompt log builds it (``prompt_pending``)."""
        prompt_pending(request.text)
        messages = request.messages()
        try:
            return await self.ask(messages, ValidatorOutput, emit("verdict"))
        finally:
            # The request is spent, but litellm's background success logging holds it a moment
            # longer (a thread and a queued task): emptied, it holds no copy of the answer then.
            for message in messages:
                message["content"] = ""

    def _rules_text(self) -> str:
        """The analyst's rules, read afresh for every verdict (an edit applies to the next one)."""
        if self.settings.rules is None:
            return ""
        return self.settings.rules.read_text(encoding="utf-8", errors="replace").strip()

    async def _window_and_budget(
        self, model: str, warnings: list[VerdictWarning]
    ) -> tuple[int | None, int | None, int | None]:
        """The judge's context window and the prompt budget inside it; None for a scripted model.

        The setting wins, then a window measured from a provider's overflow error, then litellm's
        map; an unknown model is assumed small, and the verdict says so.
        """
        # A local model's metadata, fetched off the loop's thread; the validator's own profile, even
        # when the agent names the same model.
        await self.gateway.prepare(model, ModelRole.VALIDATOR)
        window = (
            self.settings.validator_context_tokens
            or self._measured_windows.get(model)
            or self.gateway.context_window(model, ModelRole.VALIDATOR)
        )
        if window is None and not model.startswith(_SCRIPTED_PREFIX):
            window = DEFAULT_UNKNOWN_WINDOW
            warnings.append(
                VerdictWarning(
                    code=WarningCode.UNKNOWN_CONTEXT_WINDOW,
                    message=f"{model} is not in litellm's model map; "
                    f"assuming {DEFAULT_UNKNOWN_WINDOW} tokens (set validator_context_tokens)",
                )
            )
        # The reply's room comes from the validator's own max_tokens (its profile), not a fixed share.
        profile = await self.gateway.endpoints.resolved(model, ModelRole.VALIDATOR)
        reply_tokens = profile.max_tokens if profile is not None else None
        return window, token_budget(window, reply_tokens) if window is not None else None, reply_tokens

    async def _with_stored_items(
        self,
        packets: list[TaskEvidencePacket],
        rendered: RenderedEvidence,
        common: dict[str, Any],
        request: SplicedRequest,
        prompt_tokens: int,
        budget: int | None,
        answer: str,
    ) -> tuple[SplicedRequest, int]:
        """The one-request prompt with the big items' bodies, and its size in tokens.

        Their bodies are blank in the index's rendering: their cached counts are added, and they
        are read back only when the whole prompt fits (or no window is known: scripted models), so
        a prompt that will be chunked never holds the task's evidence.
        """
        model = self.settings.validator_model
        prompt_tokens += await referenced_tokens(
            self.store, rendered.items, model, lambda text: self.gateway.token_count(model, text)
        )
        if budget is not None and prompt_tokens > budget:
            return request, prompt_tokens
        full = await full_rendering(self.store, packets)
        request = _request(full.text, bool(full.items), common, answer)
        del full
        return request, await asyncio.to_thread(self.gateway.token_count, model, request.messages())

    def _remeasure(
        self,
        model: str,
        window: int | None,
        prompt_tokens: int,
        error: str,
        warnings: list[VerdictWarning],
        reply_tokens: int | None = None,
    ) -> tuple[dict[str, Any], int]:
        """After a ``context_length_exceeded``: the window the provider really has, and a chunk budget
        that fits it. The provider's own figure wins when it states one; otherwise the prompt that
        failed bounds the window from above. Later validations in this service start from it.
        """
        found = _REPORTED_WINDOW.search(error)
        reported = int(found.group(1)) if found else None
        measured = reported if reported is not None else prompt_tokens
        if window is not None:
            measured = min(measured, window)
        budget = token_budget(measured, reply_tokens)
        if budget >= prompt_tokens:  # our counter and the provider's disagree: stay well below what failed
            budget = max(1, prompt_tokens * 3 // 4)
        self._measured_windows[model] = measured
        warnings.append(
            VerdictWarning(
                code=WarningCode.CONTEXT_OVERFLOW,
                message=f"{model} refused the {prompt_tokens}-token prompt as longer than its context window "
                f"(assumed {window if window is not None else 'unknown'}, re-measured {measured} tokens); "
                "the evidence was validated in chunks instead",
            )
        )
        overflow = {
            "assumed_window": window,
            "measured_window": measured,
            "reported_by_provider": reported is not None,
            "prompt_tokens": prompt_tokens,
            "error": error,
        }
        return overflow, budget

    async def _previous_feedback(self, task_id: str, attempt_index: int) -> str:
        # Ids and indexes only: never read the packets back (a resolved packet is the whole task).
        attempts = {a.id: a.index for a in await self.store.list_attempts(task_id, resolve=False)}
        return previous_feedback(
            await self.store.list_validations(task_id),
            await self.store.list_feedback(task_id),
            attempt_index=attempt_index,
            attempt_ids=attempts,
        )

    def extend_budget(self, chunks: int) -> None:
        """Grow the running verdict's budget by ``validator_budget_per_chunk_s`` for each chunk."""
        budget = _BUDGET.get()
        if budget is None or chunks <= budget.chunks:
            return
        budget.seconds += (chunks - budget.chunks) * self.settings.validator_budget_per_chunk_s
        budget.chunks = chunks
        _DEADLINE.set(budget.deadline)
        if budget.timeout is not None:
            budget.timeout.reschedule(budget.deadline)

    async def ask(
        self,
        messages: list[dict[str, Any]],
        output: type[BaseModel],
        on_failure: Callable[[SchemaFailure], Awaitable[None]],
    ) -> StructuredOutcome[Any]:
        settings = self.settings
        return await complete_structured(
            self.gateway,
            model=settings.validator_model,
            messages=messages,
            output=output,
            max_retries=settings.max_schema_retries,
            fallback_model=settings.validator_fallback_model or settings.schema_fallback_model,
            stuck_after=settings.schema_stuck_after,
            on_failure=on_failure,
            timeout_s=settings.validator_timeout_s,
            deadline=_DEADLINE.get(),
            role=ModelRole.VALIDATOR,
            fallback_role=ModelRole.VALIDATOR_FALLBACK
            if settings.validator_fallback_model
            else ModelRole.SCHEMA_FALLBACK,
        )

    def _failure_emitter(
        self, session_id: str, task_id: str | None, attempt_index: int
    ) -> Callable[[str], Callable[[SchemaFailure], Awaitable[None]]]:
        def for_purpose(purpose: str) -> Callable[[SchemaFailure], Awaitable[None]]:
            async def emit(failure: SchemaFailure) -> None:
                payload = SchemaCheckFailure(
                    **failure.model_dump(exclude={"raw_output"}),
                    raw_output_chars=len(failure.raw_output),
                    purpose=f"validation:{purpose}",
                    attempt_index=attempt_index,
                )
                # The raw output travels in the event's content column (it can be megabytes).
                await self.store.append_event(
                    session_id,
                    *encode(payload),
                    content=failure.raw_output,
                    task_id=task_id,
                )

            return emit

        return for_purpose

    # ------------------------------------------------------------------ result policy
    async def _finish_result(
        self,
        judgement: Judgement,
        rendered: RenderedEvidence,
        warnings: list[VerdictWarning],
        debug: dict[str, Any],
    ) -> ValidationResult:
        result = judgement.result
        checked = await check_citations_streaming(result.citations, rendered.items, self.store)
        result = result.model_copy(update={"citations": checked})
        counts = {c.value: 0 for c in CitationCheck}
        for citation in checked:
            counts[citation.check.value] += 1
        debug["citation_checks"] = counts
        verified = counts[CitationCheck.VERIFIED.value]
        if checked and verified < len(checked):
            unverified = len(checked) - verified
            warnings.append(
                VerdictWarning(
                    code=WarningCode.UNVERIFIED_CITATIONS,
                    message=f"{unverified} of {len(checked)} citations were not found in the evidence",
                    count=unverified,
                    total=len(checked),
                )
            )
        gathered = sum(1 for i in rendered.items if i.kind in _GATHERED_KINDS)
        failed = incoherence(result, judgement.dimensions, evidence_items=gathered, settings=self.settings)
        if failed:  # a weak judge's "accepted" that its own verdict contradicts is not an endorsement
            warnings.append(incoherence_warning(failed))
            debug["downgraded_from"] = "accepted"
            debug["coherence_failures"] = [f.check.value for f in failed]
            result = _downgraded(
                result, "accepted verdict not counted: " + "; ".join(f.describe() for f in failed)
            )
        if (
            self.settings.require_verified_citations
            and result.status == ValidationStatus.ACCEPTED
            and rendered.items
            and verified == 0
        ):
            debug["downgraded_from"] = "accepted"
            result = _downgraded(
                result,
                "accepted verdict not confirmed: none of its citations was found in the evidence "
                "(require_verified_citations is on)",
            )
        return result


def _downgraded(result: ValidationResult, why: str) -> ValidationResult:
    """An acceptance that does not count, as ``insufficient_evidence`` with the reason among its issues."""
    return ValidationResult.model_validate(
        {
            **result.model_dump(exclude={"passed"}),
            "status": ValidationStatus.INSUFFICIENT_EVIDENCE,
            "issues": [*result.issues, why],
        }
    )


def _reserve(window: int | None, reply_tokens: int | None) -> int | None:
    return reply_reserve(window, reply_tokens) if window is not None else None


def _count_calls(judgement: Judgement, calls: list[UsageRecord]) -> None:
    """The verdict's usage from what the gateway answered, not from the outcomes that got back:
    a verdict cut off by its budget was still answered (and paid) for the calls that finished."""
    usage = counted_usage(calls)
    judgement.calls = sum(1 for c in calls if c.ok)
    judgement.prompt_tokens_used = usage.prompt_tokens
    judgement.completion_tokens_used = usage.completion_tokens
    judgement.cost_usd_used = usage.cost_usd
    judgement.unpriced_calls_used = usage.unpriced_calls


def _budget_message(budget: _Budget, detail: str | None = None) -> str:
    why = f" (last error: {detail})" if detail else ""
    settings = "validator_budget_s"
    if budget.chunks:
        settings += f" + {budget.chunks} chunks × validator_budget_per_chunk_s"
    return (
        f"validator_error: the validator budget of {budget.seconds:g} s ({settings}) ran out before a "
        f"verdict{why}; the answer is delivered unvalidated for review (fail-open)"
    )


def _has_trigger(answer: str, keywords: list[str]) -> bool:
    """Whole words or phrases, any case: "done" fires on "Done." but not on "undone"."""
    words = [k.strip() for k in keywords if k.strip()] or list(DEFAULT_TRIGGER_KEYWORDS)
    return any(
        re.search(rf"(?<!\w){re.escape(k)}(?!\w)", answer, flags=re.IGNORECASE) is not None for k in words
    )


@dataclass(frozen=True, slots=True)
class _Case:
    """What judging one answer reads: the packets (earlier attempts' first), their rendering,
    the task and its conversation, where it was recorded, and the warnings the verdict collects."""

    packets: list[TaskEvidencePacket]
    rendered: RenderedEvidence
    task_text: str
    history: list[dict[str, Any]]
    session_id: str
    task_id: str
    attempt_index: int
    warnings: list[VerdictWarning]
    log_session_id: str | None = None  # where schema failures go when not the task's session
    feedback_text: str | None = None  # read by the caller already (CaseInput.feedback_text)


@dataclass(frozen=True, slots=True)
class CaseInput:
    """One answer to judge, as the caller has it: the packet, its task and conversation, and where
    it was recorded. A live attempt builds it from what it just ran; a replay from the store."""

    packet: TaskEvidencePacket
    task_text: str
    history: list[dict[str, Any]]
    task_id: str
    attempt_id: str
    attempt_index: int
    session_id: str
    agent_model: str
    pending_tool_calls: bool = False
    truncated: str | None = None  # how the answer was cut off, when it was
    earlier: list[TaskEvidencePacket] = field(default_factory=list)
    node_id: str | None = None  # a team node's output (verify_team_nodes), judged apart from the task's
    # The earlier attempts' verdicts and feedback (``previous_feedback``) when the caller read the
    # task's rows already (a replay); None: the service reads them.
    feedback_text: str | None = None


# Where the single request's answer goes: rendered in its place, then cut out for the answer's
# pieces, so the answer is not copied into the template's output and then again into the message.
_ANSWER_SLOT = f"\x00final-answer-{secrets.token_hex(8)}\x00"


def _request(evidence_text: str, has_evidence: bool, common: dict[str, Any], answer: str) -> SplicedRequest:
    """The single-request validation prompt (``common["final_answer"]`` is ``_ANSWER_SLOT``)."""
    user = render_template(
        "validation.md.j2", evidence_text=evidence_text, has_evidence=has_evidence, **common
    )
    return spliced_request(user, _ANSWER_SLOT, wrap_answer_parts(answer))


def _history_parts(
    history: list[dict[str, Any]], rendered: RenderedEvidence, session_id: str, answer: str
) -> dict[str, Any]:
    """The conversation for the prompt, evidence shown as pointers (never twice), in full and as
    pointers only (the chunked verdict's budget has no room for tool results)."""
    # Tool-call ids are unique within a session, not across sessions (team nodes).
    evidence_ids = {
        i.tool_call_id: i.evidence_id for i in rendered.items if i.tool_call_id and i.session_id == session_id
    }
    # An earlier attempt's answer (or a node's output) that reappears in the history is a pointer.
    answers = {
        i.content: i.evidence_id
        for i in rendered.items
        if i.kind in ("final_output", "run_output", "node_output") and i.content.strip()
    }
    # The answer under review is the history's last assistant message: the prompt shows it under
    # "Final answer to judge", so the history points there rather than carrying it a second time.
    if answer.strip():
        answers.setdefault(answer, UNDER_REVIEW)
    history_text, history_count = format_history(history, evidence_ids, evidence_texts=answers)
    pointers, _ = format_history(history, evidence_ids, pointers_only=True, evidence_texts=answers)
    return {"history_text": history_text, "history_pointers_text": pointers, "history_count": history_count}


def _opening_warnings(model: str, agent_model: str, truncated: str | None) -> list[VerdictWarning]:
    """What the verdict must carry whatever the judge says: a judge of the agent's own family, and
    an answer cut off at the output limit."""
    warnings: list[VerdictWarning] = []
    if same_family(model, agent_model):
        warnings.append(
            VerdictWarning(
                code=WarningCode.SAME_FAMILY_VALIDATOR,
                message=f"validator {model} and agent {agent_model} are both from the "
                f"{model_family(model)} family; judges tend to favour answers from their own family",
            )
        )
    if truncated:
        warnings.append(
            VerdictWarning(
                code=WarningCode.TRUNCATED_ANSWER,
                message=f"{truncated}{INCOMPLETE_ANSWER}",
            )
        )
    return warnings


def _evidence_debug(
    packets: list[TaskEvidencePacket], rendered: RenderedEvidence, gathered: int
) -> dict[str, Any]:
    """What the judge was given to read: which attempts, how many items, how many characters."""
    return {
        "evidence_attempts": [p.attempt_index for p in packets],
        "evidence_chars": gathered,
        "evidence_item_count": len(rendered.items),
        "final_output_chars": len(packets[-1].final_output),
    }


def _judgement_debug(judgement: Judgement, warnings: list[VerdictWarning], gathered: int) -> dict[str, Any]:
    """How the verdict was reached, for the debug record: strategy, sizes, calls, spend, coverage."""
    return {
        "strategy": judgement.strategy,
        "chunk_count": judgement.chunk_count,
        "prompt_tokens": judgement.prompt_tokens,
        "prompt_budget": judgement.prompt_budget,
        "reply_reserve": judgement.reply_reserve,
        "verdict_prompt_tokens": judgement.verdict_prompt_tokens,
        "evidence_chars_in_input": judgement.evidence_chars_in_input,
        "coverage": (judgement.evidence_chars_in_input / gathered) if gathered else 1.0,
        "schema_retries": judgement.schema_retries,
        "llm_calls": judgement.calls,
        "usage": {
            "prompt_tokens": judgement.prompt_tokens_used,
            "completion_tokens": judgement.completion_tokens_used,
            "cost_usd": judgement.cost_usd_used,
            "unpriced_calls": judgement.unpriced_calls_used,
        },
        "model_used": judgement.model_used or None,
        "structured_contract": judgement.structured_contract,
        "contract_fallbacks": judgement.contract_fallbacks or None,
        "error": judgement.error,
        "warnings": [w.model_dump(mode="json") for w in warnings],
        "chunk_raw_responses": judgement.chunk_raw_responses,
        "context_overflow": judgement.overflow,
        "chunk_ranges": judgement.chunk_ranges,
        "findings_fold": judgement.findings_fold,
        "evidence_index_summarised": judgement.index_summarised,
    }


def _packet_facts(packets: list[TaskEvidencePacket]) -> dict[str, Any]:
    runs = []
    for packet in packets:
        if packet.main_run is not None:
            runs.append(packet.main_run)
        runs.extend(n.evidence for n in packet.team_node_results if n.evidence is not None)
        runs.extend(packet.team_runs)
    seen: dict[str, Any] = {}
    for run in runs:
        seen.setdefault(run.run_id, run)
    sessions = list(dict.fromkeys(r.session_id for r in seen.values()))
    return {
        "evidence_run_ids": list(seen),
        "evidence_session_ids": sessions,
        "tool_result_count": sum(len(r.tool_results) for r in seen.values()),
    }
