"""How far to trust the validator: its verdicts against analysts' final decisions.

The unit is a decided attempt. Its analyst decision is ``overridden`` when an analyst recorded
their own verdict on it, else its last feedback (satisfied, revised, abandoned). Its validator
status is the attempt's latest verdict, or ``unvalidated``. The rows come from
``core.store.calibration_sql`` in three set-based queries; this module folds them in one pass.

Cohen's kappa treats agreement as binary: the validator accepted ⇔ the analyst was satisfied.
With ``n`` decided attempts, ``a`` = accepted and satisfied, ``b`` = accepted, not satisfied,
``c`` = not accepted, satisfied, ``d`` = neither::

    p_o = (a + d) / n
    p_e = ((a + b)(a + c) + (c + d)(b + d)) / n²
    kappa = (p_o - p_e) / (1 - p_e)        (undefined, reported as None, when p_e = 1)
"""

from __future__ import annotations

import csv
import io
import json
from collections import Counter, defaultdict
from datetime import date, datetime, timedelta

from pydantic import BaseModel

from core.errors import InvalidRequest
from core.store import Store
from core.store.calibration_sql import batch_choices, decision_groups, override_rows, verdicts_for

VALIDATOR_STATUSES = ["accepted", "rejected", "insufficient_evidence", "validator_error", "unvalidated"]
DECISIONS = ["satisfied", "revised", "abandoned", "overridden"]
UNVERSIONED = "unversioned"  # verdicts recorded before validators had versions
_DECISION_OF = {"satisfied": "satisfied", "revise": "revised", "abandon": "abandoned"}


class CalibrationFilter(BaseModel):
    since: datetime | None = None  # decisions at or after
    until: datetime | None = None  # decisions before
    validator_model: str | None = None
    validator_version: str | None = None  # a validator_version id, or a unique prefix of one
    category: str | None = None
    batch_id: str | None = None  # only tasks queued by this batch (tasks.batch_id)


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
    def rate(self) -> float | None:
        return self.agree / self.n if self.n else None

    @property
    def kappa(self) -> float | None:
        return cohen_kappa(self.a, self.b, self.c, self.n - self.a - self.b - self.c)


class WarningFigure(BaseModel):
    code: str
    decided: int  # decided attempts whose verdict carried the warning
    overridden: int
    revised: int

    @property
    def override_or_revise_rate(self) -> float:
        return (self.overridden + self.revised) / self.decided if self.decided else 0.0


class Calibration(BaseModel):
    filter: CalibrationFilter
    n: int
    matrix: dict[str, dict[str, int]]  # validator status -> analyst decision -> count
    kappa: float | None
    agreement: float | None
    by_category: dict[str, Agreement]
    by_model: dict[str, Agreement]
    by_version: dict[str, Agreement] = {}  # validator_version -> agreement ("unversioned": before versions)
    warnings: list[WarningFigure]
    weekly: dict[str, Agreement]  # ISO week start (YYYY-MM-DD) -> agreement that week
    # Promotions in the period (when the workspace's validator changed): at, candidate, versions, who.
    change_points: list[dict[str, str | None]] = []

    def as_json(self) -> dict[str, object]:
        def ag(x: Agreement) -> dict[str, object]:
            return {"n": x.n, "agreement": x.rate, "kappa": x.kappa}

        return {
            "filter": self.filter.model_dump(mode="json"),
            "n": self.n,
            "matrix": self.matrix,
            "kappa": self.kappa,
            "agreement": self.agreement,
            "by_category": {k: ag(v) for k, v in self.by_category.items()},
            "by_model": {k: ag(v) for k, v in self.by_model.items()},
            "by_version": {k: ag(v) for k, v in self.by_version.items()},
            "warnings": [
                {**w.model_dump(), "override_or_revise_rate": w.override_or_revise_rate}
                for w in self.warnings
            ],
            "weekly": {k: ag(v) for k, v in self.weekly.items()},
            "change_points": self.change_points,
        }


def cohen_kappa(a: int, b: int, c: int, d: int) -> float | None:
    """Kappa of a 2×2 table (see the module docstring); None when chance agreement is total."""
    n = a + b + c + d
    if n == 0:
        return None
    p_o = (a + d) / n
    p_e = ((a + b) * (a + c) + (c + d) * (b + d)) / (n * n)
    if p_e >= 1.0:
        return None
    return (p_o - p_e) / (1 - p_e)


def _week(day: date) -> str:
    return (day - timedelta(days=day.weekday())).isoformat()


def _warning_codes(warnings: str | None) -> set[str]:
    if not warnings or warnings in ("[]", "null"):
        return set()
    try:
        parsed = json.loads(warnings)
    except ValueError:
        return set()
    return (
        {str(w.get("code")) for w in parsed if isinstance(w, dict) and w.get("code")}
        if isinstance(parsed, list)
        else set()
    )


