"""The lazy execution-path engine of one task (docs/evaluation.md §2).

The reference materialises every path of its depth-first search up front, which is exponential. Moves
from a search state depend only on the set of visited nodes, so everything here is computed over search
states (visited bitmask, path position) with memoization: the same candidates, in the same order, the
same `min_length` and the same first optimal path, without listing paths.

A *move* is what the reference's search appends at one state: one step, or, for an expanded same-name
run (rule 4), one single-node step per node of the run.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import cached_property
from itertools import combinations
from typing import Any

Step = tuple[int, ...]
Path = tuple[Step, ...]
_NO_CONSTRAINTS: Mapping[int, Sequence[int]] = {}


class Move:
    """One move from a state: the steps it appends and the visited set it leads to."""

    __slots__ = ("after", "steps")

    def __init__(self, steps: tuple[Step, ...], after: int) -> None:
        self.steps = steps
        self.after = after


def _node_name_and_deps(node: Any) -> tuple[str, list[int]]:
    if isinstance(node, Mapping):
        action = node.get("action")
        name = action.get("name") if isinstance(action, Mapping) else None
        deps = node.get("dependency_list", [])
    else:
        name = node.action.name
        deps = node.dependency_list
    if not isinstance(name, str):
        raise TypeError(f"node action name must be a string, got {name!r}")
    return name, list(deps or [])


class TaskGraph:
    """Paths of one task. `names[i]` is node i's action name, `deps[i]` the positions it depends on."""

    def __init__(self, names: Sequence[str], deps: Sequence[Sequence[int]]) -> None:
        if len(names) != len(deps):
            raise ValueError(f"{len(names)} names but {len(deps)} dependency lists")
        self.names: tuple[str, ...] = tuple(names)
        self.n = len(self.names)
        dep_masks = []
        for i, node_deps in enumerate(deps):
            mask = 0
            for d in node_deps:
                if isinstance(d, bool) or not isinstance(d, int) or not 0 <= d < self.n:
                    raise ValueError(f"node {i}: dependency {d!r} is not a node position in 0..{self.n - 1}")
                mask |= 1 << d
            dep_masks.append(mask)
        self._dep_masks: tuple[int, ...] = tuple(dep_masks)
        self._full = (1 << self.n) - 1
        self._topo = self._topological_order()
        self._moves: dict[int, tuple[Move, ...]] = {}
        self._longest: dict[int, int] = {}
        # Candidates once no constraint lies ahead depend on (visited, depth) only: shared by all queries.
        self._free: dict[tuple[int, int], tuple[Step, ...]] = {}

    @classmethod
    def from_nodes(cls, nodes: Sequence[Any]) -> TaskGraph:
        """From gold nodes: `wtb_local.contract.schema.Node` models or release-format dicts."""
        pairs = [_node_name_and_deps(node) for node in nodes]
        return cls([name for name, _ in pairs], [deps for _, deps in pairs])

    def _topological_order(self) -> tuple[int, ...]:
        order: list[int] = []
        done = 0
        remaining = list(range(self.n))
        while remaining:
            ready = [i for i in remaining if self._dep_masks[i] & ~done == 0]
            if not ready:
                raise ValueError(f"dependency cycle among nodes {remaining}")
            for i in ready:
                done |= 1 << i
            order.extend(ready)
            remaining = [i for i in remaining if not done >> i & 1]
        return tuple(order)

    # --- search states ------------------------------------------------------------------------------

    def moves(self, visited: int) -> tuple[Move, ...]:
        """The reference's moves at a state, in its order (rules 1-4 of docs/evaluation.md §2)."""
        cached = self._moves.get(visited)
        if cached is not None:
            return cached
        ready = [
            i for i in range(self.n) if not visited >> i & 1 and self._dep_masks[i] & ~visited == 0
        ]
        # Rule 1: runs of consecutive same-name entries of the ready list.
        run_of: dict[int, Step] = {}
        start = 0
        for end in range(1, len(ready) + 1):
            if end == len(ready) or self.names[ready[end]] != self.names[ready[start]]:
                run = tuple(ready[start:end])
                for i in run:
                    run_of[i] = run
                start = end
        seen_names: set[str] = set()
        result: list[Move] = []
        for size in range(1, len(ready) + 1):
            for comb in combinations(ready, size):
                # Rule 2: one move per name sequence, the first combination wins (before filtering).
                key = "|".join(self.names[i] for i in comb)
                if key in seen_names:
                    continue
                seen_names.add(key)
                run = run_of[comb[0]]
                if size > 1:
                    # Rule 3: the 1-prefix is restricted when the first node sits in a longer run; only
                    # a prefix equal to that whole run (it can only be that run) rescues the move.
                    if len(run) > 1 and comb[: len(run)] != run:
                        continue
                    steps: tuple[Step, ...] = (comb,)
                elif len(run) > 1 and comb[0] == run[0]:
                    # Rule 4: the first node of a run drags the whole run in, one node per step.
                    steps = tuple((i,) for i in run)
                else:
                    steps = (comb,)
                after = visited
                for step in steps:
                    for i in step:
                        after |= 1 << i
                result.append(Move(steps, after))
        moves = tuple(result)
        self._moves[visited] = moves
        return moves

    def longest_remaining(self, visited: int) -> int:
        """Nodes on the longest dependency chain among unvisited nodes: the shortest completion."""
        cached = self._longest.get(visited)
        if cached is not None:
            return cached
        depth = [0] * self.n
        best = 0
        for i in self._topo:
            if visited >> i & 1:
                continue
            d = 1
            mask = self._dep_masks[i] & ~visited
            j = 0
            while mask:
                if mask & 1:
                    d = max(d, depth[j] + 1)
                mask >>= 1
                j += 1
            depth[i] = d
            best = max(best, d)
        self._longest[visited] = best
        return best

    # --- public queries -------------------------------------------------------------------------------

    @cached_property
    def min_length(self) -> int:
        """Length of the shortest path = nodes on the longest dependency chain (docs/evaluation.md §2)."""
        return self.longest_remaining(0)

    @cached_property
    def first_optimal_path(self) -> Path:
        """The first path of length `min_length` in the reference's enumeration order."""
        path = self.shortest_path()
        assert path is not None  # an unconstrained graph always has a path
        return path

    def candidates(self, step: int, accepted: Mapping[int, Sequence[int]] = _NO_CONSTRAINTS) -> list[Step]:
        """Distinct `step`-th steps of the paths whose step k is the node set `accepted[k]` for every k.

        In enumeration order, first occurrence wins; each candidate's nodes ordered by action name
        (stable over node position), as the reference compares and answers them.
        """
        if step < 0:
            return []
        search = _Search(self, accepted)
        return [self._by_name(c) for c in search.collect(0, 0, step)]

    def shortest_path(self, accepted: Mapping[int, Sequence[int]] = _NO_CONSTRAINTS) -> Path | None:
        """The first path, in enumeration order, of the shortest length among the paths agreeing with
        `accepted`; None when no path agrees. Steps list nodes in node-position order."""
        search = _Search(self, accepted)
        target = search.best(0, 0)
        if target is None:
            return None
        path: list[Step] = []
        visited, pos = 0, 0
        while visited != self._full:
            for move in self.moves(visited):
                nxt = pos + len(move.steps)
                if search.fits(move, pos) and search.best(move.after, nxt) == target:
                    path.extend(move.steps)
                    visited, pos = move.after, nxt
                    break
            else:  # unreachable: `best` found a path through this state
                raise AssertionError(f"no move continues a shortest path at state {visited:b}, {pos}")
        return tuple(path)

    def best_length(self, accepted: Mapping[int, Sequence[int]] = _NO_CONSTRAINTS) -> int | None:
        """Length of the shortest path agreeing with `accepted` (None when none agrees)."""
        return _Search(self, accepted).best(0, 0)

    def can_be_optimal(self, accepted: Mapping[int, Sequence[int]] = _NO_CONSTRAINTS) -> bool:
        """Whether some path of length `min_length` agrees with `accepted`."""
        return self.best_length(accepted) == self.min_length

    def _by_name(self, step: Step) -> Step:
        return tuple(sorted(step, key=lambda i: self.names[i]))


