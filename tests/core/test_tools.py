"""Tool registry and built-in tools: schemas, argument errors as results, fetch_url via MockTransport."""

from __future__ import annotations

import asyncio
import json
import threading
from pathlib import Path
from typing import Annotated, Any

import httpx
import pytest
from pydantic import Field

from core.config import Settings
from core.tools import (
    Corpus,
    ToolRegistry,
    ToolResult,
    UnknownToolError,
    build_default_registry,
)

Count = Annotated[int, Field(ge=1, le=10, description="How many items to return.")]


async def lookup(term: Annotated[str, Field(description="The word to look up.")], count: Count = 3) -> str:
    """Look a word up in the glossary.

    Second paragraph is implementation detail and must not reach the model.
    """
    return f"{term}:{count}"


def sync_tool(x: int) -> dict[str, Any]:
    """Report which thread ran the tool."""
    return {"x": x, "thread": threading.get_ident()}


async def boom(reason: str) -> str:
    """Always fails."""
    raise ValueError(f"bad {reason}")


@pytest.fixture
def registry() -> ToolRegistry:
    reg = ToolRegistry()
    reg.register(lookup)
    reg.register(sync_tool)
    reg.register(boom)
    return reg


@pytest.fixture(autouse=True)
def _isolated_settings(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Keep the developer's own config file and environment out of these tests."""
    monkeypatch.setenv("EVIDENCE_DESK_CONFIG_FILE", str(tmp_path / "absent.toml"))
    monkeypatch.delenv("EVIDENCE_DESK_FETCH_URL_ENABLED", raising=False)


def _settings(**kw: Any) -> Settings:
    return Settings(db_url="sqlite+aiosqlite:///:memory:", **kw)


# --------------------------------------------------------------------------------------------- schema


def test_schema_has_names_required_descriptions_and_constraints(registry: ToolRegistry) -> None:
    assert registry.names() == ["lookup", "sync_tool", "boom"]
    schema = registry.schemas(["lookup"])
    assert len(schema) == 1
    assert schema[0]["type"] == "function"
    fn = schema[0]["function"]
    assert fn["name"] == "lookup"
    assert fn["description"] == "Look a word up in the glossary."
    params = fn["parameters"]
    assert params["type"] == "object"
    assert params["required"] == ["term"]
    assert params["properties"]["term"] == {"type": "string", "description": "The word to look up."}
    count = params["properties"]["count"]
    assert count["type"] == "integer"
    assert (count["minimum"], count["maximum"], count["default"]) == (1, 10, 3)
    assert count["description"] == "How many items to return."
    assert params["additionalProperties"] is False
    json.dumps(registry.schemas())  # the whole list must be JSON-serialisable as sent to litellm


def test_register_rejects_untyped_and_duplicate() -> None:
    reg = ToolRegistry()

    def untyped(a):  # type: ignore[no-untyped-def]
        return a

    with pytest.raises(TypeError, match="needs a type annotation"):
        reg.register(untyped)
    reg.register(lookup)
    with pytest.raises(ValueError, match="already registered"):
        reg.register(lookup)
    with pytest.raises(ValueError, match="must match"):
        reg.register(lookup, name="has space")


def test_subset_and_unknown_names(registry: ToolRegistry) -> None:
    sub = registry.subset(["boom", "lookup"])
    assert sub.names() == ["lookup", "boom"]
    with pytest.raises(UnknownToolError, match="nope") as info:
        registry.subset(["lookup", "nope"])
    assert info.value.unknown == ["nope"]
    assert "available tools: lookup, sync_tool, boom" in str(info.value)
    with pytest.raises(UnknownToolError):
        registry.schemas(["nope"])


# ------------------------------------------------------------------------------------------ execution


async def test_execute_valid_json_and_dict(registry: ToolRegistry) -> None:
    assert await registry.execute("lookup", '{"term": "tide", "count": 4}') == ToolResult(content="tide:4")
    assert (await registry.execute("lookup", {"term": "moon"})).content == "moon:3"


async def test_validation_error_is_a_result_naming_the_field(registry: ToolRegistry) -> None:
    result = await registry.execute("lookup", '{"term": "tide", "count": "ten"}')
    assert result.is_error
    assert result.content.startswith("invalid arguments for lookup: count:")
    assert "valid integer" in result.content and "'ten'" in result.content

    result = await registry.execute("lookup", {"term": "tide", "count": 99})
    assert result.is_error and "count" in result.content and "less than or equal to 10" in result.content

    result = await registry.execute("lookup", {})
    assert result.is_error and "term: Field required" in result.content

    result = await registry.execute("lookup", {"term": "x", "colour": "red"})
    assert result.is_error and "colour" in result.content


async def test_malformed_json_and_non_object(registry: ToolRegistry) -> None:
    result = await registry.execute("lookup", '{"term": ')
    assert result.is_error and "not valid JSON" in result.content
    result = await registry.execute("lookup", "[1, 2]")
    assert result.is_error and "expected a JSON object, got list" in result.content


async def test_unknown_tool(registry: ToolRegistry) -> None:
    result = await registry.execute("x", "{}")
    assert result.is_error
    assert result.content == "unknown tool 'x'; available tools: lookup, sync_tool, boom"


async def test_tool_exception_becomes_error_result(registry: ToolRegistry) -> None:
    result = await registry.execute("boom", {"reason": "luck"})
    assert result == ToolResult(content="boom failed: ValueError: bad luck", is_error=True)


async def test_sync_tool_runs_in_a_thread_and_json_result(registry: ToolRegistry) -> None:
    result = await registry.execute("sync_tool", '{"x": 7}')
    assert not result.is_error
    payload = json.loads(result.content)
    assert payload["x"] == 7
    assert payload["thread"] != threading.get_ident()
    assert result.data == payload


async def test_cancellation_propagates() -> None:
    started = asyncio.Event()

    async def slow() -> str:
        """Sleeps."""
        started.set()
        await asyncio.sleep(10)
        return "done"

    reg = ToolRegistry()
    reg.register(slow)
    task = asyncio.create_task(reg.execute("slow", ""))
    await started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


async def test_non_serialisable_return_is_error_result() -> None:
    async def weird() -> object:
        """Returns an object."""
        return object()

    reg = ToolRegistry()
    reg.register(weird)
    result = await reg.execute("weird", None)
    assert result.is_error and "TypeError" in result.content


# ---------------------------------------------------------------------------------------------- builtin


@pytest.fixture
def corpus(tmp_path: Path) -> Corpus:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "tides.md").write_text("# Tides\n\nThe moon's gravity raises ocean tides twice a day.\n")
    (docs / "bread.txt").write_text("Sourdough bread needs a starter culture and patience.\n")
    return Corpus(docs, tmp_path / "cache" / "index.sqlite3")


