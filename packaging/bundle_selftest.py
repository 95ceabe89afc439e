"""What a bundle loads lazily or by path, checked in-process (``EVIDENCE_DESK_BUNDLE_SELFTEST=1``).

A frozen build that imports but lacks a data file fails only when that path is first taken:
litellm's cost map and provider tables, tiktoken's encodings (which would otherwise be downloaded),
alembic's migration scripts, the SVG image plugin. The scripted run in bundle_check.py covers the
completion path; this covers what a scripted model never touches (real-model token counting and
context windows). Prints one JSON object and exits 1 when any check failed.
"""

from __future__ import annotations

import json
import os
import sys
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any


def _version() -> dict[str, Any]:
    from importlib.metadata import version as dist_version

    from core.version import app_version

    version = app_version()
    if version == "0+unknown":
        raise AssertionError("the evidence-desk package metadata is not in the bundle")
    return {"version": version, "litellm": dist_version("litellm")}


def _resources() -> dict[str, Any]:
    from core.resources import resource_path, resources_dir

    for parts in (("prompts", "validation.md.j2"), ("demo", "script.json"), ("icons", "evidence-desk.svg")):
        resource_path(*parts)
    return {"resources": str(resources_dir())}


def _litellm() -> dict[str, Any]:
    if os.environ.get("LITELLM_LOCAL_MODEL_COST_MAP") != "True":
        raise AssertionError("LITELLM_LOCAL_MODEL_COST_MAP is not set (runtime hook missing?)")
    from core.llm.gateway import _import_litellm

    litellm = _import_litellm()
    window = litellm.get_model_info(model="gpt-4o")["max_input_tokens"]
    gpt = litellm.token_counter(model="gpt-4o", text="The desk reviews evidence offline.")
    gpt4 = litellm.token_counter(model="gpt-4", text="The desk reviews evidence offline.")
    claude = litellm.token_counter(model="claude-3-5-sonnet-20241022", text="The desk reviews evidence.")
    if not (window > 0 and gpt > 0 and gpt4 > 0 and claude > 0):
        raise AssertionError(f"bad litellm answers: {window=} {gpt=} {gpt4=} {claude=}")
    cache = os.environ.get("TIKTOKEN_CACHE_DIR", "")
    return {"gpt-4o_window": window, "tokens": [gpt, gpt4, claude], "tiktoken_cache": cache}


def _tiktoken() -> dict[str, Any]:
    from core.llm.gateway import _import_litellm

    _import_litellm()  # litellm points TIKTOKEN_CACHE_DIR at the encodings it ships
    import tiktoken

    names = ("cl100k_base", "o200k_base")
    return {name: len(tiktoken.get_encoding(name).encode("offline check")) for name in names}


def _mcp() -> dict[str, Any]:
    import mcp
    import mcp.types
    from litellm.experimental_mcp_client import tools as mcp_tools  # what litellm uses with MCP tools

    return {"mcp": mcp.__name__, "litellm_mcp": mcp_tools.__name__}


def _migrations() -> dict[str, Any]:
    from core.store.store import MIGRATIONS_DIR

    scripts = sorted(p.name for p in (Path(MIGRATIONS_DIR) / "versions").glob("*.py"))
    if not (Path(MIGRATIONS_DIR) / "env.py").is_file() or not scripts:
        raise AssertionError(f"alembic scripts missing under {MIGRATIONS_DIR}")
    return {"migrations": scripts}


def _sqlalchemy() -> dict[str, Any]:
    from sqlalchemy.ext.asyncio import create_async_engine

    engine = create_async_engine("sqlite+aiosqlite://")
    name = engine.dialect.driver
    return {"driver": name}


def _qt() -> dict[str, Any]:
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from PySide6.QtGui import QGuiApplication, QIcon, QImageReader

    from core.resources import resource_path

    app = QGuiApplication.instance() or QGuiApplication(sys.argv[:1])
    formats = {bytes(f.data()).decode() for f in QImageReader.supportedImageFormats()}
    icon = QIcon(str(resource_path("icons", "evidence-desk.svg")))
    if "svg" not in formats or icon.pixmap(64, 64).isNull():
        raise AssertionError(f"SVG icons do not load (image formats: {sorted(formats)})")
    return {"platform": app.platformName(), "svg": True}


CHECKS: dict[str, Callable[[], dict[str, Any]]] = {
    "version": _version,
    "resources": _resources,
    "litellm": _litellm,
    "tiktoken": _tiktoken,
    "mcp": _mcp,
    "migrations": _migrations,
    "sqlalchemy": _sqlalchemy,
    "qt": _qt,
}


def main() -> int:
    report: dict[str, Any] = {"frozen": bool(getattr(sys, "frozen", False)), "failed": []}
    for name, check in CHECKS.items():
        try:
            report[name] = check()
        except Exception as exc:
            report["failed"].append(name)
            report[name] = {"error": f"{type(exc).__name__}: {exc}", "trace": traceback.format_exc(limit=4)}
    print(json.dumps(report, indent=1, default=str))
    return 1 if report["failed"] else 0


if __name__ == "__main__":
    raise SystemExit(main())
