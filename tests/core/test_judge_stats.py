"""The judge comparison's statistics against published worked examples."""

from __future__ import annotations

import pytest

from core.judge.stats import agreement, mcnemar, wilson_interval


@pytest.mark.parametrize(
    ("x", "n", "low", "high"),
    [
        # Newcombe (1998), Statistics in Medicine 17:857-872, Table I, method 3 (Wilson score)
        (81, 263, 0.2553, 0.3662),
        (15, 148, 0.0624, 0.1605),
        (0, 20, 0.0, 0.1611),
        (1, 29, 0.0061, 0.1718),
    ],
)
def test_wilson_interval_matches_newcombe(x: int, n: int, low: float, high: float) -> None:
    interval = wilson_interval(x, n)
    assert interval is not None
    assert interval[0] == pytest.approx(low, abs=5e-5) and interval[1] == pytest.approx(high, abs=5e-5)


def test_wilson_edges() -> None:
    assert wilson_interval(0, 0) is None
    assert wilson_interval(20, 20) == (pytest.approx(0.8389, abs=5e-5), 1.0)
    with pytest.raises(ValueError):
        wilson_interval(3, 2)
    assert agreement(29, 40) == 0.725 and agreement(0, 0) is None


def test_mcnemar_agresti_presidential_approval() -> None:
    # Agresti, Categorical Data Analysis (2002), §10.1.1: 1600 people rated the President twice;
    # 150 approved then disapproved, 86 the reverse. Uncorrected z² = 17.36; corrected 16.82.
    m = mcnemar(150, 86)
    assert m.method == "chi-square-cc"
    assert m.statistic == pytest.approx(63**2 / 236)  # 16.817
    assert m.p_value == pytest.approx(4.1e-5, rel=0.05)


def test_mcnemar_exact_for_few_discordant_pairs() -> None:
    # b = 1, c = 7: p = 2 · (C(8,0) + C(8,1)) / 2^8 = 18 / 256
    m = mcnemar(1, 7)
    assert m.method == "exact-binomial" and m.p_value == pytest.approx(18 / 256)
    assert m.statistic == pytest.approx(25 / 8)
    assert mcnemar(4, 4).p_value == 1.0
    none = mcnemar(0, 0)
    assert none.statistic is None and none.p_value == 1.0 and none.method == "none"
