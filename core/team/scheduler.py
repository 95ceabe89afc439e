"""Running a team plan: bounded-parallel node runs, graph-ordered results, then synthesis.

Each node is its own ``AgentLoop`` with its own session, so nodes share the store and workspace
but never a transcript. Results are placed by the plan's graph order, not by who finished first,
so the evidence ids an analyst sees are the same on every replay of the same plan.

Failure policy: a node that fails, is cancelled or ends by budget never cancels its siblings, and
its evidence is kept. A DAG node whose dependencies failed still runs: it is told which upstream
nodes failed and why, and answers with what exists (the same rule synthesis follows). Only
cancelling the whole team run (the caller cancelling :meth:`TeamScheduler.run`) stops every node.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Callable, Sequence
from typing import Any

from core.agent.loop import AgentLoop
from core.agent.outcome import RunOutcome, RunStep
from core.domain.evidence import NodeRunResult, RunEvidence, TeamRunResult
from core.domain.facts import EventKind, FinishReason, NodeStatus
from core.evidence.builder import build_run_evidence, session_messages
from core.evidence.packet import earlier_packets
from core.evidence.render import next_evidence_number, render_run
from core.evidence.wrapping import EXTERNAL_CONTENT_WARNING, neutralise
from core.runtime import RunContext
from core.team.plan import TeamNode, TeamPlan
from core.team.synthesis import SYNTHESIS_INSTRUCTIONS, build_synthesis_message

__all__ = [
    "NODE_SYSTEM_TEMPLATE",
    "SYNTHESIS_INSTRUCTIONS",
    "TeamScheduler",
    "build_node_messages",
    "build_synthesis_message",
    "node_status",
]

log = logging.getLogger(__name__)

NODE_SYSTEM_TEMPLATE = """\
{role}

You are node '{node_id}' of a team working on one task. Do your part only; other nodes handle the \
rest and a final writer combines everyone's evidence. Answer with what you found, and say plainly \
what you could not confirm."""


def node_status(outcome: RunOutcome) -> NodeStatus:
    """Map a run's finish to a node status; a finalized budget run succeeded (its answer is usable)."""
    if outcome.finish_reason is FinishReason.CANCELLED:
        return NodeStatus.CANCELLED
    if outcome.finish_reason is FinishReason.MAX_TOOL_ITERATIONS_UNFINALIZED:
        return NodeStatus.BUDGET_EXHAUSTED
    return NodeStatus.SUCCEEDED if outcome.usable else NodeStatus.FAILED


def _upstream_section(result: NodeRunResult) -> str:
    facts = [f"status: {result.status}"]
    if result.finish_reason:
        facts.append(f"finish_reason: {result.finish_reason}")
    if result.error:
        facts.append(f"error: {json.dumps(neutralise(result.error), ensure_ascii=False)}")
    header = neutralise(f"--- Upstream node '{result.node_id}' ({', '.join(facts)}) ---").replace("\n", " ")
    if result.evidence is None:
        return f"{header}\n(no run evidence was recorded for this node)"
    body = render_run(result.evidence, node_id=result.node_id, include_warning=False).text
    return f"{header}\n{body}"


def build_node_messages(
    node: TeamNode, *, task_text: str, upstream: Sequence[NodeRunResult]
) -> list[dict[str, Any]]:
    """The node's opening messages: role as system, then its task, the overall task and upstream evidence."""
    system = NODE_SYSTEM_TEMPLATE.format(role=node.role.strip(), node_id=node.id)
    parts = [f"Your task:\n{node.task.strip()}", f"Overall task of the team:\n{task_text.strip()}"]
    if upstream:
        sections = "\n\n".join(_upstream_section(r) for r in upstream)
        parts.append(
            "Evidence from the upstream nodes you depend on (evidence ids are local to this message; "
            "a failed or incomplete node is marked as such, work with what exists):\n"
            f"{EXTERNAL_CONTENT_WARNING}\n\n{sections}"
        )
    return [{"role": "system", "content": system}, {"role": "user", "content": "\n\n".join(parts)}]


