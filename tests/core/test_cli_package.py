"""The command line as a package: groups share ``common`` and never each other, one date parser,
and one place that turns errors into exit codes and a line on stderr."""

from __future__ import annotations

import ast
from datetime import UTC, datetime
from pathlib import Path

import pytest

from core.cli.common import (
    EXIT_FAILURE,
    EXIT_INPUT,
    EXIT_REFUSED,
    EXIT_USAGE,
    UsageError,
    exit_code,
    parse_day,
)
from core.cli.main import GROUPS, build_parser
from core.errors import ConfigurationError, InvalidRequest, RefusedAction, StoreError, VersionConflict

REPO = Path(__file__).resolve().parents[2]
CLI = REPO / "core" / "cli"
# The only modules of the package allowed to name another of its modules: ``main`` finds the
# groups by name (importlib), ``__main__`` runs ``main``.
ASSEMBLERS = {"main.py", "__main__.py"}


def cli_imports(source: str) -> list[tuple[int, str]]:
    """Every ``core.cli`` module a source names, in any import form (function-level and
    TYPE_CHECKING included); ``from core.cli import x`` names ``core.cli.x``."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names if a.name.startswith("core.cli")]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if node.module == "core.cli":
                found += [(node.lineno, f"core.cli.{a.name}") for a in node.names]
            elif node.module.startswith("core.cli."):
                found.append((node.lineno, node.module))
        elif isinstance(node, ast.ImportFrom) and node.level > 0:
            found.append((node.lineno, "." * node.level + (node.module or "")))
    return found


def offenders(path: Path, source: str) -> list[str]:
    return [
        f"{path.name}:{line}: {name}"
        for line, name in cli_imports(source)
        if name != "core.cli.common" and path.name not in ASSEMBLERS
    ]


def test_command_modules_import_only_common() -> None:
    bad = [o for p in sorted(CLI.glob("*.py")) for o in offenders(p, p.read_text(encoding="utf-8"))]
    assert not bad, "a command group imports another part of the command line:\n" + "\n".join(bad)


@pytest.mark.parametrize(
    "snippet",
    [
        "from core.cli.review import cmd_feedback",
        "from core.cli import review",
        "import core.cli.team",
        "def f():\n    from core.cli.show import print_dossier",
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from core.cli.run import run_outcome",
        "from . import review",
        "from .common import emit",  # relative imports hide the rule from grep: none at all
    ],
)
def test_the_rule_catches_every_form(snippet: str) -> None:
    assert offenders(CLI / "audit.py", snippet), snippet


def test_the_rule_allows_common() -> None:
    assert offenders(CLI / "audit.py", "from core.cli.common import emit\nimport core.cli.common") == []


def test_nothing_in_core_imports_the_command_line() -> None:
    """The command line is the top layer: a core module that needed it would be a knot again."""
    bad = [
        f"{p.relative_to(REPO)}:{line}: {name}"
        for p in sorted((REPO / "core").rglob("*.py"))
        if CLI not in p.parents
        for line, name in cli_imports(p.read_text(encoding="utf-8"))
    ]
    assert not bad, bad


def test_every_group_is_a_module_with_its_commands() -> None:
    assert sorted(p.stem for p in CLI.glob("*.py")) == sorted(
        {*GROUPS, "__init__", "__main__", "main", "common"}
    )
    parser, handlers = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    assert set(handlers) == set(sub.choices)  # type: ignore[arg-type]
    for name in ("run", "list", "show", "feedback", "export", "search", "worker", "decisions", "next"):
        assert name in handlers


def test_no_command_module_keeps_an_any_workspace() -> None:
    for p in CLI.glob("*.py"):
        assert "ws: Any" not in p.read_text(encoding="utf-8"), p.name


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("2024-03-01", datetime(2024, 3, 1, tzinfo=UTC)),
        ("2024-03-12T10:00+02:00", datetime(2024, 3, 12, 8, 0, tzinfo=UTC)),
        ("2024-03-12T10:00Z", datetime(2024, 3, 12, 10, 0, tzinfo=UTC)),
        (None, None),
        ("", None),
    ],
)
def test_one_date_parser(value: str | None, expected: datetime | None) -> None:
    assert parse_day(value, "--since") == expected


@pytest.mark.parametrize("value", ["yesterday", "2024-13-01", "2024-03-01T18:00", "01/03/2024"])
def test_a_date_that_is_not_a_day_is_refused_by_name(value: str) -> None:
    with pytest.raises(
        InvalidRequest, match=r"--until .* is not a date \(use YYYY-MM-DD, or a time with its offset"
    ):
        parse_day(value, "--until")


@pytest.mark.parametrize(
    ("error", "code", "line"),
    [
        (UsageError("revise needs --prompt TEXT"), EXIT_USAGE, "usage error: revise needs --prompt TEXT"),
        (RefusedAction("stale"), EXIT_REFUSED, "refused: stale"),
        (VersionConflict("changed"), EXIT_REFUSED, "refused: changed"),
        (ConfigurationError("bad script"), EXIT_INPUT, "bad script"),
        (StoreError("cannot open"), EXIT_INPUT, "cannot open"),
        (InvalidRequest("task x has no attempt 3"), EXIT_INPUT, "task x has no attempt 3"),
        (FileNotFoundError(2, "No such file or directory", "/x/y"), EXIT_INPUT, "cannot use /x/y"),
        (KeyError("oops"), EXIT_FAILURE, "internal error: KeyError"),
    ],
)
def test_one_place_maps_errors_to_codes_and_one_line(
    error: BaseException, code: int, line: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert exit_code(error, None) == code
    err = capsys.readouterr().err
    assert err.startswith(f"evidence-desk: {line}")
    assert err.count("\n") == 1


def test_a_bug_reraises_for_a_developer(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EVIDENCE_DESK_DEBUG", "1")
    with pytest.raises(KeyError):
        exit_code(KeyError("oops"), None)
