"""Table 6 / Table 7 rows, the paper's rows and names, and the `report` command."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from wtb_local.analysis.reports import (
    format_plain,
    metric_values,
    paper_name,
    paper_row,
    paper_rows,
    print_tables,
    report_rows,
)
from wtb_local.cli import cli

METRIC_PATH = Path(__file__).parents[1] / "fixtures" / "vectors" / "sessions" / "metric.json"


def _metric() -> dict:
    return json.loads(METRIC_PATH.read_text(encoding="utf-8"))


def test_table_values_in_percent() -> None:
    six = metric_values(_metric(), 6)
    assert list(six) == [
        "single",
        "multi",
        "clarify",
        "chat",
        "order1",
        "order2",
        "order3",
        "order4",
        "task_acc",
        "session_acc",
    ]
    assert six["task_acc"] == pytest.approx(53.125)
    assert six["session_acc"] == pytest.approx(4.6875)
    assert six["order1"] == pytest.approx(57.8125)
    seven = metric_values(_metric(), 7)
    assert seven["acc_multi_P"] == pytest.approx(100 * 25 / 44)
    assert seven["ap_overall"] == pytest.approx(100 * 292 / 431)
    assert seven["op_SP"] == pytest.approx(100 * 10 / 45)


def test_paper_tables_are_shipped_whole() -> None:
    assert len(paper_rows(6)) == 57
    assert len(paper_rows(7)) == 58
    assert paper_rows(6)["Qwen3-8B"]["task_acc"] == "48.14"
    assert paper_rows(7)["Qwen3-8B-Thinking"]["group"] == "Open-Source General"
    assert len(paper_rows(8)) == 57 and paper_rows(8)["Qwen3-8B"]["refusal"] == "8.29"
    with pytest.raises(ValueError):
        paper_rows(9)


@pytest.mark.parametrize(
    ("model", "thinking", "expected"),
    [
        ("Qwen/Qwen3-8B", None, "Qwen3-8B"),
        ("Qwen/Qwen3-8B", True, "Qwen3-8B-Thinking"),
        ("Qwen_Qwen3-30B-A3B", True, "Qwen3-30B-A3B-Thinking"),
        ("Qwen3-14B-Thinking", None, "Qwen3-14B-Thinking"),
        ("Qwen/Qwen2.5-7B-Instruct", None, "Qwen2.5-7B-Instruct"),
        ("meta-llama/Llama-3.1-8B-Instruct", None, "Llama-3.3-8B-Instruct"),
        ("meta-llama/Llama-3.2-3B-Instruct", None, "Llama-3.3-3B-Instruct"),
        ("meta-llama/Llama-3.3-70B-Instruct", None, "Llama-3.3-70B-Instruct"),
        ("Salesforce/Llama-xLAM-2-8b-fc-r", None, "xLAM-2-8B"),
        ("Salesforce/xLAM-2-32b-fc-r", None, "xLAM-2-32B"),
        ("Team-ACE/ToolACE-2-8B", None, "ToolACE2-8B"),
        ("watt-ai/watt-tool-8B", None, "Watt-8B"),
        ("MadeAgents/Hammer2.1-7b", None, "Hammer2.1-7B"),
        ("gpt-4o", None, "GPT-4o"),
        ("my-own/tiny-model", None, None),
    ],
)
def test_paper_names(model: str, thinking: bool | None, expected: str | None) -> None:
    assert paper_name(model, thinking) == expected


def test_every_alias_target_is_a_paper_row() -> None:
    from wtb_local.analysis.reports.paper import _ALIASES

    names = set(paper_rows(6)) | set(paper_rows(7))
    assert set(_ALIASES.values()) <= names


def test_report_rows_and_plain_text() -> None:
    rows = report_rows(_metric(), "Salesforce/Llama-xLAM-2-8b-fc-r")
    assert [row.label for row in rows] == ["Salesforce/Llama-xLAM-2-8b-fc-r", "paper: xLAM-2-8B"]
    printed = paper_rows(6)["xLAM-2-8B"]
    text = format_plain(rows, 6)
    assert text.splitlines()[1].split() == [
        "model",
        "single",
        "multi",
        "clarify",
        "chat",
        "order1",
        "order2",
        "order3",
        "order4",
        "task",
        "session",
    ]
    assert text.splitlines()[2].split()[1:] == [
        "47.37",
        "46.72",
        "60.53",
        "72.09",
        "57.81",
        "53.12",
        "53.12",
        "48.44",
        "53.12",
        "4.69",
    ]
    assert text.splitlines()[3].split()[-1] == printed["session_acc"]
    assert paper_row("o4-mini") is not None and 6 not in paper_row("o4-mini").values  # Table 7 only


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_rich_on_a_terminal_plain_otherwise() -> None:
    rows = report_rows(_metric(), "scripted")
    plain = io.StringIO()
    print_tables(rows, stream=plain)
    assert plain.getvalue().startswith("Table 6 (accuracy, %)\nmodel")
    terminal = _Terminal()
    print_tables(rows, stream=terminal, width=200)
    assert "53.12" in terminal.getvalue() and "─" in terminal.getvalue()
    narrow = _Terminal()
    print_tables(rows, stream=narrow, width=60)  # too narrow for every digit: plain text
    assert narrow.getvalue() == plain.getvalue()


def test_report_command_side_by_side(tmp_path: Path) -> None:
    other = _metric()
    other["model_name"] = "Qwen_Qwen3-8B"
    (tmp_path / "run" / "score" / "Qwen_Qwen3-8B").mkdir(parents=True)
    (tmp_path / "run" / "score" / "Qwen_Qwen3-8B" / "Wild-Tool-Bench_metric.json").write_text(
        json.dumps(other)
    )
    done = CliRunner().invoke(cli, ["report", str(METRIC_PATH), str(tmp_path / "run"), "--thinking"])
    assert done.exit_code == 0, done.output
    assert "scripted" in done.output and "Qwen_Qwen3-8B" in done.output
    assert "paper: Qwen3-8B-Thinking" in done.output
    assert "Table 7" in done.output
    only6 = CliRunner().invoke(cli, ["report", str(METRIC_PATH), "--table", "6", "--no-paper"])
    assert only6.exit_code == 0 and "Table 7" not in only6.output and "paper:" not in only6.output


def test_report_bad_input_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "m.json").write_text("{}")
    done = CliRunner().invoke(cli, ["report", str(tmp_path / "m.json")])
    assert done.exit_code == 1 and done.output.strip().count("\n") == 0 and "total_info" in done.output
