"""Structured output negotiated per endpoint: the strongest contract the server honours, remembered.

Servers that speak the OpenAI API differ in what they do with ``response_format``. OpenAI and
vLLM honour ``json_schema``; llama.cpp's ``llama-server`` and llama-cpp-python constrain decoding
to a schema given as ``{"type": "json_object", "schema": ...}`` (llama-cpp-python 0.3.36 answers
HTTP 500 to ``json_schema``); Ollama takes the schema as ``format`` (litellm writes it from
``json_schema``); some servers refuse the parameter altogether. Assuming one shape made the
validator fail on every task against a llama.cpp-family server, so each (endpoint, model) walks a
ladder instead, strongest first:

1. ``json_schema``: ``response_format`` with the JSON schema (Ollama: ``format`` = the schema);
2. ``json_object``: JSON mode plus the server's own constrained decoding where it has one
   (llama.cpp family: ``schema`` inside ``response_format``; vLLM: ``guided_json``; Ollama:
   ``format: "json"``);
3. ``prompt_only``: nothing extra; the schema travels in the prompt and our parser checks it.

A refusal steps one rung down at once (no transport retry): an HTTP 4xx or 5xx whose message names
``response_format``, ``json_schema``, ``grammar`` or the schema, any 400-class refusal of a contract
not yet seen to work, or a 500 on the first request that carried the contract. The answer is kept
for the process, per endpoint and model, with the refusals that led to it, so every later call
(and the verdict's debug record) says which contract was used and why. It is not written to disk:
a server restarted with other flags or another model would be misjudged by a stale answer, and
finding out again costs at most two short refusals per process.
"""

from __future__ import annotations

import functools
import json
import re
import threading
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from pydantic import BaseModel

__all__ = [
    "ContractBook",
    "Negotiation",
    "StructuredContract",
    "contract_params",
    "grammar_schema",
    "is_refusal",
    "schema_of",
]


class StructuredContract(StrEnum):
    """How a call asks for JSON, strongest first."""

    JSON_SCHEMA = "json_schema"
    JSON_OBJECT = "json_object"
    PROMPT_ONLY = "prompt_only"

    def weaker(self) -> StructuredContract | None:
        ladder = list(StructuredContract)
        index = ladder.index(self)
        return ladder[index + 1] if index + 1 < len(ladder) else None


_REFUSAL_WORDS = re.compile(r"response_format|json_schema|grammar|\bschema\b", re.IGNORECASE)
_OLLAMA = ("ollama", "ollama_chat")
_VLLM = ("hosted_vllm", "vllm")


@dataclass
class _Entry:
    contract: StructuredContract = StructuredContract.JSON_SCHEMA
    confirmed: bool = False  # a request with this contract has been answered
    refusals: list[str] = field(default_factory=list)


class ContractBook:
    """What each (endpoint, model) honours, for the life of the process; safe across threads."""

    def __init__(self) -> None:
        self._entries: dict[tuple[str, str], _Entry] = {}
        self._lock = threading.Lock()

    def current(self, key: tuple[str, str]) -> tuple[StructuredContract, bool]:
        """The contract to try and whether it has been seen to work."""
        with self._lock:
            entry = self._entries.setdefault(key, _Entry())
            return entry.contract, entry.confirmed

    def refused(self, key: tuple[str, str], contract: StructuredContract, reason: str) -> StructuredContract:
        """Step below ``contract`` (another call may have stepped already) and keep the reason."""
        with self._lock:
            entry = self._entries.setdefault(key, _Entry())
            if entry.contract is contract:
                entry.refusals.append(f"{contract.value} refused: {reason}")
                entry.contract = contract.weaker() or StructuredContract.PROMPT_ONLY
                entry.confirmed = False
            return entry.contract

    def confirm(self, key: tuple[str, str], contract: StructuredContract) -> list[str]:
        """The contract answered: remember it; returns the refusals that led here."""
        with self._lock:
            entry = self._entries.setdefault(key, _Entry())
            if entry.contract is contract:
                entry.confirmed = True
            return list(entry.refusals)

    def known(self) -> dict[tuple[str, str], tuple[StructuredContract, bool, list[str]]]:
        """Everything negotiated so far (Settings' "Test connection" and the tests read it)."""
        with self._lock:
            return {k: (e.contract, e.confirmed, list(e.refusals)) for k, e in self._entries.items()}

    def forget(self, key: tuple[str, str]) -> None:
        """Negotiate again from the top (a probe asked to look afresh)."""
        with self._lock:
            self._entries.pop(key, None)


