"""No machine paths or login names in what leaves the workspace (issue 15, point 10).

A bundle or report travels to other people; the analyst's home folder, the workspace's folder, the
corpus folder and the OS login name say nothing about the evidence and a lot about the machine.
Every string is rewritten before masking and hashing: folders become ``~``, ``[workspace]`` and
``[corpus]``, and a reviewer recorded under the OS login name becomes ``[user]`` (a name the
analyst configured on purpose, ``reviewer = "Ana"``, is kept). ``--include-paths`` opts out.
"""

from __future__ import annotations

import getpass
import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

USER_MARK = "[user]"


@dataclass(frozen=True)
class MachineScrub:
    """Literal replacements (longest first, so a workspace under home reads ``[workspace]``)."""

    literals: tuple[tuple[str, str], ...] = ()
    login: str | None = None
    replaced: dict[str, int] = field(default_factory=dict)

    def text(self, value: str) -> str:
        for literal, mark in self.literals:
            if literal in value:
                self.replaced[mark] = self.replaced.get(mark, 0) + value.count(literal)
                value = value.replace(literal, mark)
        return value

    def value(self, obj: Any, key: str | None = None) -> Any:
        if isinstance(obj, str):
            if key in ("reviewer", "runner") and self.login and obj.startswith(self.login):
                return USER_MARK + obj[len(self.login) :]
            return self.text(obj)
        if isinstance(obj, dict):
            return {k: self.value(v, k if isinstance(k, str) else None) for k, v in obj.items()}
        if isinstance(obj, list):
            return [self.value(v, key) for v in obj]
        return obj

    def leftover(self, blob: str) -> str | None:
        """The first machine path still present (the write is then refused), or None."""
        return next((mark for literal, mark in self.literals if literal in blob), None)


def _login() -> str | None:
    try:
        return getpass.getuser() or None
    except (KeyError, OSError):
        return None


def machine_scrub(
    folders: Iterable[tuple[Path | str | None, str]] = (), *, include_paths: bool = False
) -> MachineScrub:
    """The rewrite for this machine: ``folders`` (path, mark) plus the home folder and login name.

    ``include_paths`` (the analyst's explicit opt-in) returns a scrub that changes nothing.
    """
    if include_paths:
        return MachineScrub()
    pairs: dict[str, str] = {}
    for folder, mark in [*folders, (Path.home(), "~")]:
        if folder is None:
            continue
        for form in {str(folder), os.path.abspath(folder), str(Path(folder).resolve())}:
            if len(form) > 1:  # never rewrite "/" itself
                pairs.setdefault(form.rstrip("/"), mark)
    literals = tuple(sorted(pairs.items(), key=lambda kv: -len(kv[0])))
    return MachineScrub(literals=literals, login=_login())


def scrub_for_settings(settings: Any, *, include_paths: bool = False) -> MachineScrub:
    """The rewrite for a workspace: its folder, its corpus folder, the home folder and the login."""
    from core.store.engine import normalise_url, sqlite_path

    db = sqlite_path(normalise_url(settings.db_url))
    folders: list[tuple[Path | str | None, str]] = [
        (db.parent if db is not None else None, "[workspace]"),
        (settings.corpus, "[corpus]"),
    ]
    return machine_scrub(folders, include_paths=include_paths)


__all__ = ["USER_MARK", "MachineScrub", "machine_scrub", "scrub_for_settings"]
