"""Evidence: built from the event log, rendered with stable ids for synthesis and validation."""

from core.evidence.builder import (
    build_run_evidence,
    run_evidence_from_events,
    session_messages,
    settled_transcript,
    transcript_from_events,
)
from core.evidence.render import (
    EvidenceItem,
    RenderedEvidence,
    evidence_char_length,
    next_evidence_number,
    render_items,
    render_packet,
    render_run,
    render_task,
)
from core.evidence.wrapping import EXTERNAL_CONTENT_WARNING, neutralise, wrap_external

__all__ = [
    "EXTERNAL_CONTENT_WARNING",
    "EvidenceItem",
    "RenderedEvidence",
    "build_run_evidence",
    "evidence_char_length",
    "neutralise",
    "next_evidence_number",
    "render_items",
    "render_packet",
    "render_run",
    "render_task",
    "run_evidence_from_events",
    "session_messages",
    "settled_transcript",
    "transcript_from_events",
    "wrap_external",
]
