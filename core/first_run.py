"""A first run that works: with no model provider configured, replay the demo's script offline.

The default models are ``scripted/*``, which answer only from a script. Without one every task
would fail at its first call, so a fresh desk would leave nothing but ``failed`` tasks. Instead the
desk starts on the *replay model*: the demo's bundled script, plus a catch-all conversation that
answers any other question with a plain note that no real model is configured, and a verdict that
sends it to review. New task and Revise therefore work offline, and nothing says "accepted" that
no model judged.
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
    "goal_achievement": "not judged: the offline replay model answered",
    "completeness": "not judged",
    "rule_compliance": "not judged",
    "status": "insufficient_evidence",
    "score": 0.0,
    "issues": ["No model provider is configured; this answer is a placeholder from the replay model."],
    "recommended_revision_prompt": "",
    "category": "none",
    "citations": [],
}


def needs_provider(settings: Settings) -> bool:
    """True when the agent would call a scripted model with no script: nothing could answer."""
    model = role_model(settings, ModelRole.AGENT) or ""
    return model.startswith(f"{PROVIDER_NAME}/") and settings.script is None


def write_replay_script(folder: Path) -> Path:
    """The demo's conversations followed by the catch-alls, written to ``folder`` (blocking)."""
    demo = json.loads(resource_path("demo", "script.json").read_text(encoding="utf-8"))
    conversations = list(demo["conversations"])
    conversations.append({"model": "agent", "turns": [{"content": REPLAY_ANSWER}] * REPLAY_TURNS})
    conversations.append(
        {"model": "validator", "turns": [{"content": json.dumps(REPLAY_VERDICT)}] * REPLAY_TURNS}
    )
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / REPLAY_FILE
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps({"conversations": conversations}), encoding="utf-8")
    tmp.replace(path)
    return path


def replay_folder() -> Path:
    """Where the replay script is written: the user data folder, beside the default workspace."""
    return Path(platformdirs.user_data_dir(APP_NAME))


def with_replay_model(settings: Settings, folder: Path) -> Settings:
    """``settings`` on the replay model (and the demo corpus unless one is set); blocking."""
    update: dict[str, Any] = {"script": write_replay_script(folder)}
    if settings.corpus is None:
        update["corpus"] = resource_path("demo", "corpus")
    return settings.model_copy(update=update)


__all__ = [
    "REPLAY_ANSWER",
    "REPLAY_NOTICE",
    "needs_provider",
    "replay_folder",
    "with_replay_model",
    "write_replay_script",
]
