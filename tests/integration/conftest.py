"""Fixtures for end-to-end tests through the command line on the scripted provider."""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from core.cli.main import main as cli_main

ROOT = Path(__file__).resolve().parents[2]


def child_cli(*args: str, db: Path, root: Path, **env: str) -> tuple[list[str], dict[str, str]]:
    """The argv (what follows the interpreter: ``-m core.cli ARGS``) and environment that run
    ``evidence-desk ARGS`` as a real child process (one that a test can SIGKILL) on the workspace
    ``db`` with ``root``'s script and corpus: for ``tests.zygote.spawn``, or after ``sys.executable``."""
    argv = ["-m", "core.cli", *args, "--db", str(db), "--create"]
    argv += ["--script", str(root / "script.json"), "--corpus", str(root / "corpus")]
    return argv, {**os.environ, "PYTHONPATH": str(ROOT), **env}


def write_script(root: Path, conversations: list[dict[str, Any]]) -> Path:
    """The scripted provider's script in ``root``, where ``child_cli`` and the desk look for it."""
    path = root / "script.json"
    path.write_text(json.dumps({"conversations": conversations}), encoding="utf-8")
    return path


CORPUS = {
    "tides.md": "# Tides\n\nTides are caused mainly by the Moon's gravity. Most coasts see two high tides a day.\n",
    "everest.md": "# Mount Everest\n\nMount Everest is 8,849 metres above sea level (2020 survey).\n",
}


def verdict(status: str, score: float, **extra: Any) -> str:
    body = {
        "goal_achievement": "judged",
        "completeness": "judged",
        "rule_compliance": "no rules",
        "status": status,
        "score": score,
        "issues": extra.pop("issues", []),
        "recommended_revision_prompt": extra.pop("recommended_revision_prompt", ""),
        "category": extra.pop("category", "none"),
        "citations": extra.pop("citations", []),
        **extra,
    }
    return json.dumps(body)


@dataclass
class Desk:
    """A scratch workspace, a script and a corpus, driven through ``evidence-desk``."""

    root: Path
    capsys: pytest.CaptureFixture[str]
    monkeypatch: pytest.MonkeyPatch

    @property
    def db(self) -> Path:
        return self.root / "ws.sqlite3"

    def script(self, conversations: list[dict[str, Any]]) -> Path:
        return write_script(self.root, conversations)

    def env(self, **settings: Any) -> None:
        for key, value in settings.items():
            self.monkeypatch.setenv(f"EVIDENCE_DESK_{key.upper()}", str(value))

    def cli(self, *args: str) -> tuple[int, str, str]:
        self.capsys.readouterr()
        defaults = {
            "--db": str(self.db),
            "--script": str(self.root / "script.json"),
            "--corpus": str(self.root / "corpus"),
        }
        extra = [part for flag, value in defaults.items() if flag not in args for part in (flag, value)]
        # A scratch workspace is made on first use, as the analyst's --create would.
        code = cli_main([*args, *extra, "--create"])
        out, err = self.capsys.readouterr()
        return code, out, err

    def child(self, *args: str) -> tuple[list[str], dict[str, str]]:
        """``child_cli`` for this desk's workspace."""
        return child_cli(*args, db=self.db, root=self.root)

    def cli_json(self, *args: str) -> Any:
        code, out, err = self.cli(*args, "--json")
        assert code == 0, err
        return json.loads(out)

    def rows(self, sql: str, *params: Any) -> list[tuple[Any, ...]]:
        with sqlite3.connect(self.db) as conn:
            return conn.execute(sql, params).fetchall()

    def dump(self) -> list[tuple[Any, ...]]:
        """Every row of every table, to prove a refused command changed nothing."""
        with sqlite3.connect(self.db) as conn:
            tables = [
                r[0] for r in conn.execute("select name from sqlite_master where type='table' order by name")
            ]
            return [(t, *row) for t in tables for row in conn.execute(f"select * from {t} order by 1")]


@pytest.fixture
def desk(tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> Desk:
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    for name, text in CORPUS.items():
        (corpus / name).write_text(text, encoding="utf-8")
    monkeypatch.setenv("EVIDENCE_DESK_LLM_NUM_RETRIES", "0")
    # The scripted acceptances of these pipeline tests cite nothing; an acceptance that cites no
    # evidence does not count by default (tests/core/test_coherence.py and the loopback tests).
    monkeypatch.setenv("EVIDENCE_DESK_COHERENCE_MIN_CITATIONS", "0")
    return Desk(tmp_path, capsys, monkeypatch)


Verdict = Callable[..., str]
