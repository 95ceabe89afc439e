"""The FTS5 corpus: indexing, ranking, incremental refresh, corruption recovery, safe queries, paging."""

from __future__ import annotations

import contextlib
import hashlib
import os
import sqlite3
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core.tools.corpus import Corpus, CorpusQueryError, DocumentNotFoundError, fts_query
from core.tools.text import html_to_text


def _make_docs(root: Path) -> Path:
    docs = root / "docs"
    (docs / "sub").mkdir(parents=True)
    (docs / "tides.md").write_text(
        "# Ocean Tides\n\nTides are caused by the gravity of the moon and the sun acting on the oceans.\n"
        "Spring tides happen at new and full moon.\n",
        encoding="utf-8",
    )
    (docs / "bread.txt").write_text("Sourdough bread rises thanks to wild yeast in the starter.\n")
    (docs / "sub" / "orbit.html").write_text(
        "<html><head><title>Lunar Orbit</title><style>p{color:red}</style></head>"
        "<body><h1>Orbit heading</h1><p>The moon orbits the earth every 27 days.</p>"
        "<script>var tides = 1;</script></body></html>",
        encoding="utf-8",
    )
    (docs / "noheading.html").write_text("<body><h1>Only &amp; H1</h1><p>Glaciers move slowly.</p></body>")
    (docs / "plain.md").write_text("No heading here, just text about volcanoes.\n")
    (docs / "image.png").write_bytes(b"\x89PNG not a document")
    (docs / ".hidden.md").write_text("# Hidden\nsecret volcanoes\n")
    return docs


@pytest.fixture
def docs(tmp_path: Path) -> Path:
    return _make_docs(tmp_path)


@pytest.fixture
def corpus(docs: Path, tmp_path: Path) -> Corpus:
    return Corpus(docs, tmp_path / "cache" / "index.sqlite3")


def test_build_indexes_supported_files_only(corpus: Corpus) -> None:
    stats = corpus.refresh()
    assert (stats.added, stats.updated, stats.removed, stats.unchanged) == (5, 0, 0, 0)
    assert corpus.document_ids() == ["bread.txt", "noheading.html", "plain.md", "sub/orbit.html", "tides.md"]
    assert corpus.index_path.is_file()
    assert not (corpus.folder / ".evidence-desk-index.sqlite3").exists()


def test_titles_from_markdown_html_and_stem(corpus: Corpus) -> None:
    assert corpus.read("tides.md").title == "Ocean Tides"
    assert corpus.read("sub/orbit.html").title == "Lunar Orbit"
    assert corpus.read("noheading.html").title == "Only & H1"
    assert corpus.read("plain.md").title == "plain"
    assert corpus.read("bread.txt").title == "bread"


def test_html_converted_to_text_without_script_or_style(corpus: Corpus) -> None:
    text = corpus.read("sub/orbit.html").text
    assert "The moon orbits the earth every 27 days." in text
    assert "Orbit heading" in text
    assert "color:red" not in text and "var tides" not in text and "<p>" not in text


def test_search_ranks_relevant_document_first_with_snippet(corpus: Corpus) -> None:
    hits = corpus.search("what causes ocean tides", limit=5)
    assert hits[0].document_id == "tides.md"
    assert hits[0].title == "Ocean Tides"
    assert hits[0].path == "tides.md"  # relative to the corpus root: no machine path in evidence
    assert hits[0].sha256 == hashlib.sha256(corpus.read("tides.md", 0, 10**6).text.encode()).hexdigest()
    assert "«" in hits[0].snippet and "»" in hits[0].snippet
    assert "bread.txt" not in [h.document_id for h in hits]
    # stemming: "orbiting" finds "orbits"; the script's "tides" was not indexed
    assert [h.document_id for h in corpus.search("orbiting")] == ["sub/orbit.html"]
    assert [h.document_id for h in corpus.search("moon", limit=1)] == [corpus.search("moon")[0].document_id]
    assert corpus.search("zebra") == []


