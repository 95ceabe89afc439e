"""Storing a file handed over on the command line with the job, and reading it back on any worker.

``carry_file`` reads the file where the job is queued (so a missing or unreadable file is refused
there, in one line, before anything refers to it) and stores its text as content owned by the
task, batch or schedule that needs it. ``carried_text`` reads it back from the workspace on the
machine that runs the job; an older row that holds only a path is read from that machine's disk,
with an error that says why when the file is not there.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from core.domain.carried import CarriedFile, carried_name, parse_carried
from core.errors import InputError, StoreError
from core.inputs import read_input_text
from core.store import Store


async def read_carried_source(path: Path, *, what: str) -> str:
    """The file's text where the job is queued: ``InputError`` (exit 4, one line) when unusable."""
    return await asyncio.to_thread(read_input_text, path, what=what)


async def store_carried(store: Store, text: str, path: Path, *, owner: str) -> str:
    """Keep ``text`` (read from ``path``) in the workspace for ``owner``; the spec that names it."""
    ref = await store.put_content(text, owner=owner)
    return CarriedFile(sha256=ref.sha256, name=carried_name(str(path))).spec()


async def carry_file(store: Store, path: Path, *, what: str, owner: str) -> str:
    """Read ``path`` here and store it for ``owner``; the spec a task or schedule keeps."""
    return await store_carried(store, await read_carried_source(path, what=what), path, owner=owner)


async def carried_text(store: Store, spec: str, *, what: str) -> tuple[str, str]:
    """A carried file's text and name, from the workspace (or, for an older row, from the disk)."""
    carried = parse_carried(spec)
    if carried is None:
        path = Path(spec)
        try:
            text = await asyncio.to_thread(read_input_text, path, what=what)
        except InputError as exc:
            raise InputError(
                f"{exc} (queued by an older version, which kept only the path: the file must be on "
                "the machine that runs the job; queue it again to store its content)"
            ) from None
        return text, path.name
    try:
        ref = await store.content_ref(carried.sha256)
        return await store.read_content(ref), carried.name
    except StoreError:
        raise InputError(
            f"{what} {carried.name}: its stored content {carried.sha256[:12]} is missing from the workspace"
        ) from None
