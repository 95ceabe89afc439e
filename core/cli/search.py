"""``evidence-desk search``: the desk's search box on the command line, and its saved views.

Bad input (nothing to search for, a score outside 0..1, an unreadable date, an unknown view)
raises core's ``InvalidRequest``: one line on stderr and exit code 4, and nothing changed.
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from core.cli.common import EXIT_OK, Handler, Subparsers, emit, parse_day, with_workspace
from core.config import Settings
from core.errors import InvalidRequest
from core.progress import progress_bar

if TYPE_CHECKING:
    from pydantic import ValidationError

    from core.search.query import SearchFilters, SearchQuery
    from core.workspace import Workspace

KINDS = ("title", "text", "answer", "evidence", "issue", "note")


def register(sub: Subparsers, common: argparse.ArgumentParser) -> dict[str, Handler]:
    p = sub.add_parser(
        "search",
        parents=[common],
        help="search titles, task text, answers, evidence, validator issues and notes",
        description='QUERY: words (all must appear), "quoted phrases", word* prefixes.',
    )
    p.add_argument("query", nargs="?", default="", help='e.g. tide "spring tide" ebb*')
    p.add_argument(
        "--kind", action="append", choices=KINDS, default=[], help="only these passages (repeatable)"
    )
    p.add_argument("--min-score", type=float, metavar="X", help="the task's latest validator score >= X")
    p.add_argument("--max-score", type=float, metavar="X", help="the task's latest validator score <= X")
    p.add_argument("--category", help="the task's latest validator category")
    p.add_argument("--outcome", help="accepted, force_accepted or none")
    p.add_argument("--status", help="the task's status, e.g. needs_review")
    p.add_argument("--reviewer", help="tasks this reviewer decided or holds")
    p.add_argument("--batch", metavar="BATCH_ID", help="tasks of this batch")
    p.add_argument("--since", metavar="YYYY-MM-DD", help="passages dated on or after this day (UTC)")
    p.add_argument("--until", metavar="YYYY-MM-DD", help="passages dated before this day (UTC)")
    p.add_argument("--limit", type=int, default=20, help="hits to print (default 20)")
    p.add_argument("--save", metavar="NAME", help="also keep this query and its filters as a saved view")
    p.add_argument("--view", metavar="NAME", help="run a saved view (QUERY and filters then come from it)")
    p.add_argument("--views", action="store_true", help="list the saved views")
    p.add_argument(
        "--reindex", action="store_true", help="rebuild the index of answers, evidence, issues, notes"
    )
    return {"search": cmd_search}


def _filters(args: argparse.Namespace) -> SearchFilters:
    from pydantic import ValidationError

    from core.search.query import SearchFilters

    try:
        return SearchFilters(
            kinds=tuple(args.kind),
            min_score=args.min_score,
            max_score=args.max_score,
            category=args.category,
            outcome=args.outcome,
            status=args.status,
            reviewer=args.reviewer,
            batch_id=args.batch,
            since=parse_day(args.since, "--since"),
            until=parse_day(args.until, "--until"),
        )
    except ValidationError as exc:
        raise _invalid(exc) from None


def _query(text: str, filters: SearchFilters, limit: int) -> SearchQuery:
    from pydantic import ValidationError

    from core.search.query import SearchQuery

    try:
        return SearchQuery(text=text, filters=filters, limit=max(1, limit))
    except ValidationError as exc:
        raise _invalid(exc) from None


def _invalid(exc: ValidationError) -> InvalidRequest:
    """The first thing pydantic refused, named as the option the user typed."""
    first = exc.errors()[0]
    return InvalidRequest(f"--{str(first['loc'][0]).replace('_', '-')}: {first['msg']}")


async def cmd_search(args: argparse.Namespace, settings: Settings) -> int:
    from core.search.index import backfill
    from core.search.query import SearchService
    from core.search.views import SavedView, get_view, list_views, save_view
    from core.tasks.review import reviewer_name

    async def body(ws: Workspace) -> int:
        if args.reindex:
            with progress_bar("reindex", unit="task", quiet=args.json):
                n = await backfill(ws.store)
            print(f"indexed {n} task(s)", file=sys.stderr)
            if not args.query and not args.view:
                return EXIT_OK
        if args.views:
            views = await list_views(ws.store)
            if args.json:
                emit([v.model_dump(mode="json") for v in views])
            for v in [] if args.json else views:
                print(f"{v.name}\t{v.text}")
            return EXIT_OK
        if args.view:
            view = await get_view(ws.store, args.view)
            text, filters = view.text, view.filters
        else:
            text, filters = args.query, _filters(args)
        page = await SearchService(ws.store).search(_query(text, filters, args.limit))
        if args.save:
            await save_view(
                ws.store,
                SavedView(
                    name=args.save, text=text, filters=filters, created_by=reviewer_name(settings.reviewer)
                ),
            )
        if args.json:
            hits = [h.model_dump(mode="json") for h in page.hits]
            emit({"hits": hits, "more": page.more is not None, "ranked": page.ranked})
            return EXIT_OK
        for h in page.hits:
            where = f"attempt {h.attempt_index} " if h.attempt_index is not None else ""
            ref = f" {h.ref}" if h.ref else ""
            print(f"{h.task_id[:12]}  {h.title}  [{where}{h.kind.value}{ref}]")
            print(f"    {h.marked()}")
        if not page.ranked:
            print(
                "(so many passages match that hits come newest first; add words to rank them)",
                file=sys.stderr,
            )
        if not page.hits:
            print("no hits", file=sys.stderr)
        elif page.more is not None:
            print(f"(more than {len(page.hits)} hits; raise --limit)", file=sys.stderr)
        return EXIT_OK

    return await with_workspace(settings, body)