class _Search:
    """Memoized queries over search states under one set of step constraints."""

    def __init__(self, graph: TaskGraph, accepted: Mapping[int, Sequence[int]]) -> None:
        self.graph = graph
        self.constraints: dict[int, frozenset[int]] = {int(k): frozenset(v) for k, v in accepted.items()}
        self.last_constrained = max(self.constraints, default=-1)
        self._best: dict[tuple[int, int], int | None] = {}
        self._collect: dict[tuple[int, int, int], tuple[Step, ...]] = {}
        self._free = graph._free

    def fits(self, move: Move, pos: int) -> bool:
        """The move's steps agree with the constraints on the positions they occupy."""
        if pos > self.last_constrained:
            return True
        for offset, step in enumerate(move.steps):
            wanted = self.constraints.get(pos + offset)
            if wanted is not None and wanted != frozenset(step):
                return False
        return True

    def best(self, visited: int, pos: int) -> int | None:
        """Shortest total length of a path through state (visited, pos) agreeing with the constraints."""
        graph = self.graph
        if pos > self.last_constrained:
            return pos + graph.longest_remaining(visited)
        if visited == graph._full:
            return None  # the path ends before a constrained position
        key = (visited, pos)
        if key in self._best:
            return self._best[key]
        result: int | None = None
        for move in graph.moves(visited):
            if not self.fits(move, pos):
                continue
            length = self.best(move.after, pos + len(move.steps))
            if length is not None and (result is None or length < result):
                result = length
        self._best[key] = result
        return result

    def collect(self, visited: int, pos: int, step: int) -> tuple[Step, ...]:
        """Distinct steps at position `step` of agreeing paths through state (visited, pos <= step)."""
        if pos > self.last_constrained:
            return self._collect_free(visited, step - pos)
        key = (visited, pos, step)
        cached = self._collect.get(key)
        if cached is not None:
            return cached
        out: dict[Step, None] = {}
        for move in self.graph.moves(visited):
            if not self.fits(move, pos):
                continue
            nxt = pos + len(move.steps)
            if nxt > step:
                if self.best(move.after, nxt) is not None:
                    out.setdefault(move.steps[step - pos])
            else:
                for candidate in self.collect(move.after, nxt, step):
                    out.setdefault(candidate)
        result = tuple(out)
        self._collect[key] = result
        return result

    def _collect_free(self, visited: int, depth: int) -> tuple[Step, ...]:
        """Without constraints ahead: distinct steps `depth` positions after the state."""
        key = (visited, depth)
        cached = self._free.get(key)
        if cached is not None:
            return cached
        out: dict[Step, None] = {}
        for move in self.graph.moves(visited):
            if depth < len(move.steps):
                out.setdefault(move.steps[depth])
            else:
                for candidate in self._collect_free(move.after, depth - len(move.steps)):
                    out.setdefault(candidate)
        result = tuple(out)
        self._free[key] = result
        return result
