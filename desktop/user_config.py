"""The user's settings file and API keys, as the Settings dialog edits them.

Non-secret settings go to the TOML file ``core.config`` reads (``user_config_file()``), written
with tomlkit so the analyst's comments, key order and keys the dialog does not show survive a
save. Before anything is written, the file as the next start will read it is validated by
``Settings`` itself, so the desk never holds a second copy of the rules. API keys never touch that
file or the database: they live in the OS keyring under the service ``evidence-desk`` and are
copied into the process environment at start-up, where litellm looks for them.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import tomlkit
from tomlkit.toml_document import TOMLDocument

from core.config import Settings, user_config_file
from core.secrets import API_KEY_NAMES, KEYRING_SERVICE

HEADER = "Evidence Desk settings (written by the desk; API keys live in the OS keyring, not here)"


class KeyStoreUnavailable(Exception):
    """No usable OS keyring: keys cannot be stored, and are deliberately not stored elsewhere."""


def read_user_config(path: Path | None = None) -> dict[str, Any]:
    """The file's values exactly as ``core.config`` will read them at the next start."""
    path = path or user_config_file()
    if not path.is_file():
        return {}
    with path.open("rb") as fh:
        return tomllib.load(fh)


TABLE_SETTINGS = frozenset({"profiles"})  # the settings that are TOML tables ([profiles.validator])


def _plain(key: str, value: Any, *, in_table: bool = False) -> Any:
    """Refuse what the settings file cannot hold, rather than invent a table for it."""
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, (list, tuple)) and all(isinstance(v, (bool, int, float, str)) for v in value):
        return list(value)
    if isinstance(value, Mapping) and (in_table or key in TABLE_SETTINGS):  # unset values are left out
        return {str(k): _plain(f"{key}.{k}", v, in_table=True) for k, v in value.items() if v is not None}
    raise ValueError(f"setting {key!r} has a value the settings file cannot hold: {value!r}")


def _document(path: Path) -> TOMLDocument:
    if path.is_file():
        return tomlkit.parse(path.read_text(encoding="utf-8"))
    document = tomlkit.document()
    document.add(tomlkit.comment(HEADER))
    return document


def write_user_config(updates: Mapping[str, Any], path: Path | None = None) -> Path:
    """Apply ``updates`` to the file (``None`` removes a key) and replace it atomically.

    Only the named keys change; everything else in the file, comments included, is kept as the
    analyst wrote it.
    """
    path = path or user_config_file()
    document = _document(path)
    for key, value in updates.items():
        if value is None:
            document.pop(key, None)
        else:
            document[key] = _plain(key, value)
    text = tomlkit.dumps(document)
    tomllib.loads(text)  # never leave a file behind that the next start cannot read
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)
    return path


def save_user_settings(
    changes: Mapping[str, Any], path: Path | None = None, model: type[Settings] = Settings
) -> Path:
    """Write ``changes`` only if the whole file, with them applied, is valid ``model`` settings.

    ``None`` removes a key, so the default applies again. Raises pydantic's ``ValidationError``
    (nothing written) naming each bad setting. The check sees the file alone, as ``core.config``
    will at the next start (the environment still wins over it then). Values are written in their
    JSON form, e.g. paths and choices as strings.
    """
    path = path or user_config_file()
    if not changes:
        return path  # an unchanged dialog leaves the file exactly as it was
    candidate = read_user_config(path)
    for key, value in changes.items():
        if value is None:
            candidate.pop(key, None)
        else:
            candidate[key] = value
    checked = model.model_validate(candidate).model_dump(mode="json", include=set(changes))
    return write_user_config({key: None if changes[key] is None else checked[key] for key in changes}, path)


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
