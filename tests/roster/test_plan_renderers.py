"""`plan` decides the template of a family rendered by a renderer as a run does: the renderer, whose text
then decides the parser and the thinking switch (no tokenizer needed; the renderers read `thinking` and
`enable_thinking` alike, and wtb_local sets the latter)."""

from __future__ import annotations

from pathlib import Path

from wtb_local.analysis.roster.file import Entry, ResourceClass, Roster
from wtb_local.analysis.roster.plan import plan_entry


def _plan(model: str, **fields: object) -> object:
    roster = Roster(path=Path("r.toml"), resources={"one": ResourceClass(name="one", gpus_per_node=8, nodes=1,
                                                                          gpu="H200", gpu_memory_gib=139.0)},
                    entries=[])
    return plan_entry(Entry(row="DeepSeek-V3.1", model=model, resources="one", index=0, params_b=671.0,
                            protocol="release", **fields), roster)


def test_a_renderer_family_plans_with_its_renderer(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    for model, renderer, parser, switch in [
            ("deepseek-ai/DeepSeek-V3.2", "deepseek_v32", "deepseek_v32", "enable_thinking=true"),
            ("deepseek-ai/DeepSeek-V4-Flash", "deepseek_v4", "deepseek_v4", "enable_thinking=true"),
            ("moonshotai/Kimi-K3", "kimi_k3", "kimi_k3", "enable_thinking=true")]:
        plan = _plan(model, thinking=True)
        assert (plan.template, plan.parser, plan.thinking) == (f"renderer:{renderer}", parser, switch), model
    given = _plan("deepseek-ai/DeepSeek-V3.2", chat_template="deepseek_v31")
    assert given.template == "override:deepseek_v31"  # a template the entry names wins, as --chat-template does
