"""How two runs' recorded configurations differ, one line per setting: what `run` prints when a run
directory's hashed configuration does not match (resume.py) and what `merge` prints when shards disagree."""

from __future__ import annotations

import json
from typing import Any


def config_diff(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    """One line per differing setting, nested settings by dotted name: `sampling.seed: 0 -> 3` (sorted)."""
    before, after = _flatten(old), _flatten(new)
    def text(value: Any) -> str:
        return json.dumps(value, ensure_ascii=False)

    return [f"{name}: {text(before.get(name))} -> {text(after.get(name))}"
            for name in sorted(set(before) | set(after)) if before.get(name) != after.get(name)]


def _flatten(config: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    flat: dict[str, Any] = {}
    for key, value in config.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):  # an empty dict adds no entry: {} -> {"k": 1} reads `k: null -> 1`
            flat.update(_flatten(value, name + "."))
        else:
            flat[name] = value
    return flat
