"""The one sanitiser for what the command line prints: no control sequence and no known secret.

Text printed by the command line comes from outside: archive member names, imported task ids and
titles, corpus documents, model answers. A carriage return or an ESC sequence in such text can
rewrite what the terminal shows (a failing bundle displayed as "OK ... signed by a known key"), and
a provider's error can echo the key it was sent. Rather than each command remembering to clean each
string, the command line writes through ``TerminalStream``: every control character except tab,
newline and a CRLF line end is shown as text (``\\x1b``), bidirectional overrides as ``\\u202e``,
and on the error stream every credential the program holds and every secret shape is masked.
"""

from __future__ import annotations

import io
import re
from typing import TextIO

from core.secrets import credential_values, credentials_version, mask_secrets

__all__ = ["TerminalStream", "escape_control", "json_safe", "raw_stream"]

# C0 controls but tab and newline, DEL and the C1 controls (0x9b is a one-byte CSI on some
# terminals), and the Unicode format characters that reorder or hide what is shown.
# A carriage return is kept only as the first half of a CRLF line end (CSV's, RFC 4180): a lone one
# is what moves the cursor back over a line already shown.
_CONTROL = re.compile(
    r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u200b-\u200f\u202a-\u202e\u2066-\u2069\ufeff]|\r(?!\n)"
)
# What JSON leaves raw with ``ensure_ascii=False``: JSON escapes C0 itself.
_JSON_RAW = re.compile(r"[\x7f-\x9f\u200b-\u200f\u202a-\u202e\u2066-\u2069\ufeff]")


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def escape_control(text: str) -> str:
    """``text`` with every control and reordering character shown as its escape; tab, newline and
    CRLF line ends kept."""
    return _CONTROL.sub(_escape, text)


def json_safe(text: str) -> str:
    """A JSON document (written with ``ensure_ascii=False``) with the characters JSON leaves raw escaped
    as ``\\uXXXX``: they can only occur inside strings there, so the document means the same."""
    return _JSON_RAW.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


class TerminalStream(io.TextIOBase):
    """A text stream that escapes control characters (and, for ``mask``, secrets) before writing.

    ``mask=True`` (the error stream) masks every shape and value; otherwise only the values the
    program holds as credentials are masked, since ``show`` must print an answer's text as it is.
    """

    def __init__(self, wrapped: TextIO, *, mask: bool) -> None:
        super().__init__()
        self.wrapped = wrapped
        self.mask = mask
        self._values: tuple[tuple[int, int], list[str]] | None = None

    def _credentials(self) -> list[str]:
        """The credential values, recomputed only when they may have changed (``list`` of many
        tasks writes thousands of times)."""
        version = credentials_version()
        if self._values is None or self._values[0] != version:
            self._values = (version, [value for _label, value in credential_values()])
        return self._values[1]

    def write(self, text: str) -> int:
        if self.mask:
            text = mask_secrets(text)
        else:
            for value in self._credentials():
                if value in text:
                    text = text.replace(value, "[redacted]")
        self.wrapped.write(escape_control(text))
        return len(text)

    def flush(self) -> None:
        self.wrapped.flush()

    def isatty(self) -> bool:
        return self.wrapped.isatty()

    def fileno(self) -> int:
        return self.wrapped.fileno()

    def writable(self) -> bool:
        return True

    @property
    def encoding(self) -> str:  # type: ignore[override]  # the wrapped stream's, read-only
        return str(getattr(self.wrapped, "encoding", "utf-8"))


def raw_stream(stream: TextIO) -> TextIO:
    """The stream under a ``TerminalStream``: for a progress bar, whose carriage returns are its own
    and whose text is ours (never give it outside text)."""
    return stream.wrapped if isinstance(stream, TerminalStream) else stream
