"""Budgets that fit slow local models (issue 28, item 8), over litellm's real HTTP path to a loopback fake.

- The reply's room in the validator's window is its profile's ``max_tokens``, not a fixed share.
- ``validator_timeout_s`` bounds one call; the verdict's budget is ``validator_budget_s`` plus
  ``validator_budget_per_chunk_s`` per chunk, and a verdict cut short keeps the prompts it sent.

No timing is asserted: a held reply never comes back, so only the budget can end the verdict.
"""

from __future__ import annotations

import asyncio
import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from core.config import load_settings
from core.llm import LLMGateway
from core.profiles import ModelProfile, ModelRole
from core.tasks.service import TaskService
from core.workspace import Workspace
from tests.fakes.llm_server import FakeLLMServer, RecordedRequest, Reply

BIG = " ".join(f"The Challenger Deep sounding number {i} gave 10,935 metres." for i in range(400))
READ = ("read_document", {"document_id": "trench.md"})
CITED = [{"claim": "depth", "evidence_id": "E1", "quote": "10,935 metres", "verdict": "supported"}]
ACCEPTED = {
    "goal_achievement": "gives the depth",
    "completeness": "complete",
    "rule_compliance": "no rules",
    "status": "accepted",
    "score": 0.9,
    "citations": CITED,
}


@pytest.fixture(autouse=True)
def _no_provider_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(os.environ):
        if name.startswith("EVIDENCE_DESK_") or name.endswith("_API_BASE") or name == "OPENAI_API_KEY":
            monkeypatch.delenv(name)
    monkeypatch.setenv("EVIDENCE_DESK_CONFIG_FILE", "/nonexistent/config.toml")


def _validate(
    agent: FakeLLMServer,
    validator: FakeLLMServer,
    tmp_path: Path,
    validator_profile: dict[str, Any],
    **extra: Any,
) -> dict[str, Any]:
    corpus = tmp_path / "corpus"
    corpus.mkdir(parents=True)
    (corpus / "trench.md").write_text(BIG, encoding="utf-8")
    settings = load_settings(
        db_url=f"sqlite+aiosqlite:///{tmp_path / 'ws.sqlite3'}",
        corpus=corpus,
        agent_model="openai/fake-agent",
        validator_model="openai/fake-validator",
        max_validation_attempts=1,
        llm_num_retries=0,
        profiles={
            ModelRole.AGENT: ModelProfile(api_base=agent.openai_base, no_api_key=True, context_window=32_000),
            ModelRole.VALIDATOR: ModelProfile(
                api_base=validator.openai_base, no_api_key=True, **validator_profile
            ),
        },
        **extra,
    )

    async def go() -> dict[str, Any]:
        ws = await Workspace.open(settings, gateway=LLMGateway(settings, retry_backoff_s=0.0))
        try:
            service = TaskService(ws)
            task = await service.run((await service.create("How deep is the Challenger Deep?")).id)
            (validation,) = await ws.store.list_validations(task.id)
            return {"debug": validation.debug, "prompt": validation.prompt, "result": validation.result}
        finally:
            await ws.close()

    return asyncio.run(go())


def test_the_reply_reserve_is_the_validator_profile_s_max_tokens(
    fake_llm_factory: Callable[..., FakeLLMServer], tmp_path: Path
) -> None:
    agent, validator = fake_llm_factory(), fake_llm_factory()
    agent.push(Reply.text("About 10,935 metres."), Reply.text("About 10,935 metres."))
    validator.push(Reply.structured(ACCEPTED), Reply.structured(ACCEPTED))
    sized = _validate(agent, validator, tmp_path / "sized", {"context_window": 8192, "max_tokens": 400})
    assert (sized["debug"]["reply_reserve"], sized["debug"]["prompt_budget"]) == (400, int(8192 * 0.9) - 400)
    assert (validator.chat_requests()[0].body or {}).get("max_tokens") == 400  # and the server is told so
    unsized = _validate(agent, validator, tmp_path / "unsized", {"context_window": 8192})
    assert (unsized["debug"]["reply_reserve"], unsized["debug"]["prompt_budget"]) == (
        2048,
        int(8192 * 0.9) - 2048,
    )


def _chunks_then_hang(request: RecordedRequest) -> Reply:
    if "Findings from the evidence chunks" in request.text:
        return Reply.held()  # the verdict never comes back: only the budget ends it
    return Reply.structured({"findings": [], "notes": "nothing contradicts the answer"})


def test_a_chunked_verdict_gets_a_budget_per_chunk_and_keeps_the_prompts_it_sent(
    fake_llm_factory: Callable[..., FakeLLMServer], tmp_path: Path
) -> None:
    agent, validator = fake_llm_factory(), fake_llm_factory()
    agent.push(Reply.tools(READ, READ), Reply.text("About 10,935 metres."))
    validator.responder = _chunks_then_hang
    shown = _validate(
        agent,
        validator,
        tmp_path,
        {"context_window": 1600, "max_tokens": 200},
        validator_budget_s=4,  # the preparation (token counts, chunk plan) runs inside it too
        validator_budget_per_chunk_s=0.5,
    )
    debug = shown["debug"]
    found = re.search(r"=== chunk 1 of (\d+) ===", shown["prompt"] or "")
    assert found is not None and shown["result"]["status"] == "validator_error"
    chunks = int(found.group(1))
    assert chunks >= 2
    budget = 4 + chunks * 0.5
    expected = f"budget of {budget:g} s (validator_budget_s + {chunks} chunks × validator_budget_per_chunk_s)"
    assert expected in debug["error"]
    # The prompts of the chunk calls that did run are stored with the verdict that never came.
    for index in range(1, chunks + 1):
        assert f"=== chunk {index} of {chunks} ===" in shown["prompt"]