def test_incremental_refresh_touch_and_delete(corpus: Corpus, docs: Path) -> None:
    corpus.refresh()
    target = docs / "bread.txt"
    st_before = target.stat()
    os.utime(target, ns=(st_before.st_atime_ns, st_before.st_mtime_ns + 5_000_000_000))
    stats = corpus.refresh()
    assert (stats.added, stats.updated, stats.removed, stats.unchanged) == (0, 1, 0, 4)

    target.write_text("Rye bread is dense and dark.\n")
    corpus.refresh()
    assert [h.document_id for h in corpus.search("rye")] == ["bread.txt"]
    assert corpus.search("sourdough") == []

    (docs / "plain.md").unlink()
    (docs / "new.txt").write_text("Fresh notes on comets.\n")
    stats = corpus.refresh()
    assert (stats.added, stats.updated, stats.removed, stats.unchanged) == (1, 0, 1, 4)
    with pytest.raises(DocumentNotFoundError):
        corpus.read("plain.md")
    assert corpus.search("volcanoes") == []

    # a fresh Corpus over the same index reuses it instead of re-reading everything
    again = Corpus(docs, corpus.index_path).refresh()
    assert (again.added, again.unchanged) == (0, 5)


def test_search_refreshes_automatically_when_stale(docs: Path, tmp_path: Path) -> None:
    corpus = Corpus(docs, tmp_path / "idx.sqlite3", max_staleness_s=0)
    assert corpus.search("comets") == []
    (docs / "new.txt").write_text("Fresh notes on comets.\n")
    assert [h.document_id for h in corpus.search("comets")] == ["new.txt"]


def test_corrupt_index_is_rebuilt(corpus: Corpus) -> None:
    corpus.refresh()
    corpus.index_path.write_bytes(b"this is not a sqlite database" * 100)
    stats = corpus.refresh()
    assert stats.rebuilt
    assert stats.added == 5
    assert any("rebuilding" in w for w in stats.warnings)
    assert corpus.search("tides")[0].document_id == "tides.md"


def test_corrupt_index_detected_at_query_time(docs: Path, tmp_path: Path) -> None:
    index = tmp_path / "idx.sqlite3"
    corpus = Corpus(docs, index, max_staleness_s=3600)
    corpus.refresh()
    index.write_bytes(b"\0garbage" * 1000)
    assert corpus.search("sourdough")[0].document_id == "bread.txt"


def test_index_from_other_schema_is_rebuilt(corpus: Corpus) -> None:
    corpus.refresh()
    conn = sqlite3.connect(corpus.index_path)
    conn.execute("UPDATE meta SET value = '0' WHERE key = 'schema_version'")
    conn.commit()
    conn.close()
    assert corpus.refresh().rebuilt


def test_undecodable_file_indexed_with_warning(docs: Path, tmp_path: Path) -> None:
    (docs / "latin1.txt").write_bytes("Café crème über alles, mit Gletscher.".encode("latin-1"))
    corpus = Corpus(docs, tmp_path / "idx.sqlite3")
    stats = corpus.refresh()
    assert stats.added == 6
    assert any("latin1.txt" in w and "UTF-8" in w for w in stats.warnings)
    assert corpus.search("gletscher")[0].document_id == "latin1.txt"


