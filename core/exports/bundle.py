"""Export a selection as a case bundle from the desk: progress, cancel, and no half-written file.

``export_bundle`` collects and writes in one call; this wrapper checks the cancellation before
it starts and once it has written a temporary bundle, and renames that over the target only when
the analyst has not cancelled, so a cancelled export leaves nothing behind.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from core.bundle import export_bundle
from core.bundle.export import ExportSummary
from core.bundle.paths import MachineScrub
from core.exports.progress import Cancellation, ProgressSink, Step, check
from core.leftovers import new_part_file
from core.store import Store


def _discard(path: Path) -> None:
    path.unlink(missing_ok=True)


async def export_selection(
    store: Store,
    task_ids: Sequence[str],
    out: Path,
    *,
    signing_key: Ed25519PrivateKey | None = None,
    scrub: MachineScrub | None = None,
    redact: Sequence[str] = (),
    progress: ProgressSink | None = None,
    cancel: Cancellation | None = None,
) -> ExportSummary:
    total = len(task_ids)
    check(cancel, "bundle export", 0, total)
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = new_part_file(out)
    try:
        summary = await export_bundle(
            store, task_ids, tmp, redact=redact, signing_key=signing_key, scrub=scrub
        )
        check(cancel, "bundle export", total, total)
        os.replace(tmp, out)
    except BaseException:
        _discard(tmp)
        raise
    if progress is not None:
        progress(Step(total, total, out.name))
    summary.path = out
    return summary


__all__ = ["export_selection"]
