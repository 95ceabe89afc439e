"""A real llama.cpp-family server with a real model, for the real-model suite.

The server is llama-cpp-python's OpenAI-compatible server and the model SmolLM2-135M-Instruct,
both installed by ``tests/realmodel/provision.py`` (``make real-model``). Not provisioned, the suite
skips and says how to provision; with ``EVIDENCE_DESK_REALMODEL_REQUIRED=1`` (CI) it fails instead.
The server listens on a free loopback port picked at start and is stopped at the end of the session.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

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


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if RUNS:
        terminalreporter.section("real model runs")
        for line in summary_lines():
            terminalreporter.write_line(line)
