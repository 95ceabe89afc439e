"""The core/desktop boundary: core never imports Qt, qasync or desktop, and importing core stays cheap."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
CORE = REPO / "core"
FORBIDDEN = ("desktop", "PySide6", "shiboken6", "qasync")


def forbidden_imports(source: str, filename: str = "<string>") -> list[tuple[int, str]]:
    """Every import anywhere in the module (top level, functions, TYPE_CHECKING) of a forbidden root."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(source, filename=filename)):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
        elif (
            isinstance(node, ast.Call)
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
            and (
                (isinstance(node.func, ast.Name) and node.func.id == "__import__")
                or (isinstance(node.func, ast.Attribute) and node.func.attr == "import_module")
            )
        ):
            names = [node.args[0].value]
        for name in names:
            if name.split(".")[0] in FORBIDDEN:
                found.append((getattr(node, "lineno", 0), name))
    return found


def core_files() -> list[Path]:
    return sorted(CORE.rglob("*.py"))


def test_core_tree_is_found() -> None:
    files = core_files()
    assert CORE / "__init__.py" in files
    assert CORE / "tasks" / "state_machine.py" in files


def test_core_never_imports_qt_qasync_or_desktop() -> None:
    offenders = [
        f"{path.relative_to(REPO)}:{line}: {name}"
        for path in core_files()
        for line, name in forbidden_imports(path.read_text(encoding="utf-8"), str(path))
    ]
    assert not offenders, "core must not depend on the desk:\n" + "\n".join(offenders)


@pytest.mark.parametrize(
    "snippet",
    [
        "import PySide6",
        "import PySide6.QtCore as qc",
        "from PySide6.QtWidgets import QWidget",
        "import shiboken6",
        "import qasync",
        "from desktop import app",
        "import desktop.bridge",
        "import os, qasync",
        "def f():\n    from desktop.views import x\n    return x",
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from PySide6.QtCore import QObject",
        "try:\n    import qasync\nexcept ImportError:\n    pass",
        "__import__('PySide6')",
        "import importlib\nimportlib.import_module('desktop.app')",
    ],
)
def test_checker_catches_every_import_form(snippet: str) -> None:
    assert forbidden_imports(snippet), snippet


@pytest.mark.parametrize(
    "snippet",
    [
        "import os",
        "from core.domain import TaskStatus",
        "from . import desktop",  # a relative sibling called desktop is core's own module
        "import desktop_tools",
        "x = 'import PySide6'",
    ],
)
def test_checker_allows_harmless_imports(snippet: str) -> None:
    assert forbidden_imports(snippet) == []


@pytest.mark.slow
def test_importing_core_pulls_in_no_litellm_qt_or_desktop() -> None:
    code = (
        "import core, core.domain, core.tasks, core.config, core.errors; import sys; "
        "bad=[m for m in ('litellm','PySide6','qasync','desktop') if m in sys.modules]; "
        "assert not bad, bad"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=60, check=False
    )
    assert proc.returncode == 0, proc.stderr


DESKTOP = REPO / "desktop"
# The desk reads through core's services: never the store, its tables or the LLM layer directly.
DESK_FORBIDDEN = ("core.store", "core.llm", "litellm", "sqlalchemy")


def imported_modules(source: str, filename: str = "<string>") -> list[tuple[int, str]]:
    """Every absolute module an import statement names (``from a.b import c`` also names ``a.b.c``)."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(source, filename=filename)):
        if isinstance(node, ast.Import):
            found.extend((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.append((node.lineno, node.module))
            found.extend((node.lineno, f"{node.module}.{alias.name}") for alias in node.names)
    return found


def _offenders(files: list[Path], banned: tuple[str, ...]) -> list[str]:
    return [
        f"{path.relative_to(REPO)}:{line}: {name}"
        for path in files
        for line, name in imported_modules(path.read_text(encoding="utf-8"), str(path))
        if any(name == b or name.startswith(b + ".") for b in banned)
    ]


def test_desk_never_imports_the_store_or_the_llm_layer() -> None:
    offenders = _offenders(sorted(DESKTOP.rglob("*.py")), DESK_FORBIDDEN)
    assert not offenders, "the desk must go through core's services:\n" + "\n".join(offenders)


@pytest.mark.parametrize(
    "snippet",
    [
        "from core.store import Store",
        "import core.store.models",
        "from core import store",
        "from core.llm import x",
    ],
)
def test_desk_rule_catches_every_import_form(snippet: str) -> None:
    assert _names_banned(snippet, DESK_FORBIDDEN)


def _names_banned(source: str, banned: tuple[str, ...]) -> bool:
    return any(any(n == b or n.startswith(b + ".") for b in banned) for _, n in imported_modules(source))


MAX_FUNCTION_LINES = 80


def long_functions(files: list[Path], root: Path = REPO) -> set[str]:
    """``path:name`` of every function (methods and nested ones too) longer than the limit."""
    found: set[str] = set()
    for path in files:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                assert node.end_lineno is not None
                if node.end_lineno - node.lineno + 1 > MAX_FUNCTION_LINES:
                    found.add(f"{path.relative_to(root)}:{node.name}")
    return found


def test_no_function_runs_past_what_one_reader_holds() -> None:
    """Long functions are where jobs pile up (``validate`` once held six); split them by job.

    This replaced a 600-line cap on modules, which split files by size while their functions
    stayed long: a module of short functions with one job may be long, a 200-line function is not.
    """
    files = [p for p in [*core_files(), *sorted(DESKTOP.rglob("*.py"))] if "migrations" not in p.parts]
    assert long_functions(files) == set(), f"split these by job (max {MAX_FUNCTION_LINES} lines)"


def test_the_function_rule_counts_methods_and_nested_functions(tmp_path: Path) -> None:
    lines = "\n".join(f"            x{i} = {i}" for i in range(MAX_FUNCTION_LINES))
    module = tmp_path / "probe.py"
    module.write_text(f"class C:\n    def m(self) -> None:\n        def inner() -> None:\n{lines}\n")
    assert long_functions([module], tmp_path) == {"probe.py:m", "probe.py:inner"}
    module.write_text("def short() -> None:\n    pass\n")
    assert long_functions([module], tmp_path) == set()


def test_the_desk_keeps_no_copy_of_the_queue_rules() -> None:
    """Which task matches a filter, and in what order, is core's (``core.store.queue_sql``) alone."""
    models = (DESKTOP / "models" / "queue_model.py").read_text(encoding="utf-8")
    for copy in ("def matches", "def _precedes", "casefold(", "def _position"):
        assert copy not in models, copy


def test_the_desk_keeps_no_copy_of_the_evidence_rule() -> None:
    """Which items carry which ids is core's (``core.evidence.render.task_items``, shown through
    ``core.evidence.outline``); the desk's tree model only displays the outline."""
    for path in sorted(DESKTOP.rglob("*.py")):
        source = path.read_text(encoding="utf-8")
        for copy in ("render_packet(", "render_task(", "evidence_id_start", "def _fill_packet"):
            assert copy not in source, f"{path.relative_to(REPO)}: {copy}"
