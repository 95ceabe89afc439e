"""Save in Settings applies at once: no restart between choosing a model and using it.

The settings file is read again exactly as a start reads it (environment and the desk's own
command-line options included), the offline replay model stands in for every role still without a
model (``core.first_run``), and the workspace uses the result from its next call on
(``Workspace.apply_settings``). What the desk reads only once at start is named in the message, so
nothing claims to apply that does not.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from core.config import Settings
from core.first_run import needs_provider, replay_folder, replay_roles, with_replay_model
from core.profiles import ModelRole

if TYPE_CHECKING:
    from desktop.views.host import DeskHost

# Settings the open desk read once at start; a change to them applies when it is started again.
RESTART_SETTINGS: dict[str, str] = {
    "reviewer": "the reviewer name (this desk's claims and decisions are recorded under it)",
}


async def reload_settings(
    current: Settings, overrides: Mapping[str, Any]
) -> tuple[Settings, list[ModelRole]]:
    """The settings a start would read now, on the replay model for every role without a model;
    with the roles it stands in for. Raises ``ConfigurationError`` like a start."""
    from core.config import load_settings

    fresh = await asyncio.to_thread(load_settings, **{**overrides, "db_url": current.db_url})
    roles = replay_roles(fresh)
    if roles:
        fresh = await asyncio.to_thread(with_replay_model, fresh, replay_folder())
    return fresh, roles


def applied_message(changed: Iterable[str], replayed: list[ModelRole]) -> str:
    """What Save did, in one line: applied now, stood in for, or waiting for a restart."""
    changed = list(changed)
    later = [RESTART_SETTINGS[name] for name in changed if name in RESTART_SETTINGS]
    now = [name for name in changed if name not in RESTART_SETTINGS]
    parts = ["Settings saved"]
    if now:
        parts[0] += " and applied: new tasks and revisions use them now"
    if replayed:
        names = ", ".join(role.value.replace("_", " ") for role in replayed)
        parts.append(
            f"no model is set for {names}, so the offline replay model stands in (its verdicts go to review)"
        )
    if later:
        parts.append(f"restart the desk for {'; '.join(later)}")
    return "; ".join(parts) + "."


def apply_saved_settings(host: DeskHost, changed: list[str]) -> None:
    """Reload and apply the saved settings in the background; say what applied, or why not. The
    first-run banner ("no model provider is configured") goes once the agent has a model."""
    from PySide6.QtWidgets import QWidget

    services = host.services
    banner = host.widget.findChild(QWidget, "firstRunBanner")  # by name: first_run imports the window
    overrides = getattr(services, "launch_overrides", {})

    async def work() -> tuple[Settings, list[ModelRole]]:
        fresh, roles = await reload_settings(services.workspace.settings, overrides)
        services.workspace.apply_settings(fresh)
        return fresh, roles

    def done(result: tuple[Settings, list[ModelRole]]) -> None:
        fresh, roles = result
        host.show_info(applied_message(changed, roles))
        if banner is not None and not needs_provider(fresh):
            banner.hide()
        status = getattr(host.widget, "workspace_status", None)  # the status bar's warnings, if any
        if status is not None:
            status.refresh(services.workspace)

    def failed(exc: BaseException) -> bool:
        if not isinstance(exc, Exception):
            return False
        host.show_error(f"Settings saved, but not applied ({exc}); they apply at the next start.")
        return True

    host.ops.run(work(), what="Applying the settings", on_done=done, on_error=failed)


__all__ = ["RESTART_SETTINGS", "applied_message", "apply_saved_settings", "reload_settings"]
