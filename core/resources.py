"""Where the bundled ``resources/`` folder lives, in a source checkout, a wheel and a frozen build.

The wheel force-includes ``resources`` at the top level of site-packages, next to the ``core``
package, so the same relative path works in a checkout and in an installed wheel. A PyInstaller
build unpacks data under ``sys._MEIPASS``; an override variable lets packagers and tests point
elsewhere without patching code.
"""

from __future__ import annotations

import os
import sys
from functools import lru_cache
from pathlib import Path

from core.errors import ConfigurationError

RESOURCES_ENV = "EVIDENCE_DESK_RESOURCES"


def _candidates() -> list[Path]:
    found: list[Path] = []
    override = os.environ.get(RESOURCES_ENV)
    if override:
        found.append(Path(override))
    found.append(Path(__file__).resolve().parent.parent / "resources")
    frozen = getattr(sys, "_MEIPASS", None)
    if isinstance(frozen, str):
        found.append(Path(frozen) / "resources")
    return found


@lru_cache(maxsize=1)
def resources_dir() -> Path:
    """The resources folder; raises ``ConfigurationError`` listing where it looked."""
    candidates = _candidates()
    for path in candidates:
        if (path / "prompts").is_dir():
            return path
    looked = ", ".join(str(p) for p in candidates)
    raise ConfigurationError(f"cannot find the resources folder (looked in: {looked})")


def prompts_dir() -> Path:
    return resources_dir() / "prompts"


def resource_path(*parts: str) -> Path:
    """A file under resources; raises ``ConfigurationError`` naming it when it is missing."""
    path = resources_dir().joinpath(*parts)
    if not path.exists():
        raise ConfigurationError(f"missing resource file: {path}")
    return path
