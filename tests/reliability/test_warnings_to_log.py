"""stderr stays one line per error: library warnings go to the log file, in full, never to stderr.

A real child process with Python's ``-X warn_default_encoding``: the standard library and the
dependencies then warn (multi-line ``EncodingWarning``s) during an ordinary command, as pydantic's
serializer warnings once did on odd tool-call shapes.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_library_warnings_go_to_the_log_file_not_to_stderr(tmp_path: Path) -> None:
    env = {
        **os.environ,
        "PYTHONPATH": str(REPO),
        "EVIDENCE_DESK_LOG_DIR": str(tmp_path / "logs"),
        "EVIDENCE_DESK_CONFIG_FILE": str(tmp_path / "config.toml"),
    }
    env.pop("EVIDENCE_DESK_DEBUG", None)
    argv = [sys.executable, "-X", "warn_default_encoding", "-m", "core.cli", "list"]
    done = subprocess.run(
        [*argv, "--db", str(tmp_path / "ws.sqlite3"), "--create"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "Warning" not in done.stderr, done.stderr
    logged = (tmp_path / "logs" / "cli.log").read_text(encoding="utf-8")
    assert "EncodingWarning" in logged and "py.warnings" in logged
