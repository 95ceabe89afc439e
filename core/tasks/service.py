"""TaskService: where statuses become behaviour.

One call to ``run`` takes a task from ``open`` (or ``needs_revision``) to a resting status:
agent or team run, synthesis, validation, and automatic retries in the same session while the
validator rejects and attempts remain. Every status change goes through the state machine and
is written together with a ``task_status_changed`` event.
"""

from __future__ import annotations

import asyncio
import contextlib
import getpass
import logging
import os
import socket
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from core.agent import AgentLoop, RunOutcome, RunProgress
from core.domain import (
    FeedbackAction,
    TaskStatus,
    TeamRunResult,
    ValidationOutcome,
    ValidationStatus,
)
from core.errors import ConfigurationError, RefusedAction, VersionConflict
from core.events import RunProgress as RunProgressNotice
from core.events import TaskChange, TaskChanged, TasksChanged
from core.evidence import session_messages
from core.llm.structured import SchemaFailure, check_structured, complete_structured, default_feedback
from core.store import AttemptRecord, NewEvent, TaskRecord
from core.tasks.prompts import (
    AGENT_SYSTEM_PROMPT,
    analyst_revision_message,
    task_message,
    validator_revision_message,
)
from core.tasks.state_machine import Trigger, can, next_status
from core.team import TeamPlan, TeamScheduler, load_team_plan, plan_with_model
from core.team.packet import build_attempt_packet
from core.validation import ValidationService
from core.workspace import Workspace

log = logging.getLogger(__name__)

HEARTBEAT_S = 30.0
STALE_AFTER = timedelta(minutes=10)


class RunAbandoned(RefusedAction):
    """The analyst abandoned the task (possibly from another process) while this run was going."""


def check_output_schema(schema: dict[str, Any]) -> None:
    """Refuse a schema that is not a JSON schema before a task is stored or a model is called."""
    from core.llm.structured import validate_schema

    validate_schema(schema)


class Decision(BaseModel):
    trigger: Trigger
    outcome: ValidationOutcome | None
    retry: bool = False
    reason: str


def decide(
    *,
    status: ValidationStatus,
    skipped: bool,
    validations_done: int,
    max_validations: int,
    schema_ok: bool = True,
) -> Decision:
    """The verdict-to-status rule in one pure function (pinned by tests, read by the docs)."""
    if skipped:
        return Decision(
            trigger=Trigger.VALIDATION_SKIPPED,
            outcome=ValidationOutcome.FORCE_ACCEPTED,
            reason="delivered without validation (policy)",
        )
    if status is ValidationStatus.ACCEPTED:
        if not schema_ok:
            return Decision(
                trigger=Trigger.VERDICT_UNCONFIRMED,
                outcome=ValidationOutcome.FORCE_ACCEPTED,
                reason="accepted by the validator but the answer does not match the declared output schema",
            )
        return Decision(
            trigger=Trigger.VERDICT_ACCEPTED,
            outcome=ValidationOutcome.ACCEPTED,
            reason="the validator accepted",
        )
    if status is ValidationStatus.REJECTED and validations_done < max_validations:
        return Decision(
            trigger=Trigger.VERDICT_REJECTED_RETRY,
            outcome=None,
            retry=True,
            reason=f"rejected; automatic retry {validations_done + 1} of {max_validations}",
        )
    reasons = {
        ValidationStatus.REJECTED: "rejected on the last attempt; delivered for review",
        ValidationStatus.INSUFFICIENT_EVIDENCE: "the validator could not confirm the answer from the evidence",
        ValidationStatus.VALIDATOR_ERROR: "the validator failed to reach a reliable decision",
    }
    return Decision(
        trigger=Trigger.VERDICT_UNCONFIRMED, outcome=ValidationOutcome.FORCE_ACCEPTED, reason=reasons[status]
    )


def interruption(attempt: AttemptRecord | None) -> tuple[Trigger, ValidationOutcome | None]:
    """Where a run that stopped unexpectedly goes: review if it left an answer (delivered without
    endorsement), failed if not. Crash recovery and in-process failures share this rule."""
    if attempt is not None and (attempt.final_output or "").strip():
        return Trigger.INTERRUPTED_USABLE, ValidationOutcome.FORCE_ACCEPTED
    return Trigger.INTERRUPTED_UNUSABLE, None


def runner_id() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


def reviewer_name(configured: str | None) -> str:
    if configured:
        return configured
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return "analyst"


