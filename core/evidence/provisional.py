"""Evidence of an attempt that has no packet: one still running, cancelled, failed or crashed.

A packet is assembled when an attempt reaches validation. Until then, and for attempts that never
get there, the evidence exists only as the runs' events; readers that show evidence (the desk)
build a provisional packet from those events so they show what was recorded instead of nothing.
The events are the source of truth either way: this is the same builder the packet uses.
"""

from __future__ import annotations

from collections.abc import Sequence

from core.domain.event_codec import decode_as
from core.domain.event_payloads import RunStart
from core.domain.evidence import RunEvidence, TaskEvidencePacket
from core.domain.facts import AttemptState, EventKind
from core.domain.records import AttemptRecord, EventRecord
from core.evidence.builder import run_evidence_from_events

RUNNING = "running"  # shown where a finished run shows its finish reason


def _runs_of(
    attempt: AttemptRecord, events: Sequence[EventRecord]
) -> dict[str, tuple[bool, list[EventRecord]]]:
    """Run id -> (is a team node's run, its events), in the order the runs started."""
    runs: dict[str, tuple[bool, list[EventRecord]]] = {}
    for ev in events:
        if ev.run_id is None:
            continue
        if ev.kind == EventKind.RUN_STARTED:
            start = decode_as(ev, RunStart)
            if start.attempt_id == attempt.id:
                runs[ev.run_id] = (start.node_id is not None, [])
        if ev.run_id in runs:
            runs[ev.run_id][1].append(ev)
    return runs


def provisional_packet(
    task_id: str, attempt: AttemptRecord, events: Sequence[EventRecord], *, evidence_id_start: int = 1
) -> TaskEvidencePacket | None:
    """The attempt's evidence as recorded so far; None when it recorded no run and is not running.

    A running attempt always gets a packet (perhaps empty): the work is under way, and a view must
    not say that no evidence was recorded.
    """
    runs = _runs_of(attempt, events)
    if not runs and attempt.state is not AttemptState.RUNNING:
        return None
    main: RunEvidence | None = None
    others: list[RunEvidence] = []
    for run_id, (is_node, run_events) in runs.items():
        session_id = run_events[0].session_id
        evidence = run_evidence_from_events(run_id, session_id, run_events)
        if attempt.state is AttemptState.RUNNING and not any(
            e.kind == EventKind.RUN_FINISHED for e in run_events
        ):
            # The builder reads a run with no end as interrupted; this one is simply not done yet.
            evidence.finish_reason = RUNNING
            evidence.warnings = ["this run is still in progress"]
        if main is None and not is_node:
            main = evidence
        else:
            others.append(evidence)
    final = attempt.final_output or (main.output_text if main is not None else "")
    return TaskEvidencePacket(
        task_id=task_id,
        attempt_index=attempt.index,
        main_run=main,
        team_runs=others,
        final_output=final,
        evidence_id_start=evidence_id_start,
    )


__all__ = ["provisional_packet"]
