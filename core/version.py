"""The one version source: the installed package's metadata (``pyproject.toml``'s version).

The command line, the desk's About box and exported bundles' manifests all read it from here.
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version


def app_version() -> str:
    try:
        return version("evidence-desk")
    except PackageNotFoundError:  # a source tree that was never installed
        return "0+unknown"
