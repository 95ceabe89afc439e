"""The tools every agent gets: corpus search, document reading and (when enabled) URL fetching.

Results are written for a model to read and for an analyst to audit: each says what was searched
or read, where it came from, and how to continue (the next offset), and carries the same facts
in ``data`` for the evidence builder.

Corpus results also carry the corpus's current warnings (files left out of the index and why),
in the text and in ``data["corpus_warnings"]``. They are the one channel that reaches the model,
the stored evidence and the validator alike, so a run over a damaged or hostile folder is never
judged as if the folder had been searched whole.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Annotated, Any

import httpx
from pydantic import Field

from core.config import Settings
from core.tools.corpus import Corpus, CorpusQueryError, DocumentNotFoundError
from core.tools.registry import ToolError, ToolRegistry, ToolResult
from core.tools.text import html_to_text

HttpClientFactory = Callable[[], httpx.AsyncClient]

MAX_FETCH_BYTES = 20_000_000
MAX_WARNINGS_SHOWN = 20
_TEXTUAL_TYPES = ("text/", "application/json", "application/xml", "application/xhtml+xml", "+json", "+xml")

Query = Annotated[
    str, Field(description="Free-text words to look for; operators and quotes are treated as words.")
]
Limit = Annotated[int, Field(ge=1, le=50, description="Maximum number of hits to return (1-50).")]
DocumentId = Annotated[str, Field(description="A document id as returned by search_corpus.")]
Offset = Annotated[int, Field(ge=0, description="Character offset to start reading at (0 = beginning).")]
Length = Annotated[int, Field(ge=1, le=200_000, description="Number of characters to read (1-200000).")]
Url = Annotated[str, Field(description="An absolute http:// or https:// URL.")]

NO_CORPUS = (
    "no document corpus is configured, so there is nothing to search; "
    "set the 'corpus' setting to a documents folder"
)
FETCH_DISABLED = (
    "fetch_url is disabled in configuration; set fetch_url_enabled = true "
    "(or EVIDENCE_DESK_FETCH_URL_ENABLED=1) to allow fetching web pages"
)


def corpus_warnings_text(warnings: list[str]) -> str:
    """The corpus warnings as the model and the validator read them; empty when there are none."""
    if not warnings:
        return ""
    lines = [
        f"corpus warnings ({len(warnings)}): problems found while indexing the corpus folder; "
        "files marked 'skipped' are not in the index and cannot be searched or read:"
    ]
    lines += [f"- {w}" for w in warnings[:MAX_WARNINGS_SHOWN]]
    if len(warnings) > MAX_WARNINGS_SHOWN:
        lines.append(f"- ... and {len(warnings) - MAX_WARNINGS_SHOWN} more")
    return "\n".join(lines)


def _with_warnings(corpus: Corpus, content: str, data: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    warnings = corpus.warnings
    if not warnings:
        return content, data
    return f"{content}\n\n{corpus_warnings_text(warnings)}", {**data, "corpus_warnings": warnings}


def _default_client_factory(settings: Settings) -> HttpClientFactory:
    def factory() -> httpx.AsyncClient:
        return httpx.AsyncClient(timeout=settings.llm_timeout_s, follow_redirects=True)

    return factory


def build_default_registry(
    settings: Settings,
    corpus: Corpus | None,
    http_client_factory: HttpClientFactory | None = None,
) -> ToolRegistry:
    """Register the built-in tools bound to this corpus and these settings."""
    registry = ToolRegistry(timeout_s=settings.tool_timeout_s)
    if corpus is not None:
        # The corpus is opened before settings reach the tools; the cap must hold for what they read.
        corpus.max_document_bytes = settings.corpus_max_document_bytes
    registry.register(_search_corpus_tool(corpus))
    registry.register(_read_document_tool(corpus))
    if not settings.fetch_url_enabled:
        registry.register_disabled("fetch_url", FETCH_DISABLED)
        return registry
    registry.register(_fetch_url_tool(settings, http_client_factory or _default_client_factory(settings)))
    return registry


def _search_corpus_tool(corpus: Corpus | None) -> Callable[..., ToolResult]:
    """``search_corpus`` bound to ``corpus``: its name, signature and docstring are the tool's schema."""

    def search_corpus(query: Query, limit: Limit = 5) -> ToolResult:
        """Search the local document corpus and return the best-matching documents, best first.

        Use the returned document ids with read_document to read the full text.
        """
        if corpus is None:
            raise ToolError(NO_CORPUS)
        try:
            hits = corpus.search(query, limit)
        except CorpusQueryError as exc:
            raise ToolError(f"{exc}; give one or more words") from None
        if not hits:
            content, data = _with_warnings(
                corpus,
                f"no documents match {query!r}; try other or fewer words",
                {"query": query, "hits": []},
            )
            return ToolResult(content=content, data=data)
        lines = [f"{len(hits)} result(s) for {query!r}, best first:"]
        for rank, hit in enumerate(hits, start=1):
            lines.append(f"{rank}. document_id: {hit.document_id}")
            lines.append(f"   title: {hit.title}")
            lines.append(f"   path: {hit.path}")
            lines.append(
                f"   passage: characters {hit.offset}-{hit.offset + hit.length} "
                f"(read_document with offset={hit.offset})"
            )
            lines.append(f"   snippet: {' '.join(hit.snippet.split())}")
        content, data = _with_warnings(
            corpus, "\n".join(lines), {"query": query, "hits": [hit.model_dump() for hit in hits]}
        )
        return ToolResult(content=content, data=data)

    return search_corpus


