"""A corpus folder that fights back: FIFOs, link loops, links out of the folder, oversized files.

Everything here is real: ``os.mkfifo``, ``os.symlink``, files on disk. Corpus calls go through the
tool registry with a time limit, so a regression that blocks again fails with a timeout result
instead of hanging the suite; the limit only bounds the hang, no assertion depends on timing.
"""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core.config import Settings
from core.domain import TaskEvidencePacket, TaskStatus
from core.llm import reset_scripted_stats, scripted_stats
from core.tasks.service import TaskService
from core.tools import Corpus, DocumentNotFoundError, ToolRegistry, build_default_registry
from core.tools.builtin import MAX_WARNINGS_SHOWN, corpus_warnings_text
from core.tools.text import split_passages
from core.workspace import Workspace
from tests.core.conftest import ScriptFactory

pytestmark = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs POSIX FIFOs and symlinks")

BOUND_S = 30.0  # bounds a regression's hang; never reached when the code is right


@pytest.fixture
def docs(tmp_path: Path) -> Path:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "tides.md").write_text("# Ocean Tides\n\nThe moon's gravity raises ocean tides twice a day.\n")
    (docs / "bread.txt").write_text("Sourdough bread needs a starter culture and patience.\n")
    return docs


def _settings(**kw: Any) -> Settings:
    return Settings(db_url="sqlite+aiosqlite:///:memory:", tool_timeout_s=BOUND_S, **kw)


def _registry(docs: Path, tmp_path: Path, **kw: Any) -> tuple[Corpus, ToolRegistry]:
    corpus = Corpus(docs, tmp_path / "cache" / "index.sqlite3")
    return corpus, build_default_registry(_settings(**kw), corpus)


# ------------------------------------------------------------------------------------------------ FIFO


async def test_fifo_is_skipped_with_a_warning_the_model_sees(docs: Path, tmp_path: Path) -> None:
    os.mkfifo(docs / "pipe.txt")  # no writer: opening it for reading would block for ever
    corpus, reg = _registry(docs, tmp_path)
    result = await reg.execute("search_corpus", {"query": "tides"})
    assert not result.is_error, result.content
    assert result.data["hits"][0]["document_id"] == "tides.md"
    assert "corpus warnings (1)" in result.content
    assert "skipped pipe.txt: a FIFO (named pipe), not a regular file" in result.content
    assert result.data["corpus_warnings"] == ["skipped pipe.txt: a FIFO (named pipe), not a regular file"]
    assert corpus.document_ids() == ["bread.txt", "tides.md"]

    page = await reg.execute("read_document", {"document_id": "tides.md"})
    assert not page.is_error and "a FIFO (named pipe)" in page.content
    assert page.content.endswith("The moon's gravity raises ocean tides twice a day.\n")

    # once the problem is gone the warning goes too
    (docs / "pipe.txt").unlink()
    assert corpus.refresh().warnings == []
    clean = await reg.execute("search_corpus", {"query": "tides"})
    assert "corpus warnings" not in clean.content and "corpus_warnings" not in clean.data


def test_a_fifo_swapped_in_after_the_scan_is_refused_without_blocking(docs: Path, tmp_path: Path) -> None:
    """The open itself is non-blocking and re-checked, so even losing the race cannot hang."""
    fifo = docs / "late.txt"
    os.mkfifo(fifo)
    corpus = Corpus(docs, tmp_path / "idx.sqlite3")
    with pytest.raises(Exception, match="a FIFO \\(named pipe\\), not a regular file"):
        corpus._read_bytes(fifo, fifo)


