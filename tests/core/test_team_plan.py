from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from core.config import Settings, load_settings
from core.errors import ConfigurationError
from core.llm import LLMGateway, reset_scripted_stats, scripted_stats
from core.team import PlanError, TeamPlan, load_team_plan, parse_team_plan, plan_with_model
from core.tools.builtin import build_default_registry
from tests.core.conftest import ScriptFactory

REPO = Path(__file__).resolve().parents[2]


def _node(node_id: str, *deps: str, tools: list[str] | None = None) -> dict[str, Any]:
    return {
        "id": node_id,
        "role": f"role of {node_id}",
        "task": f"task of {node_id}",
        "tools": tools or [],
        "depends_on": list(deps),
    }


def _ids(batches: list[list[Any]]) -> list[list[str]]:
    return [[n.id for n in batch] for batch in batches]


def test_sequence_is_one_node_per_batch_each_reading_the_previous() -> None:
    plan = TeamPlan(mode="sequence", nodes=[_node("a"), _node("b"), _node("c")])
    assert _ids(plan.batches()) == [["a"], ["b"], ["c"]]
    assert [plan.dependencies(n) for n in ("a", "b", "c")] == [[], ["a"], ["b"]]


def test_parallel_is_one_batch_without_dependencies() -> None:
    plan = TeamPlan(mode="parallel", nodes=[_node("a"), _node("b"), _node("c")])
    assert _ids(plan.batches()) == [["a", "b", "c"]]
    assert plan.dependencies("b") == []


def test_dag_layers_keep_declaration_order_within_a_layer() -> None:
    nodes = [_node("join", "x", "y"), _node("y"), _node("x"), _node("late", "join"), _node("free")]
    plan = TeamPlan(mode="dag", nodes=nodes)
    assert _ids(plan.batches()) == [["y", "x", "free"], ["join"], ["late"]]
    assert plan.graph_order() == ["y", "x", "free", "join", "late"]
    assert plan.dependencies("join") == ["x", "y"]


@pytest.mark.parametrize(
    ("mode", "nodes", "expected"),
    [
        ("dag", [_node("a", "c"), _node("b", "a"), _node("c", "b")], "dependency cycle: a -> c -> b -> a"),
        ("dag", [_node("a", "a")], "node 'a' depends on itself"),
        ("dag", [_node("a", "ghost")], "node 'a' depends on unknown node(s): ghost"),
        ("dag", [_node("a"), _node("b"), _node("a")], "duplicate node id(s): a"),
        ("parallel", [_node("a"), _node("b", "a")], "depends_on is only allowed in mode 'dag'"),
        ("sequence", [_node("a", "b"), _node("b")], "depends_on is only allowed in mode 'dag'"),
        ("dag", [], "at least 1 item"),
    ],
)
def test_structural_errors_are_refused_with_a_clear_message(
    mode: str, nodes: list[dict[str, Any]], expected: str
) -> None:
    with pytest.raises(ValidationError, match=expected.replace("(", r"\(").replace(")", r"\)")):
        TeamPlan.model_validate({"mode": mode, "nodes": nodes})
    with pytest.raises(PlanError, match="invalid team plan") as info:
        parse_team_plan({"mode": mode, "nodes": nodes})
    assert expected in str(info.value)
    assert isinstance(info.value, ConfigurationError)


def test_synthesis_tool_budget_is_capped_at_two() -> None:
    TeamPlan(mode="parallel", nodes=[_node("a")], synthesis_max_tool_iterations=2)
    with pytest.raises(ValidationError, match="less than or equal to 2"):
        TeamPlan(mode="parallel", nodes=[_node("a")], synthesis_max_tool_iterations=3)


def test_unknown_tools_are_refused_naming_node_tool_and_available() -> None:
    plan = TeamPlan(
        mode="parallel", nodes=[_node("a", tools=["lookup"]), _node("b", tools=["nope", "lookup"])]
    )
    plan.validate_against(["lookup", "nope"])
    with pytest.raises(PlanError) as info:
        plan.validate_against(["lookup", "other"])
    assert str(info.value) == (
        "team plan 'team': node 'b' uses unknown tool(s) nope; available tools: lookup, other"
    )


def test_load_team_plan_reads_toml_and_json(tmp_path: Path) -> None:
    toml_file = tmp_path / "t.toml"
    toml_file.write_text(
        'mode = "dag"\nid = "t"\n[[nodes]]\nid = "a"\nrole = "r"\ntask = "t"\n'
        '[[nodes]]\nid = "b"\nrole = "r"\ntask = "t"\ndepends_on = ["a"]\n',
        encoding="utf-8",
    )
    assert _ids(load_team_plan(toml_file).batches()) == [["a"], ["b"]]
    json_file = tmp_path / "t.json"
    json_file.write_text(
        json.dumps({"mode": "parallel", "nodes": [_node("x"), _node("y")]}), encoding="utf-8"
    )
    assert load_team_plan(json_file).graph_order() == ["x", "y"]


