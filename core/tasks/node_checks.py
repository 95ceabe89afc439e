"""Team nodes judged one by one before the synthesis reads them (``verify_team_nodes``, seed 004).

Seed 004 routes sub-agent responses through the verifier. Here each succeeded node's output is
judged by the validator against that node's own evidence (its run's tool results), through the
validator's public entry point (``ValidationService.validate`` with ``node_id``), so the cheap
pre-checks run first (an empty output, one that only announces more work), the validation policy
applies, and every failure is fail-open: a ``validator_error`` verdict, never a blocked team.

A ``rejected`` node is run again once, in its own session, with the verdict's feedback, inside the
team's limits (its tool budget, the parallel limit), and the retry is judged in its turn. Every
verdict stays on the node (``NodeRunResult.verdicts``), so the synthesis, the attempt's packet, the
final validator and the desk's evidence tree all read them; each is also a
``task_validation_snapshotted`` event in the node's session (with its cost), never a validation row.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from core.agent.unfinished import announces_more_work
from core.domain.event_codec import encode
from core.domain.event_payloads import ModelCallsRecord, TokenUsage
from core.domain.evidence import NodeRunResult, NodeVerdict, TaskEvidencePacket, TeamRunResult
from core.domain.facts import NodeStatus
from core.domain.status import ValidationStatus
from core.evidence import session_messages
from core.evidence.wrapping import neutralise
from core.profiles import ModelRole
from core.team import TeamPlan, TeamScheduler
from core.validation import ValidationService

__all__ = ["NODE_RETRY_TEMPLATE", "verify_team_nodes"]

log = logging.getLogger(__name__)

NODE_RETRY_TEMPLATE = """\
A verifier checked your output against the evidence you gathered and rejected it{category}.
Issues it found:
{issues}
{advice}Do your part again: correct these points from the evidence (search again if you need to), \
and answer with what the evidence supports, saying plainly what you could not confirm."""


async def verify_team_nodes(
    validation: ValidationService,
    scheduler: TeamScheduler,
    plan: TeamPlan,
    team: TeamRunResult,
    *,
    task_text: str,
    task_id: str,
    attempt_id: str,
    attempt_index: int,
    agent_model: str,
    max_parallel: int,
) -> TeamRunResult:
    """The team with each succeeded node judged (and a rejected one retried once), in graph order."""
    semaphore = asyncio.Semaphore(max_parallel)
    judge = _NodeJudge(validation, plan, task_text, task_id, attempt_id, attempt_index, agent_model)

    async def one(result: NodeRunResult) -> NodeRunResult:
        if result.status is not NodeStatus.SUCCEEDED or result.evidence is None:
            return result  # failed, cancelled or budget-ended: the synthesis already reads it as such
        async with semaphore:
            first = await judge.verdict(result)
        if first.status != ValidationStatus.REJECTED:
            return result.model_copy(update={"verdicts": [first]})
        first.retried = True
        rejected = result.model_copy(update={"verdicts": [first]})
        retried = await scheduler.retry_node(
            plan,
            rejected,
            feedback=retry_message(first),
            task_id=task_id,
            attempt_id=attempt_id,
            semaphore=semaphore,
        )
        if retried is rejected or retried.status is not NodeStatus.SUCCEEDED or retried.evidence is None:
            return retried
        async with semaphore:
            second = await judge.verdict(retried)
        return retried.model_copy(update={"verdicts": [first, second]})

    results = await asyncio.gather(*(one(r) for r in team.node_results))
    still = [r for r in results if r.verdicts and r.verdicts[-1].status == ValidationStatus.REJECTED]
    warnings = [
        f"team node '{r.node_id}' was rejected by node verification"
        + (" after its retry" if len(r.verdicts) > 1 else "")
        for r in still
    ]
    return team.model_copy(update={"node_results": list(results), "warnings": [*team.warnings, *warnings]})


def retry_message(verdict: NodeVerdict) -> str:
    """The node's next user message: the verdict's issues and advice (judge text, so neutralised)."""
    category = f" ({verdict.category})" if verdict.category and verdict.category != "none" else ""
    issues = "\n".join(f"- {neutralise(i)}" for i in verdict.issues) or "- (no issue was named)"
    advice = f"{neutralise(verdict.advice)}\n" if verdict.advice else ""
    return NODE_RETRY_TEMPLATE.format(category=category, issues=issues, advice=advice)


class _NodeJudge:
    """One node output against that node's evidence, through the validator's public entry point."""

    def __init__(
        self,
        validation: ValidationService,
        plan: TeamPlan,
        task_text: str,
        task_id: str,
        attempt_id: str,
        attempt_index: int,
        agent_model: str,
    ) -> None:
        self.validation = validation
        self.plan = plan
        self.task_text = task_text
        self.task_id = task_id
        self.attempt_id = attempt_id
        self.attempt_index = attempt_index
        self.agent_model = agent_model

    async def _record_calls(self, session_id: str, debug: dict[str, Any]) -> None:
        """A node's verdict writes no validation row, which is where a verdict's calls are counted:
        they are recorded beside the planner's, so the attempt's and the task's totals hold them."""
        calls = debug.get("llm_calls")
        if not isinstance(calls, int) or calls < 1:
            return
        record = ModelCallsRecord(
            purpose="node-verdict",
            role=ModelRole.VALIDATOR.value,
            model=debug.get("validator_model"),
            attempt_id=self.attempt_id,
            calls=calls,
            usage=TokenUsage.model_validate(debug.get("usage") or {}),
        )
        await self.validation.store.append_event(session_id, *encode(record), task_id=self.task_id)

    async def verdict(self, result: NodeRunResult) -> NodeVerdict:
        run = result.evidence
        assert run is not None
        node = self.plan.node(result.node_id)
        # The node's own evidence only, numbered from E1: its verdict is about what it found. A
        # retry is judged with what its rejected run found too: the retry may rest on it.
        packet = TaskEvidencePacket(
            task_id=self.task_id,
            attempt_index=self.attempt_index,
            main_run=run,
            team_runs=list(result.rejected_runs),
            final_output=result.output_text,
        )
        text = (
            f"Team node '{node.id}' ({node.role.strip()}) of a team working on one task.\n"
            f"The node's part:\n{node.task.strip()}\n\nThe team's task:\n{self.task_text.strip()}"
        )
        try:
            report = await self.validation.validate(
                packet,
                task_text=text,
                history=await session_messages(self.validation.store, run.session_id),
                task_id=self.task_id,
                attempt_id=self.attempt_id,
                attempt_index=self.attempt_index,
                session_id=run.session_id,
                agent_model=self.agent_model,
                pending_tool_calls=announces_more_work(result.output_text),
                node_id=node.id,
            )
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # fail-open: a broken judge never holds the team back
            log.warning("team node %s: verification failed", node.id, exc_info=True)
            return NodeVerdict(
                run_id=run.run_id,
                status=ValidationStatus.VALIDATOR_ERROR.value,
                issues=[f"node verification failed: {type(exc).__name__}: {exc}"],
                strategy="error",
            )
        await self._record_calls(run.session_id, report.debug)
        r = report.result
        return NodeVerdict(
            run_id=run.run_id,
            status="skipped" if report.skipped else r.status.value,
            score=None if report.skipped else r.score,
            category=r.category.value,
            issues=list(r.issues),
            advice=r.recommended_revision_prompt,
            strategy=str(report.debug.get("strategy") or ""),
        )