async def test_task_over_a_corpus_with_a_fifo_ends_and_the_validator_sees_the_warning(
    docs: Path, make_settings: ScriptFactory, db_url: str
) -> None:
    os.mkfifo(docs / "pipe.md")
    verdict = {
        "goal_achievement": "g",
        "completeness": "the corpus was not searched whole",
        "rule_compliance": "r",
        "status": "insufficient_evidence",
        "score": 0.4,
    }
    settings = make_settings(
        [
            {
                "model": "agent",
                "turns": [
                    {"tool_calls": [{"name": "search_corpus", "arguments": {"query": "ocean tides"}}]},
                    {"content": "The moon raises the tides (tides.md)."},
                ],
            },
            # answers only if the warning reached the validator's request; otherwise the script fails
            {
                "model": "validator",
                "match": "skipped pipe\\.md: a FIFO",
                "turns": [{"content": json.dumps(verdict)}],
            },
        ],
        db_url=db_url,
        corpus=docs,
        tool_timeout_s=BOUND_S,
    )
    reset_scripted_stats()
    ws = await Workspace.open(settings)
    try:
        service = TaskService(ws)
        task = await service.run((await service.create("What causes tides?")).id)
        assert task.status is TaskStatus.NEEDS_REVIEW  # finished, not left running
        attempt = (await ws.store.list_attempts(task.id))[0]
        packet = TaskEvidencePacket.model_validate(attempt.packet)
        assert packet.main_run is not None
        (search,) = packet.main_run.tool_results
        assert not search.is_error
        assert "skipped pipe.md: a FIFO (named pipe), not a regular file" in search.content
        assert search.event_payload["data"]["corpus_warnings"] == [
            "skipped pipe.md: a FIFO (named pipe), not a regular file"
        ]
        validator_calls = [r for r in scripted_stats().requests if r.model.endswith("validator")]
        assert [r.conversation for r in validator_calls] == [1]
    finally:
        await ws.close()


# -------------------------------------------------------------------------------------------- symlinks


async def test_symlink_loops_are_skipped_with_warnings_and_search_works(docs: Path, tmp_path: Path) -> None:
    os.symlink(docs / "loop-b.txt", docs / "loop-a.txt")
    os.symlink(docs / "loop-a.txt", docs / "loop-b.txt")
    os.symlink(docs / "self.md", docs / "self.md")
    os.symlink(docs / "spin", docs / "spin")  # a folder-like loop
    corpus, reg = _registry(docs, tmp_path)
    result = await reg.execute("search_corpus", {"query": "sourdough"})
    assert not result.is_error, result.content
    assert [h["document_id"] for h in result.data["hits"]] == ["bread.txt"]
    assert sorted(result.data["corpus_warnings"]) == [
        "skipped loop-a.txt: symbolic link loop",
        "skipped loop-b.txt: symbolic link loop",
        "skipped self.md: symbolic link loop",
    ]
    assert corpus.document_ids() == ["bread.txt", "tides.md"]


