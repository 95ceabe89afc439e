"""A bundle held in memory, without a database: the desk's read-only view and the importer's input.

The view is built even when verification fails, so the desk can show what the bundle claims under a
clear warning banner; entries that cannot be parsed at all are listed in ``load_problems``.

Big texts of a format-2 bundle stay in their content members: events and packets carry references
(as a workspace read with ``resolve=False`` does), and ``OpenedBundle`` reads them the way the store
does (``iter_content``, ``read_range``, ``read_content``), a piece or a range at a time.
"""

from __future__ import annotations

import asyncio
import json
import re
import threading
from collections.abc import AsyncIterator, Collection, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from core.bundle.format import EVENT_FIELDS, BundleError, events_entry, jsonl_lines, task_entry
from core.bundle.members import MemberCursor, iter_member_text, member_of
from core.bundle.verify import LoadedBundle, VerificationReport, load_bundle, plural
from core.domain.content import ContentRef
from core.domain.records import (
    AttemptRecord,
    EventRecord,
    FeedbackRecord,
    RunRecord,
    SessionRecord,
    TaskRecord,
    ValidationRecord,
)
from core.inputs import loads_json
from core.tasks.dossier import TaskDossier

__all__ = ["BundleTask", "OpenedBundle", "open_bundle", "parse_bundle"]

# The shape ``core.store.base.new_id`` makes (uuid4 hex); an imported id is shown on terminals and
# named in paths, so anything else is refused rather than cleaned.
TASK_ID_SHAPE = re.compile(r"[0-9a-f]{32}")


@dataclass
class BundleTask:
    task: TaskRecord
    attempts: list[AttemptRecord] = field(default_factory=list)
    sessions: list[SessionRecord] = field(default_factory=list)
    runs: list[RunRecord] = field(default_factory=list)
    validations: list[ValidationRecord] = field(default_factory=list)
    feedback: list[FeedbackRecord] = field(default_factory=list)
    # session id -> events in seq order. ``EventRecord.id`` is a position in the bundle (1, 2, ...),
    # not a workspace id: database ids are not part of the exported, hashed data.
    events: dict[str, list[EventRecord]] = field(default_factory=dict)

    def all_events(self) -> list[EventRecord]:
        return [e for evs in self.events.values() for e in evs]

    def dossier(self) -> TaskDossier:
        """The same read model a workspace task gives, so the desk and the report read a bundle
        exactly as they read a workspace; events in the order they happened."""
        events = sorted(self.all_events(), key=lambda e: (e.created_at, e.session_id, e.seq))
        return TaskDossier(
            task=self.task,
            attempts=self.attempts,
            validations=self.validations,
            feedback=self.feedback,
            sessions=self.sessions,
            events=events,
        )


@dataclass
class OpenedBundle:
    path: Path
    report: VerificationReport
    manifest: dict[str, Any]
    tasks: list[BundleTask]
    load_problems: list[str] = field(default_factory=list)
    content_members: set[str] = field(default_factory=set)
    _cursors: dict[str, tuple[threading.Lock, MemberCursor]] = field(default_factory=dict, repr=False)

    def _member(self, ref: ContentRef | dict[str, Any] | str) -> str:
        member = member_of(ref)
        if member not in self.content_members:
            raise BundleError(
                f"bundle {self.path.name} holds no verified content {member} (missing or altered)"
            )
        return member

    def iter_content_sync(self, ref: ContentRef | dict[str, Any] | str) -> Iterator[str]:
        """A referenced text piece by piece (about 1 MiB each); blocking (zip inflation)."""
        return iter_member_text(self.path, self._member(ref))

    async def iter_content(self, ref: ContentRef | dict[str, Any] | str) -> AsyncIterator[str]:
        """As ``Store.iter_content``: one piece in memory, inflated off the event loop."""
        pieces = self.iter_content_sync(ref)
        while (piece := await asyncio.to_thread(next, pieces, None)) is not None:
            yield piece

    def read_range_sync(self, ref: ContentRef | dict[str, Any] | str, offset: int, length: int) -> str:
        """Characters ``[offset, offset + length)``; paging forward continues where the last read
        stopped (one inflated piece held per member), so a viewer never re-inflates from the start."""
        member = self._member(ref)
        lock, cursor = self._cursors.setdefault(member, (threading.Lock(), MemberCursor(self.path, member)))
        with lock:
            return cursor.read(offset, length)

    async def read_range(self, ref: ContentRef | dict[str, Any] | str, offset: int, length: int) -> str:
        """As ``Store.read_range``: characters ``[offset, offset + length)`` of a referenced text."""
        return await asyncio.to_thread(self.read_range_sync, ref, offset, length)

    async def read_content(self, ref: ContentRef | dict[str, Any] | str) -> str:
        """The whole text: for small texts and callers that need it all."""
        return "".join([piece async for piece in self.iter_content(ref)])

    @property
    def verified(self) -> bool:
        return self.report.ok and not self.load_problems

    @property
    def bundle_id(self) -> str:
        return self.report.bundle_id or ""

    @property
    def origin(self) -> str:
        return f"bundle:{self.bundle_id}"

    def task(self, task_id: str) -> BundleTask:
        for t in self.tasks:
            if t.task.id == task_id or (len(task_id) >= 6 and t.task.id.startswith(task_id)):
                return t
        raise BundleError(f"bundle {self.path.name} holds no task {task_id!r}")

    def dossier(self, task_id: str) -> TaskDossier:
        return self.task(task_id).dossier()

    def banner(self) -> str:
        """One line the desk shows above a bundle's content."""
        signed = self.report.signature.describe()
        if self.verified:
            return (
                f"Case bundle {self.path.name}: verified, read-only (bundle {self.bundle_id[:12]}); {signed}"
            )
        problems = self.report.failures + self.load_problems
        return (
            f"Case bundle {self.path.name} FAILED verification ({plural(len(problems), 'problem')}; first: "
            f"{problems[0]}). Its content may have been altered: do not rely on it. {signed.capitalize()}."
        )


