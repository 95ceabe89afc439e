"""A corpus folder that fights back: FIFOs, link loops, links out of the folder, oversized files.

Everything here is real: ``os.mkfifo``, ``os.symlink``, files on disk. Corpus calls go through the
tool registry with a time limit, so a regression that blocks again fails with a timeout result
instead of hanging the suite; the limit only bounds the hang, no assertion depends on timing.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from core.config import Settings
from core.domain import TaskEvidencePacket, TaskStatus
from core.llm import reset_scripted_stats, scripted_stats
from core.tasks.service import TaskService
from core.tools import Corpus, DocumentNotFoundError, ToolRegistry, build_default_registry
from core.tools.builtin import MAX_WARNINGS_SHOWN, corpus_warnings_text
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
