"""Judge calibration on a seeded workspace with known decisions: exact matrix and kappa."""

from __future__ import annotations

from typing import Any

import pytest

from core.calibration import CalibrationFilter, calibrate, calibration_csv, cohen_kappa, format_calibration
from core.domain.status import TaskStatus
from core.store import Store
from core.tasks.override import record_override

UNVERIFIED = [{"code": "unverified-citations", "message": "2 of 3 quotes not found", "count": 2, "total": 3}]


async def seed(
    store: Store,
    status: str | None,
    action: str | None,
    *,
    model: str = "m1",
    category: str = "none",
    warnings: list[dict[str, Any]] | None = None,
    override: bool = False,
) -> str:
    task = await store.create_task(f"task {status} {action}")
    attempt = await store.create_attempt(task.id, 1, trigger="initial", prompt="p")
    if status is not None:
        await store.add_validation(
            task_id=task.id,
            attempt_id=attempt.id,
            attempt_index=1,
            result={"status": status, "score": 0.5, "category": category},
            raw_response="{}",
            prompt=None,
            debug={"validator_model": model, "warnings": warnings or []},
        )
    if action is not None:
        await store.add_feedback(
            task_id=task.id,
            attempt_id=attempt.id,
            action=action,
            prompt=None,
            note=None,
            reviewer="ana",
            from_status=TaskStatus.AWAITING_FEEDBACK,
            to_status=TaskStatus.CLOSED,
        )
    if override:
        await record_override(
            store, task.id, status="rejected", category="goal_missed", note="wrong", reviewer="ana"
        )
    return task.id


def test_kappa_textbook_case() -> None:
    # 20 agree yes, 15 agree no, 5 + 10 disagree: p_o = 0.7, p_e = (25*30 + 25*20) / 2500 = 0.5
    assert cohen_kappa(20, 5, 10, 15) == pytest.approx(0.4)
    assert cohen_kappa(0, 0, 0, 0) is None
    assert cohen_kappa(5, 0, 0, 0) is None  # chance agreement is total: kappa is undefined


async def test_exact_matrix_and_kappa(store: Store) -> None:
    await seed(store, "accepted", "satisfied")
    await seed(store, "accepted", "satisfied")
    await seed(store, "accepted", "revise", warnings=UNVERIFIED)
    await seed(store, "rejected", "revise", model="m2", category="goal_missed")
    await seed(store, "rejected", "satisfied", model="m2", category="incomplete")
    await seed(store, "insufficient_evidence", "abandon", model="m2")
    await seed(store, "accepted", None, warnings=UNVERIFIED, override=True)
    await seed(store, None, "satisfied")
    await seed(store, "accepted", "satisfied", override=True)
    await seed(store, "accepted", None)  # undecided: not counted

    cal = await calibrate(store)
    assert cal.n == 9
    assert cal.matrix == {
        "accepted": {"satisfied": 2, "revised": 1, "abandoned": 0, "overridden": 2},
        "rejected": {"satisfied": 1, "revised": 1, "abandoned": 0, "overridden": 0},
        "insufficient_evidence": {"satisfied": 0, "revised": 0, "abandoned": 1, "overridden": 0},
        "validator_error": {"satisfied": 0, "revised": 0, "abandoned": 0, "overridden": 0},
        "unvalidated": {"satisfied": 1, "revised": 0, "abandoned": 0, "overridden": 0},
    }
    # a=2 (accepted, satisfied) b=3 c=2 d=2: p_o = 4/9, p_e = (5*4 + 4*5)/81 = 40/81
    assert cal.kappa == pytest.approx(-4 / 41)
    assert cal.agreement == pytest.approx(4 / 9)
    assert cal.by_model["m2"].n == 3 and cal.by_model["m2"].agree == 2
    assert cal.by_category["goal_missed"].agree == 1
    (warning,) = cal.warnings
    assert (warning.code, warning.decided, warning.overridden, warning.revised) == (
        "unverified-citations",
        2,
        1,
        1,
    )
    assert sum(w.n for w in cal.weekly.values()) == 9

    only_m2 = await calibrate(store, CalibrationFilter(validator_model="m2"))
    assert only_m2.n == 3 and only_m2.matrix["rejected"]["satisfied"] == 1
    assert "kappa: -0.098" in format_calibration(cal)
    assert "matrix,accepted,overridden,2" in calibration_csv(cal)


async def test_override_keeps_the_validators_verdict(store: Store) -> None:
    task_id = await seed(store, "accepted", None)
    with pytest.raises(ValueError, match="unknown status 'bogus'"):
        await record_override(store, task_id, status="bogus", reviewer="ana")
    v = await record_override(
        store, task_id, status="rejected", category="goal_missed", note="misses Q2", reviewer="ana"
    )
    from core.tasks.dossier import load_dossier
    from core.tasks.override import dossier_overrides

    dossier = await load_dossier(store, task_id)
    assert dossier.validation_for(1) is not None and dossier.validation_for(1).status == "accepted"  # type: ignore[union-attr]
    assert dossier_overrides(dossier)[1].status == v.status == "rejected"
    assert dossier_overrides(dossier)[1].note == "misses Q2"


