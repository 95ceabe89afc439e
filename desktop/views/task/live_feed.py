"""Live text and evidence reach the detail pane: the bus's notices wired to what the pane shows.

Kept apart from ``live`` (which the detail pane imports) because this side needs the host: which
task is selected, when its dossier is shown, and a debounced reload of it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from core.events import EvidenceRecorded, TaskChanged
from desktop.views.task.live import LiveTranscripts

if TYPE_CHECKING:
    from desktop.views.host import DeskHost

__all__ = ["connect_live"]


def connect_live(host: DeskHost) -> LiveTranscripts:
    """Wire live text and evidence into the desk: the window calls this once.

    Streamed text goes to the detail pane when its task is the one shown; an "evidence recorded"
    notice for the shown task reloads its dossier (whose provisional packet then holds the new
    results); a task that stops executing drops its live text, since its record now has it.
    """
    bridge, detail = host.services.bridge, host.detail
    live = LiveTranscripts(detail)

    def on_text(task_id: str) -> None:
        if task_id == host.queue.selected_task_id:
            detail.show_live_text(task_id, live.text(task_id))

    def on_evidence(event: EvidenceRecorded) -> None:
        if event.task_id == host.queue.selected_task_id:
            host.reload_detail_soon()

    def on_task_changed(change: TaskChanged) -> None:
        if not change.status.is_execution_active:
            live.forget(change.task_id)

    def on_shown(task_id: str) -> None:
        text = live.text(task_id)
        if text:
            detail.show_live_text(task_id, text)

    bridge.sig_transcript_delta.connect(live.add)
    bridge.sig_evidence_recorded.connect(on_evidence)
    bridge.sig_task_changed.connect(on_task_changed)
    live.sig_text_changed.connect(on_text)
    host.sig_dossier_shown.connect(on_shown)
    return live
