"""Small graph helpers over one task's `dependency_list`s (positions in the task's node list)."""

from __future__ import annotations

from collections.abc import Sequence


def find_cycle(deps: Sequence[Sequence[int]]) -> list[int] | None:
    """A dependency cycle as node positions `[a, b, ..., a]` (a depends on b, ...), or None.

    Positions must already be in range."""
    white, grey, black = 0, 1, 2
    color = [white] * len(deps)
    for start in range(len(deps)):
        if color[start] != white:
            continue
        # Iterative DFS: (node, next dependency index); the stack is the current chain.
        stack: list[tuple[int, int]] = [(start, 0)]
        color[start] = grey
        while stack:
            node, i = stack[-1]
            if i < len(deps[node]):
                stack[-1] = (node, i + 1)
                nxt = deps[node][i]
                if color[nxt] == grey:
                    chain = [n for n, _ in stack]
                    return chain[chain.index(nxt) :] + [nxt]
                if color[nxt] == white:
                    color[nxt] = grey
                    stack.append((nxt, 0))
            else:
                color[node] = black
                stack.pop()
    return None


def levels(deps: Sequence[Sequence[int]]) -> list[int]:
    """Longest-chain level of each node (0 for nodes without dependencies). Requires an acyclic graph.

    Nodes of equal level form the as-soon-as-possible schedule's steps; `max(levels) + 1` is the longest
    dependency chain, which equals the task's `min_length` (docs/evaluation.md §2)."""
    memo: list[int | None] = [None] * len(deps)

    def level(start: int) -> int:
        # Iterative post-order so that long chains do not hit the recursion limit.
        stack = [start]
        while stack:
            node = stack[-1]
            if memo[node] is not None:
                stack.pop()
                continue
            pending = [d for d in deps[node] if memo[d] is None]
            if pending:
                stack.extend(pending)
                continue
            depths = [depth for d in deps[node] if (depth := memo[d]) is not None]  # every one known by now
            memo[node] = 1 + max(depths, default=-1)
            stack.pop()
        return memo[start]  # type: ignore[return-value]

    return [level(n) for n in range(len(deps))]


def ancestors(deps: Sequence[Sequence[int]]) -> list[frozenset[int]]:
    """For each node, every node it depends on directly or transitively. Requires an acyclic graph."""
    order = sorted(range(len(deps)), key=levels(deps).__getitem__)
    result: list[frozenset[int]] = [frozenset()] * len(deps)
    for node in order:  # dependencies have lower levels, so they are done first
        acc: set[int] = set()
        for d in deps[node]:
            acc.add(d)
            acc |= result[d]
        result[node] = frozenset(acc)
    return result