BOOK = ContractBook()  # one per process: every gateway (desk, worker, CLI) shares what it learned


@dataclass
class Negotiation:
    """One call's part in the negotiation: the schema it wants and the contract in use."""

    key: tuple[str, str]
    name: str
    schema: dict[str, Any]
    contract: StructuredContract
    confirmed: bool


@functools.lru_cache(maxsize=256)
def _schema_text(model: type[BaseModel]) -> str:
    return json.dumps(model.model_json_schema())


def model_schema(model: type[BaseModel]) -> dict[str, Any]:
    """A pydantic model's JSON schema, built once per model: pydantic builds it anew on every
    ``model_json_schema()`` (some 5 ms for a verdict, twice a call); each caller gets its own copy."""
    schema: dict[str, Any] = json.loads(_schema_text(model))
    return schema


def schema_of(response_format: Any) -> tuple[str, dict[str, Any]] | None:
    """``(name, schema)`` of a caller's request for schema-shaped JSON; None for anything else."""
    if isinstance(response_format, type) and hasattr(response_format, "model_json_schema"):
        return response_format.__name__, model_schema(response_format)
    if isinstance(response_format, dict) and response_format.get("type") == "json_schema":
        spec = response_format.get("json_schema") or {}
        schema = spec.get("schema")
        if isinstance(schema, dict):
            return str(spec.get("name") or "output"), schema
    return None


def contract_params(
    contract: StructuredContract, name: str, schema: dict[str, Any], provider: str, local: bool
) -> dict[str, Any]:
    """The litellm arguments a contract adds to a call (``local``: the profile names an api_base)."""
    if contract is StructuredContract.JSON_SCHEMA:
        return {"response_format": {"type": "json_schema", "json_schema": {"name": name, "schema": schema}}}
    if contract is StructuredContract.PROMPT_ONLY:
        return {}
    if provider in _OLLAMA:
        return {"response_format": {"type": "json_object"}}  # litellm sends Ollama ``format: "json"``
    if provider in _VLLM:
        return {"response_format": {"type": "json_object"}, "extra_body": {"guided_json": schema}}
    if local:
        # llama.cpp's server and llama-cpp-python turn ``schema`` into a decoding grammar.
        return {"response_format": {"type": "json_object", "schema": grammar_schema(schema)}}
    return {"response_format": {"type": "json_object"}}


SCALE_STEPS = 20  # a bounded number offered to a grammar as 21 values: 0.0, 0.05, ... 1.0 for a score


def grammar_schema(schema: Any) -> Any:
    """The schema as a decoding grammar can hold it: bounded numbers become the values in range.

    A JSON-schema-to-grammar converter (llama.cpp's, llama-cpp-python's) keeps a number's type but
    not its ``minimum``/``maximum``: a small model then writes ``"score": 5`` for a 0-1 score, and
    every re-ask repeats it. A number bounded on both sides is offered as ``SCALE_STEPS + 1``
    evenly spaced values (an integer range of at most 100 as its integers), so the grammar itself
    keeps it in range. Only what the server decodes with changes; the reply is still checked
    against the caller's own schema.
    """
    if isinstance(schema, list):
        return [grammar_schema(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    out = {key: grammar_schema(value) for key, value in schema.items()}
    low, high, kind = schema.get("minimum"), schema.get("maximum"), schema.get("type")
    if kind in ("number", "integer") and isinstance(low, (int, float)) and isinstance(high, (int, float)):
        values: list[float] | list[int] | None = None
        if kind == "integer" and 0 <= high - low <= 100:
            values = list(range(int(low), int(high) + 1))
        elif kind == "number" and high > low:
            values = [round(low + (high - low) * i / SCALE_STEPS, 6) for i in range(SCALE_STEPS + 1)]
        if values is not None:
            for key in ("type", "minimum", "maximum"):
                out.pop(key, None)
            out["enum"] = values
    return out


def is_refusal(kind: str, status: int | None, text: str, *, confirmed: bool) -> bool:
    """Whether a failed call refused the structured-output contract rather than failed otherwise.

    ``kind`` is the gateway's error kind (a context overflow, a bad key or an unknown model have
    kinds of their own and are never refusals); ``text`` is the provider's whole message.
    """
    if kind not in ("server_error", "bad_request", "unexpected"):
        return False
    if kind == "unexpected" and not (status is not None and status >= 400):
        return False
    return bool(_REFUSAL_WORDS.search(text)) or not confirmed