def test_unreadable_file_skipped_with_warning(
    docs: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    corpus = Corpus(docs, tmp_path / "idx.sqlite3")
    corpus.refresh()
    (docs / "locked.txt").write_text("locked content")
    (docs / "bread.txt").write_text("changed bread, now unreadable")
    real_open = os.open

    def deny(path: str | os.PathLike[str], flags: int, *args: int, **kwargs: object) -> int:
        # chmod cannot make a file unreadable for root, so the denial comes from here
        if Path(path).name in ("locked.txt", "bread.txt"):
            raise PermissionError(13, "Permission denied", str(path))
        return real_open(path, flags, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "open", deny)
    stats = corpus.refresh()
    assert stats.skipped == 2
    assert stats.removed == 1  # the stale bread.txt text must not keep answering searches
    assert any("locked.txt" in w and "Permission denied" in w for w in stats.warnings)
    assert corpus.search("sourdough") == []
    assert corpus.search("tides")[0].document_id == "tides.md"


ADVERSARIAL = [
    'tides AND "moon',
    "NEAR(",
    "NEAR(tides moon, 2)",
    "tides OR",
    "title:moon",
    "moon^",
    "-moon",
    "tides' ; DROP TABLE docs; --",
    "(((moon",
    "moon*",
    "AND OR NOT",
    "ünïcödé mööñ",
]


@pytest.mark.parametrize("query", ADVERSARIAL)
def test_adversarial_queries_never_raise_syntax_errors(corpus: Corpus, query: str) -> None:
    hits = corpus.search(query)
    assert isinstance(hits, list)


@pytest.mark.parametrize("query", ["", "   ", "*", "()", '"', '""', "(((", "^-:"])
def test_queries_without_words_give_clear_error(corpus: Corpus, query: str) -> None:
    with pytest.raises(CorpusQueryError, match="no words to search for"):
        corpus.search(query)


def test_operators_are_words(corpus: Corpus) -> None:
    assert corpus.search('tides AND "moon')[0].document_id == "tides.md"
    assert fts_query('tides AND "moon') == '"tides" OR "and" OR "moon"'


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=st.text(max_size=60))
def test_any_text_is_a_valid_query(corpus: Corpus, text: str) -> None:
    with contextlib.suppress(CorpusQueryError):
        corpus.search(text)


def test_read_paging_reaches_a_fact_deep_in_a_big_document(docs: Path, tmp_path: Path) -> None:
    filler = "lorem ipsum dolor sit amet " * 2300  # ~62,000 characters
    fact = "The harbour master's secret number is 48213."
    text = filler[:60_000] + fact + filler[60_000:]
    (docs / "big.txt").write_text(text)
    corpus = Corpus(docs, tmp_path / "idx.sqlite3")

    first = corpus.read("big.txt")
    assert (first.offset, len(first.text), first.next_offset, first.total_length) == (
        0,
        4000,
        4000,
        len(text),
    )
    assert first.url == "corpus:big.txt" and first.path == "big.txt" and len(first.sha256) == 64

    pages = [first]
    while pages[-1].next_offset is not None:
        pages.append(corpus.read("big.txt", offset=pages[-1].next_offset, length=4000))
    assert "".join(p.text for p in pages) == text
    assert pages[15].offset == 60_000 and pages[15].text.startswith(fact)
    assert pages[-1].next_offset is None

    direct = corpus.read("big.txt", offset=60_000, length=len(fact))
    assert direct.text == fact
    assert corpus.search("harbour secret number")[0].document_id == "big.txt"

    with pytest.raises(ValueError, match="past the end"):
        corpus.read("big.txt", offset=len(text) + 1)
    with pytest.raises(DocumentNotFoundError):
        corpus.read("nope.txt")


def test_html_to_text_entities_and_blocks() -> None:
    text, title = html_to_text("<p>A &lt;b&gt; &amp; c</p><p>second</p><!-- hidden -->")
    assert text == "A <b> & c\n\nsecond"
    assert title is None


def test_html_without_a_closing_head_keeps_its_body_and_svg_titles_stay_out_of_the_title() -> None:
    """``</head>`` is optional in HTML5, and an inline SVG's ``<title>`` is no page title."""
    from core.tools.text import html_to_text

    page = "<html><head><title>Tides</title><meta charset=utf-8><body><p>The Moon pulls the sea.</p>"
    assert html_to_text(page) == ("The Moon pulls the sea.", "Tides")
    icons = "<head><title>Tides</title></head><body><svg><title>menu icon</title></svg><p>Body.</p>"
    assert html_to_text(icons) == ("Body.", "Tides")
    assert html_to_text("<!doctype html><title>T</title><p>No head element.") == ("No head element.", "T")
