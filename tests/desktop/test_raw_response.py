"""The raw response pane shows the validator's reply byte for byte and says when the parse differs."""

from __future__ import annotations

import pytest
from pytestqt.qtbot import QtBot

from desktop.views.task.validator import ValidatorView, raw_differences
from tests.desktop.test_detail import validation

DUPLICATED = '{"status":"rejected","score":0.10,"issues":["no source"],"status":"accepted","score":0.90}'


def test_duplicate_keys_are_shown_byte_for_byte_with_a_warning(qtbot: QtBot) -> None:
    view = ValidatorView()
    qtbot.addWidget(view)
    view.set_validation(validation(1, raw=DUPLICATED, warnings=[], citations=[]))
    assert view.raw_view.toPlainText() == DUPLICATED  # both statuses, both scores, as received
    assert view.raw_view.toPlainText().count('"status"') == 2
    assert view.raw_differs and not view.raw_badge.isHidden()
    assert "duplicate keys (status, score)" in view.raw_badge.text()
    view.pretty_toggle.setChecked(True)  # the pretty view is the parse: one status survives
    assert view.raw_view.toPlainText().count('"status"') == 1
    view.pretty_toggle.setChecked(False)
    assert view.raw_view.toPlainText() == DUPLICATED


def test_a_clean_reply_has_no_warning(qtbot: QtBot) -> None:
    view = ValidatorView()
    qtbot.addWidget(view)
    view.set_validation(validation(1, raw='{"status": "accepted", "score": 0.9}', warnings=[], citations=[]))
    assert not view.raw_differs and view.raw_badge.isHidden()


@pytest.mark.parametrize(
    ("raw", "said"),
    [
        ('```json\n{"status": "accepted"}\n```', "code fence"),
        ('Here is my verdict: {"status": "accepted"}', "text before the JSON"),
        ('{"status": "accepted"} I hope this helps.', "text after the JSON"),
        ('{"a": {"b": 1, "b": 2}}', "duplicate keys (b)"),
    ],
)
def test_what_the_parser_drops_is_named(raw: str, said: str) -> None:
    assert any(said in line for line in raw_differences(raw)), raw_differences(raw)


def test_prose_without_json_is_not_flagged() -> None:
    assert raw_differences("I think it is fine. Not JSON at all {") == []
