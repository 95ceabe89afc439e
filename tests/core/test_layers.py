"""Core's layers, declared and checked: each part imports only parts at its own layer or below, and
no module of core or the desk takes part in an import circle, type-only imports included.

A "room" is one package of core (``core.tasks``) or one loose module (``core.config``). The order,
lowest first, is the design's: foundation < domain < store < readers of the store, the model
layer and tools < the run context < the agent < teams < validation < tasks < what runs tasks or
carries them out of the workspace < the command line. The desk sits above all of core (and core
never imports it: ``test_boundaries.py``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import pytest

from tests.imports import cycles, import_graph, sources

LAYERS: tuple[tuple[str, ...], ...] = (
    # foundation: what every layer may use (errors, inputs, settings and the roles' profiles)
    (
        "errors",
        "version",
        "lazy",
        "resources",
        "inputs",
        "secrets",
        "terminal",
        "leftovers",
        "progress",
        "profiles",
        "config",
    ),
    ("domain", "events", "queue_peek"),
    ("store",),
    # what reads the store or talks to models and tools: evidence packets, search, litellm, tools
    ("evidence", "search", "llm", "tools"),
    ("runtime", "workspace", "model_setup", "first_run"),
    ("agent",),
    ("team",),
    ("validation",),
    ("tasks",),
    ("workers", "bundle", "logfile", "exports", "calibration", "calibration_html", "demo", "judge"),
    ("cli",),
)
LAYER_OF: dict[str, int] = {room: n for n, rooms in enumerate(LAYERS) for room in rooms}

# Imports that still run downwards-up, each with why; the test fails if one is added, and also
# when one of these is untied (so the list only shrinks). The store keeps the search index's
# tables and SQL, and reads the search language and the documents cut from a task to fill them.
KNOWN_BACK_IMPORTS: frozenset[tuple[str, str]] = frozenset(
    {
        ("core.store.search_index", "core.search.index"),
        ("core.store.search_sql", "core.search.models"),
        ("core.store.search_sql", "core.search.terms"),
    }
)


def room(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else parts[0]


def back_imports(graph: Mapping[str, Iterable[str]]) -> set[tuple[str, str]]:
    """Every core import from a room to a room of a higher layer."""
    return {
        (src, dst)
        for src, targets in graph.items()
        for dst in targets
        if src.startswith("core.") and dst.startswith("core.") and LAYER_OF[room(dst)] > LAYER_OF[room(src)]
    }


def test_every_room_of_core_has_a_layer() -> None:
    rooms = {room(m) for m in sources("core") if m != "core"}
    assert rooms - LAYER_OF.keys() == set(), "give the new part of core a layer in LAYERS"
    assert LAYER_OF.keys() - rooms == set(), "a layer names a part core no longer has"


def test_core_imports_run_downwards_only() -> None:
    found = back_imports(import_graph(sources("core")))
    assert found - KNOWN_BACK_IMPORTS == set(), "imports up the layers (see LAYERS)"
    assert KNOWN_BACK_IMPORTS - found == set(), "untied: take it out of KNOWN_BACK_IMPORTS"


def test_no_import_circle_in_core_or_the_desk() -> None:
    graph = import_graph(sources("core", "desktop"))
    assert cycles(graph) == []


# The checkers themselves, on small made-up trees.
def test_a_back_import_is_caught() -> None:
    tree = {
        "core.store": "",
        "core.store.repo": "",
        "core.tasks": "",
        "core.tasks.service": "from core.store.repo import Repo",
    }
    assert back_imports(import_graph(tree)) == set()
    tree["core.store.repo"] = "def f():\n    from core.tasks.service import TaskService"
    assert back_imports(import_graph(tree)) == {("core.store.repo", "core.tasks.service")}


@pytest.mark.parametrize(
    "back",
    [
        "from core.a.one import x",
        "import core.a.one",
        "from core.a import one",
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from core.a.one import X",
        "def f():\n    import core.a.one as o\n    return o",
        "from .one import x",
        "from . import one",
    ],
)
def test_a_circle_is_caught_in_every_import_form(back: str) -> None:
    tree = {"core.a": "", "core.a.one": "from core.a.two import y", "core.a.two": back}
    assert cycles(import_graph(tree)) == [["core.a.one", "core.a.two"]]


def test_a_package_init_reexporting_its_modules_is_no_circle() -> None:
    tree = {"core.a": "from core.a.one import x", "core.a.one": "import os", "core.b": "from core.a import x"}
    assert cycles(import_graph(tree)) == []
