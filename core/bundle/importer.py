"""Adding a verified bundle's tasks to a workspace, read-only, all or nothing.

Rows keep their original ids, so importing the same bundle twice finds the tasks already present
and skips them instead of duplicating them. The store writes everything in one transaction
(``Store.import_records``), so a failure midway leaves nothing behind: the texts, stored first,
are released again (``Store.release_content``); a process killed midway leaves them under its
own owner, and the next import releases them (``Store.release_dead_imports``).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Collection
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from core.bundle.format import BundleError, bundle_ref_of
from core.bundle.opened import OpenedBundle, parse_bundle
from core.bundle.verify import load_bundle
from core.errors import StoreError
from core.leftovers import import_finished, import_owner
from core.store import Store, TaskImport
from core.store.bundle_sql import put_content_stream

__all__ = ["ImportSummary", "import_bundle"]

log = logging.getLogger(__name__)


@dataclass
class ImportSummary:
    bundle_id: str
    imported_task_ids: list[str] = field(default_factory=list)
    skipped_task_ids: list[str] = field(default_factory=list)
    events: int = 0
    signature: str = "unsigned"
    signer: str | None = None


def _bundle_refs(value: Any, found: dict[str, dict[str, Any]]) -> None:
    if isinstance(value, list):
        for v in value:
            _bundle_refs(v, found)
    elif isinstance(value, dict):
        for key, v in value.items():
            ref = bundle_ref_of(v) if key.endswith("_ref") else None
            if ref is not None:
                found.setdefault(str(ref["sha256"]), ref)
            else:
                _bundle_refs(v, found)


def _swap(value: Any, stored: dict[str, dict[str, Any]]) -> Any:
    """A copy whose bundle references became this workspace's chunk references."""
    if isinstance(value, list):
        return [_swap(v, stored) for v in value]
    if not isinstance(value, dict):
        return value
    out: dict[str, Any] = {}
    for key, v in value.items():
        ref = bundle_ref_of(v) if key.endswith("_ref") else None
        out[key] = dict(stored[str(ref["sha256"])]) if ref is not None else _swap(v, stored)
    return out


async def _store_contents(
    store: Store, opened: OpenedBundle, owner: str
) -> tuple[dict[str, dict[str, Any]], dict[str, list[str]]]:
    """Each content member streamed into the chunk store (one chunk in memory) under the import's
    own ``owner``: sha -> store ref, and task id -> the shas it uses (what it adopts on commit)."""
    stored: dict[str, dict[str, Any]] = {}
    uses: dict[str, list[str]] = {}
    for t in opened.tasks:
        found: dict[str, dict[str, Any]] = {}
        _bundle_refs([a.packet for a in t.attempts], found)
        _bundle_refs([e.payload for evs in t.events.values() for e in evs], found)
        uses[t.task.id] = list(found)
        for sha in found:
            if sha in stored:
                continue
            ref = await put_content_stream(store, opened.iter_content(sha), owner=owner)
            if ref.sha256 != sha:
                raise BundleError(f"content {sha[:12]} changed while it was imported; nothing was imported")
            stored[sha] = ref.model_dump()
    return stored, uses


async def _release(store: Store, owner: str) -> None:
    try:
        await store.release_content([owner])
    except StoreError:  # the import's own error is the one to report; a sweep can retry later
        log.warning("could not release the content of a failed import", exc_info=True)


def _records(opened: OpenedBundle, stored: dict[str, dict[str, Any]] | None = None) -> list[TaskImport]:
    """Each bundle task as the store imports it: marked read-only and tagged with the bundle."""
    refs = stored or {}
    return [
        TaskImport(
            task=t.task.model_copy(update={"read_only": True, "origin": opened.origin}),
            attempts=[
                a.model_copy(update={"packet": _swap(a.packet, refs)}) if refs and a.packet else a
                for a in t.attempts
            ],
            sessions=t.sessions,
            runs=t.runs,
            # Only the events of the sessions the task lists, as the bundle's manifest chains them.
            events=[
                e.model_copy(update={"payload": _swap(e.payload, refs)}) if refs else e
                for sid in dict.fromkeys(s.id for s in t.sessions)
                for e in t.events.get(sid, [])
            ],
            validations=t.validations,
            feedback=t.feedback,
        )
        for t in opened.tasks
    ]


async def import_bundle(
    store: Store, path: Path, *, known_keys: Collection[str] = (), trust: bool = False
) -> ImportSummary:
    """Verify ``path`` fully, then add its tasks read-only; raises ``BundleError`` having written nothing.

    A bundle must be signed by a key in ``known_keys`` unless ``trust`` is given: a forger who
    rewrote every hash can also strip or replace the signature, so only a known signer vouches
    for the content.
    """
    path = Path(path)
    loaded = await asyncio.to_thread(load_bundle, path, known_keys=known_keys)
    if not loaded.report.ok:
        shown = loaded.report.failures[:5]
        more = len(loaded.report.failures) - len(shown)
        raise BundleError(
            f"refusing to import {path.name}: verification failed: "
            + "; ".join(shown)
            + (f"; and {more} more" if more > 0 else "")
            + ". Nothing was imported."
        )
    signature = loaded.report.signature
    if signature.status != "known" and not trust:
        raise BundleError(
            f"refusing to import {path.name}: it is {signature.describe()}; check the fingerprint with "
            "its sender, then import with --trust (or list the key in trusted-keys.txt). "
            "Nothing was imported."
        )
    opened = await asyncio.to_thread(parse_bundle, loaded)
    if opened.load_problems:
        raise BundleError(
            f"refusing to import {path.name}: {'; '.join(opened.load_problems[:5])}. Nothing was imported."
        )
    # Texts an earlier import left when its process was killed go first (one log line if any).
    await store.release_dead_imports()
    owner = import_owner()
    try:
        stored, uses = await _store_contents(store, opened, owner)
        result = await store.import_records(_records(opened, stored), adopt=uses, from_owner=owner)
    except BaseException as exc:
        # The texts were stored before the rows (streamed, outside the rows' transaction): a
        # failure (or a cancel) takes them back out, so "nothing was imported" holds for content too;
        # a kill, which runs nothing here, leaves them to the next import's sweep.
        await asyncio.shield(_release(store, owner))
        if isinstance(exc, StoreError):
            raise BundleError(
                f"cannot import {path.name} into {store.display_name}: {exc}. Nothing was imported."
            ) from None
        raise
    finally:
        import_finished(owner)
    return ImportSummary(
        bundle_id=opened.bundle_id,
        imported_task_ids=result.imported_task_ids,
        skipped_task_ids=result.skipped_task_ids,
        events=result.events,
        signature=signature.status,
        signer=signature.fingerprint,
    )
