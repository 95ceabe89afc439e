"""The judge comparison's statistics against published worked examples."""

from __future__ import annotations

import pytest

from core.judge.stats import agreement, mcnemar


def test_agreement_share() -> None:
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
