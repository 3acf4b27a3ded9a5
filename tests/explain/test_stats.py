"""The exact McNemar test and the seed flip rates (wtb_local/analysis/explain/stats.py), against values worked by
hand from the binomial distribution."""

from __future__ import annotations

import pytest

from wtb_local.analysis.explain.stats import flip_rate, mcnemar_exact, pairwise_flip_rate


def test_mcnemar_exact_is_the_two_sided_binomial_tail() -> None:
    assert mcnemar_exact(0, 0) == 1.0  # no discordant task: no evidence
    assert mcnemar_exact(1, 1) == 1.0  # capped at 1
    assert mcnemar_exact(0, 8) == 2 / 2**8 == 0.0078125
    assert mcnemar_exact(8, 0) == mcnemar_exact(0, 8)  # two-sided
    # n = 12, min 3: 2 * (C(12,0) + C(12,1) + C(12,2) + C(12,3)) / 2^12 = 2 * 299 / 4096
    assert mcnemar_exact(3, 9) == 598 / 4096 == 0.14599609375
    assert mcnemar_exact(27, 0) == 2 / 2**27
    # n = 5, min 2: 2 * (1 + 5 + 10) / 32 = 1 -> capped
    assert mcnemar_exact(2, 3) == 1.0
    with pytest.raises(ValueError):
        mcnemar_exact(-1, 2)


def test_flip_rates_over_seeds() -> None:
    runs = [[True, True, False, False], [True, False, False, False], [True, True, True, False]]
    assert flip_rate(runs) == 2 / 4  # tasks 2 and 3 are not the same in every run
    # pairs: (0,1) 1 of 4, (0,2) 1 of 4, (1,2) 2 of 4 -> 4 / 12
    assert pairwise_flip_rate(runs) == 4 / 12
    assert flip_rate([[True], [True]]) == 0.0 and pairwise_flip_rate([[True]]) == 0.0
