"""Shadow replay on the team's workers: one procrastinate job per decided attempt (per task, the
attempt its decision stands on), run by ``evidence-desk worker`` processes on PostgreSQL.

``queue_replay`` is what ``revalidate`` does when the workspace hands runs to workers
(``dispatch.should_defer``, the rule ``run`` and ``batch`` follow): it queues a job for each
selected attempt the candidate has not judged yet. A job's ``lock`` and ``queueing_lock`` name the
candidate's exact version and the attempt (``shadow:<session>:<attempt>``), never a task id, so a
replay never holds up the task's own run job, and queueing the same replay twice queues nothing
new. A worker killed mid-verdict stops its heartbeat; a surviving worker retries the job, and the
verdict is stored once (``Replayer.judge`` checks again under a lock just before writing).

The job carries the candidate's name and the validator version it was queued for; a worker
whose settings make another version of that candidate refuses the job (it fails, with the
reason) rather than store verdicts under a version nobody asked for.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING

from sqlalchemy import text

from core.errors import InvalidRequest
from core.judge.candidates import Candidate, load_candidate
from core.judge.replay import SKIPPED, Replayer, ReplaySelection, select_todo, shadow_verdicts
from core.tasks import dispatch

if TYPE_CHECKING:
    from core.store import Store
    from core.workspace import Workspace

__all__ = [
    "SHADOW_VERDICT",
    "QueuedReplay",
    "ReplayState",
    "job_lock",
    "queue_replay",
    "replay_state",
    "run_shadow_job",
    "wait_for_replay",
]

SHADOW_VERDICT = dispatch.SHADOW_VERDICT
WAIT_POLL_S = 1.0


def job_lock(session_id: str, attempt_id: str) -> str:
    return f"shadow:{session_id}:{attempt_id}"


@dataclass
class QueuedReplay:
    candidate: str
    validator_version: str
    session_id: str
    selected: int  # decided attempts the selection names
    already_done: int  # of them, judged before
    queued: int = 0  # jobs queued now
    already_queued: int = 0  # jobs a worker had not finished from an earlier `revalidate`
    not_decided: list[str] = field(default_factory=list)
    attempt_ids: list[str] = field(default_factory=list)  # the selected attempts

    def as_json(self) -> dict[str, object]:
        out = asdict(self)
        out.pop("attempt_ids")
        return {**out, "on_workers": True}


async def queue_replay(ws: Workspace, candidate: Candidate, selection: ReplaySelection) -> QueuedReplay:
    """One job per selected attempt the candidate has not judged; the workers judge them."""
    from procrastinate import exceptions

    replayer = await Replayer.open(ws, candidate)  # a missing key or script is refused before queueing
    decided, todo, missing = await select_todo(ws.store, replayer.session_id, selection)
    out = QueuedReplay(
        candidate.name,
        candidate.version,
        replayer.session_id,
        len(decided),
        len(decided) - len(todo),
        not_decided=missing,
        attempt_ids=[d.attempt_id for d in decided],
    )
    if not todo:
        return out
    await dispatch.ensure_queue_schema(ws.store)
    live = await _live_jobs(ws.store, replayer.session_id)  # a stalled one is retried, not queued again
    app = dispatch.make_app(ws.store.url, min_size=1, max_size=2)
    async with app.open_async():
        for d in todo:
            lock = job_lock(replayer.session_id, d.attempt_id)
            if lock in live:
                out.already_queued += 1
                continue
            deferrer = app.configure_task(SHADOW_VERDICT, queue=dispatch.QUEUE, lock=lock, queueing_lock=lock)
            try:
                await deferrer.defer_async(
                    candidate=candidate.name,
                    validator_version=candidate.version,
                    task_id=d.task_id,
                    attempt_id=d.attempt_id,
                    attempt_index=d.attempt_index,
                )
                out.queued += 1
            except exceptions.AlreadyEnqueued:
                out.already_queued += 1
    return out


async def _live_jobs(store: Store, session_id: str) -> set[str]:
    """The locks of the session's jobs waiting or running (or stalled: procrastinate retries those)."""
    async with store.engine.connect() as conn:
        rows = await conn.execute(
            text(
                "SELECT lock FROM procrastinate_jobs WHERE lock LIKE :prefix AND status IN ('todo', 'doing')"
            ),
            {"prefix": job_lock(session_id, "") + "%"},
        )
        return {str(r[0]) for r in rows}


