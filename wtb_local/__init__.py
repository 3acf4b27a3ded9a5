"""wtb_local: run open-weight LLMs on WildToolBench locally and score them with the benchmark's evaluator.

The public API is small and imported lazily (no torch, no vllm on import):

- `check_arguments(tools, name, predicted_arguments, gold_arguments) -> str`: the argument checker (docs/evaluation.md §5).
- `load_dataset(path_or_name)`: read and validate a dataset file (`"sample"` for the embedded sample).
- `TaskGraph`: the lazy execution-path engine of one task (docs/evaluation.md §2).
- `Episode`, `session_episodes`: the per-task step loop driven by the runner (docs/evaluation.md §3-4).
- `score_results`: score result rows into score rows and a metric dict (docs/evaluation.md §5-7).
- `get_parser(name)`, `select_parser(model_id)`: native tool-call parsers.
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"

_EXPORTS = {
    "check_arguments": "wtb_local.benchmark.evaluator.checker",
    "load_dataset": "wtb_local.benchmark.dataset",
    "TaskGraph": "wtb_local.benchmark.evaluator.paths",
    "Episode": "wtb_local.benchmark.evaluator.episode",
    "session_episodes": "wtb_local.benchmark.evaluator.episode",
    "score_results": "wtb_local.benchmark.scoring",
    "get_parser": "wtb_local.formats.parsers",
    "select_parser": "wtb_local.formats.parsers",
}

__all__ = [
    "Episode",
    "TaskGraph",
    "check_arguments",
    "get_parser",
    "load_dataset",
    "score_results",
    "select_parser",
    "session_episodes",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'wtb_local' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