def _read_document_tool(corpus: Corpus | None) -> Callable[..., ToolResult]:
    """``read_document`` bound to ``corpus``."""

    def read_document(document_id: DocumentId, offset: Offset = 0, length: Length = 4000) -> ToolResult:
        """Read part of a corpus document by id, starting at a character offset.

        Long documents come in pages: call again with the reported next_offset to continue.
        """
        if corpus is None:
            raise ToolError(NO_CORPUS)
        try:
            page = corpus.read(document_id, offset, length)
        except DocumentNotFoundError as exc:
            raise ToolError(f"{exc}; call search_corpus first and use a document_id it returns") from None
        except ValueError as exc:
            raise ToolError(str(exc)) from None
        end = page.offset + len(page.text)
        if page.next_offset is None:
            position = f"characters {page.offset}-{end} of {page.total_length}; end of document"
        else:
            position = (
                f"characters {page.offset}-{end} of {page.total_length}; "
                f"more remains, continue with offset={page.next_offset}"
            )
        header = f"title: {page.title}\nurl: {page.url}\ndocument_id: {page.document_id}\n({position})"
        # warnings go in the header, so the page text stays the last thing and is not mistaken for them
        header, data = _with_warnings(corpus, header, page.model_dump(exclude={"text"}))
        return ToolResult(
            content=f"{header}\n\n{page.text}",
            url=page.url,
            title=page.title,
            data=data,
        )

    return read_document


def _fetch_url_tool(
    settings: Settings, make_client: HttpClientFactory
) -> Callable[..., Awaitable[ToolResult]]:
    """``fetch_url`` with this HTTP client and timeout; registered only when fetching is enabled."""

    async def fetch_url(url: Url) -> ToolResult:
        """Fetch a web page over HTTP(S) and return its text (HTML is converted to plain text)."""
        parsed = httpx.URL(url)
        if parsed.scheme not in ("http", "https") or not parsed.host:
            raise ToolError(f"only absolute http:// or https:// URLs can be fetched, got {url!r}")
        body, encoding, final_url, content_type = await _download(make_client, url, settings.llm_timeout_s)
        try:
            text = bytes(body).decode(encoding, errors="replace")
        except LookupError:  # unknown charset name in the header
            text = bytes(body).decode("utf-8", errors="replace")
        title: str | None = None
        if content_type in ("text/html", "application/xhtml+xml") or (
            not content_type and text.lstrip()[:15].lower().startswith(("<!doctype html", "<html"))
        ):
            text, title = html_to_text(text)
        header = f"url: {final_url}" + (f"\ntitle: {title}" if title else "")
        return ToolResult(
            content=f"{header}\n\n{text}",
            url=final_url,
            title=title,
            data={"url": final_url, "content_type": content_type, "length": len(text)},
        )

    return fetch_url


async def _download(
    make_client: HttpClientFactory, url: str, timeout_s: float
) -> tuple[bytearray, str, str, str]:
    """The body (at most ``MAX_FETCH_BYTES``), its charset, the URL after redirects and the content type."""
    async with make_client() as client:
        try:
            async with client.stream("GET", url, follow_redirects=True, timeout=timeout_s) as response:
                if response.status_code >= 400:
                    raise ToolError(f"HTTP {response.status_code} {response.reason_phrase} from {url}")
                content_type = response.headers.get("content-type", "").split(";")[0].strip().lower()
                if content_type and not any(t in content_type for t in _TEXTUAL_TYPES):
                    raise ToolError(f"{url} returned {content_type!r}, which is not text")
                body = bytearray()
                async for chunk in response.aiter_bytes():
                    body.extend(chunk)
                    if len(body) > MAX_FETCH_BYTES:
                        raise ToolError(f"{url} is larger than {MAX_FETCH_BYTES} bytes; not fetched")
                encoding = response.charset_encoding or "utf-8"
                final_url = str(response.url)
        except httpx.HTTPError as exc:
            raise ToolError(f"could not fetch {url}: {type(exc).__name__}: {exc}") from None
    return body, encoding, final_url, content_type