async def run_shadow_job(
    ws: Workspace,
    replayers: dict[tuple[str, str], Replayer],
    candidate: str,
    validator_version: str,
    task_id: str,
    attempt_id: str,
    attempt_index: int,
) -> str:
    """A worker's job body: judge one attempt with the candidate version the job was queued for.

    ``replayers`` is the worker's own cache: the candidate, its gateway and validation service are
    built for the first job of a version and reused by every later one.
    """
    key = (candidate, validator_version)
    replayer = replayers.get(key)
    if replayer is None:
        from core.validation.workspace_templates import workspace_templates

        loaded = load_candidate(ws.settings, candidate, await workspace_templates(ws.store))
        if loaded.version != validator_version:
            raise InvalidRequest(
                f"candidate {candidate!r} here is validator {loaded.version}, but the replay was queued "
                f"for {validator_version}: start the worker with the settings (and templates) "
                "`revalidate` was run with"
            )
        replayer = replayers[key] = await Replayer.open(ws, loaded, shared=True)
    status, why = await replayer.judge(task_id, attempt_id, attempt_index)
    return f"{status}: {why}" if status == SKIPPED else status


@dataclass(frozen=True, slots=True)
class ReplayState:
    """Where a queued replay stands: verdicts stored, and its jobs still waiting, running or failed."""

    judged: int
    selected: int
    waiting: int
    running: int  # a stalled job of a dead worker too: it is `doing` until a worker retries it
    failed: int  # attempts whose job failed and that hold no verdict
    unjudged: int = 0  # attempts with no verdict whose job ended without one (skipped) or is gone

    @property
    def finished(self) -> bool:
        return self.waiting == 0 and self.running == 0

    def line(self) -> str:
        line = (
            f"revalidate: {self.judged}/{self.selected} judged, {self.waiting} queued, "
            f"{self.running} running, {self.failed} failed"
        )
        return f"{line}, {self.unjudged} without a verdict" if self.unjudged else line


async def replay_state(store: Store, session_id: str, attempt_ids: Sequence[str]) -> ReplayState:
    """The jobs are read BEFORE the verdicts: a job body commits its verdict before procrastinate
    marks the job succeeded, so every job this read finds ended has its verdict visible to the
    next read. Read the other way round, a verdict committed between the two reads by the last
    running job went unseen while its job counted as ended: the replay looked finished one verdict
    short, with nothing failed."""
    wanted = set(attempt_ids)
    counts = {"todo": 0, "doing": 0}
    live: set[str] = set()  # attempts with a job waiting or running
    failed_jobs: set[str] = set()
    async with store.engine.connect() as conn:
        rows = await conn.execute(
            text(
                "SELECT lock, status FROM procrastinate_jobs WHERE lock LIKE :prefix "
                "AND status IN ('todo', 'doing', 'failed')"
            ),
            {"prefix": job_lock(session_id, "") + "%"},
        )
        for lock, status in rows:
            attempt = str(lock).rpartition(":")[2]
            if attempt not in wanted:
                continue
            if status == "failed":
                failed_jobs.add(attempt)
            else:
                counts[str(status)] += 1
                live.add(attempt)
    judged = {a for a in await shadow_verdicts(store, session_id) if a in wanted}
    failed = failed_jobs - judged - live  # a failed try whose retry still runs is not failed yet
    return ReplayState(
        len(judged),
        len(wanted),
        counts["todo"],
        counts["doing"],
        len(failed),
        len(wanted - judged - live - failed),
    )


async def wait_for_replay(
    store: Store,
    queued: QueuedReplay,
    on_state: Callable[[ReplayState], None] | None = None,
    *,
    poll_s: float = WAIT_POLL_S,
) -> ReplayState:
    """Read the replay's state every ``poll_s`` seconds until no job of it waits or runs; each
    change is reported once."""
    last: ReplayState | None = None
    while True:
        state = await replay_state(store, queued.session_id, queued.attempt_ids)
        if state != last and on_state is not None:
            on_state(state)
        last = state
        if state.finished:
            return state
        await asyncio.sleep(poll_s)
