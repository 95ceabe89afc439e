"""A streamed call to the real llama.cpp-family server, read where the OpenAI SDK hands out chunks.

The command line does not stream, so the suite's tasks never do; the desk does. This drives the
gateway's streamed path (``core.llm.streaming``) against the real server: the answer cut at
``max_tokens`` says ``length`` (never a guessed ``stop``, never ``stream_cut`` for a stream that
ended with its terminator), the pieces are the answer, and the server's stream, which carries no
token counts, is still counted.
"""

from __future__ import annotations

import os

import pytest

from core.config import load_settings
from core.llm import LLMGateway
from core.profiles import ModelProfile, ModelRole
from tests.realmodel.server import LlamaServer


@pytest.fixture(autouse=True)
def _no_provider_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(os.environ):
        if name.startswith("OPENAI_"):
            monkeypatch.delenv(name)


async def test_a_streamed_answer_from_the_real_server_is_whole_cut_at_its_limit_and_counted(
    llama: LlamaServer,
) -> None:
    model = f"openai/{llama.model_name}"
    profile = ModelProfile(model=model, api_base=llama.api_base, no_api_key=True, temperature=0, max_tokens=8)
    gateway = LLMGateway(load_settings(agent_model=model, profiles={ModelRole.AGENT: profile}))
    pieces: list[str] = []

    response = await gateway.complete(
        model=model,
        role=ModelRole.AGENT,
        messages=[{"role": "user", "content": "Write a long story about the sea."}],
        stream=True,
        on_delta=pieces.append,
    )

    assert response.finish_reason == "length"
    assert response.content and "".join(pieces) == response.content
    assert response.usage.prompt_tokens > 0 and response.usage.completion_tokens > 0
