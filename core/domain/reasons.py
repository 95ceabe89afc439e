"""Reason codes: why an analyst revised, abandoned or overrode, as a small countable taxonomy.

Free-text notes cannot be counted; a code can (calibration counts them per cell). A workspace may
name its own codes in a TOML file (the ``reasons`` setting)::

    [[reason]]
    code = "wrong_fact"
    description = "States something the evidence contradicts"

Codes are short lower-case words (``[a-z][a-z0-9_]{0,31}``) so they fit the ``feedback.reason``
column and a search term. Without a file, ``DEFAULT_REASONS`` apply.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

from pydantic import BaseModel

from core.errors import InvalidRequest
from core.inputs import loads_toml

CODE = re.compile(r"[a-z][a-z0-9_]{0,31}")


class Reason(BaseModel):
    code: str
    description: str
    key: str  # the one key that picks it in the desk's reason picker


_DEFAULT = [
    ("wrong_fact", "States something the evidence contradicts or does not hold"),
    ("missing_part", "Leaves out part of what the task asked for"),
    ("unsupported_claim", "Claims something no evidence supports"),
    ("wrong_source", "Cites a source that does not say what the answer claims"),
    ("format", "Right content in the wrong shape or format"),
    ("policy", "Breaks a rule or policy the answer must follow"),
    ("other", "None of these; say why in the note"),
]
_KEYS = "1234567890"


def _with_keys(pairs: list[tuple[str, str]]) -> list[Reason]:
    return [
        Reason(code=c, description=d, key=_KEYS[i] if i < len(_KEYS) else "")
        for i, (c, d) in enumerate(pairs)
    ]


DEFAULT_REASONS: list[Reason] = _with_keys(_DEFAULT)


def parse_reasons(text: str, source: str = "reasons file") -> list[Reason]:
    """The taxonomy a TOML text names; a clear error (and no partial list) when it is malformed."""
    try:
        data = loads_toml(text)
    except tomllib.TOMLDecodeError as exc:
        raise InvalidRequest(f"{source}: not valid TOML ({exc})") from None
    items = data.get("reason")
    if not isinstance(items, list) or not items:
        raise InvalidRequest(f"{source}: needs at least one [[reason]] table with code and description")
    pairs: list[tuple[str, str]] = []
    for n, item in enumerate(items, 1):
        code = item.get("code") if isinstance(item, dict) else None
        description = item.get("description", "") if isinstance(item, dict) else None
        if not isinstance(code, str) or not CODE.fullmatch(code):
            raise InvalidRequest(f"{source}: reason {n} needs a code of lower-case letters, digits and _")
        if not isinstance(description, str):
            raise InvalidRequest(f"{source}: reason {code!r} has a description that is not text")
        if code in {c for c, _ in pairs}:
            raise InvalidRequest(f"{source}: reason code {code!r} is listed twice")
        pairs.append((code, description))
    return _with_keys(pairs)


def check_reason(code: str | None, taxonomy: list[Reason]) -> str | None:
    """The code if the taxonomy has it; a clear error naming the known codes if not."""
    if code is None:
        return None
    if code not in {r.code for r in taxonomy}:
        known = ", ".join(r.code for r in taxonomy)
        raise InvalidRequest(f"unknown reason {code!r}; the workspace's reasons are: {known}")
    return code


def load_reasons(path: Path | None) -> list[Reason]:
    """The workspace's taxonomy: the file's when the ``reasons`` setting names one, else the defaults."""
    if path is None:
        return DEFAULT_REASONS
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InvalidRequest(f"cannot read the reasons file {path}: {exc}") from None
    return parse_reasons(text, str(path))


__all__ = ["DEFAULT_REASONS", "Reason", "check_reason", "load_reasons", "parse_reasons"]
