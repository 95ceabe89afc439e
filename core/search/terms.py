"""The search query language, with no database: words, "quoted phrases", prefix*.

Shared by ``core.search.query`` (which validates and explains) and ``core.store.search_sql`` (which
turns it into FTS5 ``MATCH`` text or a PostgreSQL ``tsquery``), so both engines read a query alike.
"""

from __future__ import annotations

import re

from core.errors import InvalidRequest

MARK_START = "\ue000"
MARK_END = "\ue001"
# Ranking costs a score per matching passage (~3 s for 600,000 on SQLite); beyond this many
# matches hits come newest first, which the index answers in the time of a page.
RANK_LIMIT = 20_000
_TOKEN = re.compile(r'"([^"]*)"?|(\S+)')
_WORD = re.compile(r"[^\W_]+")


class SearchError(InvalidRequest):
    """A query that cannot be asked (nothing to search for); the message says what to type."""


def parse_terms(text: str) -> tuple[list[str], list[str]]:
    """(phrases, prefixes) of a typed query; a bare word is a one-word phrase."""
    phrases: list[str] = []
    prefixes: list[str] = []
    for quoted, bare in _TOKEN.findall(text):
        if quoted.strip():
            phrases.append(" ".join(quoted.split()))
        elif bare:
            word = bare.strip('"')
            if word.endswith("*") and _WORD.search(word[:-1]):
                prefixes.append(word[:-1])
            elif _WORD.search(word):
                phrases.append(word)
    if not phrases and not prefixes:
        raise SearchError("type a word or a quoted phrase to search for")
    return phrases, prefixes


def fts5_query(text: str) -> str:
    phrases, prefixes = parse_terms(text)
    quoted = ['"' + p.replace('"', '""') + '"' for p in phrases]
    quoted += ['"' + p.replace('"', '""') + '"*' for p in prefixes]
    return " ".join(quoted)


__all__ = ["MARK_END", "MARK_START", "RANK_LIMIT", "SearchError", "fts5_query", "parse_terms"]
