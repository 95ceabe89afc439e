"""Ctrl+F in the evidence viewer: a find bar with a match count, F3 / Shift+F3 and Enter walk the
matches (wrapping), Esc closes; matches beyond the loaded chunk are found too."""

from __future__ import annotations

from PySide6.QtCore import Qt
from pytestqt.qtbot import QtBot

from desktop.widgets.find_bar import find_spans
from desktop.widgets.text_viewer import TextViewer


def test_find_spans_is_case_insensitive_and_literal() -> None:
    assert find_spans("Tide tide TIDE t.de", "tide") == [(0, 4), (5, 9), (10, 14)]
    assert find_spans("a.b", ".") == [(1, 2)]
    assert find_spans("abc", "") == []


def test_ctrl_f_next_previous_and_escape(qtbot: QtBot) -> None:
    viewer = TextViewer(chunk_chars=50)
    qtbot.addWidget(viewer)
    text = "heron one\n" + "filler line\n" * 20 + "Heron two\nmore\nHERON three"
    viewer.set_text(text)
    with qtbot.waitActive(viewer):
        viewer.show()
        viewer.activateWindow()
    viewer.edit.setFocus()
    bar = viewer.find_bar
    assert not bar.isVisible()
    qtbot.keyClick(viewer.edit, Qt.Key.Key_F, Qt.KeyboardModifier.ControlModifier)
    assert bar.isVisible() and bar.edit.hasFocus()
    qtbot.keyClicks(bar.edit, "heron")
    assert bar.count_label.text() == "1 of 3"
    assert viewer.selected_text() == "heron"
    qtbot.keyClick(bar.edit, Qt.Key.Key_F3)
    assert bar.count_label.text() == "2 of 3" and viewer.selected_text() == "Heron"
    qtbot.keyClick(bar.edit, Qt.Key.Key_Return)
    assert bar.count_label.text() == "3 of 3" and viewer.selected_text() == "HERON"  # beyond the first chunk
    qtbot.keyClick(bar.edit, Qt.Key.Key_F3)
    assert bar.count_label.text() == "1 of 3"  # wraps
    qtbot.keyClick(bar.edit, Qt.Key.Key_F3, Qt.KeyboardModifier.ShiftModifier)
    assert bar.count_label.text() == "3 of 3"
    bar.prev_button.click()
    assert bar.count_label.text() == "2 of 3"
    qtbot.keyClick(bar.edit, Qt.Key.Key_Escape)
    assert not bar.isVisible() and viewer.edit.hasFocus()
    qtbot.keyClick(viewer.edit, Qt.Key.Key_F3)  # F3 reopens on the last search
    assert bar.isVisible() and bar.count_label.text() == "1 of 3"
    bar.edit.setText("osprey")
    assert bar.count_label.text() == "no matches"
    viewer.set_text("an osprey and an Osprey")
    assert bar.count_label.text() == "1 of 2"
