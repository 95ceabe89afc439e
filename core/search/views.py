"""Saved views: a named search (query text and filters) kept in the workspace.

They live in the workspace (table ``saved_views``), not in the desk's settings file, so every
desk on a shared PostgreSQL workspace sees the team's views, a copied workspace keeps its own, and
the command line can run one by name. Saving under an existing name replaces it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from core.errors import InvalidRequest
from core.search.query import SearchFilters
from core.store import search_sql

MAX_NAME = 200

if TYPE_CHECKING:
    from core.store import Store


class SavedView(BaseModel):
    name: str
    text: str
    filters: SearchFilters = SearchFilters()
    created_by: str = ""


def _clean_name(name: str) -> str:
    cleaned = " ".join(name.split())
    if not cleaned:
        raise InvalidRequest("a saved view needs a name")
    if len(cleaned) > MAX_NAME:
        raise InvalidRequest(f"a saved view's name is at most {MAX_NAME} characters")
    return cleaned


async def save_view(store: Store, view: SavedView) -> SavedView:
    """Keep ``view`` under its name, replacing any view of that name."""
    view = view.model_copy(update={"name": _clean_name(view.name)})
    spec = {"text": view.text, "filters": view.filters.model_dump(mode="json", exclude_defaults=True)}
    await search_sql.save_view_row(store, view.name, spec, view.created_by)
    return view


def _view(name: str, spec: dict[str, Any], created_by: str) -> SavedView:
    return SavedView(
        name=name,
        text=str(spec.get("text", "")),
        filters=SearchFilters.model_validate(spec.get("filters") or {}),
        created_by=created_by,
    )


async def list_views(store: Store) -> list[SavedView]:
    return [_view(*row) for row in await search_sql.view_rows(store)]


async def get_view(store: Store, name: str) -> SavedView:
    found = await search_sql.view_rows(store, _clean_name(name))
    if not found:
        raise InvalidRequest(f"no saved view named {name!r}")
    return _view(*found[0])


async def delete_view(store: Store, name: str) -> bool:
    return await search_sql.delete_view_row(store, _clean_name(name))


__all__ = ["SavedView", "delete_view", "get_view", "list_views", "save_view"]
