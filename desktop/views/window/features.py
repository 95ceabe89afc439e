"""The window's optional features, each imported only when it is installed.

None of them is on screen when the desk starts, and together their imports cost more than the
queue's first query: the launcher installs them after the first fill, tests at construction.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from desktop.views.window.main_window import MainWindow


def install_search_on(window: MainWindow) -> None:
    from desktop.views.queue.search import install_search

    window.search_panel = install_search(window)


def install_team_on(window: MainWindow) -> None:
    from desktop.views.team.pane import install_team

    window.team = install_team(window)


def install_bulk_on(window: MainWindow) -> None:
    from desktop.views.queue.bulk import install_bulk

    window.bulk = install_bulk(window)
