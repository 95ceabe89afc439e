"""The one way user-supplied files come in: regular files only, a byte cap, UTF-8, bounded nesting.

Every file a person hands the program (a script, an output schema, a team template, the rules,
the configuration) and every JSON document taken out of a case bundle passes through here, so a
FIFO, a folder, a binary blob, a gigabyte or a ten-thousand-level ``[[[[`` is refused with one line
naming the file, instead of blocking, exhausting memory or overflowing the stack somewhere deeper.
"""

from __future__ import annotations

import json
import os
import re
import stat
import tomllib
from pathlib import Path
from typing import Any

from core.errors import InputError

# Large enough for any real script, schema or template; small enough to read at once.
MAX_INPUT_BYTES = 16 * 1024 * 1024
# Deeper than any schema or script a person writes; far below Python's recursion limit, so what is
# accepted here can also be validated, stored and serialised without a RecursionError later.
MAX_DEPTH = 100

__all__ = [
    "MAX_DEPTH",
    "MAX_INPUT_BYTES",
    "check_depth",
    "load_json_file",
    "load_toml_file",
    "loads_json",
    "loads_toml",
    "read_input_bytes",
    "read_input_text",
]


def read_input_bytes(path: Path, *, what: str, max_bytes: int = MAX_INPUT_BYTES) -> bytes:
    """The bytes of a regular file of at most ``max_bytes``, or ``InputError`` saying why not.

    The file is opened non-blocking so a FIFO or device cannot stall the program before its type
    is known; the type and size are checked on the opened descriptor, not on a path that could
    change in between.
    """
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0))
    except FileNotFoundError:
        raise InputError(f"cannot read {what} {path}: no such file") from None
    except OSError as exc:
        raise InputError(f"cannot read {what} {path}: {exc.strerror or exc}") from None
    try:
        info = os.fstat(fd)
        if stat.S_ISDIR(info.st_mode):
            raise InputError(f"cannot read {what} {path}: it is a folder, not a file")
        if not stat.S_ISREG(info.st_mode):
            raise InputError(f"cannot read {what} {path}: not a regular file ({_kind(info.st_mode)})")
        if info.st_size > max_bytes:
            raise InputError(
                f"{what} {path} is too large ({info.st_size:,} bytes; the limit is {max_bytes:,})"
            )
        chunks: list[bytes] = []
        size = 0
        while chunk := os.read(fd, 1024 * 1024):
            size += len(chunk)
            if size > max_bytes:  # grew while being read
                raise InputError(f"{what} {path} is too large (over {max_bytes:,} bytes)")
            chunks.append(chunk)
        return b"".join(chunks)
    except OSError as exc:
        raise InputError(f"cannot read {what} {path}: {exc.strerror or exc}") from None
    finally:
        os.close(fd)


def read_input_text(path: Path, *, what: str, max_bytes: int = MAX_INPUT_BYTES) -> str:
    """A regular file's text, which must be UTF-8 (a leading byte-order mark is dropped)."""
    raw = read_input_bytes(path, what=what, max_bytes=max_bytes)
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InputError(
            f"{what} {path} is not UTF-8 text (byte {exc.start} is 0x{raw[exc.start]:02x}); save it as UTF-8"
        ) from None


def load_json_file(path: Path, *, what: str, max_bytes: int = MAX_INPUT_BYTES) -> Any:
    """A JSON file through every limit; errors name the file, the line and the column."""
    return parse_json_text(read_input_text(path, what=what, max_bytes=max_bytes), what=what, source=path)


def parse_json_text(text: str, *, what: str, source: object) -> Any:
    """A file's JSON text already read (or stored in the workspace): errors as ``load_json_file``'s."""
    if not text.strip():
        raise InputError(f"{what} {source} is empty")
    try:
        return loads_json(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"{what} {source} is not valid JSON: {_json_error(exc)}") from None


def load_toml_file(path: Path, *, what: str, max_bytes: int = MAX_INPUT_BYTES) -> dict[str, Any]:
    """A TOML file through every limit."""
    return parse_toml_text(read_input_text(path, what=what, max_bytes=max_bytes), what=what, source=path)


def parse_toml_text(text: str, *, what: str, source: object) -> dict[str, Any]:
    """A file's TOML text already read (or stored in the workspace): errors as ``load_toml_file``'s."""
    try:
        return loads_toml(text)
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"{what} {source} is not valid TOML: {exc}") from None


