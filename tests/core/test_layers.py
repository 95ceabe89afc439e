"""Core's layers, declared and checked: each part imports only parts at its own layer or below, and
no module of core or the desk takes part in an import circle, type-only imports included.

A "room" is one package of core (``core.tasks``) or one loose module (``core.config``). The order,
lowest first, is the design's: foundation < domain < store < readers of the store, the model
layer and tools < the run context < the agent < teams < validation < tasks < what runs tasks or
carries them out of the workspace < the command line. The desk sits above all of core (and core
never imports it: ``test_boundaries.py``).
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Mapping
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

LAYERS: tuple[tuple[str, ...], ...] = (
    # foundation: what every layer may use (errors, inputs, settings and the roles' profiles)
    ("errors", "version", "lazy", "resources", "inputs", "secrets", "profiles", "config"),
    ("domain", "events", "queue_peek"),
    ("store",),
    # what reads the store or talks to models and tools: evidence packets, search, litellm, tools
    ("evidence", "search", "llm", "tools"),
    ("runtime", "workspace", "model_setup", "first_run"),
    ("agent",),
    ("team",),
    ("validation",),
    ("tasks",),
    ("workers", "bundle", "exports", "calibration", "calibration_html", "demo"),
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


def module_name(path: Path) -> str:
    parts = path.relative_to(REPO).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules(*roots: str) -> dict[str, Path]:
    return {module_name(p): p for root in roots for p in sorted((REPO / root).rglob("*.py"))}


def import_graph(sources: Mapping[str, str]) -> dict[str, set[str]]:
    """Module -> the modules of ``sources`` it imports, in any form and anywhere in the file
    (function bodies and ``if TYPE_CHECKING:`` included). ``from a import b`` names ``a.b`` when
    that is a module, else ``a``; relative imports are resolved against the importing module."""
    graph: dict[str, set[str]] = {m: set() for m in sources}
    for mod, source in sources.items():
        package = mod.split(".") if _is_package(mod, sources) else mod.split(".")[:-1]
        for node in ast.walk(ast.parse(source)):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    anchor = package[: len(package) - (node.level - 1)]
                    base = ".".join([*anchor, *([base] if base else [])])
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in sources else base for a in node.names]
            for target in targets:
                while target and target not in sources:  # `import a.b.c` with only a.b ours
                    target = target.rpartition(".")[0]
                if target and target != mod:
                    graph[mod].add(target)
    return graph


def _is_package(mod: str, sources: Mapping[str, str]) -> bool:
    return any(other.startswith(mod + ".") for other in sources)


def cycles(graph: Mapping[str, Iterable[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


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


def _sources(*roots: str) -> dict[str, str]:
    return {m: p.read_text(encoding="utf-8") for m, p in modules(*roots).items()}


def test_every_room_of_core_has_a_layer() -> None:
    rooms = {room(m) for m in modules("core") if m != "core"}
    assert rooms - LAYER_OF.keys() == set(), "give the new part of core a layer in LAYERS"
    assert LAYER_OF.keys() - rooms == set(), "a layer names a part core no longer has"


def test_core_imports_run_downwards_only() -> None:
    found = back_imports(import_graph(_sources("core")))
    assert found - KNOWN_BACK_IMPORTS == set(), "imports up the layers (see LAYERS)"
    assert KNOWN_BACK_IMPORTS - found == set(), "untied: take it out of KNOWN_BACK_IMPORTS"


def test_no_import_circle_in_core() -> None:
    graph = import_graph(_sources("core"))
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
