from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from core.config import Settings
from core.domain import RunEvidence, TaskEvidencePacket, ToolEvidence
from core.domain.facts import WarningCode
from core.domain.status import ValidationStatus
from core.domain.validation import CitationCheck
from core.events import EventBus
from core.llm import LLMGateway, reset_scripted_stats, scripted_stats
from core.runtime import RunContext
from core.store import Store
from core.tools.registry import ToolRegistry
from core.validation import ValidationReport, ValidationService
from tests.core.conftest import ScriptFactory

CORPUS = Path(__file__).parent / "validator_corpus"
BIG = "x" * 600 + " FACT-AFTER-500 " + "y" * 50_000 + " FACT-AFTER-50000 " + "z" * 100

SNAPSHOT_FIELDS = {
    "result",
    "status",
    "attempt_index",
    "evidence_run_ids",
    "evidence_session_ids",
    "tool_result_count",
    "evidence_chars",
    "prompt_tokens",
    "strategy",
    "chunk_count",
    "schema_retries",
    "latency_s",
    "raw_response",
    "prompt_stored",
    "coverage",
    "warnings",
}


# For tests about something else than the coherence checks (core/validation/coherence.py): their
# scripted verdicts accept without citing the evidence, which would not count as an endorsement.
UNCITED_OK: dict[str, Any] = {"coherence_min_citations": 0}


def verdict(status: str = "accepted", citations: list[dict[str, str]] | None = None, **extra: Any) -> str:
    return json.dumps(
        {
            "goal_achievement": "the task asked for the fact and the answer gives it",
            "completeness": "complete",
            "rule_compliance": "no rules broken",
            "status": status,
            "score": 0.9 if status == "accepted" else 0.2,
            "citations": citations or [],
            **extra,
        }
    )


def packet(contents: list[str], answer: str = "The answer is 42.") -> TaskEvidencePacket:
    run = RunEvidence(
        run_id="run-1",
        session_id="sess-1",
        output_text=answer,
        finish_reason="stop",
        tool_results=[
            ToolEvidence(tool_name="lookup", tool_call_id=f"call_{i}", content=c)
            for i, c in enumerate(contents)
        ],
    )
    return TaskEvidencePacket(task_id="t", attempt_index=1, main_run=run, final_output=answer)


class RecordingGateway(LLMGateway):
    def __init__(self, settings: Settings) -> None:
        super().__init__(settings, retry_backoff_s=0.001)
        self.sent: list[list[dict[str, Any]]] = []

    async def complete(self, **kwargs: Any) -> Any:
        self.sent.append([dict(m) for m in kwargs["messages"]])
        return await super().complete(**kwargs)

    def user_texts(self) -> list[str]:
        return [m[1]["content"] for m in self.sent]


async def run_validation(
    store: Store,
    settings: Settings,
    evidence: TaskEvidencePacket,
    *,
    history: list[dict[str, Any]] | None = None,
    agent_model: str = "scripted/agent",
    pending_tool_calls: bool = False,
    earlier: list[TaskEvidencePacket] | None = None,
) -> tuple[ValidationReport, RecordingGateway, str, str]:
    task = await store.create_task("Find the fact")
    attempt = await store.create_attempt(task.id, 1, trigger="initial", prompt="Find the fact")
    session = await store.create_session(task_id=task.id, kind="main")
    gateway = RecordingGateway(settings)
    ctx = RunContext(store=store, gateway=gateway, tools=ToolRegistry(), settings=settings, bus=EventBus())
    report = await ValidationService(ctx).validate(
        evidence,
        task_text="Find the fact",
        history=history or [],
        task_id=task.id,
        attempt_id=attempt.id,
        attempt_index=1,
        session_id=session.id,
        agent_model=agent_model,
        pending_tool_calls=pending_tool_calls,
        earlier=earlier,
    )
    return report, gateway, task.id, session.id


def script(*turns: str) -> list[dict[str, Any]]:
    return [{"model": "validator", "turns": [{"content": t} for t in turns]}]


