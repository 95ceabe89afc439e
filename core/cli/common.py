"""What every command shares: the workspace it runs in, its output, dates, and what errors mean.

Command modules import this module and nothing else of the command line, so a group can be read,
changed or removed on its own. A command never prints its own error line or picks an exit code:
it raises one of core's typed errors (or ``UsageError``) and ``exit_code`` says it once, as one
line on stderr, with the code the interface promises:

0 success, 2 usage, 3 refused action (illegal transition, stale version, a colleague's claim),
4 configuration or input error (bad script, unreadable database, no such attempt, a bad date),
5 ``run``'s task ended ``failed`` (the reason on stderr; ``--json`` carries it as ``error``),
130 interrupted, 141 the reader of our output left, 1 a bug (one line, and how to get details).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Awaitable, Callable, Coroutine
from datetime import UTC, date, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn, Protocol

from core.config import Settings
from core.domain.claims import ClaimRecord
from core.domain.labels import outcome_label
from core.domain.records import TaskRecord
from core.errors import ConfigurationError, EvidenceDeskError, InvalidRequest, RefusedAction
from core.tasks.dossier_json import task_json as task_json  # re-exported: commands print tasks so

if TYPE_CHECKING:
    from core.workspace import Workspace

EXIT_OK, EXIT_FAILURE, EXIT_USAGE, EXIT_REFUSED, EXIT_INPUT, EXIT_TASK_FAILED = 0, 1, 2, 3, 4, 5
EXIT_INTERRUPTED, EXIT_PIPE_CLOSED = 130, 141

Handler = Callable[[argparse.Namespace, Settings], Coroutine[Any, Any, int]]
"""A command: its parsed arguments and the settings in, an exit code out."""


class Subparsers(Protocol):
    """The part of argparse's private ``_SubParsersAction`` a command group uses."""

    def add_parser(self, name: str, **kwargs: Any) -> argparse.ArgumentParser: ...


class UsageError(EvidenceDeskError):
    """Arguments that parse but do not go together (``revise`` without ``--prompt``): exit 2."""


class Parser(argparse.ArgumentParser):
    """argparse's own usage errors as one line and exit 2, like every other error."""

    def error(self, message: str) -> NoReturn:
        print(f"{self.prog}: usage error: {message}", file=sys.stderr)
        raise SystemExit(EXIT_USAGE)


# ---------------------------------------------------------------------- errors to exit codes
def exit_code(exc: BaseException, db: str | None) -> int:
    """The one place an error becomes a line on stderr and an exit code (see the module docstring).

    Re-raises a bug when ``EVIDENCE_DESK_DEBUG`` is set, so a developer gets the traceback.
    """
    if isinstance(exc, UsageError):
        return _say(f"usage error: {exc}", EXIT_USAGE)
    if isinstance(exc, RefusedAction):
        return _say(f"refused: {exc}", EXIT_REFUSED)
    if isinstance(exc, EvidenceDeskError):  # configuration, input, store, invalid request
        return _say(str(exc), EXIT_INPUT)
    if isinstance(exc, KeyboardInterrupt):
        return _say("interrupted", EXIT_INTERRUPTED)
    if isinstance(exc, BrokenPipeError):  # `evidence-desk list | head`: the reader left; nothing to say
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT_PIPE_CLOSED
    if os.environ.get("EVIDENCE_DESK_DEBUG"):
        raise exc
    known = _environment_failure(exc, db)
    if known is not None:
        return _say(known, EXIT_INPUT)
    detail = " ".join(str(exc).split())  # one line even for multi-line messages (pydantic's)
    return _say(
        f"internal error: {type(exc).__name__}: {detail} (set EVIDENCE_DESK_DEBUG=1 for a traceback)",
        EXIT_FAILURE,
    )


def _say(line: str, code: int) -> int:
    print(f"evidence-desk: {line}", file=sys.stderr)
    return code


def _environment_failure(exc: BaseException, db: str | None) -> str | None:
    """One line for a failure of the machine rather than of the program: a database or file error.

    The store maps the errors it meets opening and writing; this catches any that escape on
    other paths (the event writer's thread, a read), so SQL and its parameters never reach stderr.
    """
    if "sqlalchemy" in sys.modules:
        from sqlalchemy.exc import DBAPIError

        if isinstance(exc, DBAPIError):
            from core.config import default_db_url
            from core.store.engine import describe_db_error, normalise_url

            return describe_db_error(exc, normalise_url(db) if db else default_db_url())
    if isinstance(exc, OSError) and exc.strerror:
        where = f" {exc.filename}" if exc.filename else ""
        return f"cannot use{where}: {exc.strerror}"
    return None