async def test_default_registry_schemas_omit_disabled_fetch(corpus: Corpus) -> None:
    reg = build_default_registry(_settings(), corpus)
    assert reg.names() == ["search_corpus", "read_document"]
    assert [s["function"]["name"] for s in reg.schemas()] == ["search_corpus", "read_document"]
    props = {s["function"]["name"]: s["function"]["parameters"]["properties"] for s in reg.schemas()}
    assert (props["search_corpus"]["limit"]["minimum"], props["search_corpus"]["limit"]["maximum"]) == (1, 50)
    assert props["read_document"]["length"]["maximum"] == 200_000
    assert props["read_document"]["offset"]["minimum"] == 0
    result = await reg.execute("fetch_url", {"url": "https://example.org"})
    assert result.is_error and "disabled in configuration" in result.content
    # a team plan may still name it; the node gets the same explanation
    assert (await reg.subset(["fetch_url"]).execute("fetch_url", {})).content == result.content


async def test_search_and_read_tools(corpus: Corpus) -> None:
    reg = build_default_registry(_settings(), corpus)
    result = await reg.execute("search_corpus", {"query": "why are there tides?"})
    assert not result.is_error
    assert result.data["hits"][0]["document_id"] == "tides.md"
    assert "document_id: tides.md" in result.content and "title: Tides" in result.content

    page = await reg.execute("read_document", {"document_id": "tides.md", "length": 10})
    assert not page.is_error
    assert page.title == "Tides"
    assert page.url == "corpus:tides.md" and str(corpus.folder) not in json.dumps(page.model_dump())
    assert "continue with offset=10" in page.content
    assert page.data["next_offset"] == 10


async def test_builtin_error_results(corpus: Corpus) -> None:
    reg = build_default_registry(_settings(), corpus)
    for bad in ("", "*", "  ()  "):
        result = await reg.execute("search_corpus", {"query": bad})
        assert result.is_error and "no words to search for" in result.content
    result = await reg.execute("search_corpus", {"query": "tides", "limit": 51})
    assert result.is_error and "limit" in result.content
    result = await reg.execute("read_document", {"document_id": "missing.md"})
    assert result.is_error and "search_corpus first" in result.content
    result = await reg.execute("read_document", {"document_id": "tides.md", "offset": -1})
    assert result.is_error and "offset" in result.content
    result = await reg.execute("read_document", {"document_id": "tides.md", "offset": 10_000})
    assert result.is_error and "past the end" in result.content

    no_corpus = build_default_registry(_settings(), None)
    result = await no_corpus.execute("search_corpus", {"query": "tides"})
    assert result.is_error and "no document corpus is configured" in result.content


async def test_fetch_url_via_mock_transport() -> None:
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        if request.url.path == "/old":
            return httpx.Response(301, headers={"location": "https://example.org/page"})
        if request.url.path == "/page":
            html = "<html><head><title>Tide Tables</title><script>x()</script></head><body><p>High at 6.</p>"
            return httpx.Response(200, html=html)
        if request.url.path == "/image":
            return httpx.Response(200, content=b"\x89PNG", headers={"content-type": "image/png"})
        return httpx.Response(404)

    def factory() -> httpx.AsyncClient:
        return httpx.AsyncClient(transport=httpx.MockTransport(handler))

    reg = build_default_registry(_settings(fetch_url_enabled=True), None, http_client_factory=factory)
    assert "fetch_url" in reg.names()
    result = await reg.execute("fetch_url", {"url": "https://example.org/old"})
    assert not result.is_error, result.content
    assert result.url == "https://example.org/page"
    assert result.title == "Tide Tables"
    assert "High at 6." in result.content and "x()" not in result.content
    assert [r.url.path for r in seen] == ["/old", "/page"]

    missing = await reg.execute("fetch_url", {"url": "https://example.org/gone"})
    assert missing.is_error and "HTTP 404" in missing.content
    image = await reg.execute("fetch_url", {"url": "https://example.org/image"})
    assert image.is_error and "not text" in image.content
    bad_scheme = await reg.execute("fetch_url", {"url": "file:///etc/passwd"})
    assert bad_scheme.is_error and "http" in bad_scheme.content


async def test_fetch_url_transport_error_is_result() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("connection refused", request=request)

    reg = build_default_registry(
        _settings(fetch_url_enabled=True),
        None,
        http_client_factory=lambda: httpx.AsyncClient(transport=httpx.MockTransport(handler)),
    )
    result = await reg.execute("fetch_url", {"url": "https://example.org/"})
    assert result.is_error and "ConnectError" in result.content and "connection refused" in result.content