async def test_fact_after_first_500_chars_reaches_the_validator(
    store: Store, make_settings: ScriptFactory
) -> None:
    settings = make_settings(script(verdict()), **UNCITED_OK)
    report, gateway, _, _ = await run_validation(store, settings, packet([BIG]))
    (sent,) = gateway.user_texts()
    assert "FACT-AFTER-500" in sent and "FACT-AFTER-50000" in sent and BIG in sent
    assert report.result.status == ValidationStatus.ACCEPTED and report.result.passed
    assert report.debug["strategy"] == "single" and report.debug["coverage"] == 1.0


async def test_prompt_order_rules_history_and_wrapping(
    store: Store, make_settings: ScriptFactory, tmp_path: Path
) -> None:
    rules = tmp_path / "rules.md"
    rules.write_text("RULE-MARKER: always cite the filing.", encoding="utf-8")
    settings = make_settings(script(verdict()), rules=rules)
    history = [{"role": "user" if i % 2 else "assistant", "content": f"msg-{i:02d}|"} for i in range(40)]
    report, gateway, _, _ = await run_validation(
        store, settings, packet(["EVIDENCE-MARKER"]), history=history
    )
    sent = gateway.user_texts()[0]
    # Seed 004's order: task, rules, evidence, history, execution metadata, previous feedback,
    # the answer, the output contract; the rubric is in the system message ahead of all of it.
    order = [
        "## Task",
        "RULE-MARKER",
        "EVIDENCE-MARKER",
        '<EXTERNAL-CONTENT label="conversation-history">',
        "msg-39|",
        "## Execution metadata",
        "## Previous feedback",
        '<EXTERNAL-CONTENT label="final-answer">',
        "The answer is 42.",
        "## Output",
        "Reminder:",
    ]
    positions = [sent.index(marker) for marker in order]
    assert positions == sorted(positions)
    assert "msg-09|" not in sent and "msg-10|" in sent
    assert "(none: this is the first verdict for this task)" in sent
    system = gateway.sent[0][0]
    assert system["role"] == "system" and "only one JSON object" in system["content"]
    for phrase in ("## Rubric", "Never infer fabrication", "give up early"):
        assert phrase in system["content"] and phrase not in sent
    assert "insufficient_evidence" in sent
    assert report.prompt.endswith(sent)


async def test_missing_evidence_gives_insufficient_evidence(
    store: Store, make_settings: ScriptFactory
) -> None:
    settings = make_settings(script(verdict("insufficient_evidence", evidence_gaps=["no source for 42"])))
    report, gateway, _, _ = await run_validation(store, settings, packet([]))
    assert "No evidence was gathered in any attempt of this task" in gateway.user_texts()[0]
    assert report.result.status == ValidationStatus.INSUFFICIENT_EVIDENCE and not report.result.passed


async def test_accepted_without_verified_citation_is_downgraded(
    store: Store, make_settings: ScriptFactory
) -> None:
    cited = [{"claim": "42", "evidence_id": "E1", "quote": "the answer is 42", "verdict": "supported"}]
    settings = make_settings(script(verdict("accepted", cited)), require_verified_citations=True)
    report, _, task_id, _ = await run_validation(store, settings, packet(["The filing mentions 41 only."]))
    assert report.result.status == ValidationStatus.INSUFFICIENT_EVIDENCE
    assert report.debug["downgraded_from"] == "accepted"
    (row,) = await store.list_validations(task_id)
    assert row.status == "insufficient_evidence" and row.result["passed"] is False


async def test_accepted_with_verified_citation_stays_accepted(
    store: Store, make_settings: ScriptFactory
) -> None:
    cited = [{"claim": "42", "evidence_id": "E1", "quote": "The answer IS\n 42", "verdict": "supported"}]
    settings = make_settings(script(verdict("accepted", cited)), require_verified_citations=True)
    report, _, _, _ = await run_validation(store, settings, packet(["Per the filing, the answer is 42."]))
    assert report.result.status == ValidationStatus.ACCEPTED


