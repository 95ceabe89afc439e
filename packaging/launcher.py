"""Entry script of the frozen bundle (and of `python packaging/launcher.py` in a checkout).

It is the console script's target, ``desktop.entry:main``, plus one switch for packagers that
costs nothing unless its variable is set: a self-test of what the bundle loads lazily or by path
(litellm's data files, tiktoken's offline encodings, package metadata, migrations, Qt plugins).
It lives here, outside ``core`` and ``desktop``, so checking a build needs no change to the product.
"""

from __future__ import annotations

import os

SELFTEST_ENV = "EVIDENCE_DESK_BUNDLE_SELFTEST"


def run() -> int:
    if os.environ.get(SELFTEST_ENV) == "1":
        from bundle_selftest import main as selftest

        return selftest()
    from desktop.entry import main

    return main()


if __name__ == "__main__":
    raise SystemExit(run())
