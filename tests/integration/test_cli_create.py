"""Issue 31: ``--db`` naming a file that does not exist is refused without ``--create``, in one
line that names the flag, and nothing is created; with ``--create`` (or no ``--db`` at all, the
default workspace of a first run, tests/core/test_first_run.py) the workspace is made."""

from __future__ import annotations

from pathlib import Path

import pytest

from core.cli.main import main as cli_main


@pytest.mark.parametrize("command", [["list"], ["run", "a question"], ["search", "heron"]])
def test_a_mistyped_db_path_is_refused_and_nothing_is_created(
    command: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    typo = tmp_path / "worksapce.sqlite3"
    capsys.readouterr()
    assert cli_main([*command, "--db", str(typo)]) == 4
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1, err
    assert f"no workspace at {typo}" in err and "--create" in err
    assert not typo.exists() and list(tmp_path.iterdir()) == []


def test_create_makes_the_named_workspace_and_later_commands_need_no_flag(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    new = tmp_path / "new.sqlite3"
    assert cli_main(["list", "--db", str(new), "--create"]) == 0
    assert new.is_file()
    assert cli_main(["list", "--db", str(new)]) == 0  # it exists now
    assert cli_main(["list", "--db", f"sqlite+aiosqlite:///{new}"]) == 0  # the same file as a URL


def test_an_empty_postgresql_database_needs_no_create(
    pg_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Decided: only SQLite files are refused. A PostgreSQL database exists only because someone ran
    ``createdb`` (the runbook's step 1); the first command migrates it, and a mistyped database name
    is refused by the server (tests/core/test_db_errors.py)."""
    capsys.readouterr()
    assert cli_main(["list", "--db", pg_url]) == 0, capsys.readouterr().err
