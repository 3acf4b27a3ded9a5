"""`python -m wtb_local parsers list|parse`."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from wtb_local.cli import cli

ROWS = [
    {"raw": '<tool_call>\n{"name": "search", "arguments": {"query": "x"}}\n</tool_call>'},
    {"raw": "<think>hm</think>Just text."},
    {"raw": '<tool_call>\n{"name": "search", "arguments": {"query": "x"}\n</tool_call>'},
    {"raw": '<tool_call>\n{"name": "search", "arguments": {"query": "xx', "finish_reason": "length"},
    {"no_raw": 1},
]


def run(args: list[str]) -> tuple[int, str]:
    result = CliRunner().invoke(cli, args, catch_exceptions=False)
    return result.exit_code, result.output


def write_input(tmp_path: Path) -> Path:
    path = tmp_path / "in.jsonl"
    lines = [json.dumps(r) for r in ROWS]
    lines.insert(3, "{not json")
    path.write_text("\n".join(lines) + "\n\n", encoding="utf-8")
    return path


def test_list_shows_every_parser() -> None:
    code, out = run(["parsers", "list"])
    assert code == 0
    for name in ("hermes", "llama3_json", "pythonic", "xlam", "hammer", "glm45", "kimi_k2"):
        assert name in out


def test_parse_by_model_writes_one_line_per_row(tmp_path: Path) -> None:
    path = write_input(tmp_path)
    out_path = tmp_path / "out.jsonl"
    code, _ = run(["parsers", "parse", str(path), "--model", "Qwen/Qwen3-8B", "--out", str(out_path)])
    assert code == 0
    rows = [json.loads(line) for line in out_path.read_text(encoding="utf-8").splitlines()]
    assert len(rows) == 6 and all(r["parser"] == "hermes" for r in rows)
    assert (
        rows[0]["tool_calls"] == [{"name": "search", "arguments": {"query": "x"}}] and rows[0]["errors"] == []
    )
    assert rows[1]["reasoning"] == "hm" and rows[1]["content"] == "Just text." and rows[1]["tool_calls"] == []
    assert rows[2]["tool_calls"] == [{"name": "search", "arguments": {"query": "x"}}] and rows[2]["errors"]
    assert rows[3]["errors"] == [
        f"{path}:4: not valid JSON (Expecting property name enclosed in double quotes)"
    ]
    assert rows[4]["tool_calls"] == [] and "truncated tool call" in rows[4]["errors"][0]
    assert rows[5]["errors"] == [f"{path}:6: field 'raw' missing or not a string"]


def test_parse_with_parser_to_stdout(tmp_path: Path) -> None:
    path = tmp_path / "in.jsonl"
    path.write_text(json.dumps({"raw": "[search(query='x')]"}) + "\n", encoding="utf-8")
    code, out = run(["parsers", "parse", str(path), "--parser", "pythonic"])
    assert code == 0
    assert json.loads(out) == {
        "parser": "pythonic",
        "reasoning": None,
        "content": None,
        "tool_calls": [{"name": "search", "arguments": {"query": "x"}}],
        "errors": [],
        "calls_in_reasoning": 0,
        "format_deviation": None,
    }


def test_a_row_past_the_int_digits_limit_is_an_error_row(tmp_path: Path) -> None:
    # json.loads refuses an integer of more than 4300 digits with a plain ValueError, not a JSONDecodeError:
    # it is one error row naming file and line as any unreadable row is, never a crash.
    path = tmp_path / "in.jsonl"
    path.write_text('{"raw": "x", "n": ' + "1" * 5000 + "}\n", encoding="utf-8")
    code, out = run(["parsers", "parse", str(path), "--parser", "hermes"])
    assert code == 0
    assert json.loads(out)["errors"] == [
        (f"{path}:1: not valid JSON (Exceeds the limit (4300 digits) for integer string conversion: "
        "value has 5000 digits; use sys.set_int_max_str_digits() to increase the limit)")
    ]


def test_thinking_option(tmp_path: Path) -> None:
    path = tmp_path / "in.jsonl"
    path.write_text(json.dumps({"raw": "still thinking"}) + "\n", encoding="utf-8")
    code, out = run(["parsers", "parse", str(path), "--parser", "hermes", "--thinking", "on"])
    assert code == 0 and json.loads(out)["reasoning"] == "still thinking"


def test_usage_errors(tmp_path: Path) -> None:
    path = tmp_path / "in.jsonl"
    path.write_text("", encoding="utf-8")
    result = CliRunner().invoke(cli, ["parsers", "parse", str(path)])
    assert result.exit_code == 2 and "exactly one of --parser" in result.output
    result = CliRunner().invoke(cli, ["parsers", "parse", str(path), "--model", "acme/unknown"])
    assert result.exit_code == 2 and "--parser" in result.output
    result = CliRunner().invoke(cli, ["parsers", "parse", str(path), "--parser", "nope"])
    assert result.exit_code == 2 and "known parsers" in result.output


def test_list_shows_each_parsers_vllm_name_and_the_aliases() -> None:
    from wtb_local.formats.parsers import parser_aliases, parser_class, parser_names

    code, out = run(["parsers", "list"])
    assert code == 0
    lines = out.splitlines()
    for name in parser_names():
        row = next(line for line in lines if line.startswith(f"│ {name} "))
        cells = [cell.strip() for cell in row.strip("│").split("│")]
        assert cells[0] == name and cells[1] == (", ".join(parser_class(name).vllm_names) or "-"), row
    assert f"{len(parser_names())} parsers; --parser also takes vLLM's names: " in out
    assert all(f"{alias} ({name})" in out for alias, name in parser_aliases().items())
    assert "openai (gpt_oss)" in out


def test_list_shows_what_serves_each_engine_name() -> None:
    """formats/parsers/_engine_names.py: every vLLM 0.34 and SGLang 0.5.23 name with the parser serving it."""
    code, out = run(["parsers", "list"])
    assert code == 0
    vllm = next(line for line in out.splitlines() if line.startswith("vLLM 0.34.0 tool parsers"))
    sglang = next(line for line in out.splitlines() if line.startswith("SGLang 0.5.23 tool parsers"))
    assert "(62 names, " in vllm and "(44 names, " in sglang
    for shown in ("qwen3_json -> hermes", "granite_toolcall_parser -> granite42", "zaya_xml -> zaya", "hy_v4,"):
        assert shown in vllm, shown
    for shown in ("nanbeige -> qwen3_coder", "interns1 -> internlm", "hunyuan -> hy_v3", "gpt-oss -> gpt_oss"):
        assert shown in sglang, shown
