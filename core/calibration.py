"""How far to trust the validator: its verdicts against analysts' final decisions.

The unit is a decided attempt. Its analyst decision is ``overridden`` when an analyst recorded
their own verdict on it, else the feedback decision that stands (satisfied, revised, abandoned):
an undone decision and the decisions before a reopen do not count (``core.domain.standing``),
though the history keeps them. Its validator status is the attempt's latest verdict, or
``unvalidated``. The rows come from ``core.store.calibration_sql`` in set-based queries; this
module folds them in one pass.

Agreement is binary: the validator accepted ⇔ the analyst found the answer good (satisfied, or
an override whose own status is ``accepted``). The 2x2 (a, b, c, d), the false-accept and
false-reject rates with Wilson intervals, kappa, Gwet's AC1 and prevalence are
``core.domain.agreement``'s, so the CLI, the desk and the HTML page show the same numbers.
Blind first judgements give the anchoring figures, second reviews the inter-analyst ones.
"""

from __future__ import annotations

import asyncio
import csv
import io
import json
from collections import Counter, defaultdict
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from typing import Any

from pydantic import BaseModel, Field

from core.domain.agreement import (
    MIN_DECISIONS,
    MIN_PER_RATE,
    Rate,
    Rates,
    cohen_kappa_table,
    judge_rates,
    krippendorff_alpha_nominal,
    pairs_table,
    rate,
)
from core.errors import InvalidRequest
from core.store import Store
from core.store.calibration_sql import (
    batch_choices,
    decision_groups,
    drift_groups,
    judgement_rows,
    override_rows,
    standing_decisions,
    verdicts_for,
)
from core.store.citation_sql import mark_groups

VALIDATOR_STATUSES = ["accepted", "rejected", "insufficient_evidence", "validator_error", "unvalidated"]
DECISIONS = ["satisfied", "revised", "abandoned", "overridden"]
UNVERSIONED = "unversioned"  # verdicts recorded before validators had versions
_DECISION_OF = {"satisfied": "satisfied", "revise": "revised", "abandon": "abandoned"}
_TURN = 500  # groups folded between two turns of the event loop (the desk paints meanwhile)
CELLS = ["true_accept", "false_accept", "false_reject", "true_reject"]
"""The 2x2's cells by name: validator accepted and analyst satisfied, accepted and not, not and
satisfied, neither (a, b, c, d of ``core.domain.agreement``)."""


class CalibrationFilter(BaseModel):
    since: datetime | None = None  # decisions at or after
    until: datetime | None = None  # decisions before
    validator_model: str | None = None
    validator_version: str | None = None  # a validator_version id, or a unique prefix of one
    category: str | None = None
    batch_id: str | None = None  # only tasks queued by this batch (tasks.batch_id)
    reviewer: str | None = None  # only decisions by this reviewer
    reason: str | None = None  # only decisions given this reason code


class Agreement(BaseModel):
    n: int = 0
    agree: int = 0
    a: int = 0  # accepted and satisfied
    b: int = 0  # accepted, not satisfied
    c: int = 0  # not accepted, satisfied

    def add(self, accepted: bool, satisfied: bool, n: int = 1) -> None:
        self.n += n
        self.agree += n if accepted == satisfied else 0
        self.a += n if accepted and satisfied else 0
        self.b += n if accepted and not satisfied else 0
        self.c += n if satisfied and not accepted else 0

    @property
    def d(self) -> int:
        return self.n - self.a - self.b - self.c

    @property
    def rate(self) -> float | None:
        return self.agree / self.n if self.n else None

    @property
    def kappa(self) -> float | None:
        return cohen_kappa(self.a, self.b, self.c, self.d)

    def rates(self) -> Rates:
        return judge_rates(self.a, self.b, self.c, self.d)


class WarningFigure(BaseModel):
    code: str
    decided: int  # decided attempts whose verdict carried the warning
    overridden: int
    revised: int

    @property
    def override_or_revise_rate(self) -> float:
        return (self.overridden + self.revised) / self.decided if self.decided else 0.0


