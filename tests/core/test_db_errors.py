"""Every database failure is one line and exit 4: no SQL, no bound parameters, no traceback."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from core.cli.main import main as cli_main


def _script(tmp_path: Path) -> Path:
    path = tmp_path / "s.json"
    path.write_text(json.dumps({"conversations": [{"model": "agent", "turns": [{"content": "x"}]}]}))
    return path


def _one_line_exit_4(capsys: pytest.CaptureFixture[str], *args: str) -> str:
    capsys.readouterr()
    code = cli_main(list(args))
    err = capsys.readouterr().err
    assert code == 4, err
    assert len(err.strip().splitlines()) == 1, err
    for leak in ("[SQL", "parameters", "Traceback", "internal error", "secret words"):
        assert leak not in err, err
    return err


def _workspace(tmp_path: Path) -> Path:
    db = tmp_path / "ws.sqlite3"
    assert cli_main(["list", "--db", str(db), "--create"]) == 0
    return db


def test_database_path_under_a_regular_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "afile").write_text("x")
    err = _one_line_exit_4(capsys, "list", "--db", str(tmp_path / "afile" / "sub" / "ws.sqlite3"))
    assert "not a folder" in err


def test_corrupt_table_page_on_write(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = _workspace(tmp_path)
    with sqlite3.connect(db) as conn:
        conn.execute("pragma wal_checkpoint(truncate)")
        root = conn.execute("select rootpage from sqlite_master where name = 'tasks'").fetchone()[0]
        size = conn.execute("pragma page_size").fetchone()[0]
    with db.open("r+b") as fh:
        fh.seek((root - 1) * size)
        fh.write(b"\x13" * size)
    script = _script(tmp_path)
    err = _one_line_exit_4(capsys, "run", "secret words", "--db", str(db), "--script", str(script))
    assert "corrupt" in err


def test_read_only_database(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = _workspace(tmp_path)
    before = db.read_bytes()
    url = f"sqlite:///file:{db}?mode=ro&uri=true"  # read-only even for root, who ignores chmod
    err = _one_line_exit_4(capsys, "run", "secret words", "--db", url, "--script", str(_script(tmp_path)))
    assert "read-only" in err
    assert db.read_bytes() == before


def test_unsupported_url_option(capsys: pytest.CaptureFixture[str]) -> None:
    err = _one_line_exit_4(capsys, "list", "--db", "postgresql://u@127.0.0.1:1/db?frobnicate=1")
    assert "frobnicate" in err and "not supported" in err


def test_postgres_login_database_and_sslmode(capsys: pytest.CaptureFixture[str], pg_url: str) -> None:
    from sqlalchemy.engine import make_url

    base = make_url(pg_url)
    plain = base.set(drivername="postgresql")
    err = _one_line_exit_4(capsys, "list", "--db", plain.set(username="no_such_role").render_as_string(False))
    assert "login" in err
    err = _one_line_exit_4(capsys, "list", "--db", plain.set(database="no_such_db_x").render_as_string(False))
    assert "does not exist" in err
    with_ssl = plain.update_query_dict({"sslmode": "disable"}).render_as_string(False)
    capsys.readouterr()
    assert cli_main(["list", "--db", with_ssl]) == 0, capsys.readouterr().err
