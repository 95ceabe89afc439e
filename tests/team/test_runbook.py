"""The README's "Team workspace" runbook, the commands of it that can run here: a role and a
database made with ``createuser``/``createdb``, a password in a ``PGPASSFILE`` rather than the URL,
a desk command and a worker on that URL, and a ``pg_dump`` backup of the whole workspace."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from sqlalchemy.engine import make_url

from core.cli.main import main as cli_main
from tests.pg import PgServer
from tests.team.conftest import sync_rows, worker_process, write_script


@pytest.mark.slow
def test_the_runbook_commands_that_can_run_here(
    pg_server: PgServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if pg_server.control is None:
        pytest.skip("an external server: the runbook creates roles")
    bindir = Path(pg_server.control.pg_ctl[pg_server.control.pg_ctl.index("--pgdata") - 1]).parent
    admin = make_url(pg_server.admin_url)
    conn = ["-h", str(admin.host), "-p", str(admin.port), "-U", str(admin.username)]
    role, db = f"desk_{os.getpid()}", f"evidence_{os.getpid()}"
    env = {**os.environ, "PGPASSWORD": ""}
    subprocess.run([str(bindir / "createuser"), *conn, role], check=True, env=env)
    subprocess.run([str(bindir / "createdb"), *conn, "-O", role, db], check=True, env=env)
    try:
        passfile = tmp_path / "pgpass"
        passfile.write_text(f"{admin.host}:{admin.port}:{db}:{role}:not-in-the-url\n", encoding="utf-8")
        passfile.chmod(0o600)
        monkeypatch.setenv("PGPASSFILE", str(passfile))
        url = f"postgresql+asyncpg://{role}@{admin.host}:{admin.port}/{db}"
        script = write_script(tmp_path / "script.json")
        rows = tmp_path / "rows.jsonl"
        rows.write_text('{"text": "Runbook question?"}\n', encoding="utf-8")
        assert cli_main(["batch", str(rows), "--db", url, "--script", str(script)]) == 0
        worker = worker_process(url, script, "--once", PGPASSFILE=str(passfile))
        _, err = worker.communicate(timeout=300)
        assert worker.returncode == 0, err.decode()
        assert cli_main(["batches", "--db", url]) == 0
        assert sync_rows(url, "select status from tasks") == [("awaiting_feedback",)]
        dump = tmp_path / "evidence.dump"
        subprocess.run(
            [str(bindir / "pg_dump"), *conn, "-Fc", "-d", db, "-f", str(dump)], check=True, env=env
        )
        listing = subprocess.run(
            [str(bindir / "pg_restore"), "-l", str(dump)], check=True, capture_output=True
        )
        assert b"procrastinate_jobs" in listing.stdout and b"TABLE DATA public tasks" in listing.stdout
    finally:
        pg_server.drop_database(db)
        subprocess.run([str(bindir / "dropuser"), *conn, role], check=False, env=env)
