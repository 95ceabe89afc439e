"""``python -m core.cli``: the command line without the desk's entry point (tests and benchmarks)."""

from core.cli.main import main

raise SystemExit(main())
