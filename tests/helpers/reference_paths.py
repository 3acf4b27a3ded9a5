"""The reference's up-front path enumeration, written from docs/evaluation.md §2's rules taken literally.

Exponential (7 independent calls: 47,293 paths): it exists only as the oracle that tests check the lazy
engine (`wtb_local.benchmark.evaluator.paths`) against, and as the baseline of `scripts/bench_paths.py`. It is itself
checked against the reference's own path lists in the golden vectors (tests/benchmark/test_paths.py)."""

from __future__ import annotations

from collections.abc import Sequence
from itertools import combinations

Step = tuple[int, ...]
Path_ = tuple[Step, ...]


def enumerate_paths(names: Sequence[str], deps: Sequence[Sequence[int]]) -> list[Path_]:
    """Every path, following docs/evaluation.md §2's rules literally, in the reference's enumeration order."""
    n = len(names)
    paths: list[Path_] = []

    def dfs(visited: frozenset[int], path: tuple[Step, ...]) -> None:
        if len(visited) == n:
            paths.append(path)
            return
        ready = [i for i in range(n) if i not in visited and set(deps[i]) <= visited]
        runs: list[list[int]] = []
        for i in ready:
            if runs and names[runs[-1][-1]] == names[i]:
                runs[-1].append(i)
            else:
                runs.append([i])
        restricted: set[Step] = set()
        complete: list[Step] = []
        for run in runs:
            if len(run) > 1:
                for r in range(1, len(run)):
                    restricted.update(combinations(run, r))
                complete.append(tuple(run))
        seen: set[str] = set()
        moves: list[Step] = []
        for r in range(1, len(ready) + 1):
            for comb in combinations(ready, r):
                key = "|".join(names[i] for i in comb)
                if key not in seen:
                    seen.add(key)
                    moves.append(comb)
        for comb in moves:
            if len(comb) > 1:
                prefixes = [comb[: i + 1] for i in range(len(comb))]
                if any(p in restricted for p in prefixes) and not any(p in complete for p in prefixes):
                    continue
            steps: list[Step] = [comb]
            if len(comb) == 1:
                for run in complete:
                    if comb[0] == run[0]:
                        steps = [(i,) for i in run]
                        break
            taken = {i for step in steps for i in step}
            dfs(visited | taken, path + tuple(steps))

    dfs(frozenset(), ())
    return paths