class Anchoring(BaseModel):
    """How often seeing the verdict changed a blind first judgement, and which way."""

    judged: int  # attempts with a blind judgement and a standing decision by the same reviewer
    changed: Rate  # of those, the share whose decision after the reveal differs from the blind one
    toward_validator: int  # changed into agreement with the validator
    away_from_validator: int  # changed out of agreement
    other: int  # changed, agreement with the validator the same (revise <-> abandon)
    blind: Rates  # the validator against the blind judgements (no anchoring possible)


class Analysts(BaseModel):
    """Analysts against each other on tasks reviewed twice: the ceiling a judge can reach."""

    tasks: int
    agreement: float | None
    kappa: float | None  # Cohen's, first decision against the first second review
    alpha: float | None  # Krippendorff's (nominal), every review of every unit
    reviewers: int
    disagreements: list[str]  # task ids to adjudicate


class DriftWeek(BaseModel):
    verdicts: int = 0
    llm_calls: int = 0
    schema_retries: int = 0
    fallbacks: int = 0  # verdicts answered by another model than the validator model asked for (tier 2)
    stuck_loops: int = 0  # verdicts whose structured output stopped on one schema error repeated
    canned: int = 0  # verdicts that fell to the canned last tier (validator_error)
    warnings: dict[str, int] = Field(default_factory=dict)  # verdict warning code -> verdicts

    @property
    def schema_failures_per_call(self) -> float | None:
        return self.schema_retries / self.llm_calls if self.llm_calls else None


class CitationPrecision(BaseModel):
    """Analysts' standing marks on one validator's citations: right of marked, with its interval."""

    validator_model: str
    validator_version: str
    right: int
    wrong: int
    precision: Rate  # right / (right + wrong), Wilson 95%


class Citations(BaseModel):
    """Citation precision over every standing mark in range, and per validator model and version."""

    marked: int
    precision: Rate
    by_validator: list[CitationPrecision]


class Calibration(BaseModel):
    filter: CalibrationFilter
    n: int
    matrix: dict[str, dict[str, int]]  # validator status -> analyst decision -> count
    kappa: float | None
    agreement: float | None
    by_category: dict[str, Agreement]
    by_model: dict[str, Agreement]
    warnings: list[WarningFigure]
    weekly: dict[str, Agreement]  # ISO week start (YYYY-MM-DD) -> agreement that week
    rates: Rates | None = None
    by_reviewer: dict[str, Agreement] = Field(default_factory=dict)
    reasons: dict[str, dict[str, int]] = Field(default_factory=dict)  # reason -> decision -> count
    anchoring: Anchoring | None = None
    analysts: Analysts | None = None
    drift: dict[str, dict[str, DriftWeek]] = Field(default_factory=dict)  # model -> week -> figures
    cases: dict[str, list[str]] | None = None  # cell ("false_accept", "accepted/revised") -> task ids
    # Agreement per validator_version ("unversioned": verdicts from before validators had versions).
    by_version: dict[str, Agreement] = Field(default_factory=dict)
    # Promotions in the period (when the workspace's validator changed): at, candidate, versions, who.
    change_points: list[dict[str, str | None]] = Field(default_factory=list)
    citations: Citations | None = None  # analysts' marks on the validator's citations; None without any

    def as_json(self) -> dict[str, object]:
        def ag(x: Agreement) -> dict[str, object]:
            return {"n": x.n, "agreement": x.rate, "kappa": x.kappa}

        out: dict[str, object] = {
            "filter": self.filter.model_dump(mode="json"),
            "n": self.n,
            "matrix": self.matrix,
            "kappa": self.kappa,
            "agreement": self.agreement,
            "rates": _rates_json(self.rates) if self.rates is not None else None,
            "by_category": {k: ag(v) for k, v in self.by_category.items()},
            "by_model": {k: ag(v) for k, v in self.by_model.items()},
            "by_version": {k: ag(v) for k, v in self.by_version.items()},
            "by_reviewer": {k: ag(v) for k, v in self.by_reviewer.items()},
            "reasons": self.reasons,
            "warnings": [
                {**w.model_dump(), "override_or_revise_rate": w.override_or_revise_rate}
                for w in self.warnings
            ],
            "weekly": {k: ag(v) for k, v in self.weekly.items()},
            "anchoring": _anchoring_json(self.anchoring) if self.anchoring is not None else None,
            "analysts": self.analysts.model_dump(mode="json") if self.analysts is not None else None,
            "drift": {
                m: {
                    w: {**d.model_dump(), "schema_failures_per_call": d.schema_failures_per_call}
                    for w, d in weeks.items()
                }
                for m, weeks in self.drift.items()
            },
            "change_points": self.change_points,
            "citations": _citations_json(self.citations) if self.citations is not None else None,
        }
        if self.cases is not None:
            out["cases"] = self.cases
        return out


