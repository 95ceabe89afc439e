"""Big evidence in the desk: the evidence pane pages stored texts through core instead of holding them.

Installed by the main window (``install_evidence_paging``); the bundle window, whose evidence is
all inline, does without.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from core.tasks.evidence_reader import EvidenceReader

if TYPE_CHECKING:
    from desktop.views.host import DeskHost

__all__ = ["install_evidence_paging"]


def install_evidence_paging(host: DeskHost) -> EvidenceReader:
    """Give the detail pane's evidence view a reader on the workspace's chunk store."""
    workspace = host.services.workspace
    reader = EvidenceReader(lambda: workspace.store)
    host.detail.evidence_view.set_reader(reader, host.ops)
    return reader