async def calibrate(store: Store, flt: CalibrationFilter | None = None) -> Calibration:
    """The calibration figures over every decided attempt matching ``flt``."""
    flt = flt or CalibrationFilter()
    if flt.batch_id is not None and flt.batch_id not in {b for b, _ in await batch_choices(store)}:
        raise InvalidRequest(f"no batch {flt.batch_id!r} in this workspace (see `evidence-desk batches`)")
    combos: Counter[tuple[str, str, str, str, date, str | None, str]] = Counter()
    for g in await decision_groups(store, since=flt.since, until=flt.until, batch_id=flt.batch_id):
        status, version = g.status or "unvalidated", g.version or UNVERSIONED
        key = (
            status,
            _DECISION_OF[g.action],
            g.category or "none",
            g.model or "unknown",
            g.day,
            g.warnings,
            version,
        )
        combos[key] += g.n
    # Overridden attempts (few): the last override of each decides, at its time.
    last: dict[str, datetime] = {}
    for o in await override_rows(store, since=flt.since, until=flt.until, batch_id=flt.batch_id):
        last[o.attempt_id] = o.decided_at
    verdicts = await verdicts_for(store, last) if last else {}
    for attempt_id, at in last.items():
        v = verdicts.get(attempt_id)
        if v is None:
            combos["unvalidated", "overridden", "none", "unknown", at.date(), None, UNVERSIONED] += 1
        else:
            version = v.version or UNVERSIONED
            combos[
                v.status, "overridden", v.category, v.model or "unknown", at.date(), v.warnings, version
            ] += 1

    matrix = {s: dict.fromkeys(DECISIONS, 0) for s in VALIDATOR_STATUSES}
    total = Agreement()
    by_category: dict[str, Agreement] = defaultdict(Agreement)
    by_model: dict[str, Agreement] = defaultdict(Agreement)
    by_version: dict[str, Agreement] = defaultdict(Agreement)
    weekly: dict[str, Agreement] = defaultdict(Agreement)
    warn: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0])
    for (status, decision, category, model, day, warnings, version), n in combos.items():
        if flt.category is not None and category != flt.category:
            continue
        if flt.validator_model is not None and model != flt.validator_model:
            continue
        if flt.validator_version is not None and not version.startswith(flt.validator_version):
            continue
        matrix.setdefault(status, dict.fromkeys(DECISIONS, 0))[decision] += n
        accepted, satisfied = status == "accepted", decision == "satisfied"
        for bucket in (
            total,
            by_category[category],
            by_model[model],
            by_version[version],
            weekly[_week(day)],
        ):
            bucket.add(accepted, satisfied, n)
        for code in _warning_codes(warnings):
            counts = warn[code]
            counts[0] += n
            counts[1] += n if decision == "overridden" else 0
            counts[2] += n if decision == "revised" else 0
    return Calibration(
        change_points=await _change_points(store, flt),
        filter=flt,
        n=total.n,
        matrix=matrix,
        kappa=total.kappa,
        agreement=total.rate,
        by_category=dict(sorted(by_category.items())),
        by_model=dict(sorted(by_model.items())),
        by_version=dict(sorted(by_version.items())),
        warnings=[
            WarningFigure(code=k, decided=v[0], overridden=v[1], revised=v[2])
            for k, v in sorted(warn.items())
        ],
        weekly=dict(sorted(weekly.items())),
    )


async def _change_points(store: Store, flt: CalibrationFilter) -> list[dict[str, str | None]]:
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


async def calibration_batches(store: Store) -> list[tuple[str, str]]:
    """The batches a calibration can be narrowed to, as (id, source file), oldest first."""
    return await batch_choices(store)


def format_calibration(cal: Calibration) -> str:
    """The figures as plain text for a terminal."""
    width = max(len(s) for s in cal.matrix) + 2
    lines = [f"decided attempts: {cal.n}", f"kappa: {_num(cal.kappa)}   agreement: {_num(cal.agreement)}", ""]
    lines.append("validator \\ analyst".ljust(width) + "".join(d.rjust(12) for d in DECISIONS))
    for status, row in cal.matrix.items():
        lines.append(status.ljust(width) + "".join(str(row[d]).rjust(12) for d in DECISIONS))
    for title, table in (
        ("category", cal.by_category),
        ("validator model", cal.by_model),
        ("validator version", cal.by_version),
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
    return "\n".join(lines)


def calibration_csv(cal: Calibration) -> str:
    """One long table (section, key, column, value), easy to pivot in a spreadsheet or pandas."""
    out = io.StringIO()
    w = csv.writer(out)
    w.writerow(["section", "key", "column", "value"])
    w.writerow(["summary", "all", "n", cal.n])
    w.writerow(["summary", "all", "kappa", _num(cal.kappa)])
    w.writerow(["summary", "all", "agreement", _num(cal.agreement)])
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
    for wf in cal.warnings:
        w.writerow(["warning", wf.code, "decided", wf.decided])
        w.writerow(["warning", wf.code, "overridden", wf.overridden])
        w.writerow(["warning", wf.code, "revised", wf.revised])
    return out.getvalue()


def _num(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.3f}"


__all__ = [
    "Calibration",
    "CalibrationFilter",
    "calibrate",
    "calibration_batches",
    "calibration_csv",
    "cohen_kappa",
    "format_calibration",
]
