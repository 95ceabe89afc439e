"""Which vendor trained a model, from its litellm name: the "different model family" check.

A judge tends to favour answers written by its own family (seed 004 recommends a verifier from
another vendor). litellm's provider is where a model is *served* (bedrock, azure, openrouter,
vertex_ai), not who made it: ``bedrock/anthropic.claude-3-5-sonnet`` and ``claude-3-5-sonnet``
are both Anthropic models. So the family is read from the model name itself, after the routing
prefixes, against a table of name patterns. A name that matches nothing is ``unknown``, and
``unknown`` never equals anything, not even another ``unknown``: the check only warns when it
is sure.

A prefix that names a wire protocol rather than a vendor is dropped too: ``openai/`` is how litellm
reaches *any* OpenAI-compatible server (llama.cpp, LM Studio, vLLM), so ``openai/qwen2.5-7b-instruct``
is a Qwen model and ``openai/my-model`` is unknown, not OpenAI's.
"""

from __future__ import annotations

import re

__all__ = ["UNKNOWN_FAMILY", "model_family", "same_family"]

UNKNOWN_FAMILY = "unknown"

# Order matters: the first pattern found in the name wins. Patterns are searched in the name
# without its routing prefixes, lower-cased, at a word start ("o3" must not match "foo3").
_FAMILIES: tuple[tuple[str, str], ...] = (
    ("anthropic", r"claude|anthropic"),
    ("openai", r"gpt|chatgpt|o1|o3|o4|davinci|babbage|text-embedding|openai|codex"),
    ("google", r"gemini|gemma|palm|bison|google"),
    ("meta", r"llama|meta-llama|meta"),
    ("mistral", r"mistral|mixtral|codestral|pixtral|ministral|magistral|devstral"),
    ("qwen", r"qwen|qwq"),
    ("deepseek", r"deepseek"),
    ("cohere", r"command|cohere|aya"),
    ("xai", r"grok|x-ai|xai"),
    ("amazon", r"nova|titan|amazon"),
    ("microsoft", r"phi-?\d|phi$|microsoft"),
    ("moonshot", r"kimi|moonshot"),
    ("zhipu", r"glm|zhipu|z-ai"),
    ("01-ai", r"yi-|01-ai"),
    ("ai21", r"jamba|jurassic|ai21"),
    ("nvidia", r"nemotron|nvidia"),
    ("huggingface", r"smollm|zephyr"),
    ("ibm", r"granite"),
    ("allenai", r"olmo|tulu"),
    ("tii", r"falcon"),
    ("scripted", r"scripted"),
)
_PATTERNS = tuple((family, re.compile(rf"(?:^|[/.:_\-\s@])(?:{pattern})")) for family, pattern in _FAMILIES)

# Where a model is served, or the wire protocol it is reached by, not who made it: dropped before
# matching so "azure/gpt-4.1" and "gpt-4.1" read the same, and "openai/qwen2.5-7b" (an
# OpenAI-compatible local server) reads as Qwen. A vendor-only prefix ("anthropic/", "mistral/",
# "gemini/") is kept: only that vendor's models are reached through it.
_ROUTERS = {
    "openai",
    "openai_like",
    "custom_openai",
    "text-completion-openai",
    "llamafile",
    "llamacpp",
    "xinference",
    "oobabooga",
    "azure",
    "azure_ai",
    "bedrock",
    "bedrock_converse",
    "sagemaker",
    "vertex_ai",
    "vertex_ai_beta",
    "openrouter",
    "together_ai",
    "fireworks_ai",
    "groq",
    "ollama",
    "ollama_chat",
    "huggingface",
    "deepinfra",
    "anyscale",
    "perplexity",
    "replicate",
    "watsonx",
    "databricks",
    "cloudflare",
    "nvidia_nim",
    "lm_studio",
    "hosted_vllm",
    "vllm",
    "litellm_proxy",
    "github",
    "snowflake",
    "sambanova",
    "cerebras",
    "nebius",
    "novita",
    "friendliai",
}


def model_family(model: str) -> str:
    """The vendor family of a litellm model name, or ``unknown``."""
    name = model.strip().lower()
    parts = name.split("/")
    while len(parts) > 1 and parts[0] in _ROUTERS:
        parts = parts[1:]
    rest = "/".join(parts)
    for family, pattern in _PATTERNS:
        if pattern.search(rest):
            return family
    return UNKNOWN_FAMILY


def same_family(a: str, b: str) -> bool:
    """True only when both names are known to come from the same vendor."""
    fa, fb = model_family(a), model_family(b)
    return fa != UNKNOWN_FAMILY and fa == fb
