"""The headless command line (``evidence-desk SUBCOMMAND``): the parser, assembled from the groups.

Each command group is a module of this package with a ``register(sub, common)`` that adds its
parsers and returns its handlers by name. The groups are listed here by name and imported through
``importlib`` (pip's command registry does the same), so this module is the only one that knows
them all and no group imports another. Exit codes and error lines are ``common.exit_code``'s.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import logging
import sys

from core.cli.common import EXIT_USAGE, Handler, Parser, exit_code
from core.config import load_settings, user_config_file, user_log_dir
from core.inputs import load_toml_file, read_input_text
from core.terminal import TerminalStream
from core.version import app_version

# In this order on the help screen: a task's life first, then the team's and the auditor's tools.
GROUPS = ("run", "show", "review", "audit", "insight", "search", "team", "judge")


def build_parser() -> tuple[argparse.ArgumentParser, dict[str, Handler]]:
    """The whole parser and every command's handler by name."""
    common = Parser(add_help=False)
    common.add_argument("--db", metavar="URL", help="workspace database (file path or SQLAlchemy URL)")
    common.add_argument(
        "--create", action="store_true", help="create the workspace file --db names if it does not exist"
    )
    common.add_argument("--script", metavar="FILE", help="scripted-provider script for scripted/* models")
    common.add_argument("--corpus", metavar="DIR", help="documents folder the agent searches")
    common.add_argument("--json", action="store_true", help="machine-readable output")

    parser = Parser(prog="evidence-desk", description="Review LLM answers against their evidence.")
    parser.add_argument("--version", action="version", version=f"evidence-desk {app_version()}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)
    handlers: dict[str, Handler] = {}
    for name in GROUPS:
        group = importlib.import_module(f"core.cli.{name}")
        added: dict[str, Handler] = group.register(sub, common)
        clash = handlers.keys() & added.keys()
        assert not clash, f"command group {name} redefines {sorted(clash)}"
        handlers |= added
    return parser, handlers


def main(argv: list[str] | None = None) -> int:
    parser, handlers = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:
        return int(exc.code or 0) if isinstance(exc.code, int) else EXIT_USAGE
    if args.command is None:
        parser.print_help()
        return EXIT_USAGE
    handler = handlers[args.command]
    out, err = sys.stdout, sys.stderr
    # Everything printed from here on passes the one sanitiser (control characters, secrets).
    sys.stdout, sys.stderr = TerminalStream(out, mask=False), TerminalStream(err, mask=True)
    try:
        _log_in_one_line()
        return _run(handler, args)
    finally:
        sys.stdout.flush()
        sys.stdout, sys.stderr = out, err


def _run(handler: Handler, args: argparse.Namespace) -> int:
    try:
        _check_config_file()
        settings = load_settings(db_url=args.db, script=args.script, corpus=args.corpus)
        _check_named_workspace(args)
        if settings.rules is not None:  # read on every validation later; refuse a bad one now
            read_input_text(settings.rules, what="rules file")
        return asyncio.run(handler(args, settings))
    except (Exception, KeyboardInterrupt) as exc:
        return exit_code(exc, args.db)


class _OneLineLog(logging.Formatter):
    """Warnings reach the terminal as one line each: the message, never a traceback."""

    def format(self, record: logging.LogRecord) -> str:
        lines = record.getMessage().splitlines() or [""]
        return f"evidence-desk: {record.levelname.lower()}: {lines[0]}"


def _log_in_one_line() -> None:
    """Our own warnings as one line each on stderr; every warning, in full, in the log file.

    Library warnings (``warnings.warn``: pydantic's multi-line serializer warnings, deprecations)
    go to the log file only: they say nothing the person at the terminal can act on, and they broke
    the rule of one line per error on stderr.
    """
    root = logging.getLogger()
    if root.handlers:  # someone (a test harness, an embedding program) already decided
        return
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(_OneLineLog())
    handler.setLevel(logging.WARNING)
    root.addHandler(handler)
    log_file = _log_file()
    logging.captureWarnings(True)
    library = logging.getLogger("py.warnings")
    library.propagate = False
    if log_file is not None:
        root.addHandler(log_file)
        library.addHandler(log_file)
    else:  # no log folder: library warnings are dropped rather than break stderr's one line
        library.addHandler(logging.NullHandler())


def _log_file() -> logging.Handler | None:
    """``cli.log`` in the user log folder, bounded (1 MB, two old copies); None when unwritable."""
    from core.logfile import rotating_log

    try:
        folder = user_log_dir()
        folder.mkdir(parents=True, exist_ok=True)
        return rotating_log(
            folder / "cli.log",
            max_bytes=1 << 20,
            backups=2,
            fmt="%(asctime)s %(process)d %(levelname)s %(name)s: %(message)s",
        )
    except OSError:
        return None


def _check_named_workspace(args: argparse.Namespace) -> None:
    """A ``--db`` file that does not exist is refused unless ``--create`` says to make it.

    A mistyped path used to become a new, empty workspace without a word, and the analyst's tasks
    seemed gone. The default workspace (no ``--db``) is still created on first use, and ``demo``
    builds its own workspace beside the one named.
    """
    if not args.db or args.create or args.command == "demo":
        return
    from core.errors import ConfigurationError
    from core.workspace import missing_workspace

    missing = missing_workspace(args.db)
    if missing is not None:
        raise ConfigurationError(f"no workspace at {missing}; add --create to make a new one there")


def _check_config_file() -> None:
    """The settings file passes the input limits before pydantic-settings parses it."""
    path = user_config_file()
    if path.exists() or path.is_symlink():  # absent is fine (defaults); a FIFO or folder is not
        load_toml_file(path, what="configuration file")
