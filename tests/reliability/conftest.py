"""Session fixtures of the bad-input suite: seeded workspaces, and the subprocess cases run at once."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import pytest

from tests.reliability.cases import all_cases
from tests.reliability.harness import Seeds, build_seeds, fingerprint, prepare, run_subprocess


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
    """Every subprocess case, run side by side: each is a separate program start, which is slow."""
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
