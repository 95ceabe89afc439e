"""Shared fixtures for core tests: a fresh workspace, scripted settings and the real gateway."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from core.config import Settings, load_settings
from core.llm import LLMGateway
from core.store import Store

ScriptFactory = Callable[..., Settings]


@pytest.fixture
async def store(db_url: str) -> AsyncIterator[Store]:
    """A fresh workspace store, once per engine (``db_url``): SQLite and PostgreSQL."""
    s = await Store.open(db_url)
    yield s
    await s.close()


@pytest.fixture
def make_settings(tmp_path: Path) -> ScriptFactory:
    """Write a scripted-provider script and return settings that use it."""
    counter = {"n": 0}

    def factory(conversations: list[dict[str, Any]] | None = None, **overrides: Any) -> Settings:
        counter["n"] += 1
        script = tmp_path / f"script-{counter['n']}.json"
        script.write_text(json.dumps({"conversations": conversations or []}), encoding="utf-8")
        return load_settings(script=script, **overrides)

    return factory


@pytest.fixture
def gateway_for() -> Callable[[Settings], LLMGateway]:
    def factory(settings: Settings) -> LLMGateway:
        return LLMGateway(settings, retry_backoff_s=0.001)

    return factory
