"""The oracle through the GigaChat 3.5 template (tests/fixtures/rendering/2026h2/gigachat35.json): 100% with
every gold reply cut out of the template's own rendering, parsed by `gigachat35` and judged; and the
second-half parsers no template is at hand for (each oracle run writes its replies with the parser's
`format`: tests/run/test_oracle.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.run.oracle_runs import assert_read_back_whole, oracle_run

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

    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    model_dir = build_tiny_model(tmp_path / model, VERBATIM[model]["chat_template"])
    assert_read_back_whole(oracle_run(model_dir, tmp_path / "run"), EXPECTED[model], "tokenizer")