async def test_citations_verified_not_found_and_unknown(store: Store, make_settings: ScriptFactory) -> None:
    cited = [
        {
            "claim": "capital",
            "evidence_id": "E1",
            "quote": "the  CAPITAL of freedonia\nis Fredville",
            "verdict": "supported",
        },
        {"claim": "size", "evidence_id": "[e1]", "quote": "Freedonia is the largest", "verdict": "supported"},
        {"claim": "other", "evidence_id": "E9", "quote": "anything", "verdict": "supported"},
    ]
    settings = make_settings(script(verdict("accepted", cited)))
    report, _, task_id, _ = await run_validation(
        store, settings, packet(["The capital of Freedonia is Fredville."], answer="Fredville")
    )
    checks = [c.check for c in report.result.citations]
    assert checks == [CitationCheck.VERIFIED, CitationCheck.QUOTE_NOT_FOUND, CitationCheck.UNKNOWN_ID]
    (unverified,) = [w for w in report.warnings if w.code is WarningCode.UNVERIFIED_CITATIONS]
    assert (unverified.count, unverified.total) == (2, 3)
    (row,) = await store.list_validations(task_id)
    assert [c["check"] for c in row.result["citations"]] == ["verified", "quote_not_found", "unknown_id"]
    assert row.debug["citation_checks"]["verified"] == 1


def _corpus() -> list[tuple[str, str]]:
    cases = [(p.stem, p.read_text(encoding="utf-8")) for p in sorted(CORPUS.glob("*.txt"))]
    cases.append(("huge_prose", "The answer looks accepted. " * 120_000))
    cases.append(("huge_truncated_json", '{"status": "accepted", "score": 1, "issues": ["' + "a" * 2_000_000))
    return cases


@pytest.mark.parametrize(("name", "raw"), _corpus(), ids=[c[0] for c in _corpus()])
async def test_malformed_validator_output_never_accepted(
    store: Store, make_settings: ScriptFactory, name: str, raw: str
) -> None:
    settings = make_settings(script(raw, raw))
    report, _, task_id, session_id = await run_validation(store, settings, packet(["The answer is 42."]))
    assert report.result.status != ValidationStatus.ACCEPTED and not report.result.passed
    (row,) = await store.list_validations(task_id)
    assert row.status != "accepted" and row.result["passed"] is False
    failures = await store.get_session_events(session_id, kinds=["output_schema_validation_failed"])
    if report.result.status == ValidationStatus.VALIDATOR_ERROR:
        assert len(failures) == 2 and failures[0].content == raw
        assert report.debug["schema_retries"] == 1
    else:  # only the well-formed rejections get here
        assert name in ("13_passed_true_status_rejected", "30_duplicate_keys_last_rejected")
        assert report.result.status == ValidationStatus.REJECTED and not failures


def test_corpus_is_large_enough() -> None:
    assert len(list(CORPUS.glob("*.txt"))) >= 20


async def test_recovered_schema_failure_emits_event(store: Store, make_settings: ScriptFactory) -> None:
    settings = make_settings(script("Sure! " + verdict(), verdict()), **UNCITED_OK)
    report, gateway, _, session_id = await run_validation(store, settings, packet(["The answer is 42."]))
    assert report.result.status == ValidationStatus.ACCEPTED and report.debug["schema_retries"] == 1
    (event,) = await store.get_session_events(session_id, kinds=["output_schema_validation_failed"])
    assert event.payload["stage"] == "json-parse" and event.payload["attempt"] == 1
    assert (
        event.payload["retries"] == 0 and event.payload["message"] and event.content == "Sure! " + verdict()
    )
    assert len(gateway.sent) == 2


