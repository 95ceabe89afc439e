"""Hostile inputs, table-driven: one line on stderr, no traceback, the right exit code, no change.

Most cases run the command line in-process (``core.cli.main``), which exercises the same code
without a program start per case; the crash-prone ones (deep recursion, FIFOs, damaged or
read-only databases, unreachable servers) run the real program as a subprocess.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from core.cli.main import main as cli_main
from tests.reliability.cases import Case, all_cases
from tests.reliability.conftest import Outcome
from tests.reliability.harness import Seeds, fingerprint, prepare

CASES = all_cases()


def _check(case: Case, code: int, stderr: str, before: dict[str, str], after: dict[str, str]) -> None:
    lines = stderr.strip().splitlines()
    assert code == case.code, f"exit {code}, expected {case.code}: {stderr}"
    assert len(lines) == 1, f"expected one line on stderr, got {len(lines)}: {stderr!r}"
    assert "Traceback" not in stderr and "internal error" not in stderr, stderr
    assert "[SQL" not in stderr and "secret words" not in stderr, stderr
    assert case.says in lines[0], lines[0]
    assert after == before, "the workspace changed"


@pytest.mark.parametrize("case", [c for c in CASES if not c.subprocess], ids=lambda c: c.id)
def test_in_process(
    case: Case,
    seeds: Seeds,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    argv, env = prepare(case, tmp_path / "case", seeds)
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    before = fingerprint(tmp_path / "case")
    capsys.readouterr()
    code = cli_main(argv)
    _check(case, code, capsys.readouterr().err, before, fingerprint(tmp_path / "case"))


@pytest.mark.parametrize("case", [c for c in CASES if c.subprocess], ids=lambda c: c.id)
def test_as_a_program(case: Case, subprocess_outcomes: dict[str, Outcome]) -> None:
    got = subprocess_outcomes[case.id]
    _check(case, got.code, got.stderr, got.before, got.after)


def test_the_table_is_big_enough() -> None:
    assert len(CASES) >= 150
    assert sum(c.subprocess for c in CASES) >= 15
