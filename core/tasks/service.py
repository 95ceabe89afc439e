"""TaskService: where statuses become behaviour.

One call to ``run`` takes a task from ``open`` (or ``needs_revision``) to a resting status:
agent or team run, synthesis, validation, and automatic retries in the same session while the
validator rejects and attempts remain. Every status change goes through the state machine and
is written together with a ``task_status_changed`` event.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from core.agent import AgentLoop, RunOutcome, RunStep
from core.config import Settings
from core.domain import FeedbackAction, TaskEvidencePacket, TaskStatus, TeamRunResult, ValidationOutcome
from core.domain import event_payloads as payloads
from core.domain.event_codec import decode, decode_as, encode
from core.domain.facts import AttemptState, EventKind, FinishReason, RevisionRequester
from core.errors import ConfigurationError, DatabaseUnreachable, RefusedAction, VersionConflict
from core.events import RunProgress, TaskChange, TaskChanged
from core.evidence import session_messages, settled_transcript
from core.evidence.packet import attempt_packet, earlier_packets
from core.evidence.render import next_evidence_number
from core.llm.gateway import UsageRecord, counted_usage
from core.llm.structured import SchemaFailure, complete_structured
from core.profiles import ModelRole, roles_for_task
from core.runtime import RunContext
from core.store import AttemptRecord, TaskRecord, new_event, new_id
from core.store.reachability import is_connection_lost
from core.tasks.attempt_evidence import record_unpacked_evidence
from core.tasks.carried_files import carried_text, read_carried_source, store_carried
from core.tasks.dispatch import defer_if_workers
from core.tasks.node_checks import verify_team_nodes
from core.tasks.policy import (
    attempt_ending,
    decide,
    ensure_writable,
    interruption,
    revision_fallback,
    verdict_move,
)
from core.tasks.prompts import (
    AGENT_SYSTEM_PROMPT,
    analyst_revision_message,
    task_message,
    validator_revision_message,
)
from core.tasks.recovery import runner_id
from core.tasks.state_machine import Trigger, can, next_status
from core.tasks.validate_only import is_supplied, supply_answer
from core.team import TeamPlan, TeamScheduler, plan_with_model, team_plan_from_text
from core.team.packet import build_attempt_packet
from core.validation import ValidationService
from core.workspace import Workspace

log = logging.getLogger(__name__)

HEARTBEAT_S = 30.0
Fallback = tuple[Trigger, ValidationOutcome | None] | None


class RunAbandoned(RefusedAction):
    """The analyst abandoned the task (possibly from another process) while this run was going."""


def check_output_schema(schema: dict[str, Any]) -> None:
    """Refuse a schema that is not a JSON schema before a task is stored or a model is called."""
    from core.llm.structured import validate_schema

    validate_schema(schema)


@dataclass(frozen=True, slots=True)
class _AttemptWork:
    """What producing an attempt left for judging it."""

    attempt: AttemptRecord
    history: list[dict[str, Any]]  # the session as the attempt read it, before its runs
    outcome: RunOutcome
    packet: TaskEvidencePacket
    earlier: list[TaskEvidencePacket]
    final_output: str
    schema_ok: bool


class TaskService:
    def __init__(self, workspace: Workspace) -> None:
        self.ws = workspace
        self.store = workspace.store
        self._validation: ValidationService | None = None
        self._running: dict[str, asyncio.Task[TaskRecord]] = {}

    # Read through the workspace, never copied: settings the desk applies on Save (new model
    # profiles) reach the next call without a restart (``Workspace.apply_settings``).
    @property
    def settings(self) -> Settings:
        return self.ws.settings

    @property
    def ctx(self) -> RunContext:
        return self.ws.context

    @property
    def validation(self) -> ValidationService:
        if self._validation is None or self._validation.ctx is not self.ctx:
            self._validation = ValidationService(self.ctx)
        return self._validation

    # ------------------------------------------------------------------ creation
    async def create(
        self,
        text: str,
        *,
        team: str | None = None,
        output_schema: dict[str, Any] | None = None,
        title: str | None = None,
    ) -> TaskRecord:
        """Create a task (and its main session); a bad team file is refused before anything is stored.

        A team template file travels with the task: its text is stored in the workspace (owned by
        the task) and the task names it, so any worker, on any machine, runs the same team.
        """
        template: tuple[Path, str] | None = None
        if team is not None and team != "auto":
            path = Path(team)
            source = await read_carried_source(path, what="team template")
            plan = team_plan_from_text(source, path.name, source=path)
            plan.validate_against(self.ws.tools.names())
            template = (path, source)
        if not text.strip():
            raise ConfigurationError("a task needs some text")
        if output_schema is not None:
            check_output_schema(output_schema)
        await self.ws.gateway.check_ready(roles_for_task(self.settings, team))  # before anything is written
        task_id = new_id()
        if template is not None:  # stored first: the task never names content that is not there
            team = await store_carried(self.store, template[1], template[0], owner=task_id)
        task = await self.store.create_task(
            text, title=title, team_spec=team, output_schema=output_schema, task_id=task_id
        )
        self.ws.bus.publish(
            TaskChanged(task_id=task.id, change=TaskChange.CREATED, status=task.status, version=task.version)
        )
        return task

    # ------------------------------------------------------------------ running
    def start(self, task_id: str) -> asyncio.Task[TaskRecord]:
        """Run in the background (the desk); the handle is kept so abandon can cancel it."""
        if task_id in self._running and not self._running[task_id].done():
            return self._running[task_id]
        handle = asyncio.get_running_loop().create_task(
            self._run_tracked(task_id), name=f"task-{task_id[:8]}"
        )
        self._running[task_id] = handle
        return handle

    async def run(self, task_id: str) -> TaskRecord:
        """Run to a resting status in the foreground (the command line, tests)."""
        handle = self.start(task_id)
        return await handle

    def is_running_here(self, task_id: str) -> bool:
        handle = self._running.get(task_id)
        return handle is not None and not handle.done()

    async def cancel(self, task_id: str) -> bool:
        """Cancel an in-process run and wait for it to record its end; False if none was running."""
        handle = self._running.get(task_id)
        if handle is None or handle.done():
            return False
        handle.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):  # its end is already recorded
            await handle
        return True

    async def _run_tracked(self, task_id: str) -> TaskRecord:
        try:
            if await defer_if_workers(self.ws, task_id):  # a team workspace's workers run it
                return await self.store.get_task(task_id)
            return await self._run(task_id)
        finally:
            current = asyncio.current_task()
            if self._running.get(task_id) is current:
                del self._running[task_id]

    async def _run(self, task_id: str) -> TaskRecord:
        task = await self.store.get_task(task_id)
        ensure_writable(task)
        if not can(task.status, Trigger.START):
            raise RefusedAction(
                f"task {task.id[:8]} is '{task.status.value}'; only open or needs_revision tasks can run"
            )
        prompt, trigger_name = await self._next_prompt(task)
        validations = 0
        heartbeat = asyncio.get_running_loop().create_task(self._heartbeat(task.id))
        try:
            while True:
                task, retry_prompt = await self._attempt(task, prompt, trigger_name, validations)
                if retry_prompt is None:
                    return task
                validations += 1
                prompt, trigger_name = retry_prompt, "validator_revision"
        finally:
            heartbeat.cancel()

    async def _next_prompt(self, task: TaskRecord) -> tuple[str, str]:
        """The new user message of the next attempt, read back from the event that asked for it.

        Both kinds of revision request are stored in the same transaction as the status change
        (``analyst_feedback_recorded``; ``task_status_changed`` with ``next_prompt``), so a crash
        between the request and the retry never loses what was asked.
        """
        if task.status is TaskStatus.OPEN:
            return task_message(task.text, task.output_schema), "initial"
        events = await self.store.get_task_events(
            task.id, kinds=[EventKind.ANALYST_FEEDBACK_RECORDED, EventKind.TASK_STATUS_CHANGED]
        )
        for event in reversed(events):
            p = decode(event)
            if isinstance(p, payloads.AnalystDecision) and p.action == FeedbackAction.REVISE:
                return analyst_revision_message(p.prompt or ""), "analyst_revision"
            if isinstance(p, payloads.StatusChange) and p.next_prompt:
                return p.next_prompt, "validator_revision"
        return validator_revision_message("", []), "validator_revision"

    async def _attempt(
        self, task: TaskRecord, prompt: str, trigger_name: str, validations_before: int
    ) -> tuple[TaskRecord, str | None]:
        """One attempt: run, validate, move. Returns the task and, for a retry, the next prompt."""
        assert task.main_session_id is not None
        index = task.attempt_count + 1
        fallback = await self._fallback(task)
        # Claim the task first (compare-and-set on its version): a second runner is refused here,
        # before it writes anything.
        task = await self._move(
            task,
            Trigger.START,
            attempt_index=index,
            attempt_count=index,
            runner=runner_id(),
            heartbeat_at=datetime.now(UTC),
            revision_requested_by=None,
            validation_outcome=None,
        )
        attempt: AttemptRecord | None = None
        try:
            attempt = await self.store.create_attempt(task.id, index, trigger=trigger_name, prompt=prompt)
            return await self._attempt_body(task, attempt, prompt, validations_before, fallback)
        except asyncio.CancelledError:
            await asyncio.shield(self._cancel_attempt(attempt))
            raise
        except RunAbandoned:
            await self._cancel_attempt(attempt)
            raise
        except Exception as exc:
            if is_connection_lost(exc):
                # Nowhere to record a failure, and nothing failed: the task stays running under this
                # runner until a worker's retried job resumes it (or crash recovery, once we exit).
                log.warning("task %s: the database went away mid-run; the task will be resumed", task.id[:12])
                raise DatabaseUnreachable(str(exc)) from exc
            await self._fail_run(task.id, attempt, exc, fallback)
            raise

    async def _fallback(self, task: TaskRecord) -> Fallback:
        """Where this attempt goes if it ends with no answer: back to review when the task holds one."""
        if task.status is not TaskStatus.NEEDS_REVISION:
            return None
        origin = TaskStatus.NEEDS_REVIEW  # a validator's retry: the rejected answer awaits review
        if task.revision_requested_by == RevisionRequester.ANALYST:
            asked = await self.store.get_task_events(task.id, kinds=[EventKind.ANALYST_FEEDBACK_RECORDED])
            origin = (
                (decode_as(asked[-1], payloads.AnalystDecision).from_status or origin) if asked else origin
            )
        return revision_fallback(origin, await self.store.list_attempts(task.id, resolve=False))

    async def _cancel_attempt(self, attempt: AttemptRecord | None) -> None:
        """Cancelled here (abandon, shutdown): the attempt records it; whoever cancelled moves the task
        (abandon does, in the same transaction; after a shutdown, recovery does)."""
        if attempt is None:
            return
        latest = await self.store.get_attempt(attempt.id, resolve=False)
        if latest.state is AttemptState.RUNNING:
            await record_unpacked_evidence(self.store, [(latest.task_id, latest)])
            await self.store.update_attempt(
                latest.id, **attempt_ending(latest, AttemptState.CANCELLED, latest.validation_outcome)
            )

    async def _fail_run(
        self, task_id: str, attempt: AttemptRecord | None, exc: Exception, fallback: Fallback = None
    ) -> None:
        """An unexpected error must not leave the task looking busy: move it on, say why, keep evidence."""
        log.error("task %s: run failed: %s", task_id, exc, exc_info=exc)
        try:
            task = await self.store.get_task(task_id)
            latest = await self.store.get_attempt(attempt.id, resolve=False) if attempt is not None else None
            if latest is not None:  # what its runs recorded stays its evidence for later attempts
                await record_unpacked_evidence(self.store, [(task_id, latest)])
            if not task.status.is_execution_active:  # the task already moved on; its attempt may not have
                if latest is not None and latest.state is AttemptState.RUNNING:
                    ending = attempt_ending(latest, AttemptState.FAILED, latest.validation_outcome)
                    await self.store.update_attempt(latest.id, **ending)
                return
            trigger, outcome = interruption(latest)
            if trigger is Trigger.INTERRUPTED_UNUSABLE and fallback is not None:
                trigger, outcome = fallback
            await self._move(
                task,
                trigger,
                reason=f"the run stopped on an error: {type(exc).__name__}: {exc}",
                ending=(latest, AttemptState.FAILED) if latest is not None else None,
                runner=None,
                validation_outcome=outcome,
            )
        except Exception:  # the original error is what the caller must see
            log.exception("task %s: could not record the failed run", task_id)

    async def _attempt_body(
        self,
        task: TaskRecord,
        attempt: AttemptRecord,
        prompt: str,
        validations_before: int,
        fallback: Fallback = None,
    ) -> tuple[TaskRecord, str | None]:
        """Produce the attempt's answer and packet, then judge it or say it has none."""
        assert task.main_session_id is not None
        self._publish_progress(task.id, attempt=attempt.index, phase="starting", iteration=0)
        with contextlib.ExitStack() as shared:  # the answer, held for the reads of the whole attempt
            work = await self._produce(task, attempt, prompt, shared)
            if work.final_output.strip():
                task = await self._move(task, Trigger.ANSWER_READY)
                return await self._judge(task, work, validations_before)
        trigger, kept = fallback or (Trigger.NO_USABLE_ANSWER, None)
        back = "; the earlier answer is back for review" if fallback else ""
        task = await self._move(
            task,
            trigger,
            reason=f"attempt {attempt.index} produced no usable answer ({work.outcome.finish_reason}){back}",
            ending=(work.attempt, AttemptState.FINISHED),
            runner=None,
            validation_outcome=kept,
        )
        return task, None

    async def _produce(
        self, task: TaskRecord, attempt: AttemptRecord, prompt: str, shared: contextlib.ExitStack
    ) -> _AttemptWork:
        """Run the agent (or team), check the answer's schema, and record the attempt's packet.

        The answer is held in the store's shared texts (``shared`` ends the hold) from here to the
        verdict: the packet, the attempt's record and the validator read the answer's content back,
        and each read returns this one string rather than a copy."""
        assert task.main_session_id is not None
        session_id, index = task.main_session_id, attempt.index
        # Read once per attempt: the session so far (the agent continues it), and the earlier
        # attempts' packets (evidence accumulates over the task: an answer may rest on what an
        # earlier attempt found), which the synthesis, this packet and the validator all number by.
        history = await session_messages(self.store, session_id)
        earlier = await earlier_packets(self.store, task.id, index)
        new_messages: list[dict[str, Any]] = []
        if not history:
            new_messages.append({"role": "system", "content": AGENT_SYSTEM_PROMPT})
        new_messages.append({"role": "user", "content": prompt})
        outcome, teams, warnings = await self._execute(
            task, attempt.id, index, session_id, history, new_messages, earlier
        )
        final_output = outcome.output_text if outcome.usable else ""
        with self.ws.gateway.counting() as calls:
            schema_ok, final_output = await self._check_output_schema(task, session_id, outcome, final_output)
        await self._record_calls(task.id, session_id, attempt.id, "output-schema", ModelRole.AGENT, calls)
        shared.enter_context(self.store.sharing(final_output))
        if outcome.output_text != final_output:  # repaired: the run's events hold the model's text
            shared.enter_context(self.store.sharing(outcome.output_text))
        where: dict[str, Any] = {
            "task_id": task.id,
            "attempt_index": index,
            "main_session_id": session_id,
            "main_run_id": outcome.run_id,
            "final_output": final_output,
            "earlier": earlier,
        }
        # A single agent's packet is its run alone; a team's adds its nodes and their disagreements.
        if teams:
            packet = await build_attempt_packet(self.store, teams=teams, **where)
        else:
            packet = await attempt_packet(self.store, **where)
        if packet.main_run is not None and warnings:
            packet.main_run.warnings.extend(warnings)
        attempt = await self.store.update_attempt(
            attempt.id,
            finish_reason=outcome.finish_reason,
            final_output=final_output or None,
            packet=packet.model_dump(mode="json"),
        )
        return _AttemptWork(attempt, history, outcome, packet, earlier, final_output, schema_ok)

    async def _judge(
        self, task: TaskRecord, work: _AttemptWork, validations_before: int
    ) -> tuple[TaskRecord, str | None]:
        """Validate the answer, and move the task as the verdict decides (a retry keeps the runner)."""
        assert task.main_session_id is not None
        outcome, attempt = work.outcome, work.attempt
        self._publish_progress(task.id, attempt=attempt.index, phase="validating", iteration=0)
        # The conversation as a replay of the log would give it: the session as this attempt read
        # it, then what the run recorded (a team's synthesis is handed the system prompt as history
        # without recording it). Reading the session back would load every tool text again only to
        # point at it.
        recorded = [*work.history, *outcome.messages[outcome.history_len :]]
        repaired = work.final_output if work.final_output != outcome.output_text else None
        truncated = outcome.finish_reason is FinishReason.TRUNCATED
        # How the answer was cut (the output limit, or a stream the server ended early).
        truncated_reason = (outcome.error or "the answer was cut off") if truncated else None
        report = await self.validation.validate(
            work.packet,
            earlier=work.earlier,
            task_text=task.text,
            history=settled_transcript(recorded, repaired),
            task_id=task.id,
            attempt_id=attempt.id,
            attempt_index=attempt.index,
            session_id=task.main_session_id,
            agent_model=self.settings.agent_model,
            pending_tool_calls=outcome.pending_tool_calls,
            truncated=truncated_reason,
        )
        decision = decide(
            status=report.result.status,
            skipped=report.skipped,
            validations_done=validations_before + 1,
            max_validations=1 if is_supplied(outcome) else self.settings.max_validation_attempts,
            schema_ok=work.schema_ok,
            truncated=truncated,
            truncated_reason=truncated_reason,
        )
        move = verdict_move(report.result, report.skipped, decision)
        task = await self._move(
            task,
            decision.trigger,
            reason=decision.reason,
            next_prompt=move.next_prompt,
            ending=(attempt, AttemptState.FINISHED),
            attempt_facts=move.attempt_facts,
            **move.task_fields,
        )
        return task, move.next_prompt

    async def _execute(
        self,
        task: TaskRecord,
        attempt_id: str,
        index: int,
        session_id: str,
        history: list[dict[str, Any]],
        new_messages: list[dict[str, Any]],
        earlier: list[TaskEvidencePacket],
    ) -> tuple[RunOutcome, list[TeamRunResult], list[str]]:
        """Single agent, or team + no-tools synthesis. Returns the main outcome and team results."""
        if supplied := await supply_answer(self.ws, task.id, attempt_id, session_id, history, new_messages):
            return supplied, [], []  # a validate-only row: its answer is recorded, no agent runs
        with self.ws.gateway.counting() as calls:
            plan, warnings = await self._plan_for(task, session_id)
        await self._record_calls(task.id, session_id, attempt_id, "planner", ModelRole.PLANNER, calls)
        on_progress = self._progress_callback(task.id, index)
        if plan is None:
            loop = AgentLoop(self.ctx, on_progress=on_progress)
            outcome = await loop.run(
                session_id=session_id,
                history=history,
                new_messages=new_messages,
                model=self.settings.agent_model,
                task_id=task.id,
                attempt_id=attempt_id,
            )
            return outcome, [], warnings
        scheduler = TeamScheduler(self.ctx, on_progress=on_progress)
        # Nodes start without the session's history, so they always get the task itself; on a
        # retry the revision request is added to it, never substituted for it.
        prompt_text = task_message(task.text, task.output_schema)
        if index > 1:
            prompt_text += f"\n\nThis is attempt {index}. {new_messages[-1]['content']}"
        team = await scheduler.run(
            plan, task_text=prompt_text, task_id=task.id, attempt_id=attempt_id, parent_session_id=session_id
        )
        if self.settings.verify_team_nodes:  # each node judged on its own evidence before the synthesis
            self._publish_progress(task.id, attempt=index, phase="verifying nodes", iteration=0)
            team = await verify_team_nodes(
                self.validation,
                scheduler,
                plan,
                team,
                task_text=prompt_text,
                task_id=task.id,
                attempt_id=attempt_id,
                attempt_index=index,
                agent_model=self.settings.agent_model,
                max_parallel=self.settings.max_parallel_team_nodes,
            )
        history_with_system = [*history, *new_messages[:-1]]
        outcome = await scheduler.synthesize(
            plan=plan,
            team=team,
            task_text=prompt_text,
            session_id=session_id,
            history=history_with_system,
            task_id=task.id,
            attempt_id=attempt_id,
            attempt_index=index,
            evidence_id_start=next_evidence_number(
                earlier
            ),  # only a synthesis numbers items before its packet
        )
        return outcome, [team], warnings + team.warnings

    async def _record_calls(
        self,
        task_id: str,
        session_id: str,
        attempt_id: str,
        purpose: str,
        role: ModelRole,
        calls: list[UsageRecord],
    ) -> None:
        """The answered calls of a step outside any run or validation, so the totals count them."""
        answered = [c for c in calls if c.ok]
        if not answered:
            return
        payload = payloads.ModelCallsRecord(
            purpose=purpose,
            role=role.value,
            model=answered[0].model,
            attempt_id=attempt_id,
            calls=len(answered),
            usage=payloads.TokenUsage.model_validate(counted_usage(answered).model_dump()),
        )
        await self.store.append_event(session_id, *encode(payload), task_id=task_id)

    async def _plan_for(self, task: TaskRecord, session_id: str) -> tuple[TeamPlan | None, list[str]]:
        if task.team_spec is None:
            return None, []
        if task.team_spec != "auto":
            source, name = await carried_text(self.store, task.team_spec, what="team template")
            fixed = team_plan_from_text(source, name)
            fixed.validate_against(self.ws.tools.names())
            return fixed, []

        async def record(failure: SchemaFailure) -> None:
            await self.store.append_event(
                session_id,
                *encode(payloads.SchemaCheckFailure(**failure.model_dump(), purpose="planner")),
                task_id=task.id,
            )

        plan, warnings = await plan_with_model(
            self.ws.gateway,
            self.settings,
            task_text=task.text,
            tool_names=self.ws.tools.names(),
            on_failure=record,
        )
        if plan is None:
            await self.store.append_event(
                session_id, *encode(payloads.TeamPlanFallback(warnings=warnings)), task_id=task.id
            )
        return plan, warnings

    async def _check_output_schema(
        self, task: TaskRecord, session_id: str, outcome: RunOutcome, final_output: str
    ) -> tuple[bool, str]:
        """Terminal-turn schema check through the one structured-output loop (seed 003).

        The agent's answer is attempt 1 of that loop (no call), so ``max_schema_retries=0`` means
        it is checked and never re-asked, events number the attempts 1, 2, 3, and two identical
        errors stop it. Re-asks live only in the request; when a repaired answer is accepted, the
        ``output_schema_repaired`` event makes it the session's answer (the transcript replays it
        in place of the rejected text), so a later attempt continues from the accepted exchange.
        Tier 3 (nothing acceptable) keeps the agent's own answer, marked as not matching.
        """
        schema = task.output_schema
        if schema is None or not final_output.strip():
            return True, final_output

        async def record(failure: SchemaFailure) -> None:
            await self.store.append_event(
                session_id,
                *encode(payloads.SchemaCheckFailure(**failure.model_dump(), purpose="final-answer")),
                task_id=task.id,
            )

        # The answer is the transcript's last message; it is passed as the reply to check, not
        # as context, so a re-ask echoes it exactly once.
        request = list(outcome.messages)
        if request and request[-1].get("role") == "assistant" and request[-1].get("content") == final_output:
            request.pop()
        checked = await complete_structured(
            self.ws.gateway,
            model=self.settings.agent_model,
            messages=request,
            output=schema,
            max_retries=0 if is_supplied(outcome) else self.settings.max_schema_retries,
            fallback_model=self.settings.schema_fallback_model,
            stuck_after=self.settings.schema_stuck_after,
            on_failure=record,
            first_reply=final_output,
            role=ModelRole.AGENT,  # the agent's own answer, re-asked on the agent's profile
            fallback_role=ModelRole.SCHEMA_FALLBACK,
        )
        if checked.ok and not checked.failures:
            return True, final_output
        if checked.ok:
            await self.store.append_event(
                session_id,
                *encode(
                    payloads.SchemaRepair(
                        retries=checked.retries,
                        attempts=checked.attempts,
                        tier=checked.tier,
                        model=checked.model_used,
                        output_text=checked.raw,
                    )
                ),
                task_id=task.id,
            )
            return True, checked.raw
        await self.store.append_event(
            session_id,
            *encode(
                payloads.SchemaUnsatisfied(
                    status=checked.status, error=checked.error, attempts=checked.attempts, tier=3
                )
            ),
            task_id=task.id,
        )
        return False, final_output

    # ------------------------------------------------------------------ helpers
    async def _move(
        self,
        task: TaskRecord,
        trigger: Trigger,
        reason: str = "",
        next_prompt: str | None = None,
        *,
        ending: tuple[AttemptRecord, AttemptState] | None = None,
        attempt_facts: dict[str, Any] | None = None,
        **fields: Any,
    ) -> TaskRecord:
        """Transition through the table; the event explaining it is written in the same transaction.

        A move that ends an attempt (``ending``) writes the attempt's state and outcome (the task's
        new ``validation_outcome``) in that transaction too, so no reader ever sees one without the
        other.
        """
        target = next_status(task.status, trigger)
        attempt_index = fields.pop("attempt_index", task.attempt_count)
        assert task.main_session_id is not None
        event = new_event(
            payloads.StatusChange(
                from_status=task.status,
                to_status=target,
                trigger=trigger.value,
                attempt_index=attempt_index,
                reason=reason,
                validation_outcome=fields.get("validation_outcome", task.validation_outcome),
                next_prompt=next_prompt,
            )
        )
        attempt_end: tuple[str, dict[str, Any]] | None = None
        if ending is not None:
            attempt, state = ending
            outcome = fields.get("validation_outcome", task.validation_outcome)
            attempt_end = (attempt.id, attempt_ending(attempt, state, outcome, **(attempt_facts or {})))
        try:
            updated = await self.store.update_task(
                task.id,
                expected_version=task.version,
                event=(task.main_session_id, event),
                ending=attempt_end,
                status=target,
                **fields,
            )
        except VersionConflict:
            current = await self.store.get_task(task.id)
            if current.status is TaskStatus.ABANDONED:
                raise RunAbandoned(
                    f"task {task.id[:8]} was abandoned while it ran; its evidence is kept"
                ) from None
            raise
        self.ws.bus.publish(
            TaskChanged(task_id=task.id, change=TaskChange.STATUS, status=target, version=updated.version)
        )
        return updated

    async def _heartbeat(self, task_id: str) -> None:
        while True:
            await asyncio.sleep(HEARTBEAT_S)
            try:
                await self.store.touch_heartbeat(task_id)
            except Exception:  # a missed heartbeat only delays crash detection
                log.warning("heartbeat for task %s failed", task_id, exc_info=True)

    def _progress_callback(self, task_id: str, attempt: int) -> Callable[[RunStep], None]:
        started = datetime.now(UTC)

        def on_progress(p: RunStep) -> None:
            self._publish_progress(
                task_id,
                attempt=attempt,
                phase=p.phase,
                iteration=p.iteration,
                tool=p.current_tool,
                node=p.node_id,
                started_at=started,
            )

        return on_progress

    def _publish_progress(self, task_id: str, **data: Any) -> None:
        self.ws.bus.publish(RunProgress(task_id=task_id, **data))


__all__ = ["RunAbandoned", "TaskService", "check_output_schema"]
