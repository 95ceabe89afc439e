"""``evidence-desk search``: hits with their passage, JSON, saved views, and one-line refusals."""

from __future__ import annotations

import asyncio
import json

import pytest

from core.cli.main import main as cli_main
from core.store import Store
from tests.core.test_search import seed


def _cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    capsys.readouterr()
    code = cli_main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def test_search_prints_hits_saves_and_refuses(sqlite_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    async def prepare() -> str:
        store = await Store.open(sqlite_url)
        try:
            return await seed(store)
        finally:
            await store.close()

    task_id = asyncio.run(prepare())
    code, out, _ = _cli(capsys, "search", '"marsh warden"', "--db", sqlite_url)
    assert code == 0 and task_id[:12] in out and "evidence E2" in out and "«marsh warden»" in out
    code, out, _ = _cli(
        capsys, "search", "kingfisher", "--kind", "note", "--json", "--db", sqlite_url, "--save", "kf"
    )
    hits = json.loads(out)["hits"]
    assert code == 0 and [(h["task_id"], h["kind"]) for h in hits] == [(task_id, "note")]
    code, out, _ = _cli(capsys, "search", "--view", "kf", "--db", sqlite_url)
    assert code == 0 and "kingfisher" in out
    code, _, err = _cli(capsys, "search", "heron", "--min-score", "2", "--db", sqlite_url)
    assert code == 4 and err.count("\n") == 1 and "--min-score" in err
    code, _, err = _cli(capsys, "search", "--db", sqlite_url)
    assert code == 4 and "type a word" in err
    code, _, err = _cli(capsys, "search", "heron", "--since", "yesterday", "--db", sqlite_url)
    assert code == 4 and "YYYY-MM-DD" in err
    code, _, err = _cli(capsys, "search", "heron", "--limit", "5000", "--db", sqlite_url)
    assert code == 4 and err.count("\n") == 1 and err.startswith("evidence-desk: --limit:")
