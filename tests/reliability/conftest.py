"""Fixtures for the adversarial suites: a scratch desk driven through the CLI, an in-memory keyring,
and the bad-input suite's seeded workspaces with its subprocess cases run at once.

The keyring is swapped for the whole test (and restored), the way the desk's own keyring test swaps
in the ``fail`` backend: signing keys created here never reach the OS keyring of whoever runs them.
"""

from __future__ import annotations

import fcntl
import json
import os
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass

import keyring
import pytest

from tests.integration.conftest import desk  # noqa: F401  (the same scratch desk as the integration tests)
from tests.keyrings import MemoryKeyring
from tests.reliability.cases import all_cases
from tests.reliability.harness import Seeds, build_seeds, fingerprint, prepare, run_subprocess


@pytest.fixture(autouse=True)
def memory_keyring() -> Iterator[MemoryKeyring]:
    previous = keyring.get_keyring()
    ring = MemoryKeyring()
    keyring.set_keyring(ring)
    try:
        yield ring
    finally:
        keyring.set_keyring(previous)


@dataclass(frozen=True)
class Outcome:
    code: int
    stderr: str
    before: dict[str, str]
    after: dict[str, str]


@pytest.fixture(scope="session")
def seeds(tmp_path_factory: pytest.TempPathFactory) -> Seeds:
    return build_seeds(tmp_path_factory.mktemp("seeds"))


@pytest.fixture(scope="session")
def subprocess_outcomes(seeds: Seeds, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Outcome]:
    """Every subprocess case, run side by side: each is a child process of its own (forked, tests/zygote.py).

    Under pytest-xdist each worker is a session of its own, and the cases' tests may be spread
    over several workers; the cases run once per run all the same. The first worker to need them
    runs them holding a lock in the folder the workers share and leaves the outcomes there; any
    other reads them once the lock is free.
    """
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        return _run_subprocess_cases(seeds, tmp_path_factory)
    shared = tmp_path_factory.getbasetemp().parent  # the run's basetemp; each worker's is inside
    saved = shared / "bad-input-programs.json"
    with (shared / "bad-input-programs.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        if not saved.exists():
            outcomes = _run_subprocess_cases(seeds, tmp_path_factory)
            saved.write_text(json.dumps({k: asdict(v) for k, v in outcomes.items()}), encoding="utf-8")
        return {k: Outcome(**v) for k, v in json.loads(saved.read_text(encoding="utf-8")).items()}


def _run_subprocess_cases(seeds: Seeds, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Outcome]:
    cases = [c for c in all_cases() if c.subprocess]
    root = tmp_path_factory.mktemp("subprocess-cases")

    def one(case_index: int) -> tuple[str, Outcome]:
        case = cases[case_index]
        folder = root / f"case-{case_index}"
        argv, env = prepare(case, folder, seeds)
        before = fingerprint(folder)
        code, stderr = run_subprocess(argv, env)
        return case.id, Outcome(code, stderr, before, fingerprint(folder))

    with ThreadPoolExecutor(max_workers=6) as pool:
        return dict(pool.map(one, range(len(cases))))
