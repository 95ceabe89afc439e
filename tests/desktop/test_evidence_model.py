"""The evidence tree model: Qt's model contract, structure, and ids that match the validator's."""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import QModelIndex, Qt
from pytestqt.modeltest import ModelTester
from pytestqt.qtbot import QtBot

from core.domain.evidence import TaskEvidencePacket
from core.evidence.render import render_packet, render_task
from desktop.models.evidence_model import EvidenceTreeModel
from desktop.views.task.evidence import EvidenceView


def packet_dict() -> dict[str, Any]:
    return {
        "task_id": "t1",
        "attempt_index": 1,
        "main_run": {
            "run_id": "r-main",
            "session_id": "s-main",
            "output_text": "The answer.",
            "finish_reason": "stop",
            "transcript": [
                {"role": "user", "content": "What is the boiling point?"},
                {"role": "assistant", "content": None, "tool_calls": [{"id": "c1"}]},
            ],
            "tool_results": [
                {"tool_name": "search_docs", "tool_call_id": "c1", "content": "Water boils at 100 C."},
                {"tool_name": "read_document", "content": "not found", "is_error": True, "title": "notes.md"},
            ],
        },
        "team_node_results": [
            {
                "node_id": "checker",
                "role": "fact checker",
                "status": "failed",
                "finish_reason": "error",
                "error": "tool budget exhausted",
                "evidence": {
                    "run_id": "r-node",
                    "session_id": "s-node",
                    "finish_reason": "error",
                    "tool_results": [{"tool_name": "search_docs", "content": "Altitude lowers it."}],
                },
            }
        ],
        "final_output": "The answer.",
    }


def make_model() -> tuple[EvidenceTreeModel, TaskEvidencePacket]:
    packet = TaskEvidencePacket.model_validate(packet_dict())
    model = EvidenceTreeModel()
    model.set_packet(packet)
    return model, packet


def labels(model: EvidenceTreeModel, parent: QModelIndex) -> list[str]:
    return [model.index(r, 0, parent).data() for r in range(model.rowCount(parent))]


def test_model_passes_qt_model_tester(qtmodeltester: ModelTester) -> None:
    model, _ = make_model()
    qtmodeltester.check(model)
    model.set_packet(None)
    qtmodeltester.check(model)
    assert model.rowCount() == 0


def test_tree_structure_and_details() -> None:
    model, _ = make_model()
    root = QModelIndex()
    assert labels(model, root) == ["Main run", "Team", "Final output"]
    main = model.index(0, 0, root)
    assert labels(model, main) == ["Transcript", "search_docs", "notes.md"]
    transcript = model.index(0, 0, main)
    assert model.rowCount(transcript) == 2
    assert "boiling point" in model.index(0, 0, transcript).data(EvidenceTreeModel.ContentRole)
    error_row = model.index(2, 2, main).data()
    assert "read_document" in error_row and "ERROR" in error_row
    team = model.index(1, 0, root)
    node = model.index(0, 0, team)
    assert node.data() == "checker (fact checker)"
    assert model.index(0, 2, team).data().startswith("failed · error")
    assert node.data(Qt.ItemDataRole.ForegroundRole) is not None  # failed nodes stand out
    assert "tool budget exhausted" in node.data(EvidenceTreeModel.ContentRole)
    final = model.index(2, 0, root)
    assert final.data(EvidenceTreeModel.ContentRole) == "The answer."
    assert model.index(2, 1, root).data() == ""  # the validator never saw the final output as an item


def test_evidence_ids_match_what_the_validator_rendered() -> None:
    model, packet = make_model()
    rendered = render_packet(packet, include_final_output=False).items
    assert [i.evidence_id for i in rendered] == ["E1", "E2", "E3"]
    for item in rendered:
        index = model.index_for_evidence_id(item.evidence_id)
        assert index.isValid()
        assert index.data(EvidenceTreeModel.ContentRole) == item.content
        assert model.index(index.row(), 1, index.parent()).data() == item.evidence_id
    node_item = model.index_for_evidence_id("[e3]")
    assert node_item.parent().data() == "checker (fact checker)"
    assert not model.index_for_evidence_id("E9").isValid()


