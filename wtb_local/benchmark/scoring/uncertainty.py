"""The uncertainty of every score the reports show (docs/reports.md, "Uncertainty").

Tasks of one session are not independent draws: they share a user, a tool set and a conversation, and a
model that loses the thread fails several of them together. So a task-level figure (an accuracy or an AP
rate, a ratio of two sums over the scored sessions) gets a cluster-robust standard error with sessions as
the clusters: for p = sum(y_g) / sum(m_g) over the G sessions holding the bucket,

    se(p) = sqrt(G / (G - 1) * sum_g (y_g - p * m_g) ** 2) / sum_g m_g

(the linearised ratio estimator with the small-sample factor G/(G-1); with one task per session it is the
binomial standard error times sqrt(n/(n-1))). Its 95% interval is Wilson's score interval at the effective
sample size n / deff (deff: the clustered variance over the binomial one, never below 1), so a bucket at
0% or 100% still gets an interval of the width its few tasks allow. Session accuracy counts independent
sessions: the binomial standard error and Wilson's interval. AP (a rate of steps over gold nodes, which is
not a share of trials) gets p +- 1.96 se.

Repeats of one run (same tasks, other seeds) are combined by averaging each task's outcome over the seeds
before the same estimator: a session's total then varies by both which sessions were drawn and the seeds,
so the standard error holds run-to-run and sampling uncertainty together.

`paired_difference` compares two runs of the same tasks: the per-task difference of their outcomes, with
the same clustered standard error (sessions as clusters), so a gap is called larger than its noise only
when its 95% interval excludes 0.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from wtb_local.benchmark.evaluator.metrics import compute_metrics, session_index

Z95 = 1.959963984540054  # the two-sided 95% normal quantile
CLUSTERED = "cluster-robust (sessions as clusters), Wilson interval at the effective n"
SESSIONS = "binomial standard error, Wilson interval"
RATE = "cluster-robust (sessions as clusters), normal interval"
# (numerator, denominator) of each value a metric dict holds
_PARTS = {"accuracy": ("correct_count", "total_count"), "rate": ("complete_step", "total_step")}


@dataclass(frozen=True)
class Estimate:
    """A share (0..1) with its standard error, its 95% interval, n (tasks, sessions or gold nodes in its
    denominator) and the sessions it was counted over."""

    value: float
    se: float
    low: float
    high: float
    n: float
    sessions: int
    method: str

    def as_percent(self) -> dict[str, float | int | str | None]:
        """The figures in % (n and sessions as counts; None where not defined), as summary.json carries them."""
        n = int(self.n) if float(self.n).is_integer() else round(self.n, 4)

        def percent(value: float) -> float | None:
            return None if math.isnan(value) else round(100 * value, 4)

        return {"se": percent(self.se), "low": percent(self.low), "high": percent(self.high), "n": n,
                "sessions": self.sessions, "method": self.method}


def wilson(successes: float, n: float, z: float = Z95) -> tuple[float, float]:
    """Wilson's score interval for `successes` of `n` (both may be fractional: an effective n)."""
    if n <= 0:
        return (math.nan, math.nan)
    p = successes / n
    centre = p + z * z / (2 * n)
    spread = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    scale = 1 + z * z / n
    return (max(0.0, (centre - spread) / scale), min(1.0, (centre + spread) / scale))


def cluster_ratio(parts: Iterable[tuple[float, float]], method: str = CLUSTERED) -> Estimate:
    """sum(y) / sum(m) over clusters given as (y, m), with its cluster-robust standard error. Clusters
    with m = 0 hold none of the bucket and are left out; under two clusters the error is NaN."""
    held = [(float(y), float(m)) for y, m in parts if m > 0]
    total = sum(m for _, m in held)
    if not held:
        return Estimate(math.nan, math.nan, math.nan, math.nan, 0, 0, method)
    p = sum(y for y, _ in held) / total
    g = len(held)
    if g < 2:
        return Estimate(p, math.nan, math.nan, math.nan, total, g, method)
    se = math.sqrt(g / (g - 1) * sum((y - p * m) ** 2 for y, m in held)) / total
    if method == RATE:
        return Estimate(p, se, max(0.0, p - Z95 * se), p + Z95 * se, total, g, method)
    binomial = p * (1 - p) / total
    deff = max(1.0, se * se / binomial) if binomial > 0 else 1.0
    low, high = wilson(p * total / deff, total / deff)
    return Estimate(p, se, low, high, total, g, method)


