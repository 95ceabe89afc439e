"""A reference to stored evidence text: what a packet or an event holds instead of a huge value."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, Field

# Keys of packet and payload dicts whose big values are stored as chunks; the reference sits
# beside the emptied key under ``<key>_ref`` so old readers still find a (blank) string there.
OFFLOADED_KEYS = ("content", "output_text", "final_output")
REF_SUFFIX = "_ref"


class ContentRef(BaseModel):
    """A content object in the chunk store: its sha256, its length in characters and in bytes."""

    sha256: str = Field(min_length=64, max_length=64)
    length: int = Field(ge=0)  # characters
    n_bytes: int = Field(ge=0)  # UTF-8 bytes
    chunks: int = Field(ge=0)


@dataclass(frozen=True)
class ContentPolicy:
    """How big a text may stay inline and how big a chunk is (in characters).

    A chunk of ``chunk_chars`` characters is at most four times that in UTF-8 bytes: the default
    (1 Mi characters) keeps every stored value under 4 MiB, far from any database limit.
    """

    inline_limit: int = 64 * 1024
    chunk_chars: int = 1 << 20
    compress: bool = True

    def offloads(self, text: str | None) -> bool:
        return text is not None and len(text) > self.inline_limit


DEFAULT_POLICY = ContentPolicy()


def is_ref(parent: dict[str, Any], key: str) -> bool:
    """``key`` holds a reference that ``offload_tree`` put beside its emptied text.

    An event's payload copied into a packet also carries a ``content_ref`` (its content lived in the
    event row): with no ``content`` key beside it, that one is a record, not a hole to fill.
    """
    if not key.endswith(REF_SUFFIX):
        return False
    base = key[: -len(REF_SUFFIX)]
    return base in OFFLOADED_KEYS and base in parent and isinstance(parent.get(key), dict)


def find_refs(value: Any) -> Iterator[ContentRef]:
    """Every chunk reference inside a JSON value (a packet, a payload), in document order."""
    if isinstance(value, list):
        for v in value:
            yield from find_refs(v)
    elif isinstance(value, dict):
        for key, v in value.items():
            if is_ref(value, key):
                yield ContentRef.model_validate(v)
            else:
                yield from find_refs(v)


def has_refs(value: Any) -> bool:
    return next(find_refs(value), None) is not None