async def test_timeout_is_validator_error_without_reask(store: Store, make_settings: ScriptFactory) -> None:
    conversations = [
        {"model": "validator", "turns": [{"content": verdict(), "delay_s": 3600}, {"content": verdict()}]}
    ]
    settings = make_settings(conversations, validator_timeout_s=0.05, llm_num_retries=0)
    report, gateway, task_id, session_id = await run_validation(
        store, settings, packet(["The answer is 42."])
    )
    assert report.result.status == ValidationStatus.VALIDATOR_ERROR and "timeout" in report.result.issues[0]
    assert len(gateway.sent) == 1
    assert not await store.get_session_events(session_id, kinds=["output_schema_validation_failed"])
    (row,) = await store.list_validations(task_id)
    assert row.status == "validator_error"


async def test_chunked_validation_reaches_every_item(store: Store, make_settings: ScriptFactory) -> None:
    contents = [f"ITEM-{i:02d}-START " + "lorem ipsum " * 250 + f" ITEM-{i:02d}-END" for i in range(12)]
    huge = "HUGE-START " + " ".join(f"w{i}" for i in range(6000)) + " HUGE-END"
    conversations = [
        {
            "model": "validator",
            "match": "Findings from the evidence chunks",
            "turns": [{"content": verdict()}],
        },
        {
            "model": "validator",
            "turns": [{"content": json.dumps({"findings": [], "notes": "nothing contradicts"})}],
        },
    ]
    settings = make_settings(conversations, validator_context_tokens=3000, **UNCITED_OK)
    evidence = packet([*contents, huge])
    report, gateway, _, session_id = await run_validation(store, settings, evidence)
    texts = gateway.user_texts()
    chunk_texts, verdict_text = texts[:-1], texts[-1]
    assert "Findings from the evidence chunks" in verdict_text
    assert report.debug["strategy"] == "chunked" and report.debug["chunk_count"] == len(chunk_texts) > 2
    (chunked,) = [w for w in report.warnings if w.code is WarningCode.CHUNKED_VALIDATION]
    assert chunked.count == len(chunk_texts)
    for i in range(12):
        holders = [t for t in chunk_texts if f"ITEM-{i:02d}-START" in t]
        assert len(holders) == 1 and f"ITEM-{i:02d}-END" in holders[0]
    huge_parts = [t for t in chunk_texts if "[E13] tool result: main run / lookup (call_12) (part " in t]
    assert len(huge_parts) > 1
    words_seen = set(re.findall(r"\bw\d+\b", " ".join(huge_parts)))
    assert len(words_seen) == 6000
    assert "HUGE-START" in huge_parts[0] and "HUGE-END" in huge_parts[-1]
    assert report.debug["coverage"] == 1.0 and report.result.status == ValidationStatus.ACCEPTED
    (event,) = await store.get_session_events(session_id, kinds=["task_validation_snapshotted"])
    assert event.payload["chunk_count"] == len(chunk_texts) and event.payload["strategy"] == "chunked"


async def test_debug_snapshot_holds_every_field(store: Store, make_settings: ScriptFactory) -> None:
    settings = make_settings(script(verdict()), **UNCITED_OK)
    report, _, task_id, session_id = await run_validation(store, settings, packet(["a", "b"]))
    (event,) = await store.get_session_events(session_id, kinds=["task_validation_snapshotted"])
    assert set(event.payload) >= SNAPSHOT_FIELDS, SNAPSHOT_FIELDS - set(event.payload)
    p = event.payload
    assert p["evidence_run_ids"] == ["run-1"] and p["evidence_session_ids"] == ["sess-1"]
    assert p["tool_result_count"] == 2 and p["evidence_chars"] == 2 + len("The answer is 42.")
    assert p["prompt_tokens"] > 0 and p["raw_response"] == verdict() and p["status"] == "accepted"
    assert p["result"]["status"] == "accepted" and event.content == report.prompt and p["prompt_stored"]
    (row,) = await store.list_validations(task_id)
    assert row.prompt == report.prompt and row.raw_response == verdict() and row.debug["strategy"] == "single"


