"""Where a sharded run keeps its shards: `<out>/shards/<I>-of-<N>/`, each a run directory of its own, joined
by `merge` (docs/gpus-and-slurm.md, docs/files.md)."""

from __future__ import annotations

import re
from dataclasses import dataclass

SHARDS_DIR = "shards"
_DIR = re.compile(r"(0|[1-9][0-9]*)-of-([1-9][0-9]*)")


@dataclass(frozen=True)
class Shard:
    index: int
    count: int

    @property
    def spec(self) -> str:
        return f"{self.index}/{self.count}"

    @property
    def dir_name(self) -> str:
        return f"{self.index}-of-{self.count}"


def parse_shard_dir(name: str) -> Shard | None:
    """The shard of a `shards/<I>-of-<N>` folder name, None for any other name."""
    match = _DIR.fullmatch(name)
    if match is None or int(match.group(1)) >= int(match.group(2)):
        return None
    return Shard(int(match.group(1)), int(match.group(2)))
