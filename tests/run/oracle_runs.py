"""The oracle through a model's chat template over the embedded sample, for the tests/run/test_oracle_templates*
files: every gold reply written by the template and read back by the parser chosen for the model."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

SAMPLE_REPLIES = 74  # the sample's gold replies: 37 with calls, 37 text


def oracle_run(model: str | Path, out: Path) -> Any:
    """`run --backend oracle --dataset sample` of `model` (a folder, or an id whose tokenizer is at hand) into `out`."""
    from wtb_local.run import RunOptions, run_job_async

    settings = RunOptions(backend="oracle", model=str(model), dataset="sample", out=str(out), progress="none")
    return asyncio.run(run_job_async(settings))


def assert_read_back_whole(outcome: Any, parser: str, source: str, fallbacks: int = 0) -> None:
    """Every task and session correct, every path optimal, the parser and template source expected, and the
    sample's gold replies written by the template but for `fallbacks` written in the parser's own format."""
    total = outcome.metric["total_info"]
    assert (total["task"]["accuracy"], total["session"]["accuracy"]) == (1.0, 1.0), total
    assert outcome.metric["optimal_info"]["Total"]["accuracy"] == 1.0
    template = outcome.manifest["template"]
    assert (outcome.settings.parser, template and template["source"]) == (parser, source)
    backend = outcome.manifest["backend"]
    assert (backend["template_cuts"], backend["format_fallbacks"]) == (SAMPLE_REPLIES - fallbacks, fallbacks)