class _Refused(json.JSONDecodeError):
    """Decodable, but over a limit: the message stands alone, with no line or column to point at."""

    def __init__(self, msg: str) -> None:
        super().__init__(msg, "", 0)


def loads_json(data: str | bytes, *, max_depth: int = MAX_DEPTH) -> Any:
    """``json.loads`` that also refuses deep nesting and absurd numbers, as ``JSONDecodeError``.

    A drop-in for call sites that already handle ``json.JSONDecodeError`` (bundle readers):
    they get the new refusals without changing what they catch.
    """
    text = data.decode("utf-8") if isinstance(data, bytes) else data
    try:
        value = json.loads(text)
    except json.JSONDecodeError:
        raise
    except RecursionError:
        raise _Refused(f"nested more than {max_depth} levels deep") from None
    except ValueError as exc:  # e.g. an integer of more digits than Python converts
        raise _Refused(str(exc).split(";")[0]) from None
    _refuse_deep(value, max_depth, _Refused)
    return value


# One segment of a dotted key: bare, "basic" or 'literal' (single-line strings only).
_SEGMENT = r"""(?:[A-Za-z0-9_-]+|"(?:[^"\\\n]|\\.)*"|'[^'\n]*')"""
# What the scan below steps over whole, so a dot inside a string or a comment is never counted:
# multi-line strings first (their quotes would otherwise read as empty strings), comments, then
# a run of dotted segments, then any other one segment (a key, a string, a number).
_TOML_TOKENS = re.compile(
    r'"""(?:[^\\]|\\.)*?"""'
    r"|'''.*?'''"
    r"|\#[^\n]*"
    rf"|(?P<run>{_SEGMENT}(?:[ \t]*\.[ \t]*{_SEGMENT})+)"
    rf"|{_SEGMENT}",
    re.DOTALL,
)
_TOML_SEGMENT = re.compile(_SEGMENT)


def _deepest_dotted_key(text: str, past: int) -> int:
    """The most segments of a dotted key in ``text`` once one has more than ``past``, else 0.

    ``tomllib`` reads a dotted key (``[a.b.c]``, ``a.b.c = 1``) in time quadratic in its length
    (100,000 segments took 17 s, and the 16 MiB a file may hold, hours). Every other way TOML
    nests recurses, which ``loads_toml`` already turns into a refusal. Outside strings a float or
    a time has one dot, and a string's dots stay inside its own token, so only a key gets past.
    """
    deepest = 0
    for token in _TOML_TOKENS.finditer(text):
        run = token.group("run")
        if run is not None and run.count(".") > past:  # an upper bound: a quoted segment may hold dots
            deepest = max(deepest, len(_TOML_SEGMENT.findall(run)))
    return deepest if deepest > past else 0


def loads_toml(text: str, *, max_depth: int = MAX_DEPTH) -> dict[str, Any]:
    """``tomllib.loads`` that refuses deep nesting as ``TOMLDecodeError``."""
    if _deepest_dotted_key(text, max_depth) > max_depth:
        raise tomllib.TOMLDecodeError(f"a dotted key nested more than {max_depth} levels deep")
    try:
        value = tomllib.loads(text)
    except RecursionError:
        raise tomllib.TOMLDecodeError(f"nested more than {max_depth} levels deep") from None
    _refuse_deep(value, max_depth, tomllib.TOMLDecodeError)
    return value


def check_depth(value: Any, *, what: str, max_depth: int = MAX_DEPTH) -> None:
    """``InputError`` when a decoded value (say, a schema built in code) nests too deeply."""
    _refuse_deep(value, max_depth, lambda msg: InputError(f"{what} is {msg}"))


def _refuse_deep(value: Any, max_depth: int, error: Any) -> None:
    # Iterative on purpose: a recursive walk would itself overflow on the input it guards against.
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        if depth > max_depth:
            raise error(f"nested more than {max_depth} levels deep")
        stack.extend((child, depth + 1) for child in children)


def _json_error(exc: json.JSONDecodeError) -> str:
    if isinstance(exc, _Refused):
        return exc.msg
    return f"{exc.msg} (line {exc.lineno}, column {exc.colno})"


def _kind(mode: int) -> str:
    for test, name in (
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISSOCK, "a socket"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
    ):
        if test(mode):
            return name
    return "not a file"
