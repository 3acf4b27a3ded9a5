"""The part of a resolved run that decides its results, and its hash.

A run directory records the hashed values in its manifest; resuming into that directory is allowed only
when they are equal, so finished sessions are never mixed with sessions produced under other settings.
Which values are hashed is declared by the options (run/setup/options.py, `Cli.hashed`): operational knobs
(output folder, selection, parallelism, memory) are left out, they change how fast a run goes, not what it
produces.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from wtb_local.run.setup.options import hashed_keys

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
