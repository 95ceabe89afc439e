"""Local model servers: find them on loopback, and keep Ollama's metadata calls off the caller's thread.

Detection asks each usual port once with a short timeout, all at once, so a machine with nothing
running answers in about the timeout. Ollama models are unknown to litellm's static map, so litellm
asks the server (``/api/show``) whenever it needs a context size or a capability, synchronously, on
whatever thread calls it (the GUI thread in the desk). ``prepare_ollama_model`` asks once per model,
in a worker thread, and registers the answer with litellm so every later lookup is a map read.
"""

from __future__ import annotations

import asyncio
import math
import threading
from dataclasses import dataclass, field
from typing import Any

import httpx

DETECT_TIMEOUT_S = 0.8
OLLAMA_PROVIDERS = frozenset({"ollama", "ollama_chat"})
NUM_CTX_STEP = 2048
DEFAULT_COMPLETION_ALLOWANCE = 1024


@dataclass(frozen=True)
class LocalServer:
    """A server that answered on loopback, with the litellm model names to use for its models."""

    kind: str  # "ollama", "lmstudio", "llamacpp", "vllm"
    label: str
    api_base: str
    models: tuple[str, ...] = field(default_factory=tuple)


# (kind, label, port, litellm prefix); Ollama speaks its own API, the others OpenAI's.
KNOWN_SERVERS: tuple[tuple[str, str, int, str], ...] = (
    ("ollama", "Ollama", 11434, "ollama_chat/"),
    ("lmstudio", "LM Studio", 1234, "openai/"),
    ("llamacpp", "llama.cpp server", 8080, "openai/"),
    ("vllm", "vLLM", 8000, "hosted_vllm/"),
)


async def _probe(
    client: httpx.AsyncClient, kind: str, label: str, base: str, prefix: str
) -> LocalServer | None:
    try:
        if kind == "ollama":
            response = await client.get(f"{base}/api/tags")
            response.raise_for_status()
            entries = response.json().get("models", [])
            names = [str(e.get("name") or e.get("model")) for e in entries if isinstance(e, dict)]
            return LocalServer(kind, label, base, tuple(f"{prefix}{n}" for n in names if n))
        response = await client.get(f"{base}/v1/models")
        response.raise_for_status()
        entries = response.json().get("data", [])
        ids = [str(e.get("id")) for e in entries if isinstance(e, dict) and e.get("id")]
        return LocalServer(kind, label, f"{base}/v1", tuple(f"{prefix}{i}" for i in ids))
    except (httpx.HTTPError, ValueError, AttributeError):
        return None


async def detect_local_servers(
    *, host: str = "127.0.0.1", ports: dict[str, int] | None = None, timeout_s: float = DETECT_TIMEOUT_S
) -> list[LocalServer]:
    """Servers answering on ``host`` at the usual ports (``ports`` overrides a kind's port, for tests)."""
    overrides = ports or {}
    async with httpx.AsyncClient(timeout=timeout_s, trust_env=False) as client:
        probes = [
            _probe(client, kind, label, f"http://{host}:{overrides.get(kind, port)}", prefix)
            for kind, label, port, prefix in KNOWN_SERVERS
        ]
        found = await asyncio.gather(*probes)
    return [server for server in found if server is not None]


def is_ollama(provider: str) -> bool:
    return provider in OLLAMA_PROVIDERS


def ollama_num_ctx(prompt_chars: int, max_tokens: int | None) -> int:
    """A context size that holds the whole prompt plus the answer, so Ollama never cuts the prompt.

    Three characters per token over-counts ordinary text a little, which is the safe side here:
    a context too small is silently truncated by the server, one too large only costs memory.
    """
    needed = math.ceil(prompt_chars / 3) + (max_tokens or DEFAULT_COMPLETION_ALLOWANCE)
    return max(NUM_CTX_STEP, math.ceil(needed / NUM_CTX_STEP) * NUM_CTX_STEP)


_prepared: dict[str, dict[str, Any]] = {}
_prepared_lock = threading.Lock()


def ollama_model_info(model: str) -> dict[str, Any] | None:
    """What ``prepare_ollama_model`` learnt about ``model``; no network."""
    with _prepared_lock:
        return _prepared.get(model)


def prepare_ollama_model(litellm: Any, model: str, api_base: str | None) -> dict[str, Any]:
    """Ask the server about ``model`` once and register it with litellm (blocking: run in a worker).

    After this, litellm treats the model as known and never calls ``/api/show`` for it again.
    """
    with _prepared_lock:
        if model in _prepared:
            return _prepared[model]
    from litellm.llms.ollama.common_utils import OllamaModelInfo

    info = dict(OllamaModelInfo().get_runtime_model_info(model=model, api_base=api_base))
    info.pop("key", None)
    info["litellm_provider"] = "ollama"
    info.setdefault("mode", "chat")
    entry = {k: v for k, v in info.items() if v is not None}
    names = {model, OllamaModelInfo._strip_ollama_model_prefix(model)}
    litellm.register_model({name: entry for name in names})
    with _prepared_lock:
        _prepared[model] = info
    return info


__all__ = [
    "KNOWN_SERVERS",
    "LocalServer",
    "detect_local_servers",
    "is_ollama",
    "ollama_model_info",
    "ollama_num_ctx",
    "prepare_ollama_model",
]
