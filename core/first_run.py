"""A first run that works: with no model provider configured, replay the demo's script offline.

The default models are ``scripted/*``, which answer only from a script. Without one every task
would fail at its first call, so a fresh desk would leave nothing but ``failed`` tasks. Instead the
desk starts on the *replay model*: the demo's bundled script, plus a catch-all conversation that
answers any other question with a plain note that no real model is configured, and a verdict that
sends it to review. New task and Revise therefore work offline, and nothing says "accepted" that
no model judged. The same stands in for every other role left on a scripted model with no script:
a profile saved for the agent alone leaves the validator and the planner on their defaults, and
those must not turn into a task that cannot be created.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import platformdirs

from core.config import APP_NAME, Settings
from core.llm.scripted import PROVIDER_NAME
from core.profiles import ModelRole, role_model
from core.resources import resource_path

REPLAY_FILE = "replay-script.json"
REPLAY_TURNS = 12  # a revision replays the earlier answers: one turn per assistant message so far
REPLAY_ANSWER = (
    "This answer comes from the offline replay model: no model provider is configured, so no model "
    "read your question. Open Settings to choose a model (local ones are detected there)."
)
REPLAY_NOTICE = (
    "no model provider is configured: answering with the offline replay model (the demo's script; "
    "any other question gets a placeholder that goes to review); see the README's 'Use a real model'."
)
REPLAY_VERDICT: dict[str, Any] = {
    "goal_achievement": "not judged: the offline replay model stood in for the validator",
    "completeness": "not judged",
    "rule_compliance": "not judged",
    "status": "insufficient_evidence",
    "score": 0.0,
    "issues": [
        "No validator model is configured, so the offline replay model stood in: nobody judged this "
        "answer. Choose a validator in Settings → Model profiles."
    ],
    "recommended_revision_prompt": "",
    "category": "none",
    "citations": [],
}
# A planner that is not configured plans one agent with no tools: the task still runs, as one agent.
REPLAY_PLAN: dict[str, Any] = {
    "mode": "sequence",
    "nodes": [
        {
            "id": "answer",
            "role": "You answer the task as one agent (the offline replay model planned no team).",
            "task": "Answer the task.",
            "tools": [],
        }
    ],
}
_VALIDATING = frozenset({ModelRole.VALIDATOR, ModelRole.VALIDATOR_FALLBACK})
_PLANNING = frozenset({ModelRole.PLANNER, ModelRole.PLANNER_FALLBACK})


def replay_roles(settings: Settings) -> list[ModelRole]:
    """The roles whose model is a scripted one with no script: nothing could answer them.

    A profile saved for one role (say the agent, on a local server) leaves the others on their
    ``scripted/*`` defaults; each of those is a dead end unless the replay model stands in for it.
    """
    if settings.script is not None:
        return []
    prefix = f"{PROVIDER_NAME}/"
    return [role for role in ModelRole if (role_model(settings, role) or "").startswith(prefix)]


def needs_provider(settings: Settings) -> bool:
    """True when the agent would call a scripted model with no script: nothing could answer a task."""
    return ModelRole.AGENT in replay_roles(settings)


def replay_notice(roles: list[ModelRole]) -> str:
    """The one line that says which roles the replay model stands in for (the CLI's stderr)."""
    if ModelRole.AGENT in roles:
        return REPLAY_NOTICE
    names = ", ".join(role.value for role in roles)
    return (
        f"no model is configured for {names}: the offline replay model stands in (its verdicts send "
        "every answer to review); see the README's 'Use a real model'."
    )


def _catch_all(role: ModelRole) -> dict[str, Any]:
    if role in _VALIDATING:
        content = json.dumps(REPLAY_VERDICT)
    elif role in _PLANNING:
        content = json.dumps(REPLAY_PLAN)
    else:
        content = REPLAY_ANSWER
    return {"content": content}


def write_replay_script(folder: Path, settings: Settings | None = None) -> Path:
    """The demo's conversations and a catch-all for each role ``settings`` leaves to the replay
    model (with no settings: agent, validator and planner), written to ``folder`` (blocking).

    The demo's conversations come only with a replayed agent: a real agent's answer to a demo
    question must not meet the demo's scripted verdict, which would endorse an answer it never read.
    """
    names: dict[str, ModelRole] = {}
    if settings is None:
        names = {"agent": ModelRole.AGENT, "validator": ModelRole.VALIDATOR, "planner": ModelRole.PLANNER}
    else:
        for role in replay_roles(settings):
            names.setdefault((role_model(settings, role) or "").split("/", 1)[1], role)
    demo = json.loads(resource_path("demo", "script.json").read_text(encoding="utf-8"))
    replayed_agent = ModelRole.AGENT in names.values()
    conversations = [c for c in demo["conversations"] if replayed_agent and c["model"] in names]
    for name, role in names.items():
        conversations.append({"model": name, "turns": [_catch_all(role)] * REPLAY_TURNS})
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / REPLAY_FILE
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps({"conversations": conversations}), encoding="utf-8")
    tmp.replace(path)
    return path


def is_replay_script(script: Path | str | None) -> bool:
    """Whether ``script`` is the replay model's own script (written by ``write_replay_script``)."""
    return script is not None and Path(script).name == REPLAY_FILE


def unconfigured_roles(settings: Settings) -> list[ModelRole]:
    """``replay_roles`` of the settings as configured: the replay model's own script not counted."""
    if is_replay_script(settings.script):
        settings = settings.model_copy(update={"script": None})
    return replay_roles(settings)


def replay_folder() -> Path:
    """Where the replay script is written: the user data folder, beside the default workspace."""
    return Path(platformdirs.user_data_dir(APP_NAME))


def with_replay_model(settings: Settings, folder: Path) -> Settings:
    """``settings`` with the replay model standing in for every role nothing else can answer (and
    the demo corpus, when the agent is replayed and no corpus is set); blocking."""
    roles = replay_roles(settings)
    if not roles:
        return settings
    update: dict[str, Any] = {"script": write_replay_script(folder, settings)}
    if settings.corpus is None and ModelRole.AGENT in roles:
        update["corpus"] = resource_path("demo", "corpus")
    return settings.model_copy(update=update)


__all__ = [
    "REPLAY_ANSWER",
    "REPLAY_NOTICE",
    "is_replay_script",
    "needs_provider",
    "replay_folder",
    "replay_notice",
    "replay_roles",
    "unconfigured_roles",
    "with_replay_model",
    "write_replay_script",
]
