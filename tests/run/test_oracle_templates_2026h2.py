"""The oracle through the GigaChat 3.5 template (tests/fixtures/rendering/2026h2/gigachat35.json): 100% with
every gold reply cut out of the template's own rendering, parsed by `gigachat35` and judged; and the
second-half parsers no template is at hand for (each oracle run writes its replies with the parser's
`format`: tests/run/test_oracle.py)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
VERBATIM = json.loads((ROOT / "tests" / "fixtures" / "rendering" / "2026h2" / "gigachat35.json")
                      .read_text(encoding="utf-8"))
EXPECTED = {"ai-sage/GigaChat3.5-432B-A28B": "gigachat35"}
# no public template of these formats is at hand (docs/parsers-and-templates.md, "Second-half 2026 families")
WITHOUT_TEMPLATE = {"hy_v4", "ling3", "plamo3", "mimo", "dots", "granite42", "zaya", "ripple", "step5", "beam",
                    "trinity", "spark25", "iquest_q1", "internlm", "jamba", "granite_20b_fc", "step3"}
# The parsers these runs cover (tests/run/test_oracle_templates.py counts them among every parser's).
PARSERS = set(EXPECTED.values()) | WITHOUT_TEMPLATE


@pytest.mark.parametrize("model", sorted(EXPECTED))
def test_oracle_through_the_template_scores_100_percent(model: str, tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.helpers import build_tiny_model
    from wtb_local.run import RunOptions, run_job_async

    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    model_dir = build_tiny_model(tmp_path / model, VERBATIM[model]["chat_template"])
    settings = RunOptions(backend="oracle", model=str(model_dir), dataset="sample", out=str(tmp_path / "run"),
                          progress="none")
    outcome = asyncio.run(run_job_async(settings))
    total = outcome.metric["total_info"]
    assert (total["task"]["accuracy"], total["session"]["accuracy"]) == (1.0, 1.0), total
    assert outcome.metric["optimal_info"]["Total"]["accuracy"] == 1.0
    template = outcome.manifest["template"]
    assert (outcome.settings.parser, template and template["source"]) == (EXPECTED[model], "tokenizer")
    backend = outcome.manifest["backend"]
    assert (backend["template_cuts"], backend["format_fallbacks"]) == (74, 0)
