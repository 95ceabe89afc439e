"""The agreement statistics comparing two judges needs, in one small module.

Kept apart so a fuller calibration statistics module can replace it behind the same three
functions. Each is checked in ``tests/core/test_judge_stats.py`` against worked examples from
the literature (Newcombe 1998 for Wilson intervals; Agresti's textbook 2×2 for McNemar).

- ``agreement``: share of cases where the judge's binary verdict matches the analyst's.
- ``wilson_interval``: the Wilson score interval for a proportion (Wilson 1927), which stays
  inside [0, 1] and behaves at 0 and n, unlike the normal ("Wald") interval.
- ``mcnemar``: McNemar's test on paired binary outcomes. Only the discordant pairs count:
  ``b`` = cases the first judge got right and the second wrong, ``c`` = the reverse. The statistic
  is the continuity-corrected chi-square ``(|b − c| − 1)² / (b + c)`` (Edwards 1948); the p-value
  is the exact two-sided binomial one (``b + c`` < 25, where the chi-square approximation is
  poor) or the chi-square one with one degree of freedom.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

__all__ = ["EXACT_BELOW", "McNemar", "agreement", "mcnemar", "wilson_interval"]

EXACT_BELOW = 25  # discordant pairs under which the exact binomial p-value is used
Z_95 = 1.959963984540054


def agreement(agree: int, n: int) -> float | None:
    return agree / n if n else None


def wilson_interval(successes: int, n: int, z: float = Z_95) -> tuple[float, float] | None:
    """The Wilson score interval of ``successes`` out of ``n`` (95% by default); None when n is 0."""
    if n <= 0:
        return None
    if not 0 <= successes <= n:
        raise ValueError(f"successes {successes} outside 0..{n}")
    p = successes / n
    z2 = z * z
    centre = (p + z2 / (2 * n)) / (1 + z2 / n)
    half = (z / (1 + z2 / n)) * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n))
    return max(0.0, centre - half), min(1.0, centre + half)


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