def _json(contents: dict[str, bytes], name: str, problems: list[str]) -> Any:
    blob = contents.get(name)
    if blob is None:
        problems.append(f"{name}: not available")
        return None
    try:
        return loads_json(blob)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        problems.append(f"{name}: not valid JSON ({exc})")
        return None


def _records(model: Any, data: Any, name: str, problems: list[str]) -> list[Any]:
    if not isinstance(data, list):
        if data is not None:
            problems.append(f"{name}: expected a list")
        return []
    out = []
    for i, item in enumerate(data):
        try:
            out.append(model.model_validate(item))
        except ValidationError as exc:
            problems.append(f"{name}: item {i} is malformed ({exc.error_count()} errors)")
    return out


def _events(
    contents: dict[str, bytes], session_id: str, counter: list[int], problems: list[str]
) -> list[EventRecord]:
    name = events_entry(session_id)
    blob = contents.get(name)
    if blob is None:
        problems.append(f"{name}: not available")
        return []
    events: list[EventRecord] = []
    for lineno, line in enumerate(jsonl_lines(blob.decode("utf-8", errors="replace")), start=1):
        try:
            raw = loads_json(line)
            counter[0] += 1
            events.append(
                EventRecord.model_validate({"id": counter[0], **{k: raw.get(k) for k in EVENT_FIELDS}})
            )
        except (json.JSONDecodeError, ValidationError, AttributeError):
            problems.append(f"{name}: line {lineno} is not a readable event")
    return events


def parse_bundle(loaded: LoadedBundle) -> OpenedBundle:
    """Turn verified (or not) raw entries into records; blocking, pure CPU."""
    if loaded.manifest is None:
        raise BundleError(
            f"cannot open {loaded.report.path}: " + "; ".join(loaded.report.failures or ["no manifest"])
        )
    problems: list[str] = []
    tasks: list[BundleTask] = []
    counter = [0]
    origin = f"bundle:{loaded.report.bundle_id}"
    for task_id in loaded.manifest["task_ids"]:
        tid = str(task_id)
        if not TASK_ID_SHAPE.fullmatch(tid):  # ids are printed and used as paths: only our own shape
            problems.append(f"task id {tid[:80]!r} is not a task id (32 lowercase hex digits)")
            continue
        raw_task = _json(loaded.contents, task_entry(tid, "task.json"), problems)
        try:
            task = TaskRecord.model_validate(raw_task)
        except ValidationError as exc:
            problems.append(f"{task_entry(tid, 'task.json')}: malformed ({exc.error_count()} errors)")
            continue
        bt = BundleTask(task=task.model_copy(update={"read_only": True, "origin": origin}))
        for file, model, attr in (
            ("attempts.json", AttemptRecord, "attempts"),
            ("sessions.json", SessionRecord, "sessions"),
            ("runs.json", RunRecord, "runs"),
            ("validations.json", ValidationRecord, "validations"),
            ("feedback.json", FeedbackRecord, "feedback"),
        ):
            name = task_entry(tid, file)
            setattr(bt, attr, _records(model, _json(loaded.contents, name, problems), name, problems))
        for session in bt.sessions:
            bt.events[session.id] = _events(loaded.contents, session.id, counter, problems)
        tasks.append(bt)
    return OpenedBundle(
        path=loaded.report.path,
        report=loaded.report,
        manifest=loaded.manifest,
        tasks=tasks,
        load_problems=problems,
        content_members=set(loaded.content_members),
    )


def open_bundle(path: Path, *, known_keys: Collection[str] = ()) -> OpenedBundle:
    """Load a bundle for read-only display; raises ``BundleError`` only if there is nothing to show.

    ``known_keys`` are the signer fingerprints the reader trusts, so the banner can say whose
    signature it is. Blocking (reads and hashes the whole file): async callers use a thread.
    """
    return parse_bundle(load_bundle(Path(path), known_keys=known_keys))