def _rate_json(r: Rate) -> dict[str, object]:
    return {"value": r.value, "ci_low": r.ci_low, "ci_high": r.ci_high, "n": r.n}


def _rates_json(r: Rates) -> dict[str, object]:
    return {
        "false_accept": _rate_json(r.false_accept),
        "false_reject": _rate_json(r.false_reject),
        "kappa": r.kappa,
        "gwet_ac1": r.gwet_ac1,
        "prevalence": r.prevalence,
        "agreement": r.agreement,
        "decisions": r.decisions,
        "too_few": r.too_few,
        "cells": {"true_accept": r.a, "false_accept": r.b, "false_reject": r.c, "true_reject": r.d},
    }


def _citations_json(c: Citations) -> dict[str, object]:
    return {
        "marked": c.marked,
        "precision": _rate_json(c.precision),
        "by_validator": [
            {
                "validator_model": v.validator_model,
                "validator_version": v.validator_version,
                "right": v.right,
                "wrong": v.wrong,
                "precision": _rate_json(v.precision),
            }
            for v in c.by_validator
        ],
    }


def _anchoring_json(a: Anchoring) -> dict[str, object]:
    return {
        "judged": a.judged,
        "changed": _rate_json(a.changed),
        "toward_validator": a.toward_validator,
        "away_from_validator": a.away_from_validator,
        "other": a.other,
        "blind": _rates_json(a.blind),
    }


def cohen_kappa(a: int, b: int, c: int, d: int) -> float | None:
    """Kappa of a 2×2 table (``core.domain.agreement``); None when chance agreement is total."""
    return cohen_kappa_table([[a, b], [c, d]])


def _week(day: date) -> str:
    return (day - timedelta(days=day.weekday())).isoformat()


def _warning_codes(warnings: str | None) -> set[str]:
    if not warnings or warnings in ("[]", "null"):
        return set()
    try:
        parsed = json.loads(warnings)
    except ValueError:
        return set()
    if not isinstance(parsed, list):
        return set()
    # Warnings from before structured codes are plain strings: counted by their text's first word.
    return {str(w.get("code")) for w in parsed if isinstance(w, dict) and w.get("code")} | {
        w.split(":")[0].split()[0] for w in parsed if isinstance(w, str) and w.strip()
    }


@dataclass(frozen=True, slots=True)
class _Key:
    status: str
    decision: str
    category: str
    model: str
    day: date
    warnings: str | None
    reviewer: str
    reason: str | None
    good: bool  # the analyst found the answer good: satisfied, or overridden to accepted
    version: str = UNVERSIONED  # the verdict's validator_version


