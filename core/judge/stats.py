"""What comparing two judges needs beyond ``core.domain.agreement`` (whose Wilson interval the
comparison uses, so calibration and compare-validators give the same interval for the same counts).

Checked in ``tests/core/test_judge_stats.py`` against a worked example from the literature
(Agresti's textbook 2×2 for McNemar).

- ``agreement``: share of cases where the judge's binary verdict matches the analyst's.
- ``mcnemar``: McNemar's test on paired binary outcomes. Only the discordant pairs count:
  ``b`` = cases the first judge got right and the second wrong, ``c`` = the reverse. The statistic
  is the continuity-corrected chi-square ``(|b − c| − 1)² / (b + c)`` (Edwards 1948); the p-value
  is the exact two-sided binomial one (``b + c`` < 25, where the chi-square approximation is
  poor) or the chi-square one with one degree of freedom.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

__all__ = ["EXACT_BELOW", "McNemar", "agreement", "mcnemar"]

EXACT_BELOW = 25  # discordant pairs under which the exact binomial p-value is used


def agreement(agree: int, n: int) -> float | None:
    return agree / n if n else None


@dataclass(frozen=True, slots=True)
class McNemar:
    b: int  # first right, second wrong
    c: int  # first wrong, second right
    statistic: float | None  # continuity-corrected chi-square; None without discordant pairs
    p_value: float
    method: str  # "exact-binomial" | "chi-square-cc" | "none"


def _binomial_two_sided(k: int, n: int) -> float:
    """2 · P(X ≤ min(k, n − k)) for X ~ Binomial(n, 1/2), capped at 1."""
    low = min(k, n - k)
    tail = sum(math.comb(n, i) for i in range(low + 1)) / float(2**n)
    return min(1.0, 2 * tail)


def mcnemar(b: int, c: int) -> McNemar:
    if b < 0 or c < 0:
        raise ValueError("discordant counts cannot be negative")
    n = b + c
    if n == 0:
        return McNemar(b, c, None, 1.0, "none")
    statistic = (max(abs(b - c) - 1, 0) ** 2) / n
    if n < EXACT_BELOW:
        return McNemar(b, c, statistic, _binomial_two_sided(b, n), "exact-binomial")
    # Chi-square with one degree of freedom: P(X > s) = erfc(sqrt(s / 2)).
    return McNemar(b, c, statistic, math.erfc(math.sqrt(statistic / 2)), "chi-square-cc")
