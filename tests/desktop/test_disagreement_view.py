"""The disagreement badge and the side-by-side passages of the team nodes that contradict each other."""

from __future__ import annotations

from typing import Any

from pytestqt.qtbot import QtBot

from core.domain.evidence import NodeRunResult
from core.domain.facts import NodeStatus
from core.domain.records import TaskRecord
from core.tasks.dossier import TaskDossier
from core.team.disagreement import find_disagreements
from desktop.views.task.detail import TaskDetailView
from tests.desktop.test_detail import attempt, packet, task_dict

A = "Mount Everest is 8,849 m tall, per the 2020 survey."
B = "The summit of Everest stands at 8,848 m above sea level <b>(1955 survey)</b>."  # markup stays text


def team_packet(index: int, texts: dict[str, str]) -> dict[str, Any]:
    nodes = [NodeRunResult(node_id=k, status=NodeStatus.SUCCEEDED, output_text=v) for k, v in texts.items()]
    pkt = packet(index, main_content="Survey data.")
    pkt["team_node_results"] = [n.model_dump(mode="json") for n in nodes]
    pkt["disagreements"] = [d.model_dump(mode="json") for d in find_disagreements(nodes)]
    return pkt


def dossier(*packets: dict[str, Any]) -> TaskDossier:
    return TaskDossier(
        task=TaskRecord.model_validate(task_dict(validation_outcome=None, attempt_count=len(packets))),
        attempts=[attempt(i, p) for i, p in enumerate(packets, start=1)],
        validations=[],
        feedback=[],
        sessions=[],
        events=[],
    )


def test_a_team_that_contradicts_itself_gets_the_badge_and_the_passages_side_by_side(qtbot: QtBot) -> None:
    view = TaskDetailView()
    qtbot.addWidget(view)
    view.resize(1200, 800)
    view.show()
    qtbot.waitExposed(view)
    view.set_dossier(dossier(team_packet(1, {"survey-a": A, "survey-b": B})))

    assert "⚠ 1 disagreement" in view.badge_texts()
    badge = next(b for b in view.badges if b.text() == "⚠ 1 disagreement")
    assert "survey-a, survey-b" in badge.toolTip() and "Disagreements tab" in badge.toolTip()
    position = view.tabs.indexOf(view.disagreement_view)
    assert view.tabs.isTabVisible(position)
    assert view.tabs.tabText(position) == "Disagreements (1)"

    shown = view.disagreement_view
    assert shown.passages() == [[("survey-a", A, ["8,849 m"]), ("survey-b", B, ["8,848 m"])]]
    assert shown.groups[0].title() == "everest — length (2 nodes)"
    view.tabs.setCurrentIndex(position)
    (_, (first,)), (_, (second,)) = shown.groups[0].columns
    qtbot.waitUntil(lambda: second.isVisible() and second.width() > 0, timeout=5000)
    left, right = first.mapTo(view, first.rect().topLeft()), second.mapTo(view, second.rect().topLeft())
    assert left.y() == right.y() and right.x() >= left.x() + first.width()  # side by side, not stacked


def test_no_badge_and_no_tab_when_the_nodes_agree_and_per_attempt(qtbot: QtBot) -> None:
    view = TaskDetailView()
    qtbot.addWidget(view)
    agreeing = team_packet(1, {"survey-a": "Everest is 8849 m.", "survey-b": "Everest is 8,849 metres."})
    view.set_dossier(dossier(agreeing, team_packet(2, {"survey-a": A, "survey-b": B})))
    position = view.tabs.indexOf(view.disagreement_view)
    assert "⚠ 1 disagreement" in view.badge_texts()  # the latest attempt is shown first

    view.select_attempt(1)
    assert not any(t.startswith("⚠") for t in view.badge_texts())
    assert not view.tabs.isTabVisible(position)
    assert view.disagreement_view.passages() == []