class TaskService:
    def __init__(self, workspace: Workspace) -> None:
        self.ws = workspace
        self.store = workspace.store
        self.settings = workspace.settings
        self.ctx = workspace.context
        self.validation = ValidationService(self.ctx)
        self._running: dict[str, asyncio.Task[TaskRecord]] = {}

    # ------------------------------------------------------------------ creation
    async def create(
        self,
        text: str,
        *,
        team: str | None = None,
        output_schema: dict[str, Any] | None = None,
        title: str | None = None,
    ) -> TaskRecord:
        """Create a task (and its main session); a bad team file is refused before anything is stored."""
        if team is not None and team != "auto":
            plan = await asyncio.to_thread(load_team_plan, Path(team))
            plan.validate_against(self.ws.tools.names())
            team = await asyncio.to_thread(os.path.abspath, team)
        if not text.strip():
            raise ConfigurationError("a task needs some text")
        if output_schema is not None:
            check_output_schema(output_schema)
        task = await self.store.create_task(text, title=title, team_spec=team, output_schema=output_schema)
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
            return await self._run(task_id)
        finally:
            current = asyncio.current_task()
            if self._running.get(task_id) is current:
                del self._running[task_id]

    async def _run(self, task_id: str) -> TaskRecord:
        task = await self.store.get_task(task_id)
        if task.read_only:
            raise RefusedAction(f"task {task.id[:8]} was imported read-only from a case bundle")
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
            task.id, kinds=["analyst_feedback_recorded", "task_status_changed"]
        )
        for event in reversed(events):
            p = event.payload
            if event.kind == "analyst_feedback_recorded" and p.get("action") == FeedbackAction.REVISE.value:
                return analyst_revision_message(str(p.get("prompt") or "")), "analyst_revision"
            if event.kind == "task_status_changed" and p.get("next_prompt"):
                return str(p["next_prompt"]), "validator_revision"
        return validator_revision_message("", []), "validator_revision"

    async def _attempt(
        self, task: TaskRecord, prompt: str, trigger_name: str, validations_before: int
    ) -> tuple[TaskRecord, str | None]:
        """One attempt: run, validate, move. Returns the task and, for a retry, the next prompt."""
        assert task.main_session_id is not None
        index = task.attempt_count + 1
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
            return await self._attempt_body(task, attempt, prompt, validations_before)
        except asyncio.CancelledError:
            await asyncio.shield(self._end_attempt(attempt, "cancelled"))
            raise
        except RunAbandoned:
            await self._end_attempt(attempt, "cancelled")
            raise
        except Exception as exc:
            await self._fail_run(task.id, attempt, exc)
            raise

    async def _end_attempt(self, attempt: AttemptRecord | None, state: str) -> None:
        if attempt is None:
            return
        attempt_id = attempt.id
        if (await self.store.get_attempt(attempt_id)).state == "running":
            await self.store.update_attempt(attempt_id, state=state, finished_at=datetime.now(UTC))

    async def _fail_run(self, task_id: str, attempt: AttemptRecord | None, exc: Exception) -> None:
        """An unexpected error must not leave the task looking busy: move it on, say why, keep evidence."""
        log.error("task %s: run failed: %s", task_id, exc, exc_info=exc)
        try:
            await self._end_attempt(attempt, "failed")
            task = await self.store.get_task(task_id)
            if not task.status.is_execution_active:
                return
            latest = await self.store.get_attempt(attempt.id) if attempt is not None else None
            trigger, outcome = interruption(latest)
            await self._move(
                task,
                trigger,
                reason=f"the run stopped on an error: {type(exc).__name__}: {exc}",
                runner=None,
                validation_outcome=outcome,
            )
        except Exception:  # the original error is what the caller must see
            log.exception("task %s: could not record the failed run", task_id)

    async def _attempt_body(
        self, task: TaskRecord, attempt: AttemptRecord, prompt: str, validations_before: int
    ) -> tuple[TaskRecord, str | None]:
        assert task.main_session_id is not None
        session_id = task.main_session_id
        index = attempt.index
        self._publish_progress(task.id, attempt=index, phase="starting", iteration=0)
        history = await session_messages(self.store, session_id)
        new_messages: list[dict[str, Any]] = []
        if not history:
            new_messages.append({"role": "system", "content": AGENT_SYSTEM_PROMPT})
        new_messages.append({"role": "user", "content": prompt})
        outcome, teams, warnings = await self._execute(
            task, attempt.id, index, session_id, history, new_messages
        )
        final_output = outcome.output_text if outcome.usable else ""
        schema_ok, final_output = await self._check_output_schema(task, session_id, outcome, final_output)
        packet = await build_attempt_packet(
            self.store,
            task_id=task.id,
            attempt_index=index,
            main_session_id=session_id,
            main_run_id=outcome.run_id,
            teams=teams,
            final_output=final_output,
        )
        if packet.main_run is not None and warnings:
            packet.main_run.warnings.extend(warnings)
        await self.store.update_attempt(
            attempt.id,
            finish_reason=outcome.finish_reason,
            final_output=final_output or None,
            packet=packet.model_dump(mode="json"),
        )
        if not final_output.strip():
            await self.store.update_attempt(attempt.id, state="finished", finished_at=datetime.now(UTC))
            task = await self._move(
                task, Trigger.NO_USABLE_ANSWER, reason=f"no usable answer ({outcome.finish_reason})"
            )
            return task, None

        task = await self._move(task, Trigger.ANSWER_READY)
        self._publish_progress(task.id, attempt=index, phase="validating", iteration=0)
        history_for_validator = await session_messages(self.store, session_id)
        report = await self.validation.validate(
            packet,
            task_text=task.text,
            history=history_for_validator,
            task_id=task.id,
            attempt_id=attempt.id,
            attempt_index=index,
            session_id=session_id,
            agent_model=self.settings.agent_model,
            pending_tool_calls=outcome.pending_tool_calls,
        )
        result = report.result
        decision = decide(
            status=result.status,
            skipped=report.skipped,
            validations_done=validations_before + 1,
            max_validations=self.settings.max_validation_attempts,
            schema_ok=schema_ok,
        )
        await self.store.update_attempt(
            attempt.id,
            state="finished",
            finished_at=datetime.now(UTC),
            validation_status=None if report.skipped else result.status.value,
            validation_score=None if report.skipped else result.score,
            validation_outcome=decision.outcome,
        )
        fields: dict[str, Any] = {
            "latest_validation_status": None if report.skipped else result.status.value,
            "latest_score": None if report.skipped else result.score,
            "latest_category": None if report.skipped else result.category.value,
            "validation_outcome": decision.outcome,
        }
        next_prompt = None
        if decision.retry:
            fields["revision_requested_by"] = "validator"
            next_prompt = validator_revision_message(result.recommended_revision_prompt, result.issues)
        task = await self._move(
            task, decision.trigger, reason=decision.reason, next_prompt=next_prompt, **fields
        )
        if next_prompt is not None:
            return task, next_prompt
        await self.store.update_task(task.id, runner=None)
        return await self.store.get_task(task.id), None

    async def _execute(
        self,
        task: TaskRecord,
        attempt_id: str,
        index: int,
        session_id: str,
        history: list[dict[str, Any]],
        new_messages: list[dict[str, Any]],
    ) -> tuple[RunOutcome, list[TeamRunResult], list[str]]:
        """Single agent, or team + no-tools synthesis. Returns the main outcome and team results."""
        plan, warnings = await self._plan_for(task, session_id)
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
        )
        return outcome, [team], warnings + team.warnings

    async def _plan_for(self, task: TaskRecord, session_id: str) -> tuple[TeamPlan | None, list[str]]:
        if task.team_spec is None:
            return None, []
        if task.team_spec != "auto":
            fixed = await asyncio.to_thread(load_team_plan, Path(task.team_spec))
            fixed.validate_against(self.ws.tools.names())
            return fixed, []

        async def record(failure: SchemaFailure) -> None:
            await self.store.append_event(
                session_id,
                "output_schema_validation_failed",
                {**failure.model_dump(), "purpose": "planner"},
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
                session_id, "team_plan_fallback", {"warnings": warnings}, task_id=task.id
            )
        return plan, warnings

    async def _check_output_schema(
        self, task: TaskRecord, session_id: str, outcome: RunOutcome, final_output: str
    ) -> tuple[bool, str]:
        """Terminal-turn schema check: re-ask within the same turn, never touching the transcript."""
        schema = task.output_schema
        if schema is None or not final_output.strip():
            return True, final_output
        _, problem = check_structured(final_output, schema)
        if problem is None:
            return True, final_output
        stage, message = problem

        async def record(failure: SchemaFailure) -> None:
            await self.store.append_event(
                session_id,
                "output_schema_validation_failed",
                {**failure.model_dump(), "purpose": "final-answer"},
                task_id=task.id,
            )

        first = SchemaFailure(
            stage=stage,
            attempt=1,
            retries=0,
            message=message,
            raw_output=final_output,
            model=self.settings.agent_model,
        )
        await record(first)
        # The bad answer is already the transcript's last message; the feedback naming its error is
        # added to this request only, so the session transcript never sees the re-ask.
        request = [*outcome.messages, {"role": "user", "content": default_feedback(first)}]
        repaired = await complete_structured(
            self.ws.gateway,
            model=self.settings.agent_model,
            messages=request,
            output=schema,
            max_retries=max(self.settings.max_schema_retries - 1, 0),
            on_failure=record,
        )
        if repaired.ok:
            await self.store.append_event(
                session_id,
                "output_schema_repaired",
                {"retries": repaired.retries, "output_text": repaired.raw},
                task_id=task.id,
            )
            return True, repaired.raw
        await self.store.append_event(
            session_id,
            "output_schema_unsatisfied",
            {"status": repaired.status, "error": repaired.error},
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
        **fields: Any,
    ) -> TaskRecord:
        """Transition through the table; the event explaining it is written in the same transaction."""
        target = next_status(task.status, trigger)
        attempt_index = fields.pop("attempt_index", task.attempt_count)
        assert task.main_session_id is not None
        event = NewEvent(
            kind="task_status_changed",
            payload={
                "from": task.status.value,
                "to": target.value,
                "trigger": trigger.value,
                "attempt_index": attempt_index,
                "reason": reason,
                "validation_outcome": _value(fields.get("validation_outcome", task.validation_outcome)),
                **({"next_prompt": next_prompt} if next_prompt is not None else {}),
            },
        )
        try:
            updated = await self.store.update_task(
                task.id,
                expected_version=task.version,
                event=(task.main_session_id, event),
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

    def _progress_callback(self, task_id: str, attempt: int) -> Callable[[RunProgress], None]:
        started = datetime.now(UTC)

        def on_progress(p: RunProgress) -> None:
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
        self.ws.bus.publish(RunProgressNotice(task_id=task_id, **data))


def _value(v: Any) -> Any:
    return v.value if hasattr(v, "value") else v


async def recover_interrupted(workspace: Workspace) -> list[TaskRecord]:
    """Move tasks whose runner died while running or validating to needs_review or failed.

    A task is only taken over when its runner is provably gone: same host and the process no
    longer exists, or another host whose heartbeat is older than ``STALE_AFTER``. Evidence stays;
    an event says what happened.
    """
    store = workspace.store
    recovered: list[TaskRecord] = []
    for task in await store.list_tasks(statuses=[TaskStatus.RUNNING, TaskStatus.VALIDATING]):
        if task.read_only or not _runner_gone(task):
            continue  # imported evidence is never rewritten; live runners are left alone
        attempts = await store.list_attempts(task.id)
        last = attempts[-1] if attempts else None
        trigger, outcome = interruption(last)
        target = next_status(task.status, trigger)
        for run in await store.list_runs(task_id=task.id):
            if run.state == "running":
                await store.append_event(
                    run.session_id,
                    "run_interrupted",
                    {
                        "message": "the process running this run stopped before it finished",
                        "runner": task.runner,
                    },
                    run_id=run.id,
                    task_id=task.id,
                )
                await store.finish_run(run.id, finish_reason="interrupted", output_text="")
        if last is not None and last.state == "running":
            await store.update_attempt(last.id, state="interrupted", finished_at=datetime.now(UTC))
        session_id = task.main_session_id
        if session_id is None:  # a workspace written by hand or by an older tool
            session_id = (await store.create_session(task_id=task.id, kind="main", label="main")).id
        event = NewEvent(
            kind="task_interrupted",
            payload={
                "from": task.status.value,
                "to": target.value,
                "runner": task.runner,
                "attempt_index": last.index if last else 0,
                "message": "the process running this task stopped; recovered at start-up",
            },
        )
        try:
            updated = await store.update_task(
                task.id,
                expected_version=task.version,
                event=(session_id, event),
                status=target,
                runner=None,
                main_session_id=session_id,
                validation_outcome=outcome,
            )
        except VersionConflict:
            continue  # someone else recovered or resumed it meanwhile
        recovered.append(updated)
    if recovered:  # one notice for the whole batch: a desk refreshes once, not once per task
        workspace.bus.publish(TasksChanged(task_ids=tuple(t.id for t in recovered)))
    return recovered


def _runner_gone(task: TaskRecord) -> bool:
    if not task.runner:
        return True
    host, _, pid_text = task.runner.rpartition(":")
    if host == socket.gethostname():
        try:
            pid = int(pid_text)
        except ValueError:
            return True
        if pid == os.getpid():
            return False
        return not _pid_alive(pid)
    beat = task.heartbeat_at or task.updated_at
    return datetime.now(UTC) - beat > STALE_AFTER


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


__all__ = ["Decision", "TaskService", "decide", "recover_interrupted", "reviewer_name", "runner_id"]
