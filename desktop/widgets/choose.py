"""File and folder choosers that never start a nested event loop.

The static ``QFileDialog.get*`` helpers run their own loop; inside qasync that loop would step
asyncio tasks re-entrantly. These open a window-modal dialog with ``open()`` and call back.
"""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtWidgets import QFileDialog, QWidget


def choose_path(
    parent: QWidget,
    title: str,
    on_chosen: Callable[[str], None],
    *,
    start: str = "",
    name_filter: str = "",
    folder: bool = False,
) -> QFileDialog:
    dialog = QFileDialog(parent, title, start, name_filter)
    dialog.setFileMode(QFileDialog.FileMode.Directory if folder else QFileDialog.FileMode.ExistingFile)
    dialog.fileSelected.connect(lambda path: on_chosen(path) if path else None)
    dialog.open()
    return dialog
