"""The desk's own knots, checked from the source: features ask the window through ``DeskHost``.

Three rules, each read with ``ast`` from every ``desktop/**/*.py`` (no Qt, no imports run):

1. Only the window package knows the window's class. Features take a ``DeskHost``
   (``desktop/views/host.py``); outside ``desktop.views.window`` nothing imports ``MainWindow``
   in any form (module level, in a function, under ``TYPE_CHECKING``), except the two modules that
   build or drive the whole desk (``WINDOW_USERS``).
2. Nothing reaches for another module's private names: no ``from x import _y`` of a desktop
   module, and no ``host._y`` / ``window._y`` (the names a feature gives the window it is handed).
   A module's own privates, ``self._y`` and Python's dunders stay allowed. Nor does a feature
   add attributes to the window (``host.x = ...``): its state is an object the window holds.
3. No import cycles among desktop modules, type-only and function-level imports included: a
   cycle is a knot whichever import makes it, and a type-only one is the first step to a runtime
   one. Importing ``a.b.c`` runs ``a/__init__`` and ``a/b/__init__`` too, but those implicit edges
   are left out: a package's ``__init__`` re-exporting its submodules is Python's ordinary way to
   publish them, and every ``__init__`` of the desk is empty anyway (a written import of a
   package, ``from desktop.views import x``, is an edge like any other).

Each rule has snippets proving it fires on every form it names and stays quiet on harmless ones.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable
from pathlib import Path

import pytest

from tests.imports import PACKAGE_MARK, cycles, import_graph, imports_of, module_name, sources

REPO = Path(__file__).resolve().parents[2]
DESKTOP = REPO / "desktop"
WINDOW_PACKAGE = "desktop.views.window"
WINDOW_CLASS = "MainWindow"
WINDOW_MODULE = f"{WINDOW_PACKAGE}.main_window"
WINDOW_USERS = {
    "desktop.app": "the launcher: it builds the window",
    "desktop.screenshot": "drives the whole desk the way a test does",
}
"""Outside the window package, the only modules that may name ``MainWindow``, and why."""

HOST_NAMES = frozenset({"host", "window", "win", "w", "desk", "main_window"})
"""The names a feature gives the window it was handed (``self.<name>`` counts too)."""


def desk_modules(root: Path = REPO) -> dict[str, Path]:
    return {module_name(p, root): p for p in sorted((root / "desktop").rglob("*.py"))}


# ---------------------------------------------------------------------------------------- rule 1
def window_class_imports(source: str, importer: str = "desktop.x") -> list[str]:
    """How the module reaches ``MainWindow``: ``from <window module> import MainWindow``, the
    module itself imported (``import ...main_window``, ``from ...window import main_window``)."""
    found = []
    for line, module, name in imports_of(source, importer):
        if module == WINDOW_MODULE and name in (WINDOW_CLASS, "*"):
            found.append(f"{line}: from {module} import {name}")
        elif (module == WINDOW_MODULE and name is None) or f"{module}.{name}" == WINDOW_MODULE:
            found.append(f"{line}: imports {WINDOW_MODULE}")
        elif name == WINDOW_CLASS and module.startswith("desktop"):
            found.append(f"{line}: from {module} import {name}")
    return found


def test_only_the_window_package_imports_the_window_class() -> None:
    offenders = [
        f"{name}:{hit}"
        for name, path in desk_modules().items()
        if not (name == WINDOW_PACKAGE or name.startswith(WINDOW_PACKAGE + ".")) and name not in WINDOW_USERS
        for hit in window_class_imports(path.read_text(encoding="utf-8"), name)
    ]
    assert not offenders, "features take a DeskHost, never the window:\n" + "\n".join(offenders)


def test_the_window_users_list_holds_only_modules_that_need_it() -> None:
    """An entry that no longer imports the window goes from the list, so the list cannot rot."""
    modules = desk_modules()
    unused = [
        name for name in WINDOW_USERS if not window_class_imports(modules[name].read_text("utf-8"), name)
    ]
    assert not unused, unused


@pytest.mark.parametrize(
    "snippet",
    [
        "from desktop.views.window.main_window import MainWindow",
        "from desktop.views.window.main_window import MainWindow as W",
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from desktop.views.window.main_window import MainWindow",
        "def f():\n    from desktop.views.window.main_window import MainWindow\n    return MainWindow",
        "import desktop.views.window.main_window",
        "import desktop.views.window.main_window as mw",
        "from desktop.views.window import main_window",
        "from desktop.views.window.main_window import *",
        "from desktop.views.window import MainWindow",  # a re-export would be the same knot
    ],
)
def test_window_rule_catches_every_form(snippet: str) -> None:
    assert window_class_imports(snippet), snippet


@pytest.mark.parametrize(
    "snippet",
    [
        "from desktop.views.host import DeskHost",
        "from desktop.services import DeskServices",
        "from PySide6.QtWidgets import QMainWindow",
        "from desktop.views.window.layout import restore_geometry",
        "x = 'from desktop.views.window.main_window import MainWindow'",
    ],
)
def test_window_rule_allows_harmless_imports(snippet: str) -> None:
    assert window_class_imports(snippet) == []


# ---------------------------------------------------------------------------------------- rule 2
def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _names_host(node: ast.expr) -> bool:
    """``host``, ``window``… or ``self.host``, ``self._window``…: what a feature calls the window."""
    if isinstance(node, ast.Name):
        return node.id in HOST_NAMES
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self":
        return node.attr.lstrip("_") in HOST_NAMES
    return False


def private_reaches(source: str, importer: str = "desktop.x", *, is_package: bool = False) -> list[str]:
    """``from <desktop module> import _name`` and ``<host>._name``, with their lines."""
    found = [
        f"{line}: from {module} import {name}"
        for line, module, name in imports_of(source, importer, is_package=is_package)
        if name is not None and _private(name) and module.split(".")[0] == "desktop"
    ]
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Attribute) and _private(node.attr) and _names_host(node.value):
            found.append(f"{node.lineno}: {ast.unparse(node)}")
    return found


def test_no_module_reaches_for_another_modules_private_names() -> None:
    offenders = [
        f"{name}:{hit}"
        for name, path in desk_modules().items()
        for hit in private_reaches(
            path.read_text(encoding="utf-8"), name, is_package=path.name == "__init__.py"
        )
    ]
    assert not offenders, "ask through a public name (DeskHost, or the module's API):\n" + "\n".join(
        offenders
    )


@pytest.mark.parametrize(
    "snippet",
    [
        "from desktop.views.window.main_window import _helper",
        "from desktop.views.task.history import _NoteEdit as NoteEdit",
        "from .history import _private_thing",  # relative: still another desktop module's
        "def f(host):\n    return host._load_detail('t')",
        "def f(window):\n    window._open(None)",
        "def f(w):\n    return w._refused('t')",
        "class A:\n    def f(self):\n        self._window._current = None",
        "class A:\n    def f(self):\n        return self.host._dossier",
        "def f(window):\n    window._features = []",  # adding a private attribute counts too
    ],
)
def test_private_rule_catches_every_form(snippet: str) -> None:
    assert private_reaches(snippet, "desktop.views.task.x"), snippet


@pytest.mark.parametrize(
    "snippet",
    [
        "class A:\n    def f(self):\n        return self._timer",  # the module's own state
        "def f(host):\n    return host.current_task",
        "def f(window):\n    return window.__class__",  # dunders are Python's, not a module's
        "from PySide6.QtCore import _private_qt",  # not a desk module: the desk can't fix it
        "def f(model):\n    return model._rows",  # not the host (a test double's business)
        "from desktop.views.host import DeskHost",
        "class A:\n    def f(self):\n        return self._host.queue",  # a feature's own reference
    ],
)
def test_private_rule_allows_harmless_forms(snippet: str) -> None:
    assert private_reaches(snippet, "desktop.views.task.x") == []


def attributes_added_to_host(source: str) -> list[str]:
    """``host.x = ...`` (plain, augmented, annotated, in a tuple) and ``setattr(host, ...)``."""
    found = []
    for node in ast.walk(ast.parse(source)):
        targets: list[ast.expr] = []
        if isinstance(node, ast.Assign):
            targets = list(node.targets)
        elif isinstance(node, ast.AugAssign | ast.AnnAssign):
            targets = [node.target]
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id == "setattr"
            and node.args
            and _names_host(node.args[0])
        ):
            found.append(f"{node.lineno}: {ast.unparse(node)}")
        for target in targets:
            for part in ast.walk(target):
                if (
                    isinstance(part, ast.Attribute)
                    and isinstance(part.ctx, ast.Store)
                    and _names_host(part.value)
                ):
                    found.append(f"{part.lineno}: {ast.unparse(part)}")
    return found


def test_features_add_no_attributes_to_the_window() -> None:
    """A feature keeps its state in its own object, which the window holds (``window.team``)."""
    offenders = [
        f"{name}:{hit}"
        for name, path in desk_modules().items()
        if not (name == WINDOW_PACKAGE or name.startswith(WINDOW_PACKAGE + ".")) and name not in WINDOW_USERS
        for hit in attributes_added_to_host(path.read_text(encoding="utf-8"))
    ]
    assert not offenders, "return the feature's state instead:\n" + "\n".join(offenders)


@pytest.mark.parametrize(
    "snippet",
    [
        "def f(window):\n    window.calibration_view = 1",
        "def f(host):\n    host.act_override: object = None",
        "def f(host):\n    host.count += 1",
        "def f(window):\n    window.a, window.b = 1, 2",
        "def f(window):\n    setattr(window, 'calibration_view', 1)",
        "class A:\n    def f(self):\n        self._host.extra = 1",
    ],
)
def test_attribute_rule_catches_every_form(snippet: str) -> None:
    assert attributes_added_to_host(snippet), snippet


@pytest.mark.parametrize(
    "snippet",
    [
        "class A:\n    def __init__(self, host):\n        self.host = host",  # the feature's own field
        "def f(host):\n    host.queue.filter_text = 'x'",  # a pane's own attribute, not the host's
        "def f(host):\n    x = host.queue",
        "def f(view):\n    view.calibration = None",
    ],
)
def test_attribute_rule_allows_harmless_forms(snippet: str) -> None:
    assert attributes_added_to_host(snippet) == []


# ---------------------------------------------------------------------------------------- rule 3
def test_the_desk_module_tree_is_found() -> None:
    """The graph holds real edges (a silent empty graph would have no cycles either)."""
    graph = import_graph(sources("desktop"))
    assert "desktop.views.host" in graph["desktop.views.queue.claims"]  # type-only, under TYPE_CHECKING
    assert "desktop.views.queue.claims" in graph[WINDOW_MODULE]
    assert "desktop.views.queue.search" in graph[WINDOW_MODULE]  # installed lazily, in a method


def _graph(edges: Iterable[tuple[str, str]]) -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {}
    for a, b in edges:
        graph.setdefault(a, set()).add(b)
        graph.setdefault(b, set())
    return graph


@pytest.mark.parametrize(
    ("sources", "knot"),
    [
        (  # a type-only back-import
            {
                "desktop.a": "from desktop.b import B",
                "desktop.b": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from desktop.a import A",
            },
            ["desktop.a", "desktop.b"],
        ),
        (  # a function-level (lazy) import closing a ring of three
            {
                "desktop.a": "import desktop.b",
                "desktop.b": "from desktop import c",
                "desktop.c": "def f():\n    from desktop.a import x\n    return x",
            },
            ["desktop.a", "desktop.b", "desktop.c"],
        ),
        (  # relative imports resolve like absolute ones
            {"desktop.p.a": "from .b import B", "desktop.p.b": "from . import a"},
            ["desktop.p.a", "desktop.p.b"],
        ),
        (  # a package __init__ that imports a module which imports the package by name
            {
                "desktop.p": PACKAGE_MARK + "from desktop.p.a import A",
                "desktop.p.a": "from desktop.p import helper",
            },
            ["desktop.p", "desktop.p.a"],
        ),
    ],
)
def test_cycle_check_catches_every_form(sources: dict[str, str], knot: list[str]) -> None:
    assert cycles(import_graph(sources)) == [knot]


@pytest.mark.parametrize(
    "sources",
    [
        {"desktop.a": "from desktop.b import B", "desktop.b": "import os"},
        {"desktop.a": "from desktop.b import B", "desktop.b": "x = 'from desktop.a import A'"},
        {
            "desktop.p": PACKAGE_MARK + "",
            "desktop.p.a": "from desktop.p.b import B",
            "desktop.p.b": "import os",
        },
        {"desktop.a": "import desktop.a"},  # a module naming itself is no knot
    ],
)
def test_cycle_check_allows_a_tree(sources: dict[str, str]) -> None:
    assert cycles(import_graph(sources)) == []


def test_tarjan_finds_separate_components() -> None:
    graph = _graph([("a", "b"), ("b", "a"), ("c", "d"), ("d", "e"), ("e", "c"), ("e", "f")])
    assert cycles(graph) == [["a", "b"], ["c", "d", "e"]]
