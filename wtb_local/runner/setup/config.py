"""The part of a resolved run that decides its results, and its hash.

A run directory records the hashed values in its manifest; resuming into that directory is allowed only
when they are equal, so finished sessions are never mixed with sessions produced under other settings.
Which values are hashed is declared by the options (runner/setup/options.py, `Cli.hashed`): operational knobs
(output folder, selection, parallelism, memory) are left out, they change how fast a run goes, not what it
produces.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from wtb_local.runner.setup.options import hashed_keys

# Values that decide what the model sees and how its replies are read and sampled; those added after run
# directories had been written are left out while unset, so those runs' hashes stay the same.
HASHED_FIELDS, _HASHED_WHEN_SET = hashed_keys()


def hashed_config(run: Any) -> dict[str, Any]:
    """The hashed values of a resolved run, as plain JSON values in a fixed order."""
    data = run.model_dump(mode="json")
    return {name: data[name] for name in HASHED_FIELDS
            if name not in _HASHED_WHEN_SET or data[name] is not None}


def config_hash(config: dict[str, Any]) -> str:
    text = json.dumps(config, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


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
