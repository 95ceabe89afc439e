"""Every statistic of core.domain.agreement against a published worked example."""

from __future__ import annotations

import pytest

from core.domain.agreement import (
    cohen_kappa_table,
    gwet_ac1_table,
    judge_rates,
    krippendorff_alpha_nominal,
    pairs_table,
    wilson_interval,
)


@pytest.mark.parametrize(
    ("k", "n", "low", "high"),
    [
        # Newcombe (1998), "Two-sided confidence intervals for the single proportion", Stat Med
        # 17:857-872, Table I, method 3 (score interval without continuity correction).
        (81, 263, 0.2553, 0.3662),
        (15, 148, 0.0624, 0.1605),
        (0, 20, 0.0000, 0.1611),
        (1, 29, 0.0061, 0.1718),
    ],
)
def test_wilson_matches_newcombe_table(k: int, n: int, low: float, high: float) -> None:
    lo, hi = wilson_interval(k, n)
    assert lo == pytest.approx(low, abs=5e-5)
    assert hi == pytest.approx(high, abs=5e-5)


def test_wilson_refuses_impossible_counts() -> None:
    with pytest.raises(ValueError):
        wilson_interval(3, 2)
    with pytest.raises(ValueError):
        wilson_interval(0, 0)


def test_cohen_kappa_worked_examples() -> None:
    # Cohen's kappa article's worked example: p_o = 0.7, p_e = 0.5, kappa = 0.4; and its two
    # "same agreement, different kappa" tables (0.1304 and 0.2593).
    assert cohen_kappa_table([[20, 5], [10, 15]]) == pytest.approx(0.4)
    assert cohen_kappa_table([[45, 15], [25, 15]]) == pytest.approx(0.1304, abs=5e-5)
    assert cohen_kappa_table([[25, 35], [5, 35]]) == pytest.approx(0.2593, abs=5e-5)
    assert cohen_kappa_table([[5, 0], [0, 0]]) is None  # chance agreement total: undefined
    assert cohen_kappa_table([[0, 0], [0, 0]]) is None


def test_gwet_ac1_survives_the_prevalence_paradox() -> None:
    # Gwet (2008), Br J Math Stat Psychol 61:29-48: 125 subjects, 118 rated + by both, 5 and 2
    # split, none rated - by both. p_a = 0.944; kappa is slightly negative (-0.0234) while AC1 is
    # 0.9408: pi_+ = (123 + 120) / 250 = 0.972, p_e = 2 * 0.972 * 0.028 = 0.054432.
    table = [[118, 5], [2, 0]]
    assert cohen_kappa_table(table) == pytest.approx(-0.0234, abs=5e-5)
    assert gwet_ac1_table(table) == pytest.approx((0.944 - 0.054432) / (1 - 0.054432))
    assert gwet_ac1_table(table) == pytest.approx(0.9408, abs=5e-5)


def test_krippendorff_alpha_published_examples() -> None:
    # Krippendorff (2011), "Computing Krippendorff's Alpha-Reliability": two observers, binary
    # data, ten units: alpha = 0.095.
    a = [0, 1, 0, 0, 0, 0, 0, 0, 1, 0]
    b = [1, 1, 1, 0, 0, 1, 0, 0, 0, 0]
    assert krippendorff_alpha_nominal(zip(a, b, strict=True)) == pytest.approx(0.095, abs=5e-4)
    # Same paper: four observers, twelve units, missing values, nominal: alpha = 0.743.
    x = None
    observers = [
        [1, 2, 3, 3, 2, 1, 4, 1, 2, x, x, x],
        [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, x, 3],
        [x, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, x],
        [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, x],
    ]
    assert krippendorff_alpha_nominal(zip(*observers, strict=True)) == pytest.approx(0.743, abs=5e-4)
    assert krippendorff_alpha_nominal([[1, 1], [1, 1]]) is None  # nothing could disagree
    assert krippendorff_alpha_nominal([[1], [2, None]]) is None  # nothing pairable


def test_pairs_table_and_two_rater_alpha_near_kappa() -> None:
    labels, table = pairs_table([("s", "s"), ("s", "r"), ("r", "r"), ("a", "a")])
    assert labels == ["a", "r", "s"]
    assert table == [[1, 0, 0], [0, 1, 0], [0, 1, 1]]


def test_judge_rates_by_hand() -> None:
    # a = 40 accepted & satisfied, b = 6 accepted & not, c = 4 not accepted & satisfied, d = 10.
    r = judge_rates(40, 6, 4, 10)
    assert r.decisions == 60
    assert r.false_accept.value == pytest.approx(6 / 16)
    assert r.false_accept.n == 16
    assert r.false_reject.value == pytest.approx(4 / 44)
    assert r.false_reject.n == 44
    assert (r.false_accept.ci_low, r.false_accept.ci_high) == pytest.approx(wilson_interval(6, 16))
    assert r.prevalence == pytest.approx(44 / 60)
    assert r.agreement == pytest.approx(50 / 60)
    assert r.too_few is False
    few = judge_rates(10, 1, 1, 3)  # 15 decisions, 4 cases behind the false-accept rate
    assert few.too_few is True
    empty = judge_rates(0, 0, 0, 0)
    assert empty.false_accept.value is None and empty.kappa is None and empty.too_few is True