async def test_attempts_decided_or_judged_twice_count_once(store: Store) -> None:
    from datetime import UTC, datetime, timedelta

    from core.calibration import CalibrationFilter

    revalidated = await seed(store, "accepted", "satisfied")
    (attempt,) = await store.list_attempts(revalidated)
    await store.add_validation(
        task_id=revalidated,
        attempt_id=attempt.id,
        attempt_index=1,
        result={"status": "rejected", "score": 0.1},
        raw_response="{}",
        prompt=None,
        debug={"validator_model": "m1"},
    )
    reopened = await seed(store, "accepted", "satisfied")
    (attempt,) = await store.list_attempts(reopened)
    await store.add_feedback(
        task_id=reopened,
        attempt_id=attempt.id,
        action="abandon",
        prompt=None,
        note="reopened, then given up",
        reviewer="ana",
        from_status=TaskStatus.AWAITING_FEEDBACK,
        to_status=TaskStatus.ABANDONED,
        created_at=datetime.now(UTC) + timedelta(minutes=5),
    )
    await seed(store, "accepted", "satisfied")

    cal = await calibrate(store)
    assert cal.n == 3
    assert cal.matrix["rejected"]["satisfied"] == 1  # the latest verdict of the re-validated attempt
    assert cal.matrix["accepted"]["abandoned"] == 1  # the last decision of the reopened one
    assert cal.matrix["accepted"]["satisfied"] == 1
    future = await calibrate(store, CalibrationFilter(since=datetime.now(UTC) + timedelta(days=1)))
    assert future.n == 0


async def test_cases_list_each_cells_tasks_on_both_engines(store: Store) -> None:
    fine = await seed(store, "accepted", "satisfied")
    slipped = [await seed(store, "accepted", "abandon"), await seed(store, "accepted", "revise")]
    missed = await seed(store, "rejected", "satisfied")
    overridden = await seed(store, "accepted", None, override=True)  # its own verdict: rejected
    cal = await calibrate(store, cases=True)
    assert cal.cases is not None
    assert cal.cases["true_accept"] == [fine]
    assert cal.cases["false_accept"] == sorted([*slipped, overridden])
    assert cal.cases["false_reject"] == [missed]
    assert cal.cases["accepted/overridden"] == [overridden]
    assert "cases" not in (await calibrate(store)).as_json()


async def test_drift_counts_calls_retries_fallbacks_stuck_loops_and_warnings_by_code(store: Store) -> None:
    incoherent = [{"code": "incoherent-verdict", "message": "accepted with a score of 0.1"}]
    for debug in (
        {"validator_model": "m1", "llm_calls": 2, "schema_retries": 1, "warnings": incoherent},
        {"validator_model": "m1", "llm_calls": 3, "schema_retries": 2, "model_used": "m1-fallback"},
        {"validator_model": "m1", "llm_calls": 3, "schema_retries": 2,
         "error": "validator gave no usable verdict (schema-stuck-loop): same error twice"},
    ):  # fmt: skip
        task = await store.create_task("drift")
        attempt = await store.create_attempt(task.id, 1, trigger="initial", prompt="p")
        status = "validator_error" if "error" in debug else "accepted"
        await store.add_validation(
            task_id=task.id, attempt_id=attempt.id, attempt_index=1, result={"status": status, "score": 0.1},
            raw_response="{}", prompt=None, debug=debug,
        )  # fmt: skip
    cal = await calibrate(store)
    (week,) = cal.drift["m1"].values()
    assert (week.verdicts, week.llm_calls, week.schema_retries) == (3, 8, 5)
    assert week.schema_failures_per_call == pytest.approx(5 / 8)
    assert (week.fallbacks, week.stuck_loops, week.canned) == (1, 1, 1)
    assert week.warnings == {"incoherent-verdict": 1}


async def test_undone_and_reopened_decisions_do_not_count(store: Store) -> None:
    """Issue 30, item 5: only the decision that stands counts; the history keeps the others."""
    from datetime import UTC, datetime, timedelta

    start = datetime.now(UTC) - timedelta(hours=1)

    async def decide(verdict: str, *actions: str) -> str:
        task = await store.create_task(f"{verdict}: {' '.join(actions)}")
        attempt = await store.create_attempt(task.id, 1, trigger="initial", prompt="p")
        await store.add_validation(
            task_id=task.id, attempt_id=attempt.id, attempt_index=1, result={"status": verdict, "score": 0.5},
            raw_response="{}", prompt=None, debug={"validator_model": "m1"},
        )  # fmt: skip
        for k, action in enumerate(actions):
            await store.add_feedback(
                task_id=task.id, attempt_id=attempt.id, action=action, prompt=None, note=None, reviewer="ana",
                from_status=TaskStatus.AWAITING_FEEDBACK, to_status=TaskStatus.CLOSED,
                created_at=start + timedelta(minutes=k),
            )  # fmt: skip
        return task.id

    await decide("accepted", "satisfied")
    undone = await decide("accepted", "satisfied", "undo")
    reopened = await decide("rejected", "abandon", "reopen")
    redecided = await decide("accepted", "satisfied", "undo", "abandon")
    await decide("accepted", "abandon", "reopen", "satisfied")
    cal = await calibrate(store, cases=True)
    assert cal.n == 3
    assert cal.matrix["accepted"] == {"satisfied": 2, "revised": 0, "abandoned": 1, "overridden": 0}
    assert cal.matrix["rejected"]["abandoned"] == 0
    assert cal.cases is not None and cal.cases["false_accept"] == [redecided]
    assert undone not in str(cal.cases) and reopened not in str(cal.cases)
    assert len(await store.list_feedback(undone)) == 2  # the history keeps what was undone
