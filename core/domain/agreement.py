"""The statistics a judge is measured by: error rates with intervals and chance-corrected agreement.

Pure arithmetic over counts, no I/O, so the CLI, the desk and the HTML export show the same
numbers from one place, and each figure is tested against a published worked example
(tests/core/test_agreement.py).

The 2x2 of a judge against analysts (the analyst is the ground truth)::

                      analyst satisfied   analyst not satisfied
    validator accepted        a                    b            <- b: false accepts
    validator did not         c                    d            <- c: false rejects

- **false-accept rate** = b / (b + d): of the answers the analyst did not accept, the share the
  validator accepted. **false-reject rate** = c / (a + c): of the answers the analyst accepted,
  the share the validator did not. Each with a Wilson score 95% interval (Wilson 1927; Newcombe
  1998 method 3), which stays inside [0, 1] and is honest at 0 or n successes.
- **prevalence** = (a + c) / n: the share of answers the analyst was satisfied with. When it is
  near 0 or 1 kappa collapses even at high agreement (Feinstein & Cicchetti 1990), which is why
  Gwet's AC1 (Gwet 2008) and the two error rates sit beside it.
- **too few**: below ``MIN_DECISIONS`` decisions, or fewer than ``MIN_PER_RATE`` cases behind
  either rate, the figures are shown but flagged: a Wilson interval on under ten cases is wider
  than the differences anyone would act on.

Between analysts (no ground truth): Cohen's kappa for two, Krippendorff's alpha (nominal,
missing values allowed) for any number.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Hashable, Iterable, Sequence

from pydantic import BaseModel

Z95 = 1.959963984540054  # the standard normal's 97.5th percentile
MIN_DECISIONS = 30
"""Fewer decisions than this and the figures are flagged ``too_few``."""
MIN_PER_RATE = 10
"""Fewer cases than this behind either error rate (its denominator) and the figures are flagged."""


class Rate(BaseModel):
    """A proportion k/n with its Wilson 95% interval; ``value`` and bounds are None when n = 0."""

    value: float | None
    ci_low: float | None
    ci_high: float | None
    n: int
    k: int = 0


def wilson_interval(k: int, n: int, z: float = Z95) -> tuple[float, float]:
    """The Wilson score interval of k successes in n trials (Newcombe 1998, method 3)."""
    if n <= 0 or not 0 <= k <= n:
        raise ValueError(f"need 0 <= k <= n and n > 0, got k={k}, n={n}")
    p = k / n
    z2 = z * z
    denom = 1 + z2 / n
    centre = (p + z2 / (2 * n)) / denom
    half = z / denom * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n))
    return max(0.0, centre - half), min(1.0, centre + half)


def rate(k: int, n: int) -> Rate:
    if n == 0:
        return Rate(value=None, ci_low=None, ci_high=None, n=0, k=0)
    low, high = wilson_interval(k, n)
    return Rate(value=k / n, ci_low=low, ci_high=high, n=n, k=k)


def cohen_kappa_table(table: Sequence[Sequence[int]]) -> float | None:
    """Cohen's kappa of a square table (rows: rater 1, columns: rater 2); None when p_e = 1."""
    n = sum(sum(row) for row in table)
    if n == 0:
        return None
    size = len(table)
    p_o = sum(table[i][i] for i in range(size)) / n
    rows = [sum(table[i]) for i in range(size)]
    cols = [sum(table[i][j] for i in range(size)) for j in range(size)]
    p_e = sum(r * c for r, c in zip(rows, cols, strict=True)) / (n * n)
    if p_e >= 1.0:
        return None
    return (p_o - p_e) / (1 - p_e)


def gwet_ac1_table(table: Sequence[Sequence[int]]) -> float | None:
    """Gwet's AC1 of a square table: chance agreement from the mean marginals, sum π(1-π)/(q-1)."""
    n = sum(sum(row) for row in table)
    q = len(table)
    if n == 0 or q < 2:
        return None
    p_a = sum(table[i][i] for i in range(q)) / n
    pis = [(sum(table[k]) + sum(table[i][k] for i in range(q))) / (2 * n) for k in range(q)]
    p_e = sum(pi * (1 - pi) for pi in pis) / (q - 1)
    if p_e >= 1.0:
        return None
    return (p_a - p_e) / (1 - p_e)


def pairs_table(pairs: Iterable[tuple[Hashable, Hashable]]) -> tuple[list[Hashable], list[list[int]]]:
    """The square contingency table of paired labels, over every label either rater used."""
    counts = Counter(pairs)
    labels = sorted({x for pair in counts for x in pair}, key=str)
    at = {label: i for i, label in enumerate(labels)}
    table = [[0] * len(labels) for _ in labels]
    for (x, y), n in counts.items():
        table[at[x]][at[y]] += n
    return labels, table


def krippendorff_alpha_nominal(units: Iterable[Sequence[Hashable | None]]) -> float | None:
    """Krippendorff's alpha for nominal values; each unit lists its raters' values, None if missing.

    Units with fewer than two values are not pairable and are left out (Krippendorff 2011,
    "Computing Krippendorff's alpha-reliability", section C). None when every value is the same
    (no disagreement is possible, so none can be expected).
    """
    coincidence: defaultdict[tuple[Hashable, Hashable], float] = defaultdict(float)
    for unit in units:
        values = [v for v in unit if v is not None]
        m = len(values)
        if m < 2:
            continue
        here = Counter(values)
        for c, nc in here.items():
            for k, nk in here.items():
                pairs = nc * (nk - 1) if c == k else nc * nk
                if pairs:
                    coincidence[c, k] += pairs / (m - 1)
    totals: defaultdict[Hashable, float] = defaultdict(float)
    for (c, _k), o in coincidence.items():
        totals[c] += o
    n = sum(totals.values())
    expected = sum(totals[c] * totals[k] for c in totals for k in totals if c != k)
    if n <= 1 or expected == 0:
        return None
    observed = sum(o for (c, k), o in coincidence.items() if c != k)
    return 1 - (n - 1) * observed / expected


class Rates(BaseModel):
    """A judge against analysts over one set of standing decisions (see the module docstring)."""

    false_accept: Rate
    false_reject: Rate
    kappa: float | None
    gwet_ac1: float | None
    prevalence: float | None
    agreement: float | None
    decisions: int
    too_few: bool
    a: int
    b: int
    c: int
    d: int


def judge_rates(a: int, b: int, c: int, d: int) -> Rates:
    """Every figure of the 2x2 (a accepted-satisfied, b accepted-not, c not-satisfied, d neither)."""
    n = a + b + c + d
    table = [[a, b], [c, d]]
    false_accept, false_reject = rate(b, b + d), rate(c, a + c)
    return Rates(
        false_accept=false_accept,
        false_reject=false_reject,
        kappa=cohen_kappa_table(table),
        gwet_ac1=gwet_ac1_table(table),
        prevalence=(a + c) / n if n else None,
        agreement=(a + d) / n if n else None,
        decisions=n,
        too_few=n < MIN_DECISIONS or min(false_accept.n, false_reject.n) < MIN_PER_RATE,
        a=a,
        b=b,
        c=c,
        d=d,
    )


__all__ = [
    "MIN_DECISIONS",
    "MIN_PER_RATE",
    "Rate",
    "Rates",
    "cohen_kappa_table",
    "gwet_ac1_table",
    "judge_rates",
    "krippendorff_alpha_nominal",
    "pairs_table",
    "rate",
    "wilson_interval",
]
