"""The live processes as /proc lists them, for the signal tests and scripts/ctrl_c_vllm.py: who is whose child,
and which process group each is in."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Proc:
    pid: int
    state: str  # "Z": a zombie, already dead
    ppid: int
    pgid: int


def processes() -> Iterator[Proc]:
    """Every process /proc shows now (one that ends while it is read is left out)."""
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()  # after the command name, which may hold spaces
        except OSError:
            continue
        yield Proc(int(stat.parent.name), fields[0], int(fields[1]), int(fields[2]))


def children(pid: int) -> list[int]:
    return [proc.pid for proc in processes() if proc.ppid == pid]


def group_members(pgid: int) -> list[int]:
    """The live (not zombie) processes of process group `pgid`."""
    return [proc.pid for proc in processes() if proc.pgid == pgid and proc.state != "Z"]


def child_groups(pid: int) -> set[int]:
    """The process groups of `pid`'s children."""
    return {proc.pgid for proc in processes() if proc.ppid == pid}
