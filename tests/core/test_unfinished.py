"""The one pre-check of a terminal reply (core/agent/unfinished.py): narrow on purpose."""

from __future__ import annotations

import pytest

from core.agent.unfinished import ANNOUNCEMENT_MAX_CHARS, announces_more_work, unfinished_reason


@pytest.mark.parametrize(
    "text",
    [
        "Let me search more.",
        "I'll check the corpus for tides.",
        "Okay, let me look into that. I will search the documents next.",
        "I need to search for more sources.",
        "Next, I’ll verify the figure.",
        "Let's dig deeper.",
    ],
)
def test_announcements_of_research_are_unfinished(text: str) -> None:
    assert announces_more_work(text)
    assert unfinished_reason(text, asked_for_tools=False) == "only announced more work"


@pytest.mark.parametrize(
    "text",
    [
        "Tides are caused mainly by the Moon's gravity.",
        "I'll answer now: tides are caused mainly by the Moon's gravity.",
        "Let me summarise: the Moon's gravity causes tides.",
        "Let me search more. Meanwhile: the Moon's gravity causes tides.",
        "I could not confirm the height; the evidence gives 8,849 m.",
        "I could not find it.",
        "I will not search further.",
        "I can check nothing more: the corpus has no such document.",
        "Let me search more. " * (ANNOUNCEMENT_MAX_CHARS // 20 + 1),  # long replies are answers
        "",
    ],
)
def test_answers_are_not_announcements(text: str) -> None:
    assert not announces_more_work(text)


def test_tool_calls_are_unfinished_whatever_the_text() -> None:
    assert unfinished_reason("Tides are caused by the Moon.", asked_for_tools=True) == "still asked for tools"
    assert unfinished_reason("Tides are caused by the Moon.", asked_for_tools=False) is None