@pytest.mark.parametrize(
    ("name", "text", "expected"),
    [
        ("t.yaml", "mode: dag", "unsupported file type '.yaml'"),
        ("t.toml", "mode = ", "is not valid TOML"),
        ("t.json", "{", "is not valid JSON: Expecting property name"),
        ("t.json", '{"mode": "swarm", "nodes": []}', "mode: Input should be 'sequence', 'parallel' or 'dag'"),
        (
            "t.toml",
            'mode = "dag"\n[[nodes]]\nid = "a"\nrole = "r"\ntask = "t"\ndepends_on = ["a"]\n',
            "itself",
        ),
    ],
)
def test_load_team_plan_names_the_file_and_the_problem(
    tmp_path: Path, name: str, text: str, expected: str
) -> None:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    with pytest.raises(PlanError) as info:
        load_team_plan(path)
    assert str(path) in str(info.value) and expected in str(info.value)


def test_missing_template_is_a_configuration_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match="cannot read team template"):
        load_team_plan(tmp_path / "absent.toml")


def test_shipped_templates_load_and_use_only_builtin_tools() -> None:
    registry = build_default_registry(load_settings(), None)
    templates = sorted((REPO / "resources" / "teams").glob("*.*"))
    assert {p.suffix for p in templates} == {".toml", ".json"}
    for path in templates:
        plan = load_team_plan(path)
        plan.validate_against(registry.names())
        assert plan.batches()


# ---------------------------------------------------------------- planner (structured output)
def _plan_json(*nodes: dict[str, Any], mode: str = "parallel") -> str:
    return json.dumps({"id": "auto", "mode": mode, "nodes": list(nodes)})


async def test_planner_returns_a_validated_plan(
    make_settings: ScriptFactory, gateway_for: Callable[[Settings], LLMGateway]
) -> None:
    raw = _plan_json(_node("a", tools=["lookup"]), _node("b", "a"), mode="dag")
    settings = make_settings([{"model": "planner", "turns": [{"content": raw}]}])
    reset_scripted_stats()
    plan, warnings = await plan_with_model(
        gateway_for(settings), settings, task_text="plan QUESTION", tool_names=["lookup"]
    )
    assert warnings == []
    assert plan is not None and plan.id == "auto" and _ids(plan.batches()) == [["a"], ["b"]]
    (request,) = scripted_stats().requests
    assert request.model == "planner" and request.response_format


async def test_planner_repairs_an_unknown_tool_after_feedback(
    make_settings: ScriptFactory, gateway_for: Callable[[Settings], LLMGateway]
) -> None:
    turns = [{"content": _plan_json(_node("a", tools=["web_search"]))}, {"content": _plan_json(_node("a"))}]
    settings = make_settings([{"model": "planner", "turns": turns}], max_schema_retries=1)
    failures: list[Any] = []

    async def on_failure(failure: Any) -> None:
        failures.append(failure)

    plan, warnings = await plan_with_model(
        gateway_for(settings), settings, task_text="q", tool_names=["lookup"], on_failure=on_failure
    )
    assert plan is not None and warnings == [] and plan.nodes[0].tools == []
    assert len(failures) == 1 and "unknown tool(s) web_search" in failures[0].message


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        ("here is my plan: none", "schema-stuck-loop"),
        (_plan_json(_node("a", "b"), _node("b", "a"), mode="dag"), "dependency cycle: a -> b -> a"),
        (_plan_json(_node("a", tools=["web_search"])), "unknown tool(s) web_search"),
    ],
)
async def test_malformed_planner_output_falls_back_with_a_warning(
    make_settings: ScriptFactory, gateway_for: Callable[[Settings], LLMGateway], reply: str, expected: str
) -> None:
    settings = make_settings([{"model": "planner", "turns": [{"content": reply}] * 3}], max_schema_retries=2)
    plan, warnings = await plan_with_model(
        gateway_for(settings), settings, task_text="q", tool_names=["lookup"]
    )
    assert plan is None
    assert len(warnings) == 1 and "single agent" in warnings[0] and expected in warnings[0]


async def test_planner_transport_error_falls_back_with_a_warning(
    make_settings: ScriptFactory, gateway_for: Callable[[Settings], LLMGateway]
) -> None:
    settings = make_settings([{"model": "planner", "turns": [{"error": "server_error"}]}], llm_num_retries=0)
    plan, warnings = await plan_with_model(gateway_for(settings), settings, task_text="q", tool_names=[])
    assert plan is None and "transport-error" in warnings[0]