def attempt_packets() -> list[TaskEvidencePacket]:
    """Attempt 1 searched (E1) and answered (E2); attempt 2 searched again (E3) before answering."""

    def one(index: int, start: int, result: str, answer: str) -> TaskEvidencePacket:
        run = {
            "run_id": f"r{index}",
            "session_id": "s-main",
            "finish_reason": "stop",
            "tool_results": [{"tool_name": "search_docs", "tool_call_id": f"c{index}", "content": result}],
        }
        return TaskEvidencePacket.model_validate(
            {
                "task_id": "t1",
                "attempt_index": index,
                "main_run": run,
                "final_output": answer,
                "evidence_id_start": start,
            }
        )

    return [one(1, 1, "Water boils at 100 C.", "100 C"), one(2, 3, "At sea level.", "100 C at sea level")]


def test_attempts_are_grouped_and_new_items_marked(qtmodeltester: ModelTester) -> None:
    packets = attempt_packets()
    model = EvidenceTreeModel()
    model.set_packets(packets)
    qtmodeltester.check(model)
    root = QModelIndex()
    assert labels(model, root) == ["Attempt 1", "Attempt 2"]
    first, second = model.index(0, 0, root), model.index(1, 0, root)
    assert model.index(0, 2, root).data() == "earlier attempt · 1 item"
    assert model.index(1, 2, root).data() == "under review · 1 new item"
    assert labels(model, first) == labels(model, second) == ["Main run", "Final output"]
    # The answer under review is not an item (the validator judged it, it did not cite it).
    assert model.index(1, 1, first).data() == "E2" and model.index(1, 1, second).data() == ""
    # Ids are the validator's of attempt 2 (render_task): attempt 1's answer is the item E2.
    rendered = render_task(packets).items
    assert [(i.evidence_id, i.attempt_index) for i in rendered] == [("E1", 1), ("E2", 1), ("E3", 2)]
    for item in rendered:
        index = model.index_for_evidence_id(item.evidence_id)
        assert index.data(EvidenceTreeModel.ContentRole) == item.content
        assert index.data(EvidenceTreeModel.NewRole) is (item.attempt_index == 2)
        group = index.parent().parent() if item.kind == "tool_result" else index.parent()
        assert group.data() == f"Attempt {item.attempt_index}"
    e3 = model.index_for_evidence_id("E3")
    assert model.index(e3.row(), 2, e3.parent()).data().startswith("new · ")
    assert e3.data(Qt.ItemDataRole.BackgroundRole) is not None
    e1 = model.index_for_evidence_id("E1")
    assert not model.index(e1.row(), 2, e1.parent()).data().startswith("new")


def test_packets_without_task_wide_ids_are_shown_as_one_attempt() -> None:
    legacy = [p.model_copy(update={"evidence_id_start": None}) for p in attempt_packets()]
    model = EvidenceTreeModel()
    model.set_packets(legacy)
    assert labels(model, QModelIndex()) == ["Main run", "Final output"]
    assert model.index_for_evidence_id("E1").data(EvidenceTreeModel.ContentRole) == "At sea level."
    model.set_packets(attempt_packets()[:1])
    assert labels(model, QModelIndex()) == ["Main run", "Final output"]


def test_view_opens_on_the_first_new_item(qtbot: QtBot) -> None:
    view = EvidenceView()
    qtbot.addWidget(view)
    view.set_packets(attempt_packets())
    assert view.current_evidence_id() == "E3"
    assert view.viewer.text() == "At sea level."
    assert view.show_quote("E1", "100 C")  # earlier evidence stays citable under its id
    view.set_packets([attempt_packets()[0], None])
    assert view.model.rowCount() == 0
