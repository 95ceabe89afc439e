"""The model-family table: vendor families from provider-prefixed litellm names (issue 14, item 4)."""

from __future__ import annotations

import pytest

from core.llm.families import UNKNOWN_FAMILY, model_family, same_family

SAME = [
    ("bedrock/anthropic.claude-3-5-sonnet-20240620-v1:0", "claude-3-5-sonnet"),
    ("azure/gpt-4.1", "gpt-4.1"),
    ("openrouter/anthropic/claude-3.5-sonnet", "anthropic/claude-3-opus"),
    ("vertex_ai/claude-3-5-sonnet@20240620", "anthropic/claude-sonnet-4-5"),
    ("openai/gpt-4o", "azure/gpt-4o-mini"),
    ("o3-mini", "openai/gpt-4.1"),
    ("openrouter/openai/o1-preview", "gpt-4o"),
    ("gemini/gemini-1.5-pro", "vertex_ai/gemini-2.0-flash"),
    ("openrouter/google/gemma-2-9b-it", "gemini/gemini-1.5-flash"),
    ("bedrock/meta.llama3-70b-instruct-v1:0", "groq/llama-3.1-70b-versatile"),
    ("together_ai/meta-llama/Llama-3-70b-chat-hf", "ollama/llama3"),
    ("mistral/mistral-large-latest", "bedrock/mistral.mixtral-8x7b-instruct-v0:1"),
    ("openrouter/mistralai/codestral-2501", "mistral/open-mistral-nemo"),
    ("dashscope/qwen-max", "openrouter/qwen/qwen-2.5-72b-instruct"),
    ("together_ai/Qwen/QwQ-32B-Preview", "ollama/qwen2.5"),
    ("deepseek/deepseek-chat", "openrouter/deepseek/deepseek-r1"),
    ("bedrock/us.deepseek.r1-v1:0", "fireworks_ai/accounts/fireworks/models/deepseek-v3"),
    ("cohere/command-r-plus", "bedrock/cohere.command-r-v1:0"),
    ("xai/grok-2", "openrouter/x-ai/grok-beta"),
    ("bedrock/amazon.nova-pro-v1:0", "bedrock/amazon.titan-text-express-v1"),
    ("scripted/agent", "scripted/validator"),
    # openai/ names the wire protocol of any OpenAI-compatible local server, not the vendor (issue 28)
    ("openai/qwen2.5-7b", "ollama_chat/qwen2.5:14b"),
    ("openai/Qwen/Qwen2.5-7B-Instruct", "hosted_vllm/Qwen/Qwen2.5-14B-Instruct"),
    ("lm_studio/meta-llama-3.1-8b-instruct", "openai/llama-3.2-3b-instruct"),
    ("openai/SmolLM2-135M-Instruct", "ollama_chat/smollm2:360m"),
]
DIFFERENT = [
    ("bedrock/anthropic.claude-3-5-sonnet", "azure/gpt-4.1"),
    ("anthropic/claude-sonnet-4-5", "openai/gpt-4.1"),
    ("gemini/gemini-1.5-pro", "gpt-4o"),
    ("openrouter/meta-llama/llama-3-70b", "openrouter/mistralai/mistral-large"),
    ("deepseek/deepseek-chat", "dashscope/qwen-max"),
    ("groq/llama-3.1-70b", "groq/mixtral-8x7b"),  # same host, different vendors
    ("bedrock/anthropic.claude-v2", "bedrock/meta.llama3-8b"),
    ("azure/gpt-4o", "azure_ai/mistral-large"),
    ("openai/qwen2.5-7b-instruct", "openai/meta-llama-3.1-8b-instruct"),  # the README's own example
    ("openai/qwen2.5-7b-instruct", "openai/gpt-4o"),
    ("hosted_vllm/mistralai/Mistral-7B-Instruct", "openai/gemma-2-9b-it"),
]
UNKNOWN = [
    "my-local-model",
    "ollama/tinyfoo",
    "custom/some-thing-7b",
    "foo3",
    "openai/fake-agent",  # an OpenAI-compatible server's own name says nothing of its vendor
    "openai/my-model",
    "lm_studio/local-model",
]


@pytest.mark.parametrize(("a", "b"), SAME)
def test_same_vendor_through_any_host(a: str, b: str) -> None:
    assert model_family(a) == model_family(b) != UNKNOWN_FAMILY
    assert same_family(a, b) and same_family(b, a)


@pytest.mark.parametrize(("a", "b"), DIFFERENT)
def test_different_vendors(a: str, b: str) -> None:
    assert not same_family(a, b)


@pytest.mark.parametrize("name", UNKNOWN)
def test_unknown_never_claims_sameness(name: str) -> None:
    assert model_family(name) == UNKNOWN_FAMILY
    assert not same_family(name, name)


def test_expected_families() -> None:
    assert model_family("bedrock/anthropic.claude-3-5-sonnet-20240620-v1:0") == "anthropic"
    assert model_family("azure/gpt-4.1") == "openai"
    assert model_family("openrouter/anthropic/claude") == "anthropic"
    assert model_family("together_ai/meta-llama/Llama-3-70b-chat-hf") == "meta"
    assert model_family("openrouter/qwen/qwen-2.5-72b-instruct") == "qwen"
