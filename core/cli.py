"""The headless command line (``evidence-desk SUBCOMMAND``).

Exit codes are part of the interface: 0 success, 2 usage, 3 refused action, 4 configuration or
input error. Errors are one line on stderr, never a traceback.
"""

from __future__ import annotations

import argparse
import sys
from importlib.metadata import PackageNotFoundError, version

from core.errors import ConfigurationError, EvidenceDeskError, RefusedAction, StoreError

EXIT_OK, EXIT_USAGE, EXIT_REFUSED, EXIT_INPUT = 0, 2, 3, 4


def app_version() -> str:
    try:
        return version("evidence-desk")
    except PackageNotFoundError:  # running from a source tree without installation
        return "0+unknown"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="evidence-desk", description="Review LLM answers against their evidence."
    )
    parser.add_argument("--version", action="version", version=f"evidence-desk {app_version()}")
    parser.add_subparsers(dest="command", metavar="COMMAND")
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:
        return int(exc.code or 0)
    if args.command is None:
        parser.print_help()
        return EXIT_USAGE
    try:
        return EXIT_OK
    except RefusedAction as exc:
        print(f"evidence-desk: refused: {exc}", file=sys.stderr)
        return EXIT_REFUSED
    except (ConfigurationError, StoreError) as exc:
        print(f"evidence-desk: {exc}", file=sys.stderr)
        return EXIT_INPUT
    except EvidenceDeskError as exc:
        print(f"evidence-desk: {exc}", file=sys.stderr)
        return EXIT_INPUT
