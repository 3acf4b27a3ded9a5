"""Speed of the lazy path engine vs. the reference's up-front enumeration of every path.

Task shape: n independent calls with distinct names, then prepare_to_answer (the worst case for the
reference: 7 calls -> 47,293 paths). Timed per task: build the TaskGraph, min_length, first optimal path,
and the candidates of every step along the first optimal path (what one episode asks for). Baseline
(n = 6, 7 only): a literal enumeration of all paths (docs/evaluation.md §2), then the same answers from the list.

    .venv/bin/python scripts/bench_paths.py [--repeat 3]
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the checkout's tests/ helpers and wtb_local

from tests.helpers.reference_paths import enumerate_paths
from wtb_local.benchmark.evaluator.paths import TaskGraph

Step = tuple[int, ...]


def independent_task(n: int) -> tuple[list[str], list[list[int]]]:
    names = [f"tool_{i}" for i in range(n)] + ["prepare_to_answer"]
    return names, [[] for _ in range(n)] + [list(range(n))]


def lazy(names: list[str], deps: list[list[int]]) -> int:
    graph = TaskGraph(names, deps)
    path = graph.first_optimal_path
    assert len(path) == graph.min_length
    for step in range(len(path)):
        assert graph.candidates(step, {k: path[k] for k in range(step)})
    return graph.min_length


def brute_force(names: list[str], deps: list[list[int]]) -> int:
    paths = enumerate_paths(names, deps)
    min_length = min(len(p) for p in paths)
    first = next(p for p in paths if len(p) == min_length)
    for step in range(len(first)):
        agreeing = [p for p in paths if len(p) > step and all(p[k] == first[k] for k in range(step))]
        assert list(dict.fromkeys(p[step] for p in agreeing))
    return min_length


def best_time(func: Callable[[list[str], list[list[int]]], int], n: int, repeat: int) -> tuple[float, int]:
    best = float("inf")
    result = 0
    for _ in range(repeat):
        names, deps = independent_task(n)
        start = time.perf_counter()
        result = func(names, deps)
        best = min(best, time.perf_counter() - start)
    return best, result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3, help="runs per measurement (best is shown)")
    args = parser.parse_args()
    print(f"{'calls':>5}  {'lazy engine':>12}  {'all paths':>10}  {'enumeration':>12}  {'speed-up':>9}")
    for n in (6, 7, 8, 10, 12):
        lazy_s, min_length = best_time(lazy, n, args.repeat)
        if n <= 7:
            brute_s, brute_min = best_time(brute_force, n, 1)
            assert brute_min == min_length
            count = len(enumerate_paths(*independent_task(n)))
            print(f"{n:>5}  {lazy_s * 1000:>9.2f} ms  {count:>10,}  {brute_s:>10.2f} s  {brute_s / lazy_s:>8.0f}x")
        else:
            print(f"{n:>5}  {lazy_s * 1000:>9.2f} ms  {'-':>10}  {'-':>12}  {'-':>9}")


if __name__ == "__main__":
    main()
