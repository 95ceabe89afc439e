"""What the per-turn path remembers between calls never hides a change that must take effect."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from core.config import Settings
from core.llm import LLMGateway


def _script(folder: Path, answer: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "script.json"
    path.write_text(json.dumps({"conversations": [{"model": "m", "turns": [{"content": answer}]}]}))
    return path


async def _answer(gateway: LLMGateway) -> str | None:
    response = await gateway.complete(model="scripted/m", messages=[{"role": "user", "content": "q"}])
    return response.content


async def test_an_edited_script_takes_effect_on_the_next_call(tmp_path: Path) -> None:
    path = _script(tmp_path, "first")
    gateway = LLMGateway(Settings(db_url="sqlite+aiosqlite:///:memory:", script=path))
    assert await _answer(gateway) == "first"
    _script(tmp_path, "the second version")  # its resolved path is remembered, its content is not
    assert await _answer(gateway) == "the second version"


async def test_a_relative_script_path_follows_the_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _script(tmp_path / "a", "from a")
    _script(tmp_path / "b", "from directory b")
    monkeypatch.chdir(tmp_path / "a")
    gateway = LLMGateway(Settings(db_url="sqlite+aiosqlite:///:memory:", script=Path("script.json")))
    assert await _answer(gateway) == "from a"
    monkeypatch.chdir(tmp_path / "b")
    assert await _answer(gateway) == "from directory b"