async def _combos(
    store: Store, flt: CalibrationFilter, cases: bool
) -> tuple[Counter[_Key], dict[_Key, list[str]]]:
    """Every standing decision in range counted per key, and each key's task ids (when cases are asked for)."""
    combos: Counter[_Key] = Counter()
    ids: dict[_Key, list[str]] = defaultdict(list)
    groups, overrides = await asyncio.gather(
        decision_groups(store, since=flt.since, until=flt.until, batch_id=flt.batch_id, with_tasks=cases),
        override_rows(store, since=flt.since, until=flt.until, batch_id=flt.batch_id),
    )
    for i, g in enumerate(groups):
        if i % _TURN == _TURN - 1:
            await asyncio.sleep(0)  # let the GUI paint between stretches
        decision = _DECISION_OF[g.action]
        key = _Key(
            g.status or "unvalidated", decision, g.category or "none", g.model or "unknown", g.day,
            g.warnings, g.reviewer, g.reason, decision == "satisfied", g.version or UNVERSIONED,
        )  # fmt: skip
        combos[key] += g.n
        if g.task_ids:
            ids[key].extend(g.task_ids)
    # Overridden attempts (few): the last override of each decides, at its time.
    last = {o.attempt_id: o for o in overrides}
    verdicts = await verdicts_for(store, last) if last else {}
    for attempt_id, o in last.items():
        v = verdicts.get(attempt_id)
        good = o.status == "accepted"
        if v is None:
            key = _Key(
                "unvalidated",
                "overridden",
                "none",
                "unknown",
                o.decided_at.date(),
                None,
                o.reviewer,
                o.reason,
                good,
            )
        else:
            key = _Key(v.status, "overridden", v.category, v.model or "unknown", o.decided_at.date(), v.warnings, o.reviewer, o.reason, good, v.version or UNVERSIONED)  # fmt: skip
        combos[key] += 1
        if cases:
            ids[key].append(o.task_id)
    return combos, ids


def _keep(k: _Key, flt: CalibrationFilter) -> bool:
    return (
        (flt.category is None or k.category == flt.category)
        and (flt.validator_model is None or k.model == flt.validator_model)
        and (flt.validator_version is None or k.version.startswith(flt.validator_version))
        and (flt.reviewer is None or k.reviewer == flt.reviewer)
        and (flt.reason is None or k.reason == flt.reason)
    )


class _Fold:
    """One pass over the counted keys, filling every table at once."""

    def __init__(self, cases: bool) -> None:
        self.matrix = {s: dict.fromkeys(DECISIONS, 0) for s in VALIDATOR_STATUSES}
        self.total = [0, 0, 0, 0]  # a, b, c, d: plain lists, as pydantic's setattr costs on the loop
        self.tables: dict[str, dict[str, list[int]]] = {
            t: defaultdict(lambda: [0, 0, 0, 0]) for t in ("category", "model", "version", "week", "reviewer")
        }
        self.warn: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0])
        self.reasons: dict[str, dict[str, int]] = defaultdict(lambda: dict.fromkeys(DECISIONS, 0))
        self.cases: dict[str, list[str]] | None = defaultdict(list) if cases else None

    def add(self, k: _Key, n: int, task_ids: list[str]) -> None:
        self.matrix.setdefault(k.status, dict.fromkeys(DECISIONS, 0))[k.decision] += n
        accepted = k.status == "accepted"
        cell = (0 if k.good else 1) if accepted else (2 if k.good else 3)
        self.total[cell] += n
        t = self.tables
        for counts in (
            t["category"][k.category],
            t["model"][k.model],
            t["version"][k.version],
            t["week"][_week(k.day)],
            t["reviewer"][k.reviewer],
        ):
            counts[cell] += n
        for code in _warning_codes(k.warnings):
            counts = self.warn[code]
            counts[0] += n
            counts[1] += n if k.decision == "overridden" else 0
            counts[2] += n if k.decision == "revised" else 0
        if k.reason is not None:
            self.reasons[k.reason][k.decision] += n
        if self.cases is not None and task_ids:
            self.cases[f"{k.status}/{k.decision}"].extend(task_ids)
            self.cases[CELLS[cell]].extend(task_ids)


