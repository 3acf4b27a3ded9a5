"""What a newcomer met in `report` and the demo (docs/reports.md, docs/outputs-and-reports.md): the subtype
plot draws every column of its table, a one-transition column is singular, a re-scoring named beside
its run is one row, and a run that records no thinking mode is compared with the paper row of its model's
template default, with a note saying which and why."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.run.conftest import invoke
from tests.run.test_thinking_mode import DEFAULT_MODE
from wtb_local.analysis.reports.sections import transition_section
from wtb_local.analysis.reports.thinking_labels import template_default


def _cli(*args: str) -> str:
    from wtb_local.cli import cli

    done = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    assert done.exit_code == 0, done.output
    return done.output


@pytest.fixture(scope="module")
def oracle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("fixes") / "oracle"
    done = invoke(["--model", "Qwen/Qwen3-8B", "--backend", "oracle", "--dataset", "sample", "--out", str(out),
                   "--progress", "none"])
    assert done.exit_code == 0, done.output
    _cli("rescore", str(out), "--checker", "lenient")
    return out


def _table6_labels(output: str) -> list[str]:
    lines = output.splitlines()
    start = lines.index("Table 6 (accuracy, %)") + 2
    labels = []
    for line in lines[start:]:
        if line.startswith("  "):  # a row's ± se, 95% CI and n lines
            continue
        cells = line.split()
        if len(cells) < 11 or not all(c == "-" or c.lstrip("+-").replace(".", "", 1).isdigit() for c in cells[-10:]):
            break
        labels.append(" ".join(cells[:-10]))
    return labels


def test_the_subtype_plot_has_every_column_of_its_table(oracle: Path, monkeypatch: pytest.MonkeyPatch,
                                                        tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    from wtb_local.analysis.reports import plots
    from wtb_local.analysis.reports.runs import load_runs
    from wtb_local.analysis.reports.sections import build_sections

    drawn: dict[str, list[str]] = {}
    save = plots._save

    def record(plt: object, fig: object, path: Path) -> None:
        drawn[path.name] = [tick.get_text() for tick in fig.axes[0].get_xticklabels()]  # type: ignore[attr-defined]
        save(plt, fig, path)

    monkeypatch.setattr(plots, "_save", record)
    sections = build_sections(load_runs([oracle / "score"]))
    plots.write_plots(sections, tmp_path / "plots")
    subtypes = next(s for s in sections if s.key == "subtypes")
    assert [header for _, header in subtypes.columns] == [
        "first turn", "partial info", "coreference", "long-range", "subsequent"]
    assert drawn["accuracy_by_subtype.png"] == [header for _, header in subtypes.columns]


def test_one_transition_is_singular() -> None:
    assert [header for _, header in transition_section([]).columns] == [
        "0 transitions", "1 transition", "2 transitions", "3 transitions",
        "tasks (0)", "tasks (1)", "tasks (2)", "tasks (3)"]


def test_a_rescoring_named_beside_its_run_is_one_row(oracle: Path) -> None:
    lenient = oracle / "score-lenient"
    expected = ["Qwen_Qwen3-8B", "paper: Qwen3-8B-Thinking", "diff: Qwen_Qwen3-8B",
                "Qwen_Qwen3-8B [release-lenient]", "diff: Qwen_Qwen3-8B [release-lenient]"]
    assert _table6_labels(_cli("report", str(oracle), "--table", "6")) == expected
    assert _table6_labels(_cli("report", str(oracle), str(lenient), "--table", "6")) == expected
    shown = _cli("report", str(lenient), str(oracle), "--table", "6")
    assert _table6_labels(shown) == [expected[3], expected[1], expected[4], expected[0], expected[2]]
    assert ("protocols: Qwen_Qwen3-8B [release-lenient] = release, lenient checker; Qwen_Qwen3-8B = release, "
            "strict checker") in shown.splitlines()


def test_a_run_without_a_thinking_mode_takes_its_templates_default_row(oracle: Path, tmp_path: Path) -> None:
    note = ("note: Qwen_Qwen3-8B: paper row Qwen3-8B-Thinking: the run records no thinking mode (its manifest "
            "says: no prompt rendered: unknown); compared as its model's chat template behaves without a switch: "
            "Qwen3's chat template thinks unless enable_thinking=false (--no-thinking: Qwen3-8B)")
    shown = _cli("report", str(oracle), "--table", "6")
    assert note in shown.splitlines()
    # asked for: the row asked for, no note
    off = tmp_path / "off"
    done = invoke(["--model", "Qwen/Qwen3-8B", "--no-thinking", "--backend", "oracle", "--dataset", "sample",
                   "--limit", "1", "--out", str(off), "--progress", "none"])
    assert done.exit_code == 0, done.output
    assert "paper: Qwen3-8B " in done.output and "paper row" not in done.output
    # `report --no-thinking` counts where the manifest records no mode
    flagged = _cli("report", str(oracle), "--table", "6", "--no-thinking")
    assert "paper: Qwen3-8B" in _table6_labels(flagged) and "paper row" not in flagged


def test_the_template_defaults_agree_with_the_real_templates() -> None:
    """Every real template whose model the table lists renders, without a switch, the mode the table says."""
    listed = {key: template_default(key.split("::", 1)[0]) for key in DEFAULT_MODE}
    listed = {key: value for key, value in listed.items() if value is not None}
    assert sorted(listed) == [
        "ByteDance-Seed/Seed-OSS-36B-Instruct", "Qwen/QwQ-32B", "Qwen/Qwen3-0.6B",
        "deepseek-ai/DeepSeek-R1-0528::vllm", "deepseek-ai/DeepSeek-R1-Distill-Llama-8B",
        "deepseek-ai/DeepSeek-R1-Distill-Qwen-32B", "deepseek-ai/DeepSeek-V3.1", "deepseek-ai/DeepSeek-V3.1::vllm",
        "tencent/Hunyuan-A13B-Instruct::vllm", "zai-org/GLM-4.6"]
    assert {key: mode for key, (mode, _why) in listed.items()} == {key: DEFAULT_MODE[key] for key in listed}
    assert template_default("Qwen/Qwen3-8B") == (True, "Qwen3's chat template thinks unless enable_thinking=false")
    assert template_default("Qwen/Qwen3-4B-Instruct-2507") is None  # the 2507 split has no switch
