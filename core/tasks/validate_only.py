"""Validate-only batch rows: the row brought its answer, so no agent writes one.

A batch row may carry an answer produced elsewhere (another system, an earlier review) that the
team wants judged. Its first attempt records that answer as a run of its own kind (``supplied``):
``run_started`` with the task's prompt, an ``answer_supplied`` event saying where the answer came
from (batch id and row key), the answer as the assistant's message (so a later attempt continues
from it), and ``run_finished`` with a warning that there is no tool evidence. The evidence packet
is built from those events like any other, so it honestly holds no tool result, and then the
answer goes through the normal validation and the normal state machine.

Rules that differ from a generated answer, because the answer under judgement must stay the one
the row gave:
- no automatic validator retry (a retry would replace the supplied answer with a generated one;
  a rejected supplied answer goes to review with the validator's verdict);
- no output-schema repair re-asks (the answer is checked against the schema, never rewritten).

An analyst's Revise runs the agent normally, with the analyst's note, continuing the session in
which the supplied answer is the last reply: there is nothing new to validate until someone
writes a new answer, and the analyst asking for a revision is asking for exactly that.
Crash recovery re-supplies the answer (a resumed first attempt has not been revised by anyone).
"""

from __future__ import annotations

from typing import Any

from core.agent import RunOutcome
from core.domain.event_codec import decode_as
from core.domain.event_payloads import (
    AddedMessage,
    AnalystDecision,
    RunEnd,
    RunStart,
    SuppliedAnswerRecord,
    SuppliedProvenance,
)
from core.domain.facts import EventKind, FinishReason
from core.domain.status import FeedbackAction
from core.store import new_event
from core.store.batches import BatchRepository, SuppliedAnswer
from core.workspace import Workspace

__all__ = ["SUPPLIED_RUN_KIND", "SUPPLIED_WARNING", "SuppliedOutcome", "is_supplied", "supply_answer"]

SUPPLIED_RUN_KIND = "supplied"
SUPPLIED_WARNING = (
    "answer supplied for validation only: no agent ran and no tool was called, so this attempt has "
    "no tool evidence; the answer came from {source}"
)


class SuppliedOutcome(RunOutcome):
    """A run whose answer was supplied by the batch row rather than generated."""


def is_supplied(outcome: RunOutcome) -> bool:
    """The service asks this where a supplied answer must not be retried or repaired."""
    return isinstance(outcome, SuppliedOutcome)


async def supply_answer(
    ws: Workspace,
    task_id: str,
    attempt_id: str,
    session_id: str,
    history: list[dict[str, Any]],
    new_messages: list[dict[str, Any]],
) -> SuppliedOutcome | None:
    """Record the row's answer as this attempt's run, or None when the agent must run instead."""
    supplied = await BatchRepository(ws.store).supplied_answer(task_id)
    if supplied is None or await _revised_by_analyst(ws, task_id):
        return None
    store = ws.store
    run = await store.create_run(
        session_id=session_id,
        kind=SUPPLIED_RUN_KIND,
        model=SUPPLIED_RUN_KIND,
        task_id=task_id,
        attempt_id=attempt_id,
    )
    provenance = _provenance(supplied)
    warning = SUPPLIED_WARNING.format(source=_source(supplied))
    reply = {"role": "assistant", "content": supplied.answer}
    events = [
        new_event(
            RunStart(
                model=SUPPLIED_RUN_KIND,
                run_kind=SUPPLIED_RUN_KIND,
                node_id=None,
                attempt_id=attempt_id,
                max_tool_iterations=0,
                include_tools=False,
                tool_names=[],
                input_messages=list(new_messages),
                history_length=len(history),
            )
        ),
        new_event(
            SuppliedAnswerRecord(**provenance.model_dump(), generated=False, note=warning),
            content=supplied.answer,
        ),
        new_event(AddedMessage(message=reply)),
        new_event(
            RunEnd(
                finish_reason=FinishReason.STOP,
                output_text=supplied.answer,
                error=None,
                pending_tool_calls=False,
                iterations=0,
                warnings=[warning],
                supplied=provenance,
            )
        ),
    ]
    await store.append_events(session_id, events, run_id=run.id, task_id=task_id)
    await store.finish_run(run.id, finish_reason=FinishReason.STOP, output_text=supplied.answer)
    return SuppliedOutcome(
        run_id=run.id,
        session_id=session_id,
        output_text=supplied.answer,
        finish_reason=FinishReason.STOP,
        iterations=0,
        messages=[*history, *new_messages, reply],
        history_len=len(history),
    )


async def _revised_by_analyst(ws: Workspace, task_id: str) -> bool:
    """Once an analyst asked for a revision, the agent answers; the row's answer was judged."""
    asked = await ws.store.get_task_events(task_id, kinds=[EventKind.ANALYST_FEEDBACK_RECORDED])
    return any(decode_as(e, AnalystDecision).action == FeedbackAction.REVISE for e in asked)


def _provenance(supplied: SuppliedAnswer) -> SuppliedProvenance:
    return SuppliedProvenance(source="batch", batch_id=supplied.batch_id, row_key=supplied.row_key)


def _source(supplied: SuppliedAnswer) -> str:
    if supplied.batch_id is None:
        return "the task's given answer"
    return f"batch {supplied.batch_id[:12]}, row {supplied.row_key}"
