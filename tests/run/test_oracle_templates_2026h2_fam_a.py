"""The oracle through the second-half-2026 prompts of this group: Muse Glimmer's published template (vLLM's
example) and the Inkling renderer (chosen by the model id whatever the tokenizer carries): 100% with zero
`format` fallbacks, every gold reply cut out of the template's own rendering, parsed and judged (as
tests/run/test_oracle_templates.py does for the earlier families)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.run.oracle_runs import assert_read_back_whole, oracle_run

ROOT = Path(__file__).resolve().parents[2]
MUSE = json.loads((ROOT / "tests" / "fixtures" / "rendering" / "2026h2" / "muse_glimmer.json").read_text(
    encoding="utf-8"))["meta-models/Muse-Glimmer-30B"]["chat_template"]
INKLING = (ROOT / "chat_templates" / "inkling.jinja").read_text(encoding="utf-8")

# model directory -> (template the tokenizer carries, its EOS, parser the run selects, template the run uses)
EXPECTED: dict[str, tuple[str, str, str, str]] = {
    "meta-models/Muse-Glimmer-30B": (MUSE, "<|eot|>", "muse_glimmer", "tokenizer"),
    "thinkingmachines/Inkling-Small": (INKLING, "<|content_model_end_sampling|>", "inkling", "renderer:inkling"),
}
PARSERS = {parser for _, _, parser, _ in EXPECTED.values()}
# Parsers of this group with no prompt at hand: Muse Spark (no published template; Glimmer's example serves
# Glimmer), K2 Horizon (its template is not public here) and response_template (its format is a checkpoint's).
WITHOUT_TEMPLATE = {"muse", "k2_horizon", "response_template"}


def test_oracle_through_muse_glimmers_template(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _oracle("meta-models/Muse-Glimmer-30B", tmp_path, monkeypatch)


def test_oracle_through_the_inkling_renderer(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _oracle("thinkingmachines/Inkling-Small", tmp_path, monkeypatch)


def _oracle(model: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.helpers import build_tiny_model

    template, eos, parser, source = EXPECTED[model]
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    model_dir = build_tiny_model(tmp_path / model, template, eos_token=eos)
    assert_read_back_whole(oracle_run(model_dir, tmp_path / "run"), parser, source)
