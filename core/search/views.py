"""Saved views: a named search (query text and filters) kept in the workspace.

They live in the workspace (table ``saved_views``), not in the desk's settings file, so every
desk on a shared PostgreSQL workspace sees the team's views, a copied workspace keeps its own, and
the command line can run one by name. Saving under an existing name replaces it.
"""

from __future__ import annotations

from pydantic import BaseModel
from sqlalchemy import delete, select

from core.search.query import SearchFilters
from core.store.base import StoreBase
from core.store.models import SavedViewRow, utcnow

MAX_NAME = 200


class SavedView(BaseModel):
    name: str
    text: str
    filters: SearchFilters = SearchFilters()
    created_by: str = ""


def _clean_name(name: str) -> str:
    cleaned = " ".join(name.split())
    if not cleaned:
        raise ValueError("a saved view needs a name")
    if len(cleaned) > MAX_NAME:
        raise ValueError(f"a saved view's name is at most {MAX_NAME} characters")
    return cleaned


async def save_view(store: StoreBase, view: SavedView) -> SavedView:
    """Keep ``view`` under its name, replacing any view of that name."""
    view = view.model_copy(update={"name": _clean_name(view.name)})
    spec = {"text": view.text, "filters": view.filters.model_dump(mode="json", exclude_defaults=True)}
    async with store._write() as s:
        row = await s.get(SavedViewRow, view.name)
        if row is None:
            s.add(SavedViewRow(name=view.name, spec=spec, created_by=view.created_by, updated_at=utcnow()))
        else:
            row.spec = spec
            row.updated_at = utcnow()
    return view


def _view(row: SavedViewRow) -> SavedView:
    return SavedView(
        name=row.name,
        text=str(row.spec.get("text", "")),
        filters=SearchFilters.model_validate(row.spec.get("filters") or {}),
        created_by=row.created_by,
    )


async def list_views(store: StoreBase) -> list[SavedView]:
    async with store.read_session() as s:
        rows = (await s.scalars(select(SavedViewRow).order_by(SavedViewRow.name))).all()
        return [_view(r) for r in rows]


async def get_view(store: StoreBase, name: str) -> SavedView:
    async with store.read_session() as s:
        row = await s.get(SavedViewRow, _clean_name(name))
        if row is None:
            raise ValueError(f"no saved view named {name!r}")
        return _view(row)


async def delete_view(store: StoreBase, name: str) -> bool:
    async with store._write() as s:
        done = await s.execute(delete(SavedViewRow).where(SavedViewRow.name == _clean_name(name)))
    return bool(getattr(done, "rowcount", 0))


__all__ = ["SavedView", "delete_view", "get_view", "list_views", "save_view"]
