"""The demo workspace: real pipeline runs, on the scripted provider, over the demo corpus.

Nothing is inserted by hand: every task goes through TaskService and ReviewService exactly as an
analyst's would, so the demo shows what the product really records.
"""

from __future__ import annotations

from collections.abc import Callable

from core.config import Settings, ValidationMode
from core.domain import FeedbackAction
from core.domain.records import TaskRecord
from core.llm import LLMGateway
from core.resources import resource_path
from core.tasks.review import ReviewService
from core.tasks.service import TaskService
from core.tools.builtin import build_default_registry
from core.workspace import Workspace, open_corpus

DEMO_TASKS: list[tuple[str, str, str | None]] = [
    # (title, text, team)
    ("Tides", "What causes ocean tides, and how many high tides do most coasts see each day?", None),
    ("Speed of light", "What is the exact speed of light in a vacuum, and why is it exact?", None),
    ("Sirena Deep", "How deep is the Sirena Deep in the Mariana Trench?", None),
    ("Great Wall length", "How long is the Great Wall of China, counting all its branches?", None),
    (
        "Boiling point on Everest",
        "Compare the boiling point of water at sea level with its boiling point on the summit of Mount Everest.",
        None,
    ),
    (
        "Venus and bees briefing",
        "Brief me on two topics: the rotation of Venus and how honey bees communicate.",
        "team",
    ),
    ("Rosetta Stone", "What is the Rosetta Stone and why did it matter?", None),
    ("Antikythera mechanism", "What did the Antikythera mechanism compute?", None),
]


def demo_settings(base: Settings) -> Settings:
    """The workspace's settings with the demo's script, corpus and scripted models."""
    return base.model_copy(
        update={
            "script": resource_path("demo", "script.json"),
            "corpus": resource_path("demo", "corpus"),
            "agent_model": "scripted/agent",
            "validator_model": "scripted/validator",
            "planner_model": "scripted/planner",
            "max_tool_iterations": 8,
            "max_validation_attempts": 2,
            "validation_mode": ValidationMode.ALWAYS,
            "llm_num_retries": 1,
        }
    )


async def build_demo_workspace(
    ws: Workspace, *, on_task: Callable[[TaskRecord], None] | None = None
) -> list[TaskRecord]:
    """Run the demo tasks into ``ws``'s store; returns them in their resting statuses.

    Idempotent: a demo task already in the workspace (same title and text, not imported) is kept
    as it is, so loading the demo twice never duplicates a task or undoes an analyst's work on it.
    """
    settings = demo_settings(ws.settings)
    assert settings.corpus is not None
    corpus = open_corpus(settings.corpus)
    demo = Workspace(
        settings=settings,
        store=ws.store,
        gateway=LLMGateway(settings, retry_backoff_s=0.01),
        tools=build_default_registry(settings, corpus),
        bus=ws.bus,
        corpus=corpus,
    )
    service = TaskService(demo)
    review = ReviewService(service)
    team_file = str(resource_path("demo", "teams", "briefing.json"))
    results: list[TaskRecord] = []
    present = {(t.title, t.text): t for t in await ws.store.list_tasks() if not t.read_only}
    for title, text, team in DEMO_TASKS:
        if (title, text) in present:
            results.append(present[(title, text)])
            if on_task is not None:
                on_task(present[(title, text)])
            continue
        task = await service.create(text, title=title, team=team_file if team else None)
        task = await service.run(task.id)
        if title == "Rosetta Stone":
            task = await review.feedback(
                task.id,
                FeedbackAction.SATISFIED,
                expected_version=task.version,
                note="Checked against the source.",
            )
        elif title == "Antikythera mechanism":
            task = await review.feedback(
                task.id,
                FeedbackAction.ABANDON,
                expected_version=task.version,
                note="Out of scope for this review cycle.",
            )
        results.append(task)
        if on_task is not None:
            on_task(task)
    return results
