"""Reading a stored validation's warnings, whichever version wrote them.

Validations store their warnings in ``debug["warnings"]`` as :class:`VerdictWarning` dicts. Before
that they were ``"code: words"`` strings whose counts lived inside the words. This module is the
one place allowed to look at such a prefix, and only to read data written by that earlier version:
every other reader gets structured warnings and picks what to show by ``code``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError

from core.domain.facts import VerdictWarning, WarningCode

__all__ = ["legacy_warning", "read_warnings"]

# How the earlier version spelled its counts, per code: "chunked-validation: 3 chunks" and
# "unverified-citations: 2 of 5". Nothing else it wrote carried a count.
_LEGACY_COUNTS: dict[WarningCode, re.Pattern[str]] = {
    WarningCode.CHUNKED_VALIDATION: re.compile(r"^(?P<count>\d+) chunks?\b"),
    WarningCode.UNVERIFIED_CITATIONS: re.compile(r"^(?P<count>\d+) of (?P<total>\d+)\b"),
}


def legacy_warning(text: str) -> VerdictWarning:
    """A warning stored by the earlier version as ``"code: words"``, as the structured warning it meant.

    An unknown prefix (or none) keeps the whole text as the message under ``WarningCode.OTHER``,
    so nothing the validator said is lost.
    """
    prefix, sep, rest = text.partition(":")
    known = {c.value: c for c in WarningCode if c is not WarningCode.OTHER}
    code = known.get(prefix.strip()) if sep else None
    if code is None:
        return VerdictWarning(code=WarningCode.OTHER, message=text.strip())
    message = rest.strip()
    pattern = _LEGACY_COUNTS.get(code)
    found = pattern.match(message) if pattern is not None else None
    if found is None:
        return VerdictWarning(code=code, message=message)
    total = found.groupdict().get("total")
    return VerdictWarning(
        code=code,
        message=message,
        count=int(found["count"]),
        total=int(total) if total is not None else None,
    )


def read_warnings(debug: Mapping[str, Any]) -> list[VerdictWarning]:
    """The structured warnings of a stored validation's ``debug``; old string warnings are converted.

    Reads the row's JSON, so it works on a row whose debug does not read as its model too. An
    entry that does not read as a warning (a code a later version added, a damaged row) becomes
    an ``OTHER`` warning holding its words, rather than hiding the verdict behind an error.
    """
    stored = debug.get("warnings") or []
    if not isinstance(stored, list):
        stored = [stored]
    warnings: list[VerdictWarning] = []
    for entry in stored:
        if isinstance(entry, VerdictWarning):
            warnings.append(entry)
        elif isinstance(entry, str):
            warnings.append(legacy_warning(entry))
        else:
            try:
                warnings.append(VerdictWarning.model_validate(entry))
            except ValidationError:
                message = entry.get("message") if isinstance(entry, Mapping) else None
                text = message if isinstance(message, str) else str(entry)
                warnings.append(VerdictWarning(code=WarningCode.OTHER, message=text))
    return warnings