async def test_links_out_of_the_folder_are_never_indexed_or_readable(docs: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    (outside / "private").mkdir(parents=True)
    (outside / "secret.txt").write_text("zanzibar launch codes\n")
    (outside / "private" / "diary.md").write_text("# Diary\nzanzibar holiday plans\n")
    os.symlink(outside / "secret.txt", docs / "leak.txt")
    os.symlink(outside / "private", docs / "leakdir")
    os.symlink("../outside/secret.txt", docs / "relative-leak.md")
    os.symlink(docs / "tides.md", docs / "alias.md")  # a link that stays inside is followed
    corpus, reg = _registry(docs, tmp_path)

    result = await reg.execute("search_corpus", {"query": "zanzibar"})
    assert not result.is_error and result.data["hits"] == []
    assert sorted(result.data["corpus_warnings"]) == [
        f"skipped leak.txt: symbolic link to {outside / 'secret.txt'}, outside the corpus folder; not followed",
        f"skipped leakdir: symbolic link to {outside / 'private'}, outside the corpus folder; not followed",
        f"skipped relative-leak.md: symbolic link to {outside / 'secret.txt'}, "
        "outside the corpus folder; not followed",
    ]
    assert corpus.document_ids() == ["alias.md", "bread.txt", "tides.md"]
    for doc_id in ("leak.txt", "relative-leak.md", "leakdir/diary.md"):
        page = await reg.execute("read_document", {"document_id": doc_id})
        assert page.is_error and "no document with id" in page.content
        with pytest.raises(DocumentNotFoundError):
            corpus.read(doc_id)
    assert corpus.read("alias.md").text == corpus.read("tides.md").text


async def test_a_document_that_becomes_a_link_out_is_dropped(docs: Path, tmp_path: Path) -> None:
    corpus, reg = _registry(docs, tmp_path)
    corpus.refresh()
    outside = tmp_path / "elsewhere.txt"
    outside.write_text("Sourdough secrets from outside the corpus.\n")
    (docs / "bread.txt").unlink()
    os.symlink(outside, docs / "bread.txt")
    stats = corpus.refresh()
    assert stats.removed == 1 and stats.skipped == 1
    assert corpus.search("sourdough") == []
    assert (await reg.execute("read_document", {"document_id": "bread.txt"})).is_error


# ---------------------------------------------------------------------------------------------- size cap


async def test_files_over_the_size_cap_are_skipped_with_a_warning(docs: Path, tmp_path: Path) -> None:
    (docs / "exact.txt").write_text("k" * 1020 + " yes")  # exactly 1024 bytes: allowed
    (docs / "huge.txt").write_text("walrus " * 200)  # 1400 bytes
    corpus, reg = _registry(docs, tmp_path, corpus_max_document_bytes=1024)
    assert corpus.max_document_bytes == 1024  # the setting reaches the corpus the tools use
    result = await reg.execute("search_corpus", {"query": "walrus"})
    assert not result.is_error and result.data["hits"] == []
    assert result.data["corpus_warnings"] == [
        "skipped huge.txt: 1400 bytes is over the 1024-byte document limit (corpus_max_document_bytes)"
    ]
    assert "exact.txt" in corpus.document_ids()

    # a document that grows past the cap stops being served
    (docs / "exact.txt").write_text("k" * 2000)
    stats = corpus.refresh()
    assert stats.removed == 1 and "exact.txt" not in corpus.document_ids()
    assert any(w.startswith("skipped exact.txt: 2000 bytes") for w in stats.warnings)


def test_size_cap_setting_has_bounds_and_a_default() -> None:
    field = Settings.model_fields["corpus_max_document_bytes"]
    assert field.default == 64 * 1024 * 1024 and field.description
    with pytest.raises(ValueError, match="corpus_max_document_bytes"):
        _settings(corpus_max_document_bytes=0)


def test_warning_text_lists_a_bounded_number() -> None:
    warnings = [f"skipped f{i}.txt: reason" for i in range(MAX_WARNINGS_SHOWN + 5)]
    text = corpus_warnings_text(warnings)
    assert text.startswith(f"corpus warnings ({MAX_WARNINGS_SHOWN + 5})")
    assert text.endswith("- ... and 5 more")
    assert corpus_warnings_text([]) == ""


# ------------------------------------------------------------------------------------- big documents

FACT = "The harbour master's secret number is 48213."


def _big_text(target_chars: int) -> str:
    """Plain prose-like filler of about ``target_chars`` characters with FACT near the very end."""
    line = "lorem ipsum dolor sit amet consectetur adipiscing elit sed do eiusmod tempor incididunt\n"
    filler = line * (target_chars // len(line))
    return filler + FACT + "\n" + line * 3


@pytest.fixture(scope="module")
def big_corpus(tmp_path_factory: pytest.TempPathFactory) -> tuple[Corpus, str]:
    root = tmp_path_factory.mktemp("big")
    docs = root / "docs"
    docs.mkdir()
    text = _big_text(50_000_000)
    (docs / "big.txt").write_text(text, encoding="utf-8")
    (docs / "small.md").write_text("# Small\nA short note about lorem ipsum.\n")
    corpus = Corpus(docs, root / "index.sqlite3", max_staleness_s=3600)
    stats = corpus.refresh()
    assert (stats.added, stats.warnings) == (2, [])
    return corpus, text


@pytest.mark.slow
async def test_50_mb_document_found_by_a_phrase_near_its_end(big_corpus: tuple[Corpus, str]) -> None:
    corpus, text = big_corpus
    reg = build_default_registry(_settings(), corpus)
    result = await reg.execute("search_corpus", {"query": "harbour master secret number"})
    assert not result.is_error, result.content
    hit = result.data["hits"][0]
    assert hit["document_id"] == "big.txt" and "«harbour»" in hit["snippet"]
    # the hit points at the passage holding the phrase, and reading there returns it
    assert hit["offset"] > 49_000_000
    assert FACT in text[hit["offset"] : hit["offset"] + hit["length"]]
    page = await reg.execute(
        "read_document", {"document_id": "big.txt", "offset": hit["offset"], "length": hit["length"]}
    )
    assert FACT in page.content

    # a word in every passage must not stall snippet(): the limit turns a stall into an error result
    common = await reg.execute("search_corpus", {"query": "lorem ipsum", "limit": 2})
    assert not common.is_error, common.content
    assert {h["document_id"] for h in common.data["hits"]} == {"big.txt", "small.md"}


@pytest.mark.slow
def test_50_mb_document_reads_exactly_across_passage_boundaries(big_corpus: tuple[Corpus, str]) -> None:
    corpus, text = big_corpus
    boundaries = [start for start, _ in split_passages(text)][1:]
    assert len(boundaries) > 700  # the document really is stored as many passages
    for boundary in (boundaries[0], boundaries[len(boundaries) // 2], boundaries[-1]):
        page = corpus.read("big.txt", offset=boundary - 100, length=200)
        assert page.text == text[boundary - 100 : boundary + 100]
        assert page.next_offset == boundary + 100
    # a page spanning several whole passages
    wide = corpus.read("big.txt", offset=boundaries[3] - 5, length=200_000)
    assert wide.text == text[boundaries[3] - 5 : boundaries[3] + 199_995]
    tail = corpus.read("big.txt", offset=len(text) - 10, length=4000)
    assert (tail.text, tail.total_length, tail.next_offset) == (text[-10:], len(text), None)


@settings(max_examples=200, deadline=None)
@given(
    text=st.text(alphabet=st.sampled_from("ab \n\u00e9"), max_size=300),
    size=st.integers(min_value=1, max_value=40),
)
def test_passages_join_back_exactly_and_respect_the_size(text: str, size: int) -> None:
    passages = split_passages(text, size)
    assert "".join(p for _, p in passages) == text
    assert all(len(p) <= size for _, p in passages)
    assert [start for start, _ in passages] == [
        sum(len(p) for _, p in passages[:i]) for i in range(len(passages))
    ]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    offset=st.integers(min_value=0, max_value=1300),
    length=st.integers(min_value=1, max_value=700),
)
def test_read_by_offset_matches_the_text_for_any_window(
    small_passages: tuple[Corpus, str], offset: int, length: int
) -> None:
    corpus, text = small_passages
    if offset > len(text):
        with pytest.raises(ValueError, match="past the end"):
            corpus.read("doc.txt", offset, length)
        return
    page = corpus.read("doc.txt", offset, length)
    assert page.text == text[offset : offset + length]
    assert page.next_offset == (offset + length if offset + length < len(text) else None)


@pytest.fixture
def small_passages(tmp_path: Path) -> tuple[Corpus, str]:
    docs = tmp_path / "docs"
    docs.mkdir()
    words = [f"w{i:03d}" for i in range(250)]
    text = " ".join(words[:120]) + " needle " + " ".join(words[120:])
    (docs / "doc.txt").write_text(text)
    corpus = Corpus(docs, tmp_path / "idx.sqlite3", passage_chars=64, max_staleness_s=3600)
    corpus.refresh()
    return corpus, text


def test_hit_points_at_the_passage_with_the_match(small_passages: tuple[Corpus, str]) -> None:
    corpus, text = small_passages
    (hit,) = corpus.search("needle")
    assert hit.offset > 0 and hit.length <= 64
    assert "needle" in text[hit.offset : hit.offset + hit.length]
    assert corpus.read("doc.txt", hit.offset, hit.length).text == text[hit.offset : hit.offset + hit.length]
    assert "«needle»" in hit.snippet


def test_an_index_from_an_older_version_is_rebuilt_without_a_warning(docs: Path, tmp_path: Path) -> None:
    """An upgrade is routine; a warning would tell the validator the corpus is damaged when it is not."""
    corpus = Corpus(docs, tmp_path / "idx.sqlite3")
    corpus.refresh()
    with sqlite3.connect(corpus.index_path) as conn:
        conn.execute("UPDATE meta SET value = '1' WHERE key = 'schema_version'")
    conn.close()
    stats = corpus.refresh()
    assert stats.rebuilt and stats.added == 2 and stats.warnings == [] and corpus.warnings == []