async def calibrate(
    store: Store, flt: CalibrationFilter | None = None, *, cases: bool = False
) -> Calibration:
    """The calibration figures over every standing decision matching ``flt``.

    ``cases`` also lists the task ids behind each matrix cell and each 2x2 cell (``CELLS``).
    """
    flt = flt or CalibrationFilter()
    if flt.batch_id is not None and flt.batch_id not in {b for b, _ in await batch_choices(store)}:
        raise InvalidRequest(f"no batch {flt.batch_id!r} in this workspace (see `evidence-desk batches`)")
    fold = _Fold(cases)
    # Each part reads on its own connection: the database works on them in parallel.
    (combos, ids), drift, judged, change_points, citations = await asyncio.gather(
        _combos(store, flt, cases), _drift(store, flt), _judgements(store, flt), _change_points(store, flt),
        _citations(store, flt),
    )  # fmt: skip
    for i, (key, n) in enumerate(combos.items()):
        if i % _TURN == _TURN - 1:
            await asyncio.sleep(0)
        if _keep(key, flt):
            fold.add(key, n, ids.get(key, []))
    total = _agreement(fold.total)
    cases_by_cell = await _sorted_cases(fold.cases) if fold.cases is not None else None

    def table(name: str) -> dict[str, Agreement]:
        return {k: _agreement(v) for k, v in sorted(fold.tables[name].items())}

    return Calibration(
        filter=flt,
        n=total.n,
        matrix=fold.matrix,
        kappa=total.kappa,
        agreement=total.rate,
        rates=total.rates(),
        by_category=table("category"),
        by_model=table("model"),
        by_version=table("version"),
        by_reviewer=table("reviewer"),
        reasons=dict(sorted(fold.reasons.items())),
        warnings=[
            WarningFigure(code=k, decided=v[0], overridden=v[1], revised=v[2])
            for k, v in sorted(fold.warn.items())
        ],
        weekly=table("week"),
        drift=drift,
        change_points=change_points,
        citations=citations,
        cases=cases_by_cell,
        **judged,
    )


def calibrate_apart(url: str, flt: CalibrationFilter | None = None, *, cases: bool = False) -> Calibration:
    """``calibrate`` on a store of its own, opened and closed here: blocking, for a worker thread
    with no event loop (the desk's GUI loop never folds the figures itself). An engine belongs to
    the loop that made it, so the caller's store cannot be lent to this thread's loop."""

    async def work() -> Calibration:
        store = await Store.open(url, migrate=False)  # the caller's store already migrated it
        try:
            return await calibrate(store, flt, cases=cases)
        finally:
            await store.close()

    return asyncio.run(work())


async def _sorted_cases(cases: dict[str, list[str]]) -> dict[str, list[str]]:
    """Each cell's task ids, unique and sorted, one cell per turn of the loop: a cell holds up to
    every decided task, and sorting them all at once held the desk's GUI for tens of ms."""
    out: dict[str, list[str]] = {}
    for cell, ids in sorted(cases.items()):
        out[cell] = sorted(set(ids))
        await asyncio.sleep(0)
    return out


async def _change_points(store: Store, flt: CalibrationFilter) -> list[dict[str, str | None]]:
    """The promotions in the period: where the workspace's validator, and so its version, changed."""
    from core.validation.workspace_validator import promotions

    return [
        {
            "at": p.at.isoformat(),
            "candidate": p.payload.candidate,
            "validator_version": p.payload.validator_version,
            "previous_version": p.payload.previous_version,
            "reviewer": p.payload.reviewer,
        }
        for p in await promotions(store)
        if (flt.since is None or p.at >= flt.since) and (flt.until is None or p.at < flt.until)
    ]


async def _citations(store: Store, flt: CalibrationFilter) -> Citations | None:
    """Citation precision from the standing marks; the reason filter (a decision's) does not apply."""
    counts: dict[tuple[str, str], list[int]] = defaultdict(lambda: [0, 0])
    for g in await mark_groups(store, flt.since, flt.until, flt.batch_id, category=flt.category):
        model, version = g.model or "unknown", g.version or UNVERSIONED
        if not (
            (flt.validator_model is None or model == flt.validator_model)
            and (flt.validator_version is None or version.startswith(flt.validator_version))
            and (flt.reviewer is None or g.reviewer == flt.reviewer)
        ):
            continue
        counts[(model, version)][0 if g.mark == "right" else 1] += g.n
    if not counts:
        return None
    right, wrong = sum(c[0] for c in counts.values()), sum(c[1] for c in counts.values())
    return Citations(
        marked=right + wrong,
        precision=rate(right, right + wrong),
        by_validator=[
            CitationPrecision(
                validator_model=m, validator_version=v, right=r, wrong=w, precision=rate(r, r + w)
            )
            for (m, v), (r, w) in sorted(counts.items())
        ],
    )


