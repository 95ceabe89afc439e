"""Import graphs of our own packages, read with ``ast``: every import statement anywhere in a
module (function bodies and ``if TYPE_CHECKING:`` included), relative ones resolved.

Shared by the layer rule (``tests/core/test_layers.py``) and the desk's rules
(``tests/core/test_desk_boundaries.py``).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PACKAGE_MARK = "#package\n"  # prefixed to an ``__init__``'s source: relative imports start there


def module_name(path: Path, root: Path = REPO) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def sources(*roots: str, root: Path = REPO) -> dict[str, str]:
    """Module name -> source for every module under ``roots``; packages carry ``PACKAGE_MARK``."""
    return {
        module_name(path, root): (PACKAGE_MARK if path.name == "__init__.py" else "")
        + path.read_text(encoding="utf-8")
        for top in roots
        for path in sorted((root / top).rglob("*.py"))
    }


def _resolve_from(node: ast.ImportFrom, importer: str, is_package: bool) -> str | None:
    """The absolute module a ``from`` import reads from (relative imports resolved)."""
    if node.level == 0:
        return node.module
    base = importer.split(".")
    if not is_package:
        base = base[:-1]
    if node.level > 1:
        base = base[: len(base) - (node.level - 1)]
    return ".".join([*base, node.module] if node.module else base)


def imports_of(
    source: str, importer: str = "desktop.x", *, is_package: bool = False
) -> Iterator[tuple[int, str, str | None]]:
    """Every import anywhere in the source: ``(line, module, name)``, name None for ``import m``."""
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name, None
        elif isinstance(node, ast.ImportFrom):
            module = _resolve_from(node, importer, is_package)
            if module is not None:
                for alias in node.names:
                    yield node.lineno, module, alias.name


def import_graph(modules: dict[str, str]) -> dict[str, set[str]]:
    """Module -> the desk modules it imports (any import statement, anywhere in it).

    ``from a.b import c`` is an edge to ``a.b.c`` when that is a module, else to ``a.b``.
    ``modules`` maps each module name to its source; names ending in ``__init__`` are packages.
    """
    graph: dict[str, set[str]] = {name: set() for name in modules}
    packages = {name for name, source in modules.items() if source.startswith(PACKAGE_MARK)}
    for name, source in modules.items():
        for _line, module, imported in imports_of(source, name, is_package=name in packages):
            target = f"{module}.{imported}" if imported and f"{module}.{imported}" in modules else module
            if target in modules and target != name:
                graph[name].add(target)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan, iterative), sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    found: list[list[str]] = []
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        work: list[tuple[str, Iterator[str]]] = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, edges = work[-1]
            advanced = False
            for nxt in edges:
                if nxt not in index:
                    index[nxt] = low[nxt] = counter
                    counter += 1
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(graph[nxt]))))
                    advanced = True
                    break
                if nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
            if advanced:
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
    return sorted(found)
