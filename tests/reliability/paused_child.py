"""A real ``evidence-desk`` process that stops at a named point so a test can SIGKILL it there.

``python -m tests.reliability.paused_child POINT ARGS...`` runs the command line with ARGS; when it
reaches POINT it prints ``PAUSED`` on stdout and waits on stdin forever, so the test learns by an
event (the line) that the process is mid-write, then kills it. Nothing of the work is replaced:
the process only stops where a crash would stop it.

Points: ``publish`` (an export's ``.part`` file is complete and about to be renamed into place)
and ``import-rows`` (an import has stored its texts and is about to write its rows).
"""

from __future__ import annotations

import os
import sys
from typing import Any


def _pause() -> None:
    print("PAUSED", flush=True)
    sys.stdin.read()  # never returns before the test kills this process
    raise SystemExit("the test closed stdin instead of killing the process")


def _install(point: str) -> None:
    if point == "publish":
        real_replace = os.replace

        def replace(src: Any, dst: Any, *args: Any, **kwargs: Any) -> None:
            if str(src).endswith(".part"):
                _pause()
            real_replace(src, dst, *args, **kwargs)

        os.replace = replace
    elif point == "import-rows":
        from core.store import Store

        real_import = Store.import_records

        async def import_records(self: Store, *args: Any, **kwargs: Any) -> Any:
            _pause()
            return await real_import(self, *args, **kwargs)

        Store.import_records = import_records  # type: ignore[method-assign]
    else:
        raise SystemExit(f"unknown pause point {point!r}")


if __name__ == "__main__":
    _install(sys.argv[1])
    from core.cli.main import main

    sys.exit(main(sys.argv[2:]))
