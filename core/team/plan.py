"""Team plans: which agents run, with which tools, in what order.

A plan is checked completely before the first model call (structure when the model is built, tool
names against the registry in :meth:`TeamPlan.validate_against`), because a plan that fails halfway
leaves an attempt with partial evidence and spent tokens for a mistake a parser could have caught.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from core.errors import ConfigurationError, InputError
from core.inputs import parse_json_text, parse_toml_text, read_input_text
from core.profiles import ModelRole

if TYPE_CHECKING:
    from core.config import Settings
    from core.llm import LLMGateway
    from core.llm.structured import SchemaFailure

__all__ = [
    "PLANNER_INSTRUCTIONS",
    "PlanError",
    "TeamNode",
    "TeamPlan",
    "load_team_plan",
    "parse_team_plan",
    "plan_with_model",
    "team_plan_from_text",
]

TeamMode = Literal["sequence", "parallel", "dag"]


class PlanError(ConfigurationError):
    """A team plan that cannot run: bad structure, unknown tools, unreadable template."""


class TeamNode(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
    role: str = Field(min_length=1, description="Role instructions: who this agent is and how it works.")
    task: str = Field(min_length=1, description="What this node must find out or produce.")
    tools: list[str] = Field(
        default_factory=list, description="Tools this node may call; an empty list means no tools."
    )
    max_tool_iterations: int | None = Field(default=None, ge=0, le=200)
    depends_on: list[str] = Field(
        default_factory=list, description="Ids of nodes whose evidence this node reads (mode dag only)."
    )


def _find_cycle(deps: dict[str, list[str]]) -> list[str] | None:
    """One cycle as a path (first node repeated at the end), or None; iterative DFS, declaration order."""
    white, grey, black = 0, 1, 2
    colour = dict.fromkeys(deps, white)
    for start in deps:
        if colour[start] != white:
            continue
        stack: list[tuple[str, int]] = [(start, 0)]
        path: list[str] = [start]
        colour[start] = grey
        while stack:
            node, i = stack[-1]
            if i < len(deps[node]):
                stack[-1] = (node, i + 1)
                nxt = deps[node][i]
                if colour[nxt] == grey:
                    return [*path[path.index(nxt) :], nxt]
                if colour[nxt] == white:
                    colour[nxt] = grey
                    stack.append((nxt, 0))
                    path.append(nxt)
            else:
                colour[node] = black
                stack.pop()
                path.pop()
    return None


class TeamPlan(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: str = "team"
    mode: TeamMode
    nodes: list[TeamNode] = Field(min_length=1, max_length=64)
    synthesis_max_tool_iterations: int = Field(default=0, ge=0, le=2)

    @model_validator(mode="after")
    def _check_structure(self) -> TeamPlan:
        seen: set[str] = set()
        duplicates = []
        for node in self.nodes:
            if node.id in seen and node.id not in duplicates:
                duplicates.append(node.id)
            seen.add(node.id)
        if duplicates:
            raise ValueError(f"duplicate node id(s): {', '.join(duplicates)}")
        if self.mode != "dag":
            given = [n.id for n in self.nodes if n.depends_on]
            if given:
                raise ValueError(
                    f"depends_on is only allowed in mode 'dag' (mode is '{self.mode}'); "
                    f"nodes with depends_on: {', '.join(given)}"
                )
            return self
        for node in self.nodes:
            if node.id in node.depends_on:
                raise ValueError(f"node '{node.id}' depends on itself")
            unknown = [d for d in node.depends_on if d not in seen]
            if unknown:
                raise ValueError(
                    f"node '{node.id}' depends on unknown node(s): {', '.join(unknown)}; "
                    f"nodes in the plan: {', '.join(n.id for n in self.nodes)}"
                )
            if len(set(node.depends_on)) != len(node.depends_on):
                raise ValueError(f"node '{node.id}' lists a dependency twice")
        cycle = _find_cycle({n.id: list(n.depends_on) for n in self.nodes})
        if cycle is not None:
            raise ValueError(f"dependency cycle: {' -> '.join(cycle)}")
        return self

    def node(self, node_id: str) -> TeamNode:
        for node in self.nodes:
            if node.id == node_id:
                return node
        raise KeyError(node_id)

    def dependencies(self, node_id: str) -> list[str]:
        """Effective upstream nodes: ``depends_on`` in a DAG, the previous node in a sequence."""
        if self.mode == "dag":
            return list(self.node(node_id).depends_on)
        if self.mode == "sequence":
            ids = [n.id for n in self.nodes]
            i = ids.index(node_id)
            return [ids[i - 1]] if i > 0 else []
        return []

    def all_tools(self) -> list[str]:
        names: list[str] = []
        for node in self.nodes:
            names.extend(t for t in node.tools if t not in names)
        return names

    def validate_against(self, tool_names: Sequence[str]) -> None:
        """Refuse tools the registry does not have, naming the node, the tool and what exists."""
        available = set(tool_names)
        problems = [
            f"node '{node.id}' uses unknown tool(s) {', '.join(unknown)}"
            for node in self.nodes
            if (unknown := [t for t in node.tools if t not in available])
        ]
        if problems:
            raise PlanError(
                f"team plan '{self.id}': {'; '.join(problems)}; "
                f"available tools: {', '.join(tool_names) or 'none'}"
            )

    def batches(self) -> list[list[TeamNode]]:
        """Topological layers; within a layer, declaration order (this is the plan's graph order)."""
        if self.mode == "parallel":
            return [list(self.nodes)]
        if self.mode == "sequence":
            return [[node] for node in self.nodes]
        done: set[str] = set()
        remaining = list(self.nodes)
        layers: list[list[TeamNode]] = []
        while remaining:
            layer = [n for n in remaining if all(d in done for d in n.depends_on)]
            if not layer:  # unreachable after validation; kept so a bug cannot loop forever
                raise PlanError(f"team plan '{self.id}': dependency cycle among {[n.id for n in remaining]}")
            layers.append(layer)
            done.update(n.id for n in layer)
            remaining = [n for n in remaining if n.id not in done]
        return layers

    def graph_order(self) -> list[str]:
        return [node.id for batch in self.batches() for node in batch]


def _json_path(loc: Sequence[int | str]) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "(top level)"


def _describe(exc: ValidationError) -> str:
    problems = []
    for err in exc.errors()[:5]:
        msg = str(err["msg"]).removeprefix("Value error, ")
        problems.append(f"{_json_path(err['loc'])}: {msg}")
    more = f" (and {exc.error_count() - 5} more)" if exc.error_count() > 5 else ""
    return "; ".join(problems) + more


def parse_team_plan(data: Any, *, source: str = "team plan") -> TeamPlan:
    """Validate a decoded plan, turning pydantic's error list into one readable ``PlanError``."""
    try:
        return TeamPlan.model_validate(data)
    except ValidationError as exc:
        raise PlanError(f"invalid {source}: {_describe(exc)}") from None


def load_team_plan(path: Path) -> TeamPlan:
    """Read a team template (``.toml`` or ``.json``); every failure names the file and the problem."""
    path = Path(path)
    _check_suffix(path.name, path)
    try:
        text = read_input_text(path, what="team template")
    except InputError as exc:
        raise PlanError(str(exc)) from None
    return team_plan_from_text(text, path.name, source=path)


def team_plan_from_text(text: str, name: str, *, source: object = None) -> TeamPlan:
    """A team template's text, read from a file or from the workspace where a queued task keeps it
    (``core.domain.carried``); ``name``'s suffix chooses the parser, ``source`` names it in errors."""
    where = source if source is not None else name
    suffix = _check_suffix(name, where)
    try:
        parse = parse_toml_text if suffix == ".toml" else parse_json_text
        data: Any = parse(text, what="team template", source=where)
    except InputError as exc:
        raise PlanError(str(exc)) from None
    return parse_team_plan(data, source=f"team template {where}")


def _check_suffix(name: str, where: object) -> str:
    suffix = Path(name).suffix.lower()
    if suffix not in (".toml", ".json"):
        raise PlanError(
            f"team template {where}: unsupported file type '{Path(name).suffix}' (use .toml or .json)"
        )
    return suffix


PLANNER_INSTRUCTIONS = """\
You plan a small team of research agents for the task below. Reply with one JSON object matching \
the schema: "mode" is "sequence", "parallel" or "dag"; "nodes" is a list of agents, each with a \
short unique "id", "role" (instructions for that agent), "task" (what it must find out), "tools" \
(chosen only from the available tools) and, in mode "dag" only, "depends_on" (ids of nodes whose \
results it needs). Use as few nodes as the task needs (at most 6). A final writer will combine the \
team's evidence; do not add a node for that.

Available tools: {tools}
"""


async def plan_with_model(
    gateway: LLMGateway,
    settings: Settings,
    *,
    task_text: str,
    tool_names: list[str],
    on_failure: Callable[[SchemaFailure], Awaitable[None]] | None = None,
) -> tuple[TeamPlan | None, list[str]]:
    """Ask the planner model for a plan; a malformed or unusable plan means ``(None, [warning])``.

    A bad plan must never stop the task: the caller falls back to a single agent and records the
    warning, so the analyst sees why no team ran. Structure problems (cycles, duplicate ids) and
    unknown tools are fed back to the planner as schema re-asks first, so it can repair the plan.
    """
    from core.llm.structured import SchemaViolation, check_structured, complete_structured

    def parse(raw: str) -> TeamPlan:
        value, problem = check_structured(raw, TeamPlan)
        if problem is not None:
            stage, message = problem
            raise SchemaViolation(message, stage=stage)
        plan: TeamPlan = value
        try:
            plan.validate_against(tool_names)
        except PlanError as exc:
            raise SchemaViolation(str(exc)) from None
        return plan

    messages = [
        {"role": "system", "content": PLANNER_INSTRUCTIONS.format(tools=", ".join(tool_names) or "none")},
        {"role": "user", "content": task_text},
    ]
    outcome = await complete_structured(
        gateway,
        model=settings.planner_model,
        messages=messages,
        output=TeamPlan,
        max_retries=settings.max_schema_retries,
        fallback_model=settings.schema_fallback_model,
        stuck_after=settings.schema_stuck_after,
        on_failure=on_failure,
        parse=parse,
        role=ModelRole.PLANNER,
        fallback_role=ModelRole.PLANNER_FALLBACK,
    )
    if outcome.status != "ok" or not isinstance(outcome.value, TeamPlan):
        why = outcome.error or "no plan returned"
        # Tier 3, the planner's canned fallback: no team, a single agent.
        return None, [
            f"the planner returned no usable team plan ({outcome.status}: {why}); ran a single agent instead"
        ]
    return outcome.value, []
