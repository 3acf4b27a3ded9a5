"""The paired test `explain` uses to tell a gap from noise, and the seed spread.

Two runs of the same tasks are compared task by task: only the discordant tasks (correct in one run, wrong
in the other) carry information about which run is better. The exact McNemar test asks whether those
discordant tasks split unevenly: under "no real difference" each is equally likely to favour either run,
so the count favouring one run is Binomial(n, 1/2). It is the two-sided sign test on the discordant
pairs; computed exactly with integers (no scipy).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from fractions import Fraction

ALPHA = 0.05
TEST_NAME = "exact McNemar test (two-sided binomial sign test on the discordant tasks), alpha 0.05"


def mcnemar_exact(only_first: int, only_second: int) -> float:
    """Two-sided p-value of the exact McNemar test for `only_first` tasks correct in the first run only and
    `only_second` in the second only: 2 * P(X <= min) for X ~ Binomial(n, 1/2), capped at 1; 1.0 when no
    task is discordant."""
    if only_first < 0 or only_second < 0:
        raise ValueError("discordant counts must be non-negative")
    n = only_first + only_second
    if n == 0:
        return 1.0
    low = min(only_first, only_second)
    tail = Fraction(sum(math.comb(n, i) for i in range(low + 1)), 2**n)
    return float(min(Fraction(1), 2 * tail))


def flip_rate(verdicts: Sequence[Sequence[bool]]) -> float:
    """The share of tasks whose verdict is not the same in every run (`verdicts`: one sequence per run, the
    tasks in one order)."""
    if not verdicts or not verdicts[0]:
        return 0.0
    tasks = len(verdicts[0])
    flipped = sum(1 for i in range(tasks) if len({run[i] for run in verdicts}) > 1)
    return flipped / tasks


def pairwise_flip_rate(verdicts: Sequence[Sequence[bool]]) -> float:
    """The mean, over every pair of runs, of the share of tasks whose verdict differs between the two."""
    pairs = [(a, b) for i, a in enumerate(verdicts) for b in verdicts[i + 1:]]
    if not pairs or not verdicts[0]:
        return 0.0
    tasks = len(verdicts[0])
    return sum(sum(x != y for x, y in zip(a, b, strict=True)) for a, b in pairs) / (len(pairs) * tasks)
