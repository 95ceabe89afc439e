"""Package names loaded on first use (PEP 562), so importing a package costs only what is asked for.

The desk's first paint imports ``core.validation`` and ``core.bundle`` for a few names; loading
their services (litellm, zip and redaction code) is left to the first caller that needs them.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any


def lazy_exports(package: str, homes: dict[str, str], namespace: dict[str, Any]) -> Callable[[str], Any]:
    """A module ``__getattr__`` that imports ``name`` from ``homes[name]`` once and caches it."""

    def __getattr__(name: str) -> Any:
        home = homes.get(name)
        if home is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(home), name)
        namespace[name] = value
        return value

    return __getattr__
