"""Local model servers: find them on loopback, and keep Ollama's metadata calls off the caller's thread.

Detection asks each usual port (and any the analyst names) once with a short timeout, all at once,
so a machine with nothing running answers in about the timeout. Where a server reports its context
window it is read too: llama.cpp's ``/props`` (``n_ctx``), Ollama's ``/api/show`` per model, vLLM's
``max_model_len`` in ``/v1/models``; a window the server reports beats any assumed one. Ollama models are unknown to litellm's static map, so litellm
asks the server (``/api/show``) whenever it needs a context size or a capability, synchronously, on
whatever thread calls it (the GUI thread in the desk). ``prepare_ollama_model`` asks once per model,
in a worker thread, and registers the answer with litellm so every later lookup is a map read.
"""

from __future__ import annotations

import asyncio
import math
import threading
from collections.abc import Sequence
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

    kind: str  # "ollama", "lmstudio", "llamacpp", "vllm", or "openai" on a port the analyst named
    label: str
    api_base: str
    models: tuple[str, ...] = field(default_factory=tuple)
    # The context window each model runs with, where the server reports it (litellm name -> tokens).
    context_windows: dict[str, int] = field(default_factory=dict)

    def context_window(self, model: str) -> int | None:
        return self.context_windows.get(model)


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
            return await _probe_ollama(client, label, base, prefix)
        return await _probe_openai(client, kind, label, base, prefix)
    except (httpx.HTTPError, ValueError, AttributeError, TypeError):
        return None


async def _probe_ollama(client: httpx.AsyncClient, label: str, base: str, prefix: str) -> LocalServer:
    response = await client.get(f"{base}/api/tags")
    response.raise_for_status()
    entries = response.json().get("models", [])
    names = [str(e.get("name") or e.get("model")) for e in entries if isinstance(e, dict)]
    names = [n for n in names if n]
    shown = await asyncio.gather(*(_ollama_window(client, base, n) for n in names))
    windows = {f"{prefix}{n}": w for n, w in zip(names, shown, strict=True) if w is not None}
    return LocalServer("ollama", label, base, tuple(f"{prefix}{n}" for n in names), windows)


async def _probe_openai(
    client: httpx.AsyncClient, kind: str, label: str, base: str, prefix: str
) -> LocalServer:
    response = await client.get(f"{base}/v1/models")
    response.raise_for_status()
    entries = [e for e in response.json().get("data", []) if isinstance(e, dict) and e.get("id")]
    models = tuple(f"{prefix}{e['id']}" for e in entries)
    windows = {
        f"{prefix}{e['id']}": int(e["max_model_len"]) for e in entries if _positive(e.get("max_model_len"))
    }  # vLLM states each model's window
    served = await _llamacpp_window(client, base)  # one model per llama.cpp server: its n_ctx
    if served is not None:
        windows |= {m: served for m in models}
    return LocalServer(kind, label, f"{base}/v1", models, windows)


def _positive(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value > 0


async def _llamacpp_window(client: httpx.AsyncClient, base: str) -> int | None:
    """llama.cpp's (and llama-cpp-python's) ``/props``: the context size the server was started with."""
    try:
        response = await client.get(f"{base}/props")
        response.raise_for_status()
        props = response.json()
    except (httpx.HTTPError, ValueError):
        return None
    if not isinstance(props, dict):
        return None
    defaults = props.get("default_generation_settings")
    for value in (props.get("n_ctx"), defaults.get("n_ctx") if isinstance(defaults, dict) else None):
        if isinstance(value, int) and _positive(value):
            return value
    return None


async def _ollama_window(client: httpx.AsyncClient, base: str, name: str) -> int | None:
    """Ollama's ``/api/show``: the model's trained context length (``<arch>.context_length``), or
    the ``num_ctx`` its Modelfile sets, which is what the server really runs it with."""
    try:
        response = await client.post(f"{base}/api/show", json={"model": name})
        response.raise_for_status()
        shown = response.json()
    except (httpx.HTTPError, ValueError):
        return None
    if not isinstance(shown, dict):
        return None
    for line in str(shown.get("parameters") or "").splitlines():
        key, _, value = line.strip().partition(" ")
        if key == "num_ctx" and value.strip().isdigit():
            return int(value.strip())
    info = shown.get("model_info")
    if isinstance(info, dict):
        for key, value in info.items():
            if str(key).endswith(".context_length") and isinstance(value, int) and _positive(value):
                return value
    return None


async def detect_local_servers(
    *,
    host: str = "127.0.0.1",
    ports: dict[str, int] | None = None,
    extra_ports: Sequence[int] = (),
    timeout_s: float = DETECT_TIMEOUT_S,
) -> list[LocalServer]:
    """Servers answering on ``host`` at the usual ports (``ports`` overrides a kind's port, for tests)
    and at ``extra_ports`` (``local_server_ports``: a llama.cpp server started with ``--port``), which
    are asked as OpenAI-compatible servers."""
    overrides = ports or {}
    usual = {overrides.get(kind, port) for kind, _, port, _ in KNOWN_SERVERS}
    async with httpx.AsyncClient(timeout=timeout_s, trust_env=False) as client:
        probes = [
            _probe(client, kind, label, f"http://{host}:{overrides.get(kind, port)}", prefix)
            for kind, label, port, prefix in KNOWN_SERVERS
        ]
        probes += [
            _probe(client, "openai", f"Server on port {port}", f"http://{host}:{port}", "openai/")
            for port in dict.fromkeys(extra_ports)
            if port not in usual
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
_served: dict[str, int | None] = {}  # api_base -> the n_ctx its llama.cpp server reported (None: none)


def _server_root(api_base: str) -> str:
    base = api_base.rstrip("/")
    return base[: -len("/v1")] if base.endswith("/v1") else base


def fetch_served_window(api_base: str, timeout_s: float = DETECT_TIMEOUT_S * 2) -> int | None:
    """The context size a llama.cpp server at ``api_base`` runs with (``/props``), asked once per
    endpoint; None when it does not say (another kind of server). Blocking: run it in a worker."""
    with _prepared_lock:
        if api_base in _served:
            return _served[api_base]

    async def ask() -> int | None:
        async with httpx.AsyncClient(timeout=timeout_s, trust_env=False) as client:
            return await _llamacpp_window(client, _server_root(api_base))

    window = asyncio.run(ask())
    with _prepared_lock:
        _served[api_base] = window
    return window


def served_window(api_base: str | None) -> int | None:
    """What ``fetch_served_window`` learnt for ``api_base``; no network."""
    if not api_base:
        return None
    with _prepared_lock:
        return _served.get(api_base)


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
    "fetch_served_window",
    "is_ollama",
    "ollama_model_info",
    "ollama_num_ctx",
    "prepare_ollama_model",
    "served_window",
]
