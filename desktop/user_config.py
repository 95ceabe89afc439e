"""The user's settings file and API keys, as the Settings dialog edits them.

Non-secret settings go to the TOML file ``core.config`` reads (``user_config_file()``). There is
no TOML writer installed, and the file only ever holds flat strings, numbers, booleans and lists
of strings, so it is written by hand here; keys the dialog does not know are read and written
back unchanged. API keys never touch that file or the database: they live in the OS keyring
under the service ``evidence-desk`` and are copied into the process environment at start-up,
where litellm looks for them.
"""

from __future__ import annotations

import json
import math
import os
import tomllib
from pathlib import Path
from typing import Any

from core.config import user_config_file
from core.secrets import API_KEY_NAMES, KEYRING_SERVICE


class KeyStoreUnavailable(Exception):
    """No usable OS keyring: keys cannot be stored, and are deliberately not stored elsewhere."""


def read_user_config(path: Path | None = None) -> dict[str, Any]:
    path = path or user_config_file()
    if not path.is_file():
        return {}
    with path.open("rb") as fh:
        return tomllib.load(fh)


def _toml_value(key: str, value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"setting {key!r} must be a finite number, not {value!r}")
        return repr(value)
    if isinstance(value, Path):
        return json.dumps(str(value))
    if isinstance(value, str):
        return json.dumps(value)  # a JSON string is a valid TOML basic string
    if isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value):
        return "[" + ", ".join(json.dumps(v) for v in value) + "]"
    raise ValueError(f"setting {key!r} has a value the settings file cannot hold: {value!r}")


def render_toml(values: dict[str, Any]) -> str:
    lines = ["# Evidence Desk settings (written by the desk; API keys live in the OS keyring, not here)"]
    for key in sorted(values):
        if values[key] is None:
            continue
        if not key.replace("_", "").isalnum():
            raise ValueError(f"not a settings name: {key!r}")
        lines.append(f"{key} = {_toml_value(key, values[key])}")
    return "\n".join(lines) + "\n"


def write_user_config(updates: dict[str, Any], path: Path | None = None) -> Path:
    """Merge ``updates`` into the file (``None`` removes a key) and write it atomically."""
    path = path or user_config_file()
    merged = read_user_config(path)
    for key, value in updates.items():
        if value is None:
            merged.pop(key, None)
        else:
            merged[key] = value
    text = render_toml(merged)
    tomllib.loads(text)  # never leave a file behind that the next start cannot read
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)
    return path


def store_api_key(name: str, secret: str) -> None:
    """Save one key in the OS keyring and make it visible to this process."""
    import keyring
    from keyring.errors import KeyringError

    if name not in API_KEY_NAMES:
        raise ValueError(f"unknown API key name {name!r}")
    try:
        keyring.set_password(KEYRING_SERVICE, name, secret)
    except KeyringError as exc:
        raise KeyStoreUnavailable(
            f"no OS keyring is available ({exc}); the key was not saved anywhere. Set {name} in the "
            "environment before starting the desk instead."
        ) from None
    os.environ[name] = secret