class TeamScheduler:
    """Runs one plan at a time per instance (``cancel_node`` addresses the current run)."""

    def __init__(self, ctx: RunContext, *, on_progress: Callable[[RunStep], None] | None = None) -> None:
        self.ctx = ctx
        self.store = ctx.store
        self.tools = ctx.tools
        self.settings = ctx.settings
        self.on_progress = on_progress
        self._node_tasks: dict[str, asyncio.Task[NodeRunResult]] = {}
        self._cancel_requested: set[str] = set()

    def cancel_node(self, node_id: str) -> bool:
        """Cancel one node of the running plan; its siblings go on. False when it is not running."""
        task = self._node_tasks.get(node_id)
        if task is None or task.done():
            return False
        self._cancel_requested.add(node_id)
        task.cancel()
        return True

    async def run(
        self, plan: TeamPlan, *, task_text: str, task_id: str, attempt_id: str, parent_session_id: str
    ) -> TeamRunResult:
        """Run every node batch by batch; the result lists nodes in graph order whatever happened."""
        plan.validate_against(self.tools.names())  # before any session, run or model call
        semaphore = asyncio.Semaphore(self.settings.max_parallel_team_nodes)
        results: dict[str, NodeRunResult] = {}
        self._node_tasks.clear()
        self._cancel_requested.clear()
        try:
            for batch in plan.batches():
                tasks = []
                for node in batch:
                    upstream = [results[d] for d in plan.dependencies(node.id)]
                    task = asyncio.create_task(
                        self._guarded_node(
                            node,
                            semaphore=semaphore,
                            upstream=upstream,
                            task_text=task_text,
                            task_id=task_id,
                            attempt_id=attempt_id,
                            parent_session_id=parent_session_id,
                        ),
                        name=f"team-node-{node.id}",
                    )
                    self._node_tasks[node.id] = task
                    tasks.append(task)
                try:
                    # Each node catches its own failures, so gather only raises when we are cancelled.
                    for node, result in zip(batch, await asyncio.gather(*tasks), strict=True):
                        results[node.id] = result
                except BaseException:
                    # gather has already cancelled the nodes; cancelling again would interrupt the
                    # shielded write of their "cancelled" end. Wait so their evidence is complete.
                    for t in tasks:
                        if not t.done() and not t.cancelling():
                            t.cancel()
                    await asyncio.gather(*tasks, return_exceptions=True)
                    raise
        finally:
            self._node_tasks.clear()
        ordered = [results[node_id] for node_id in plan.graph_order()]
        warnings = [
            f"team node '{r.node_id}' ended {r.status}" + (f": {r.error}" if r.error else "")
            for r in ordered
            if r.status is not NodeStatus.SUCCEEDED
        ]
        return TeamRunResult(plan_id=plan.id, mode=plan.mode, node_results=ordered, warnings=warnings)

    async def _guarded_node(
        self,
        node: TeamNode,
        *,
        semaphore: asyncio.Semaphore,
        upstream: list[NodeRunResult],
        task_text: str,
        task_id: str,
        attempt_id: str,
        parent_session_id: str,
    ) -> NodeRunResult:
        session_id: str | None = None
        try:
            async with semaphore:
                session = await self.store.create_session(
                    task_id=task_id, kind="node", label=node.id, parent_session_id=parent_session_id
                )
                session_id = session.id
                outcome = await self._node_turns(
                    node,
                    session.id,
                    [],
                    build_node_messages(node, task_text=task_text, upstream=upstream),
                    task_id=task_id,
                    attempt_id=attempt_id,
                )
            evidence = await build_run_evidence(self.store, outcome.session_id, outcome.run_id)
            return NodeRunResult(
                node_id=node.id,
                role=node.role,
                status=node_status(outcome),
                finish_reason=outcome.finish_reason,
                output_text=outcome.output_text,
                error=outcome.error,
                evidence=evidence,
            )
        except asyncio.CancelledError:
            current = asyncio.current_task()
            if node.id not in self._cancel_requested or current is None:
                raise  # the whole team run is being cancelled
            current.uncancel()
            partial = await self._evidence_of_session(session_id)
            return NodeRunResult(
                node_id=node.id,
                role=node.role,
                status=NodeStatus.CANCELLED,
                finish_reason=FinishReason.CANCELLED,
                output_text=partial.output_text if partial else "",
                error="the node was cancelled",
                evidence=partial,
            )
        except Exception as exc:
            partial = await self._evidence_of_session(session_id)
            return NodeRunResult(
                node_id=node.id,
                role=node.role,
                status=NodeStatus.FAILED,
                finish_reason=partial.finish_reason if partial else "",
                output_text=partial.output_text if partial else "",
                error=f"{type(exc).__name__}: {exc}",
                evidence=partial,
            )

    async def _node_turns(
        self,
        node: TeamNode,
        session_id: str,
        history: list[dict[str, Any]],
        new_messages: list[dict[str, Any]],
        *,
        task_id: str,
        attempt_id: str | None,
    ) -> RunOutcome:
        """One agent run of ``node`` in its session: its first run and its retry after a rejection
        are bounded alike (the node's own tools and tool budget)."""
        loop = AgentLoop(self.ctx.with_tools(self.tools.subset(node.tools)), on_progress=self.on_progress)
        return await loop.run(
            session_id=session_id,
            history=history,
            new_messages=new_messages,
            model=self.settings.agent_model,
            task_id=task_id,
            attempt_id=attempt_id,
            run_kind="node",
            node_id=node.id,
            max_tool_iterations=node.max_tool_iterations,
            include_tools=bool(node.tools),
        )

    async def retry_node(
        self,
        plan: TeamPlan,
        previous: NodeRunResult,
        *,
        feedback: str,
        task_id: str,
        attempt_id: str,
        semaphore: asyncio.Semaphore | None = None,
    ) -> NodeRunResult:
        """Run a node once more in its own session, the verifier's feedback as the next message.

        Bounded like its first run: the node's tools and tool budget, and the team's parallel limit
        (``semaphore``, else a fresh one of ``max_parallel_team_nodes``). The rejected run stays the
        node's evidence (``rejected_runs``). Fail-open: if the retry itself breaks, ``previous``
        is returned as it was, and the synthesis reads it with its verdict.
        """
        if previous.evidence is None:
            return previous
        node = plan.node(previous.node_id)
        session_id = previous.evidence.session_id
        try:
            async with semaphore or asyncio.Semaphore(self.settings.max_parallel_team_nodes):
                history = await session_messages(self.store, session_id)
                outcome = await self._node_turns(
                    node,
                    session_id,
                    history,
                    [{"role": "user", "content": feedback}],
                    task_id=task_id,
                    attempt_id=attempt_id,
                )
            evidence = await build_run_evidence(self.store, outcome.session_id, outcome.run_id)
        except asyncio.CancelledError:
            raise
        except Exception:
            log.warning("team node %s: the retry after its rejection failed", node.id, exc_info=True)
            return previous
        return NodeRunResult(
            node_id=node.id,
            role=node.role,
            status=node_status(outcome),
            finish_reason=outcome.finish_reason,
            output_text=outcome.output_text,
            error=outcome.error,
            evidence=evidence,
            verdicts=list(previous.verdicts),
            rejected_runs=[*previous.rejected_runs, previous.evidence],
        )

    async def _evidence_of_session(self, session_id: str | None) -> RunEvidence | None:
        """Evidence of the node's run when it never returned an outcome (it raised or was cancelled)."""
        if session_id is None:
            return None
        try:
            events = await self.store.get_session_events(session_id, kinds=[EventKind.RUN_STARTED])
        except Exception:
            return None
        run_ids = [e.run_id for e in events if e.run_id is not None]
        if not run_ids:
            return None
        return await build_run_evidence(self.store, session_id, run_ids[-1])

    async def synthesize(
        self,
        *,
        plan: TeamPlan,
        team: TeamRunResult,
        task_text: str,
        session_id: str,
        history: list[dict[str, Any]],
        task_id: str,
        attempt_id: str,
        attempt_index: int | None = None,
        evidence_id_start: int | None = None,
    ) -> RunOutcome:
        """The main agent's final answer from the team evidence: no tools unless the plan allows <= 2.

        Ids continue after the task's earlier attempts, as in the packet this attempt will record
        (``core.evidence.packet``), so the synthesis and the validator name each item alike. A
        caller that already read the earlier packets passes ``evidence_id_start``.
        """
        if attempt_index is None:
            attempt_index = await self._attempt_index(task_id, attempt_id)
        budget = plan.synthesis_max_tool_iterations
        loop = AgentLoop(self.ctx, on_progress=self.on_progress)
        start = evidence_id_start
        if start is None:
            start = next_evidence_number(await earlier_packets(self.store, task_id, attempt_index))
        message = build_synthesis_message(
            task_text=task_text,
            team=team,
            task_id=task_id,
            attempt_index=attempt_index,
            evidence_id_start=start,
        )
        return await loop.run(
            session_id=session_id,
            history=history,
            new_messages=[message],
            model=self.settings.agent_model,
            task_id=task_id,
            attempt_id=attempt_id,
            run_kind="synthesis",
            max_tool_iterations=budget,
            include_tools=budget > 0,
        )

    async def _attempt_index(self, task_id: str, attempt_id: str) -> int:
        for attempt in await self.store.list_attempts(task_id):
            if attempt.id == attempt_id:
                return attempt.index
        return 0