# ---------------------------------------------------------------------- arguments
def parse_day(value: str | None, option: str) -> datetime | None:
    """``--since``/``--until``: a calendar day (YYYY-MM-DD) as midnight UTC, or a moment with its
    offset (``2024-03-12T10:00+02:00``, ``...Z``) as that moment in UTC; None when not given.

    The one date parser of the command line, so every command reads a date the same way. A time
    without an offset is refused rather than guessed: ``--since 2024-03-01T18:00`` would mean a
    different moment on each analyst's machine.
    """
    if not value:
        return None
    try:
        day = date.fromisoformat(value)
    except ValueError:
        pass
    else:
        return datetime(day.year, day.month, day.day, tzinfo=UTC)
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        moment = None
    if moment is None or moment.tzinfo is None:
        raise InvalidRequest(
            f"{option} {value!r} is not a date (use YYYY-MM-DD, or a time with its offset such as "
            "2024-03-12T10:00+02:00)"
        ) from None
    return moment.astimezone(UTC)


def add_take_over(parser: argparse.ArgumentParser) -> None:
    """The confirmation a decision on a task someone else has claimed needs (recorded as on the desk)."""
    parser.add_argument(
        "--take-over",
        action="store_true",
        help="decide even though another reviewer holds the task (recorded)",
    )


REVIEWER_HELP = "act as this reviewer (default: the configured reviewer, else your login)"


def reviewer(args: argparse.Namespace, settings: Settings) -> str:
    """Who acts: ``--reviewer`` when the command has it and it was given, else the configured one."""
    from core.tasks.review import reviewer_name

    given = getattr(args, "reviewer", None)
    return str(given) if given else reviewer_name(settings.reviewer)


def read_schema(path: Path) -> dict[str, Any]:
    """An output schema, read and checked (refs included) before the workspace is even opened."""
    from core.inputs import load_json_file
    from core.tasks.service import check_output_schema

    data = load_json_file(path, what="output schema")
    if not isinstance(data, dict):
        raise ConfigurationError(f"output schema {path}: a JSON schema must be an object")
    check_output_schema(data)
    return data


# ---------------------------------------------------------------------- the workspace
async def with_workspace(
    settings: Settings, body: Callable[[Workspace], Awaitable[int]], *, recover: bool = True
) -> int:
    """Open the workspace, recover what a crashed process left running (unless told not to), run
    ``body``, and close the workspace whatever happens."""
    import asyncio

    from core.secrets import load_api_keys_into_env
    from core.tasks.recovery import recover_interrupted
    from core.workspace import Workspace

    await asyncio.to_thread(load_api_keys_into_env)  # for the models, and for export redaction
    ws = await Workspace.open(settings)
    try:
        if recover:
            await recover_interrupted(ws)
        return await body(ws)
    finally:
        await ws.close()


# ---------------------------------------------------------------------- output
def emit(data: Any) -> None:
    """``--json`` output: one indented document on stdout."""
    from core.terminal import json_safe

    sys.stdout.write(json_safe(json.dumps(data, indent=2, ensure_ascii=False, default=str)) + "\n")


def claim_json(claim: ClaimRecord) -> dict[str, Any]:
    return {
        "task_id": claim.task_id,
        "reviewer": claim.reviewer,
        "claimed_at": claim.claimed_at.isoformat(),
        "expires_at": claim.expires_at.isoformat(),
    }


async def print_task_summary(
    ws: Workspace, task: TaskRecord, as_json: bool, extra: dict[str, Any] | None = None
) -> None:
    """The task and one line per attempt: what ``run``, ``feedback`` and the review moves print."""
    attempts = await ws.store.list_attempts(task.id, resolve=False, texts=False)  # no answer is printed
    rows: list[dict[str, Any]] = [
        {
            "index": a.index,
            "trigger": a.trigger,
            "state": a.state.value,
            "finish_reason": a.finish_reason,
            "validation_status": a.validation_status,
            "validation_score": a.validation_score,
            "validation_outcome": a.validation_outcome.value if a.validation_outcome else None,
        }
        for a in attempts
    ]
    if as_json:
        emit({**task_json(task), "text": task.text, "attempts": rows, **(extra or {})})
        return
    outcome = outcome_label(task.validation_outcome, task.latest_validation_status)
    print(f"task {task.id}  status {task.status.value}  outcome {outcome}  version {task.version}")
    for r in rows:
        score = f"{r['validation_score']:.2f}" if r["validation_score"] is not None else "-"
        print(
            f"  attempt {r['index']} ({r['trigger']}): {r['state']}, finish {r['finish_reason']}, "
            f"validation {r['validation_status'] or '-'} score {score}, "
            f"outcome {outcome_label(r['validation_outcome'], r['validation_status'])}"
        )