def binomial(successes: float, n: float) -> Estimate:
    """A share of independent trials: the binomial standard error and Wilson's interval."""
    if n <= 0:
        return Estimate(math.nan, math.nan, math.nan, math.nan, 0, 0, SESSIONS)
    p = successes / n
    low, high = wilson(successes, n)
    return Estimate(p, math.sqrt(p * (1 - p) / n), low, high, n, round(n), SESSIONS)


MetricOf = Callable[[Sequence[dict[str, Any]], Sequence[Any], str], dict[str, Any]]


def metric_uncertainty(score_rows: Sequence[dict[str, Any]], sessions: Sequence[Any],
                       sources: Iterable[tuple[str, ...]],
                       metric_of: MetricOf = compute_metrics) -> dict[tuple[str, ...], Estimate]:
    """The estimate of each metric value named by `sources` ((section, bucket, value) as the report
    columns name them) for scored rows: each session's counts are its own metric dict (`metric_of`, the
    checker's metric function, so the buckets are exactly the metric file's), the clusters of the estimator."""
    return estimates([per_session_metrics(score_rows, sessions, metric_of)], sources)


def per_session_metrics(score_rows: Sequence[dict[str, Any]], sessions: Sequence[Any],
                        metric_of: MetricOf = compute_metrics) -> dict[int, dict[str, Any]]:
    """Each scored session's own metric dict, by session index."""
    return {session_index(row["id"]): metric_of([row], sessions, "") for row in score_rows}


def estimates(runs: Sequence[dict[int, dict[str, Any]]],
              sources: Iterable[tuple[str, ...]]) -> dict[tuple[str, ...], Estimate]:
    """Estimates over one run's per-session metrics, or over repeats of it (the same sessions): each
    session's counts averaged over the repeats, then clustered by session (run-to-run and sampling
    uncertainty together)."""
    shared = set(runs[0]) if runs else set()
    for run in runs[1:]:
        shared &= set(run)
    found = {}
    for source in sources:
        section, bucket, value = source
        numerator, denominator = _PARTS[value]
        parts = []
        for index in sorted(shared):
            entries = [run[index].get(section, {}).get(bucket, {}) for run in runs]
            parts.append((sum(float(e.get(numerator, 0)) for e in entries) / len(runs),
                          sum(float(e.get(denominator, 0)) for e in entries) / len(runs)))
        if (section, bucket) == ("total_info", "session"):
            found[source] = binomial(sum(y for y, _ in parts), sum(m for _, m in parts))
        else:
            found[source] = cluster_ratio(parts, RATE if value == "rate" else CLUSTERED)
    return found


def paired_difference(pairs: Iterable[tuple[Any, float, float]]) -> Estimate:
    """The mean of first - second over tasks given as (session, first outcome, second outcome), with its
    cluster-robust standard error (sessions as clusters) and the normal 95% interval; n is the tasks."""
    by_session: dict[Any, list[float]] = {}
    for session, first, second in pairs:
        by_session.setdefault(session, [0.0, 0.0])
        by_session[session][0] += float(first) - float(second)
        by_session[session][1] += 1
    estimate = cluster_ratio(((d, m) for d, m in by_session.values()), RATE)
    if math.isnan(estimate.se):
        return estimate
    return Estimate(estimate.value, estimate.se, estimate.value - Z95 * estimate.se,
                    estimate.value + Z95 * estimate.se, estimate.n, estimate.sessions,
                    "paired, cluster-robust (sessions as clusters), normal interval")


def beyond_noise(difference: Estimate) -> bool:
    """Whether a paired difference's 95% interval excludes 0."""
    return not math.isnan(difference.se) and (difference.low > 0 or difference.high < 0)


__all__ = [
    "CLUSTERED",
    "RATE",
    "SESSIONS",
    "Z95",
    "Estimate",
    "MetricOf",
    "beyond_noise",
    "binomial",
    "cluster_ratio",
    "estimates",
    "metric_uncertainty",
    "paired_difference",
    "per_session_metrics",
    "wilson",
]
