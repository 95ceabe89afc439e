"""``python -m core.cli``: the command line without the desk's entry point (tests and benchmarks)."""

import core.cli.main

raise SystemExit(core.cli.main.main())
