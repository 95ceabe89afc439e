"""Reading a batch file (JSON lines or CSV) into checked rows, before anything is stored.

A bad row stops the whole batch with its line number, so an analyst fixes the file and re-runs
it; since rows are keyed, a re-run after a partial failure queues only what is missing.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
from pathlib import Path
from typing import Any

from core.errors import InputError
from core.inputs import check_depth, read_input_bytes
from core.store.batches import BatchItem

KNOWN = ("text", "title", "answer", "key", "metadata")
MAX_KEY = 200


def batch_id_for(raw: bytes) -> str:
    """The batch's name: its content, so the same file is the same batch wherever it is run."""
    return hashlib.sha256(raw).hexdigest()


def read_batch_file(path: Path) -> tuple[str, list[BatchItem]]:
    """The batch id and its rows; ``InputError`` naming the file and line of the first bad row."""
    raw = read_input_bytes(path, what="batch file")
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InputError(
            f"batch file {path} is not UTF-8 text (byte {exc.start}); save it as UTF-8"
        ) from None
    suffix = path.suffix.lower()
    if suffix in (".jsonl", ".ndjson"):
        rows = list(_jsonl_rows(path, text))
    elif suffix == ".csv":
        rows = list(_csv_rows(path, text))
    else:
        raise InputError(f"batch file {path}: use a .jsonl or .csv file")
    items: list[BatchItem] = []
    seen: dict[str, int] = {}
    for line, number, record in rows:
        item = _item(path, line, number, record)
        if item.key in seen:
            raise InputError(f"{path}:{line}: row key {item.key!r} repeats the row on line {seen[item.key]}")
        seen[item.key] = line
        items.append(item)
    if not items:
        raise InputError(f"batch file {path} has no rows")
    return batch_id_for(raw), items


def _jsonl_rows(path: Path, text: str) -> Any:
    number = 0
    for line, content in enumerate(text.splitlines(), start=1):
        if not content.strip():
            continue
        number += 1
        try:
            record = json.loads(content)
        except json.JSONDecodeError as exc:
            raise InputError(f"{path}:{line}: not JSON ({exc.msg} at column {exc.colno})") from None
        if not isinstance(record, dict):
            raise InputError(f'{path}:{line}: each line must be a JSON object with a "text"')
        check_depth(record, what=f"{path}:{line}")
        yield line, number, record


def _csv_rows(path: Path, text: str) -> Any:
    reader = csv.DictReader(io.StringIO(text, newline=""))
    if not reader.fieldnames or "text" not in reader.fieldnames:
        raise InputError(f"{path}: the CSV header must name a 'text' column")
    number = 0
    try:
        for record in reader:
            number += 1
            if None in record:
                raise InputError(f"{path}:{reader.line_num}: more fields than the header names")
            extra = {k: v for k, v in record.items() if k not in KNOWN and v not in (None, "")}
            row: dict[str, Any] = {k: v for k, v in record.items() if k in KNOWN and v not in (None, "")}
            if "metadata" in row:
                try:
                    row["metadata"] = json.loads(row["metadata"])
                except json.JSONDecodeError:
                    raise InputError(f"{path}:{reader.line_num}: metadata must be a JSON object") from None
            if extra:  # other columns are the row's metadata, kept with its task
                row["metadata"] = {**(row.get("metadata") or {}), **extra}
            yield reader.line_num, number, row
    except csv.Error as exc:
        raise InputError(f"{path}:{reader.line_num}: {exc}") from None


def _item(path: Path, line: int, number: int, record: dict[str, Any]) -> BatchItem:
    where = f"{path}:{line}"
    text = record.get("text")
    if not isinstance(text, str) or not text.strip():
        raise InputError(f'{where}: a row needs a non-empty "text"')
    for name in ("title", "answer"):
        value = record.get(name)
        if value is not None and not isinstance(value, str):
            raise InputError(f'{where}: "{name}" must be a string')
    metadata = record.get("metadata")
    extra = {k: v for k, v in record.items() if k not in KNOWN}
    if metadata is not None and not isinstance(metadata, dict):
        raise InputError(f'{where}: "metadata" must be an object')
    if extra:
        metadata = {**(metadata or {}), **extra}
    key = record.get("key")
    key = f"row-{number}" if key is None or key == "" else str(key)
    if len(key) > MAX_KEY:
        raise InputError(f"{where}: row key is longer than {MAX_KEY} characters")
    return BatchItem(
        key=key, text=text, title=record.get("title"), answer=record.get("answer"), metadata=metadata
    )