def citation_lines(cal: Calibration) -> list[str]:
    """Citation precision in words, overall and per validator model and version (none: no lines)."""
    c = cal.citations
    if c is None:
        return []
    lines = ["", f"citations marked by analysts: {c.marked}; {_rate_text('precision', c.precision)}"]
    lines += [
        f"  {v.validator_model} @ {v.validator_version}: {v.right} right, {v.wrong} wrong; "
        + _rate_text("precision", v.precision)
        for v in c.by_validator
    ]
    return lines


def _agreement(abcd: list[int]) -> Agreement:
    a, b, c, d = abcd
    return Agreement(n=a + b + c + d, agree=a + d, a=a, b=b, c=c)


async def _drift(store: Store, flt: CalibrationFilter) -> dict[str, dict[str, DriftWeek]]:
    """Per validator model and week: calls, schema retries per call, fallbacks and warnings by code."""
    drift: dict[str, dict[str, DriftWeek]] = defaultdict(lambda: defaultdict(DriftWeek))
    for g in await drift_groups(store, flt.since, flt.until):
        model = g.model or "unknown"
        if flt.validator_model is not None and model != flt.validator_model:
            continue
        week = drift[model][_week(g.day)]
        week.verdicts += g.verdicts
        week.llm_calls += g.llm_calls
        week.schema_retries += g.schema_retries
        week.fallbacks += g.verdicts if g.fell_back else 0
        week.stuck_loops += g.stuck_loops
        week.canned += g.canned
        for code in _warning_codes(g.warnings):
            week.warnings[code] = week.warnings.get(code, 0) + g.verdicts
    return {m: dict(sorted(weeks.items())) for m, weeks in sorted(drift.items())}


async def _judgements(store: Store, flt: CalibrationFilter) -> dict[str, Any]:
    """Anchoring (blind first judgements) and inter-analyst agreement (second reviews)."""
    rows = [
        j for j in await judgement_rows(store, flt.batch_id)
        if flt.reviewer is None or j.reviewer == flt.reviewer
    ]  # fmt: skip
    if not rows:
        return {}
    standing = await standing_decisions(store, {j.attempt_id for j in rows})
    out: dict[str, Any] = {}
    blind: dict[str, Any] = {}
    for j in rows:
        d = standing.get(j.attempt_id)
        if j.phase == "blind" and d is not None and d.reviewer == j.reviewer:
            blind.setdefault(j.attempt_id, (j, d))  # the first blind judgement counts
    if blind:
        out["anchoring"] = _anchoring(list(blind.values()))
    seconds: dict[str, list[tuple[str, str]]] = defaultdict(list)
    for j in rows:
        d = standing.get(j.attempt_id)
        if j.phase == "second" and d is not None and j.reviewer != d.reviewer:
            seconds[j.attempt_id].append((j.reviewer, j.decision))
    if seconds:
        out["analysts"] = _analysts(seconds, standing)
    return out


def _agrees(verdict: str | None, decision: str) -> bool:
    return (verdict == "accepted") == (decision == "satisfied")


def _anchoring(pairs: list[tuple[Any, Any]]) -> Anchoring:
    changed = toward = away = other = 0
    blind = Agreement()
    for j, d in pairs:
        blind.add(d.verdict == "accepted", j.decision == "satisfied")
        if j.decision == d.action:
            continue
        changed += 1
        before, after = _agrees(d.verdict, j.decision), _agrees(d.verdict, d.action)
        toward += 1 if after and not before else 0
        away += 1 if before and not after else 0
        other += 1 if before == after else 0
    return Anchoring(
        judged=len(pairs), changed=rate(changed, len(pairs)), toward_validator=toward,
        away_from_validator=away, other=other, blind=blind.rates(),
    )  # fmt: skip


