"""The pieces that keep a huge answer from being copied: a shared read, a piecewise JSON size.

A 50 MB answer peaked at 1.1 GB because every reader made its own copy; the end-to-end bound is
``tests/reliability/test_big_answer.py``. These pin the two mechanisms it rests on.
"""

from __future__ import annotations

import json

from core.agent.outcome import _chars
from core.store import Store
from core.store.chunks import text_sha256


async def test_a_shared_text_is_what_whole_reads_return_until_the_last_hold_ends(store: Store) -> None:
    text = "an answer with some bulk to it. " * 40_000
    ref = await store.put_content(text)
    assert text_sha256(text) == ref.sha256
    with store.sharing(text):
        with store.sharing(text):  # holds nest: the packet's and the attempt's
            assert await store.read_content(ref) is text
        assert await store.read_content(ref.sha256) is text
    again = await store.read_content(ref)
    assert again == text and again is not text  # forgotten: a read is a fresh copy again


def test_the_transcript_size_is_measured_without_serialising_a_long_text() -> None:
    # Over a million characters, with characters JSON escapes and characters it keeps as they are.
    long = ('quote " backslash \\ newline \n tab \t é 日本 \u2028 \x01 ' * 40_000)[: (1 << 20) * 2 + 7]
    message = {"role": "assistant", "content": long, "tool_calls": [{"id": 1, "args": (long, None)}]}
    assert _chars(message) == len(json.dumps(message, ensure_ascii=False, default=str))
    assert _chars([message, {"role": "user", "content": "short"}]) == len(
        json.dumps([message, {"role": "user", "content": "short"}], ensure_ascii=False, default=str)
    )