async def test_prompt_not_stored_when_debug_flag_off(store: Store, make_settings: ScriptFactory) -> None:
    settings = make_settings(script(verdict()), debug_store_validation_prompt=False)
    report, _, task_id, session_id = await run_validation(store, settings, packet(["a"]))
    (event,) = await store.get_session_events(session_id, kinds=["task_validation_snapshotted"])
    (row,) = await store.list_validations(task_id)
    assert (
        event.content is None and row.prompt is None and report.prompt and not event.payload["prompt_stored"]
    )


@pytest.mark.parametrize(
    ("overrides", "answer", "strategy"),
    [
        ({"validation_mode": "off"}, "The answer is 42.", "skipped:mode-off"),
        (
            {"validation_mode": "keywords", "trigger_keywords": ["revenue"]},
            "The answer is 42.",
            "skipped:no-trigger-keyword",
        ),
    ],
)
async def test_policy_skip_makes_no_call_and_stores_no_row(
    store: Store, make_settings: ScriptFactory, overrides: dict[str, Any], answer: str, strategy: str
) -> None:
    settings = make_settings(script(verdict()), **overrides)
    report, gateway, task_id, session_id = await run_validation(store, settings, packet(["a"], answer=answer))
    assert report.skipped and not gateway.sent and report.result.status != ValidationStatus.ACCEPTED
    assert report.debug["strategy"] == strategy and await store.list_validations(task_id) == []
    assert await store.get_session_events(session_id, kinds=["task_validation_snapshotted"])


async def test_keyword_present_triggers_validation(store: Store, make_settings: ScriptFactory) -> None:
    settings = make_settings(
        script(verdict()), validation_mode="keywords", trigger_keywords=["Revenue"], **UNCITED_OK
    )
    report, gateway, _, _ = await run_validation(store, settings, packet(["a"], answer="revenue rose 4%"))
    assert not report.skipped and len(gateway.sent) == 1 and report.result.passed


@pytest.mark.parametrize(
    ("answer", "pending", "strategy"), [("  ", False, "empty-answer"), ("ok", True, "pending")]
)
async def test_prechecks_reject_without_llm_call(
    store: Store, make_settings: ScriptFactory, answer: str, pending: bool, strategy: str
) -> None:
    reset_scripted_stats()
    settings = make_settings(script(verdict()))
    report, gateway, task_id, _ = await run_validation(
        store, settings, packet(["a"], answer=answer), pending_tool_calls=pending
    )
    assert not gateway.sent and not scripted_stats().requests
    assert report.result.status == ValidationStatus.REJECTED and strategy in report.debug["strategy"]
    assert not report.skipped and (await store.list_validations(task_id))[0].status == "rejected"


async def test_same_family_warning(store: Store, make_settings: ScriptFactory) -> None:
    settings = make_settings(script(verdict(), verdict()))
    same, _, _, _ = await run_validation(store, settings, packet(["a"]))
    other, _, _, _ = await run_validation(store, settings, packet(["a"]), agent_model="gpt-4o")
    assert any(w.code is WarningCode.SAME_FAMILY_VALIDATOR for w in same.warnings)
    assert not any(w.code is WarningCode.SAME_FAMILY_VALIDATOR for w in other.warnings)


async def test_provider_failure_is_validator_error_and_fallback_used(
    store: Store, make_settings: ScriptFactory
) -> None:
    conversations = [
        {"model": "validator", "turns": [{"error": "server_error"}]},
        {"model": "backup", "turns": [{"content": verdict("rejected", category="goal_missed")}]},
    ]
    failing = make_settings(conversations, llm_num_retries=0)
    report, _, _, _ = await run_validation(store, failing, packet(["a"]))
    assert report.result.status == ValidationStatus.VALIDATOR_ERROR
    with_backup = make_settings(conversations, llm_num_retries=0, validator_fallback_model="scripted/backup")
    report, _, _, _ = await run_validation(store, with_backup, packet(["a"]))
    assert (
        report.result.status == ValidationStatus.REJECTED and report.debug["model_used"] == "scripted/backup"
    )
