"""Two judges side by side against the analysts: agreement with intervals, McNemar's test on the
paired outcomes, the cases where they differ, and each judge's cost and latency per verdict.

A side is named by the user:

- ``live`` (or ``current``): the verdicts recorded on the tasks (each decided attempt's latest);
- a candidate's name: its shadow verdicts of its configured version (or, when the configuration
  no longer names it, of its most recent replay);
- a ``validator_version`` (or a unique prefix of at least 6 digits): that replay's shadow
  verdicts, or the live verdicts given by that version.

Agreement is binary, as in calibration: a judge is right on a decided attempt when "it accepted"
equals "the analyst endorsed the answer" (satisfied, or an override whose own verdict is
accepted). Only attempts both judges judged are paired.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

from core.config import Settings
from core.domain.agreement import wilson_interval
from core.domain.event_payloads import ShadowVerdict
from core.errors import InvalidRequest
from core.judge.candidates import load_candidate
from core.judge.replay import shadow_verdicts
from core.judge.stats import McNemar, agreement, mcnemar
from core.store import Store
from core.store.judge_sql import (
    SHADOW_SESSION_KIND,
    DecidedAttempt,
    VerdictFacts,
    decided_attempts,
    live_verdicts,
    sessions_of_kind,
)
from core.validation.prompt import INSTALLED, TemplateSet

__all__ = [
    "Comparison",
    "DifferingCase",
    "SideFigures",
    "compare_validators",
    "format_comparison",
    "replay_names",
    "resolve_side",
]

LIVE_NAMES = ("live", "current")
MIN_VERSION_PREFIX = 6


@dataclass
class SideFigures:
    name: str
    source: str  # "live" or "shadow:<session label>"
    judged: int = 0  # decided attempts this judge has a verdict on
    agree: int = 0
    agreement: float | None = None
    interval: tuple[float, float] | None = None  # Wilson 95%
    errors: int = 0  # validator_error verdicts
    cost_usd_per_verdict: float | None = None
    latency_s_per_verdict: float | None = None


@dataclass
class DifferingCase:
    task_id: str
    attempt_index: int
    title: str
    analyst: str
    current_status: str
    candidate_status: str
    current_score: float | None = None
    candidate_score: float | None = None
    current_issues: list[str] = field(default_factory=list)
    candidate_issues: list[str] = field(default_factory=list)


@dataclass
class Comparison:
    current: SideFigures
    candidate: SideFigures
    paired: int
    mcnemar: McNemar
    candidate_right: list[DifferingCase] = field(default_factory=list)
    current_right: list[DifferingCase] = field(default_factory=list)
    both_wrong: list[DifferingCase] = field(default_factory=list)

    def as_json(self) -> dict[str, object]:
        return asdict(self)


def _facts(v: ShadowVerdict) -> VerdictFacts:
    status = str(v.status or (v.result.status if v.result else "validator_error"))
    category = str(v.result.category) if v.result and v.result.category else None
    score = v.result.score if v.result else None
    issues = tuple(v.result.issues) if v.result else ()
    return VerdictFacts(
        v.attempt_id or "",
        status,
        score,
        category,
        v.latency_s,
        v.usage.cost_usd,
        v.validator_version,
        issues,
    )


async def resolve_side(
    store: Store, settings: Settings, name: str, attempt_ids: list[str], base: TemplateSet = INSTALLED
) -> tuple[str, dict[str, VerdictFacts]]:
    """The verdicts a side names, by attempt id, and where they came from."""
    if name in LIVE_NAMES:
        return "live", await live_verdicts(store, attempt_ids)
    sessions = await sessions_of_kind(store, SHADOW_SESSION_KIND)
    if "@" in name:  # a replay named exactly: NAME@VERSION
        chosen = [s for s in sessions if s.label == name]
    elif name in settings.validator_candidates:
        label = load_candidate(settings, name, base).session_label
        chosen = [s for s in sessions if s.label == label]
    else:
        chosen = [s for s in sessions if s.label.startswith(f"{name}@")][-1:]
    if not chosen and len(name) >= MIN_VERSION_PREFIX:
        chosen = [s for s in sessions if s.label.rsplit("@", 1)[-1].startswith(name)]
        if not chosen:
            live = await live_verdicts(store, attempt_ids)
            picked = {k: v for k, v in live.items() if v.version and v.version.startswith(name)}
            if picked:
                return f"live@{name}", picked
    if len(chosen) > 1:
        raise InvalidRequest(f"{name!r} names several replays: {', '.join(s.label for s in chosen)}")
    if not chosen:
        raise InvalidRequest(
            f"no verdicts for {name!r}: name 'live', a candidate that was replayed "
            "(`evidence-desk revalidate --candidate NAME`) or a validator version"
        )
    verdicts = await shadow_verdicts(store, chosen[0].id)
    return f"shadow:{chosen[0].label}", {k: _facts(v) for k, v in verdicts.items()}


async def replay_names(store: Store) -> list[str]:
    """What a side can be: 'live' and every replay (``NAME@VERSION``), oldest replay first."""
    return ["live", *(s.label for s in await sessions_of_kind(store, SHADOW_SESSION_KIND))]


def analyst_endorsed(d: DecidedAttempt) -> bool:
    if d.decision == "overridden":
        return d.override_status == "accepted"
    return d.decision == "satisfied"


def _side(
    name: str, source: str, verdicts: dict[str, VerdictFacts], decided: list[DecidedAttempt]
) -> SideFigures:
    side = SideFigures(name, source)
    costs: list[float] = []
    latencies: list[float] = []
    for d in decided:
        v = verdicts.get(d.attempt_id)
        if v is None:
            continue
        side.judged += 1
        side.agree += (v.status == "accepted") == analyst_endorsed(d)
        side.errors += v.status == "validator_error"
        if v.cost_usd is not None:
            costs.append(v.cost_usd)
        if v.latency_s is not None:
            latencies.append(v.latency_s)
    side.agreement = agreement(side.agree, side.judged)
    side.interval = wilson_interval(side.agree, side.judged) if side.judged else None
    side.cost_usd_per_verdict = sum(costs) / len(costs) if costs else None
    side.latency_s_per_verdict = sum(latencies) / len(latencies) if latencies else None
    return side


async def compare_validators(
    store: Store, settings: Settings, current: str, candidate: str, base: TemplateSet = INSTALLED
) -> Comparison:
    decided = await decided_attempts(store)
    ids = [d.attempt_id for d in decided]
    source_a, a = await resolve_side(store, settings, current, ids, base)
    source_b, b = await resolve_side(store, settings, candidate, ids, base)
    out = Comparison(
        _side(current, source_a, a, decided), _side(candidate, source_b, b, decided), 0, mcnemar(0, 0)
    )
    b_count = c_count = 0
    for d in decided:
        va, vb = a.get(d.attempt_id), b.get(d.attempt_id)
        if va is None or vb is None:
            continue
        out.paired += 1
        endorsed = analyst_endorsed(d)
        right_a, right_b = (va.status == "accepted") == endorsed, (vb.status == "accepted") == endorsed
        b_count += right_a and not right_b
        c_count += right_b and not right_a
        if va.status == vb.status:
            continue
        analyst = d.decision if d.decision != "overridden" else f"overridden:{d.override_status}"
        case = DifferingCase(
            d.task_id, d.attempt_index, d.title, analyst, va.status, vb.status,
            va.score, vb.score, list(va.issues), list(vb.issues),
        )  # fmt: skip
        if right_b and not right_a:
            out.candidate_right.append(case)
        elif right_a and not right_b:
            out.current_right.append(case)
        elif not right_a and not right_b:
            out.both_wrong.append(case)
    out.mcnemar = mcnemar(b_count, c_count)
    return out


def _num(x: float | None, digits: int = 3) -> str:
    return "n/a" if x is None else f"{x:.{digits}f}"


def format_comparison(c: Comparison) -> str:
    """The comparison as plain text for a terminal."""
    lines = [f"paired decided attempts: {c.paired}", ""]
    for label, s in (("current", c.current), ("candidate", c.candidate)):
        interval = f"[{_num(s.interval[0])}, {_num(s.interval[1])}]" if s.interval else "n/a"
        lines.append(
            f"{label} {s.name} ({s.source}): agreement {s.agree}/{s.judged} = {_num(s.agreement)} "
            f"95% CI {interval}; errors {s.errors}; cost/verdict ${_num(s.cost_usd_per_verdict, 5)}; "
            f"latency/verdict {_num(s.latency_s_per_verdict)} s"
        )
    m = c.mcnemar
    lines += [
        "",
        f"McNemar: current right only {m.b}, candidate right only {m.c}; "
        f"statistic {_num(m.statistic)}, p = {_num(m.p_value, 4)} ({m.method})",
    ]
    for title, cases in (
        ("candidate right", c.candidate_right),
        ("current right", c.current_right),
        ("both wrong", c.both_wrong),
    ):
        lines += ["", f"{title} ({len(cases)}):"]
        lines += [
            f"  {x.task_id} #{x.attempt_index} {x.title[:60]!r}: analyst {x.analyst}; "
            f"current {x.current_status}, candidate {x.candidate_status}"
            for x in cases
        ]
    return "\n".join(lines)
