"""Only the store knows its tables: code outside core/store uses Store's public methods."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
STORE = REPO / "core" / "store"


def _product_files() -> list[Path]:
    files = sorted((REPO / "core").rglob("*.py")) + sorted((REPO / "desktop").rglob("*.py"))
    return [p for p in files if STORE not in p.parents]


def _is_store(node: ast.expr) -> bool:
    """``store``, ``self.store``, ``ws.store``, ``other_store``: what callers name a Store."""
    name = node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else ""
    return name == "store" or name.endswith("_store")


def offences(source: str) -> list[str]:
    found: list[str] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module, *(f"{node.module}.{a.name}" for a in node.names)]
        elif isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        else:
            names = []
        found += [f"{node.lineno}: imports {n}" for n in names if n == "core.store.models"]
        if (
            isinstance(node, ast.Attribute)
            and node.attr.startswith("_")
            and not node.attr.startswith("__")
            and _is_store(node.value)
        ):
            found.append(f"{node.lineno}: uses the store's private {node.attr}")
    return found


def test_no_module_outside_the_store_reads_its_tables_or_privates() -> None:
    found = [
        f"{path.relative_to(REPO)}:{offence}"
        for path in _product_files()
        for offence in offences(path.read_text(encoding="utf-8"))
    ]
    assert not found, "go through Store's public API:\n" + "\n".join(found)


@pytest.mark.parametrize(
    "snippet",
    [
        "from core.store.models import TaskRow",
        "from core.store import models",
        "import core.store.models",
        "async with store._write_lock: pass",
        "self.store._sessions()",
        "other_store._task_search",
    ],
)
def test_the_rule_catches_every_form(snippet: str) -> None:
    assert offences(snippet)


def test_the_rule_leaves_public_use_alone() -> None:
    assert not offences("from core.store import Store\nstore.append_event\nself.store.__class__")
