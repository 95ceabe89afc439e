"""A real llama.cpp-family server with a real model, for the real-model suite.

The server is llama-cpp-python's OpenAI-compatible server and the model SmolLM2-135M-Instruct,
both installed by ``tests/realmodel/provision.py`` (``make real-model``). Not provisioned, the suite
skips and says how to provision; with ``EVIDENCE_DESK_REALMODEL_REQUIRED=1`` (CI) it fails instead.
The server listens on a free loopback port picked at start and is stopped at the end of the session.
Under pytest-xdist each worker is a session with a server of its own (single-threaded: a worker is
a core), and hands its runs' lines to the controller, which prints them all.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from typing import Any

import pytest

from tests.realmodel.server import RUNS, LlamaServer, provisioned, summary_lines


@pytest.fixture(scope="session")
def llama(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LlamaServer]:
    where = provisioned()
    if where is None:
        message = "the real model server is not provisioned: run `make real-model`"
        if os.environ.get("EVIDENCE_DESK_REALMODEL_REQUIRED"):
            pytest.fail(message)
        pytest.skip(message)
    server = LlamaServer(
        python=where["python"],
        model=where["model"],
        model_name=where["model_name"],
        log=tmp_path_factory.mktemp("llama") / "server.log",
    )
    server.start()
    try:
        yield server
    finally:
        server.stop()


# The two longest runs, and the ones whose length varies most: a small judge stuck in a loop took
# the team task from 92 s to 214 s in two fresh-clone runs of the same tree.
LONGEST = ("test_team_task", "test_server_killed_mid_run_and_restarted")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """On two workers, each starts with one of the two longest runs. worksteal hands each worker
    half the list in order and lets one that ran dry take the tail of the other's queue: in file
    order the team task came last in the first half, where nothing could take it, and the other
    worker idled while it ran. The order is the same in every worker, as xdist requires."""
    if not items or any("tests/realmodel/" not in item.nodeid for item in items):
        return  # only the suite alone (make realmodel-test) is reordered
    heavy = [item for name in LONGEST for item in items if item.name == name]
    rest = [item for item in items if item.name not in LONGEST]
    if len(heavy) != 2:
        return
    half = len(items) // 2
    items[:] = [heavy[0], *rest[: half - 1], heavy[1], *rest[half - 1 :]]


def pytest_sessionfinish(session: pytest.Session) -> None:
    workeroutput = getattr(session.config, "workeroutput", None)  # set in an xdist worker only
    if workeroutput is not None:
        workeroutput["realmodel_runs"] = json.dumps(RUNS)


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: object) -> None:
    """xdist's controller, as each worker ends: its runs join the summary."""
    RUNS.extend(json.loads(getattr(node, "workeroutput", {}).get("realmodel_runs", "[]")))


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if RUNS:
        terminalreporter.section("real model runs")
        for line in summary_lines():
            terminalreporter.write_line(line)
