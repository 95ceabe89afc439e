"""The product's log files (the desk's ``desk.log``, the CLI's ``cli.log``): bounded, and masked.

A warning may quote a provider's message or a path holding a key; a log file is a thing that
leaves the machine in a bug report, so every record is masked like an export before it is written.
"""

from __future__ import annotations

import logging
from logging.handlers import RotatingFileHandler
from pathlib import Path
from typing import Any


class RedactingFilter(logging.Filter):
    """Masks secrets (known shapes, keys in the environment) in every record before it is written.

    The redactor is built at the first record, not at start-up: warnings are rare and its rules cost
    an import the first paint should not wait for. The keyring is not read (blocking, and a log line
    is no place to learn a stored key's value)."""

    def __init__(self) -> None:
        super().__init__()
        self._redactor: Any = None

    def filter(self, record: logging.LogRecord) -> bool:
        """logging.Filter.filter: the message (and traceback text) masked in place; always kept."""
        if self._redactor is None:
            from core.bundle.redact import Redactor

            self._redactor = Redactor.build(keyring=False)
        record.msg = self._redactor.text(record.getMessage(), "log")
        record.args = None
        if record.exc_info:
            record.exc_text = self._redactor.text(logging.Formatter().formatException(record.exc_info), "log")
            record.exc_info = None
        return True


def rotating_log(path: Path, *, max_bytes: int, backups: int, fmt: str) -> RotatingFileHandler:
    """A WARNING-level handler writing masked records to ``path``, rotated at ``max_bytes``.

    Raises OSError when the file cannot be opened (the caller decides whether that matters)."""
    handler = RotatingFileHandler(path, maxBytes=max_bytes, backupCount=backups, encoding="utf-8")
    handler.setLevel(logging.WARNING)
    handler.setFormatter(logging.Formatter(fmt))
    handler.addFilter(RedactingFilter())
    return handler


__all__ = ["RedactingFilter", "rotating_log"]
