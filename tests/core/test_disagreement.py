"""Sub-agent disagreement marks: the deterministic claim extractor and the mark on a team's packet."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from core.domain.disagreement import ClaimKind
from core.domain.evidence import NodeRunResult, TaskEvidencePacket
from core.domain.facts import NodeStatus
from core.tasks.service import TaskService
from core.team.disagreement import MAX_CHARS, extract_claims, find_disagreements
from core.workspace import Workspace
from tests.core.conftest import ScriptFactory


def node(node_id: str, text: str) -> NodeRunResult:
    return NodeRunResult(node_id=node_id, status=NodeStatus.SUCCEEDED, output_text=text)


def claims(text: str) -> list[tuple[str, str, str, str]]:
    return [(c.subject, c.kind.value, c.text, c.normalised()) for c in extract_claims(text)]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Mount Everest is 8,849 m tall.", [("everest", "length", "8,849 m", "8849 m")]),
        ("Everest measures 8849 metres.", [("everest", "length", "8849 metres", "8849 m")]),
        ("The Thames tunnel is 3.5 km long.", [("thames tunnel", "length", "3.5 km", "3500 m")]),
        ("Mt. Everest rises 29,032 ft.", [("everest", "length", "29,032 ft", "8848.9536 m")]),
        ("In Norway, 42% of cars sold are electric.", [("norway", "percent", "42%", "42 %")]),
        ("Norway reached 42 per cent.", [("norway", "percent", "42 per cent", "42 %")]),
        ("The Acme grant was $1.2 million.", [("acme grant", "money", "$1.2 million", "1200000 USD")]),
        ("Lake Baikal covers 31,722 km².", [("baikal", "area", "31,722 km²", "31722 km²")]),
    ],
)
def test_numbers_with_units_are_normalised(text: str, expected: list[tuple[str, str, str, str]]) -> None:
    assert claims(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "Hillary reached the top on 1953-05-29.",
        "Hillary reached the top on 29 May 1953.",
        "Hillary reached the top on May 29, 1953.",
        "Hillary reached the top on 29th May, 1953.",
    ],
)
def test_dates_in_three_forms_are_one_date(text: str) -> None:
    [(subject, kind, _, value)] = claims(text)
    assert (subject, kind, value) == ("hillary", "date", "1953-05-29")


def test_one_letter_units_need_a_space_before_them() -> None:
    """ "1990s" vs "2020s" is no duration and "5G" vs "4G" no mass; "5 g" still is."""
    assert claims("The style peaked in the 1990s.") == []
    assert claims("The Acme phone supports 5G networks.") == []
    assert claims("Two nodes disagree: 1990s, 2020s; 5G, 4G.") == []
    assert claims("The Acme sample weighs 5 g.") == [("acme sample", "mass", "5 g", "0.005 kg")]
    assert claims("The Acme sample weighs 5kg.") == [("acme sample", "mass", "5kg", "5 kg")]


def test_impossible_dates_and_bare_numbers_are_no_claims() -> None:
    assert claims("Everest was climbed in 1953 by a team of 400.") == []
    assert claims("The log says Everest 2024-13-45.") == []


def test_quoted_names_are_claims_and_quoted_sentences_are_not() -> None:
    assert claims("The British survey called Everest “Peak XV”.") == [
        ("everest", "name", "“Peak XV”", "peak xv")
    ]
    assert claims('Everest, a guide said, is "a long walk and a hard climb".') == []


def test_the_subject_is_the_entity_nearest_the_value() -> None:
    got = claims("Everest is 8,849 m tall, or 29,032 ft, and K2 is 8,611 m.")
    assert [(s, v) for s, _, _, v in got] == [
        ("everest", "8849 m"),
        ("everest", "8848.9536 m"),
        ("k2", "8611 m"),
    ]


def test_8849_m_against_8848_m_for_the_same_summit_is_a_disagreement() -> None:
    found = find_disagreements(
        [
            node("survey-a", "Mount Everest is 8,849 m tall, per the 2020 survey."),
            node("survey-b", "The summit of Everest stands at 8,848 m above sea level."),
        ]
    )
    assert len(found) == 1
    (mark,) = found
    assert (mark.subject, mark.kind, mark.unit) == ("everest", ClaimKind.LENGTH, "m")
    assert [(s.node_id, s.value, s.normalised) for s in mark.statements] == [
        ("survey-a", "8,849 m", "8849 m"),
        ("survey-b", "8,848 m", "8848 m"),
    ]
    b = mark.statements[1]
    assert b.passage == "The summit of Everest stands at 8,848 m above sea level."
    start, end = b.value_in_passage
    assert b.passage[start:end] == "8,848 m"
    assert mark.summary() == "everest (length): node 'survey-a' says 8,849 m; node 'survey-b' says 8,848 m"


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("Everest is 8849 m high.", "Everest is 8,849 m high."),  # one value, two spellings
        ("Everest is 8,849 m high.", "Everest is 8849 metres high."),  # unit alias
        ("Everest is 8,849 m high.", "Everest is 29,032 ft high."),  # other unit, within its rounding
        ("The tunnel to Dover is 3.5 km.", "The tunnel to Dover is 3,520 m."),  # 3.5 km is rounded
        ("Everest is 8,849 m high.", "K2 is 8,611 m high."),  # different subjects
        ("Everest is 8,849 m high.", "Everest was climbed on 29 May 1953."),  # different kinds
        ("Everest is 8,849 m (2020) or 8,848 m (1955).", "Everest is 8,848 m."),  # b states one of a's
        ("Everest is 8,849 m high.", "Everest base camp is at 5,364 m."),  # a narrower subject
    ],
)
def test_no_false_positive(a: str, b: str) -> None:
    assert find_disagreements([node("a", a), node("b", b)]) == []


def test_other_units_disagree_beyond_rounding_and_dates_and_names_disagree() -> None:
    found = find_disagreements(
        [
            node(
                "a",
                "Everest is 29,032 ft. Hillary reached the top on 29 May 1953. The British named Everest “Peak XV”.",
            ),
            node(
                "b",
                'Everest is 8,848 m. Hillary reached the top on 1953-05-30. The British named Everest "Peak 15".',
            ),
            node("c", "Nothing to add."),
        ]
    )
    assert [(d.subject, d.kind.value, [s.normalised for s in d.statements]) for d in found] == [
        ("everest", "length", ["8848.9536 m", "8848 m"]),
        ("hillary", "date", ["1953-05-29", "1953-05-30"]),
        ("everest", "name", ["peak xv", "peak 15"]),
    ]


def test_packets_recorded_before_marks_still_load() -> None:
    packet = TaskEvidencePacket.model_validate({"task_id": "t", "attempt_index": 1})
    assert packet.disagreements == []


async def test_a_team_whose_nodes_disagree_gets_the_mark_on_its_synthesis_evidence(
    make_settings: ScriptFactory, sqlite_url: str, tmp_path: Path
) -> None:
    team = tmp_path / "team.json"
    team.write_text(
        json.dumps(
            {
                "mode": "parallel",
                "nodes": [
                    {"id": "survey-a", "role": "surveyor", "task": "Find Everest's height"},
                    {"id": "survey-b", "role": "surveyor", "task": "Check Everest's height"},
                ],
            }
        )
    )
    accepted = json.dumps(
        {
            "goal_achievement": "g",
            "completeness": "c",
            "rule_compliance": "r",
            "status": "accepted",
            "score": 0.9,
        }
    )
    settings = make_settings(
        [
            {"model": "agent", "match": "source of truth", "turns": [{"content": "Everest is 8,849 m."}]},
            {
                "model": "agent",
                "match": "node 'survey-a'",
                "turns": [{"content": "Mount Everest is 8,849 m."}],
            },
            {
                "model": "agent",
                "match": "node 'survey-b'",
                "turns": [{"content": "Everest stands at 8,848 m."}],
            },
            {"model": "validator", "turns": [{"content": accepted}]},
        ],
        db_url=sqlite_url,
    )
    ws = await Workspace.open(settings)
    try:
        service = TaskService(ws)
        task = await service.run((await service.create("How high is Everest?", team=str(team))).id)
        (attempt,) = await ws.store.list_attempts(task.id)
        packet = TaskEvidencePacket.model_validate(attempt.packet)
        (mark,) = packet.disagreements
        assert mark.subject == "everest"
        assert [(s.node_id, s.value) for s in mark.statements] == [
            ("survey-a", "8,849 m"),
            ("survey-b", "8,848 m"),
        ]
        requests = await ws.store.get_session_events(task.main_session_id or "", kinds=["run_started"])
        synthesis = json.dumps([e.payload for e in requests])
        assert "The team's nodes disagree" in synthesis  # the synthesis was told
        (validation,) = await ws.store.list_validations(task.id)
        prompt = json.dumps(validation.prompt)
        assert "node 'survey-a' says 8,849 m; node 'survey-b' says 8,848 m" in prompt  # and the validator
    finally:
        await ws.close()


def test_only_the_first_max_chars_of_an_answer_are_read() -> None:
    padding = "Filler text. " * (MAX_CHARS // 13 + 1)
    late = node("a", padding + "Everest is 8,849 m.")
    assert find_disagreements([late, node("b", "Everest is 8,848 m.")]) == []
    early = node("a", "Everest is 8,849 m. " + padding)
    assert len(find_disagreements([early, node("b", "Everest is 8,848 m.")])) == 1
