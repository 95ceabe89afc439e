"""The ``evidence-desk`` console entry point: no arguments opens the desk, anything else is the CLI.

It lives in ``desktop`` because only this package may import Qt; the command line itself is in
``core.cli`` and never pays for a Qt import.
"""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if not args or (args[0] in ("desk", "--db", "--script") and _only_desk_args(args)):
        from desktop.app import run_desk

        return run_desk(args)
    from core.cli.main import main as cli_main

    return cli_main(args)


def _only_desk_args(args: list[str]) -> bool:
    """Only ``--db URL`` and ``--script FILE`` pairs (the desk's options); anything else is the CLI's."""
    rest = args[1:] if args[0] == "desk" else args
    return len(rest) % 2 == 0 and all(flag in ("--db", "--script") for flag in rest[::2])


if __name__ == "__main__":
    raise SystemExit(main())