def _analysts(seconds: dict[str, list[tuple[str, str]]], standing: dict[str, Any]) -> Analysts:
    pairs: list[tuple[str, str]] = []
    units: list[list[str]] = []
    reviewers: set[str] = set()
    disagree: set[str] = set()
    for attempt_id, reviews in seconds.items():
        first = standing[attempt_id]
        by_reviewer = {first.reviewer: first.action} | dict(reviews)  # each reviewer's last word
        reviewers |= by_reviewer.keys()
        pairs.append((first.action, reviews[0][1]))
        units.append(list(by_reviewer.values()))
        if len(set(by_reviewer.values())) > 1:
            disagree.add(first.task_id)
    _, table = pairs_table(pairs)
    return Analysts(
        tasks=len(units),
        agreement=sum(1 for x, y in pairs if x == y) / len(pairs),
        kappa=cohen_kappa_table(table),
        alpha=krippendorff_alpha_nominal(units),
        reviewers=len(reviewers),
        disagreements=sorted(disagree),
    )


async def calibration_batches(store: Store) -> list[tuple[str, str]]:
    """The batches a calibration can be narrowed to, as (id, source file), oldest first."""
    return await batch_choices(store)


def _rate_text(name: str, r: Rate) -> str:
    if r.value is None:
        return f"{name}: n/a (no cases)"
    return f"{name}: {r.value:.3f} [{r.ci_low:.3f}, {r.ci_high:.3f}] of {r.n}"


def rates_lines(r: Rates) -> list[str]:
    """The 2x2's figures in words, the same in the terminal, the desk and the HTML page."""
    lines = [
        f"{_rate_text('false accept', r.false_accept)}   {_rate_text('false reject', r.false_reject)}"
        "   (95% Wilson intervals)",
        f"kappa: {_num(r.kappa)}   Gwet's AC1: {_num(r.gwet_ac1)}   prevalence (analyst satisfied): "
        f"{_num(r.prevalence)}",
    ]
    if r.too_few:
        lines.append(
            f"too few decisions to trust these figures: {r.decisions} decided, {r.false_accept.n} not "
            f"satisfied, {r.false_reject.n} satisfied (want {MIN_DECISIONS}+ and {MIN_PER_RATE}+ behind each rate)"
        )
    return lines


def judgement_lines(cal: Calibration) -> list[str]:
    """Blind review (anchoring) and analysts' agreement in words, when there are any."""
    lines: list[str] = []
    if (a := cal.anchoring) is not None:
        lines += [
            "",
            f"blind review: {a.judged} judged blind; the reveal changed {_rate_text('the decision', a.changed)}",
            f"  toward the validator {a.toward_validator}, away from it {a.away_from_validator}, other {a.other}",
            "  validator against blind judgements: " + "; ".join(rates_lines(a.blind)[:2]),
        ]
    if (x := cal.analysts) is not None:
        lines += [
            "",
            f"analysts: {x.tasks} tasks reviewed twice by {x.reviewers} reviewers: agreement {_num(x.agreement)} "
            f"kappa {_num(x.kappa)} alpha {_num(x.alpha)}",
            f"  to adjudicate: {', '.join(t[:12] for t in x.disagreements) or 'none'}",
        ]
    return lines


