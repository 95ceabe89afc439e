"""Shared set-up for benchmarks: a temporary workspace and scripted settings."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("EVIDENCE_DESK_CONFIG_FILE", "/nonexistent/evidence-desk-bench.toml")

from core.config import Settings, load_settings


def scratch_dir() -> Path:
    return Path(tempfile.mkdtemp(prefix="evidence-desk-bench-"))


def scripted_settings(folder: Path, conversations: list[dict[str, Any]], **overrides: Any) -> Settings:
    script = folder / "script.json"
    script.write_text(json.dumps({"conversations": conversations}), encoding="utf-8")
    return load_settings(script=script, db_url=f"sqlite+aiosqlite:///{folder / 'ws.sqlite3'}", **overrides)
