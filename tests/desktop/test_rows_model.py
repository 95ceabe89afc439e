"""The one flat table model behind the team panes and calibration's agreement tables."""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import QModelIndex, Qt
from pytestqt.modeltest import ModelTester

from desktop.models.rows_model import RowsModel, text_cell

DISPLAY, TOOLTIP, ALIGN = (
    Qt.ItemDataRole.DisplayRole,
    Qt.ItemDataRole.ToolTipRole,
    Qt.ItemDataRole.TextAlignmentRole,
)
HORIZONTAL = Qt.Orientation.Horizontal


def test_a_table_of_strings_right_aligns_figures_and_explains_its_headers(qtmodeltester: ModelTester) -> None:
    model: RowsModel[list[str]] = RowsModel(
        ["model", "decided"], text_cell, explained=["validator model", "decided attempts"]
    )
    qtmodeltester.check(model)
    model.set_rows([["gpt-4o-mini-2024-07-18", "12"], ["claude", "3"]])
    qtmodeltester.check(model)
    assert (model.rowCount(), model.columnCount()) == (2, 2)
    assert model.index(0, 0).data(DISPLAY) == "gpt-4o-mini-2024-07-18"
    assert model.index(0, 0).data(TOOLTIP) == "gpt-4o-mini-2024-07-18"  # a long name may be elided
    assert model.index(0, 1).data(TOOLTIP) is None
    assert model.index(1, 1).data(ALIGN) == int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
    assert model.headerData(1, HORIZONTAL, DISPLAY) == "decided"
    assert model.headerData(1, HORIZONTAL, TOOLTIP) == "decided attempts"
    assert model.headerData(2, HORIZONTAL, DISPLAY) is None


def test_rows_of_any_kind_show_what_their_cell_function_says(qtmodeltester: ModelTester) -> None:
    def cell(row: tuple[str, int], column: int, role: int) -> Any:
        return (row[0], str(row[1]))[column] if role == DISPLAY else None

    model: RowsModel[tuple[str, int]] = RowsModel(["batch", "rows"], cell)
    model.set_rows([("march", 40)])
    qtmodeltester.check(model)
    assert model.rows == [("march", 40)]
    assert [model.index(0, c).data(DISPLAY) for c in range(2)] == ["march", "40"]
    assert model.headerData(0, HORIZONTAL, TOOLTIP) is None  # nothing to explain: no tooltip
    assert model.rowCount(model.index(0, 0)) == 0 and model.data(QModelIndex()) is None