def format_calibration(cal: Calibration) -> str:
    """The figures as plain text for a terminal."""
    width = max(len(s) for s in cal.matrix) + 2
    lines = [
        f"decided attempts: {cal.n}   agreement: {_num(cal.agreement)} (validator accepted ⇔ analyst satisfied)"
    ]
    lines += rates_lines(cal.rates) if cal.rates is not None else []
    lines.append("")
    lines.append("validator \\ analyst".ljust(width) + "".join(d.rjust(12) for d in DECISIONS))
    for status, row in cal.matrix.items():
        lines.append(status.ljust(width) + "".join(str(row[d]).rjust(12) for d in DECISIONS))
    for title, table in (
        ("category", cal.by_category),
        ("validator model", cal.by_model),
        ("validator version", cal.by_version),
        ("reviewer", cal.by_reviewer),
        ("week", cal.weekly),
    ):
        lines += ["", f"by {title}:"]
        lines += [f"  {k}: n={v.n} agreement={_num(v.rate)} kappa={_num(v.kappa)}" for k, v in table.items()]
    lines += ["", "validator changes (promotions):"]
    lines += [
        f"  {c['at']}: {c['previous_version']} -> {c['validator_version']} ({c['candidate']}, by {c['reviewer']})"
        for c in cal.change_points
    ]
    lines += ["", "warnings before an override or revise:"]
    lines += [
        f"  {w.code}: {w.overridden + w.revised}/{w.decided} ({w.override_or_revise_rate:.0%})"
        for w in cal.warnings
    ]
    if cal.reasons:
        lines += ["", "reasons:"] + [
            f"  {k}: " + ", ".join(f"{d} {n}" for d, n in row.items() if n) for k, row in cal.reasons.items()
        ]
    lines += judgement_lines(cal)
    lines += citation_lines(cal)
    if cal.cases is not None:
        lines += ["", "cases:"] + [f"  {cell}: {' '.join(ids)}" for cell, ids in cal.cases.items()]
    return "\n".join(lines)


def calibration_csv(cal: Calibration) -> str:
    """One long table (section, key, column, value), easy to pivot in a spreadsheet or pandas."""
    out = io.StringIO()
    w = csv.writer(out)
    w.writerow(["section", "key", "column", "value"])
    w.writerow(["summary", "all", "n", cal.n])
    w.writerow(["summary", "all", "kappa", _num(cal.kappa)])
    w.writerow(["summary", "all", "agreement", _num(cal.agreement)])
    if (r := cal.rates) is not None:
        for name, x in (("false_accept", r.false_accept), ("false_reject", r.false_reject)):
            for column, value in (("value", x.value), ("ci_low", x.ci_low), ("ci_high", x.ci_high)):
                w.writerow(["rates", name, column, _num(value)])
            w.writerow(["rates", name, "n", x.n])
        for column, v in (("gwet_ac1", r.gwet_ac1), ("prevalence", r.prevalence)):
            w.writerow(["rates", "all", column, _num(v)])
        w.writerow(["rates", "all", "too_few", str(r.too_few).lower()])
    for status, row in cal.matrix.items():
        for decision, n in row.items():
            w.writerow(["matrix", status, decision, n])
    tables = (
        ("category", cal.by_category),
        ("model", cal.by_model),
        ("version", cal.by_version),
        ("week", cal.weekly),
    )
    for section, table in tables:
        for key, ag in table.items():
            w.writerow([section, key, "n", ag.n])
            w.writerow([section, key, "agreement", _num(ag.rate)])
            w.writerow([section, key, "kappa", _num(ag.kappa)])
    _citations_csv(w, cal)
    for wf in cal.warnings:
        w.writerow(["warning", wf.code, "decided", wf.decided])
        w.writerow(["warning", wf.code, "overridden", wf.overridden])
        w.writerow(["warning", wf.code, "revised", wf.revised])
    return out.getvalue()


def _citations_csv(w: Any, cal: Calibration) -> None:
    for cp in cal.citations.by_validator if cal.citations is not None else []:
        key = f"{cp.validator_model}@{cp.validator_version}"
        r = cp.precision
        for column, value in (("right", cp.right), ("wrong", cp.wrong)):
            w.writerow(["citations", key, column, value])
        for column, x in (("precision", r.value), ("ci_low", r.ci_low), ("ci_high", r.ci_high)):
            w.writerow(["citations", key, column, _num(x)])


def _num(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.3f}"


__all__ = [
    "CELLS",
    "UNVERSIONED",
    "Analysts",
    "Anchoring",
    "Calibration",
    "CalibrationFilter",
    "CitationPrecision",
    "Citations",
    "calibrate",
    "calibrate_apart",
    "calibration_batches",
    "calibration_csv",
    "citation_lines",
    "cohen_kappa",
    "format_calibration",
    "judgement_lines",
    "rates_lines",
]
