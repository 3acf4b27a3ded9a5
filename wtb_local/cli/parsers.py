"""`parsers` command group: list the tool-call parsers, parse raw completions from a JSONL file."""

from __future__ import annotations

import json
from typing import Any, TextIO

import click

from wtb_local.contract.schema import ParseResult
from wtb_local.formats.parsers import (
    get_parser,
    parse_completion,
    parser_aliases,
    parser_class,
    parser_names,
    select_parser,
)
from wtb_local.formats.parsers.base import ToolParser

_THINKING = {"auto": None, "on": True, "off": False}


@click.group("parsers")
def parsers() -> None:
    """List tool-call parsers; parse raw completions."""


@parsers.command("list")
def list_parsers() -> None:
    """Every registered parser: the vLLM parser it mirrors, its families and model-id patterns."""
    from rich.console import Console  # deferred: start-up (--help)
    from rich.table import Table  # deferred: start-up (--help)

    table = Table("name", "vLLM name", "families", "model-id patterns", "priority")
    for name in parser_names():
        cls = parser_class(name)
        table.add_row(name, ", ".join(cls.vllm_names) or "-", ", ".join(cls.families),
                      " ".join(cls.model_patterns), str(cls.priority))
    Console(width=180).print(table)
    click.echo(f"{len(parser_names())} parsers; --parser also takes vLLM's names: "
               + ", ".join(f"{alias} ({name})" for alias, name in parser_aliases().items()))
    click.echo(_vllm_line())
    for line in _engine_lines():
        click.echo(line)


def _engine_lines() -> list[str]:
    """For each tool-parser name vLLM and SGLang register (the releases formats/parsers/_engine_names.py
    lists), the parser of ours that serves it."""
    from wtb_local.formats.parsers._engine_names import (  # deferred: start-up (--help)
        SGLANG_TOOL_PARSERS,
        SGLANG_VERSION,
        VLLM_TOOL_PARSERS,
        VLLM_VERSION,
        served_by,
    )

    lines = []
    for engine, label, version, names in (("vllm", "vLLM", VLLM_VERSION, list(VLLM_TOOL_PARSERS)),
                                          ("sglang", "SGLang", SGLANG_VERSION, list(SGLANG_TOOL_PARSERS))):
        served = {name: served_by(engine, name) for name in names}
        shown = ", ".join(name if ours == name else f"{name} -> {ours or 'not served'}"
                          for name, ours in served.items())
        count = sum(ours is not None for ours in served.values())
        lines.append(f"{label} {version} tool parsers ({len(names)} names, {count} served here): {shown}")
    return lines


def _vllm_line() -> str:
    """vLLM's registered parser names (each usable as --parser vllm:NAME), marking those we implement."""
    from wtb_local.formats.parsers.vllm_native import (  # deferred: start-up
        installed,
        registered_names,
        version,
    )

    if not installed():
        return "vLLM's registry: vLLM is not installed (--parser vllm:NAME needs it)"
    ours = {name for cls in map(parser_class, parser_names()) for name in (cls.name, *cls.vllm_names)}
    names = registered_names()
    shown = ", ".join(f"{name}{'' if name in ours else ' (vLLM only)'}" for name in names)
    mirrored = sum(name in ours for name in names)
    return (f"vLLM {version()}'s registry ({len(names)} names, {mirrored} mirrored here; each usable as "
            f"--parser vllm:NAME): {shown}")


@parsers.command("parse")
@click.argument("file", type=click.File("r", encoding="utf-8"))
@click.option("--parser", "parser_name", metavar="NAME", help="Parser to use (see `parsers list`).")
@click.option("--model", "model_id", metavar="MODEL_ID", help="Pick the parser for this model id.")
@click.option(
    "--thinking",
    type=click.Choice(sorted(_THINKING)),
    default="auto",
    show_default=True,
    help="Reasoning block handling: on = the prompt pre-filled the opening tag.",
)
@click.option(
    "--out", type=click.File("w", encoding="utf-8"), default="-", help="Output JSONL (default stdout)."
)
def parse_file(
    file: TextIO, parser_name: str | None, model_id: str | None, thinking: str, out: TextIO
) -> None:
    """Parse FILE, JSONL rows with "raw" (optional "finish_reason", "tools"); one JSON line per row."""
    if bool(parser_name) == bool(model_id):
        raise click.UsageError("give exactly one of --parser NAME or --model MODEL_ID")
    try:
        name = parser_name or select_parser(model_id or "")
        options = {} if _THINKING[thinking] is None else {"thinking": _THINKING[thinking]}
        parser = get_parser(name, **options)
    except ValueError as exc:
        raise click.UsageError(str(exc)) from None
    source = getattr(file, "name", "<stdin>")
    try:
        for lineno, line in enumerate(file, start=1):
            if not line.strip():
                continue
            out.write(json.dumps(parse_row(parser, line, f"{source}:{lineno}"), ensure_ascii=False) + "\n")
    except UnicodeDecodeError as exc:  # decoded a block at a time while read: no line number to give
        raise click.ClickException(f"{source}: not UTF-8 text ({exc.reason})") from None


def parse_row(parser: ToolParser, line: str, where: str) -> dict[str, Any]:
    """One output row; a row that cannot be read becomes an error row naming file, line and field."""
    try:
        row = json.loads(line)
    except ValueError as exc:  # JSONDecodeError, or the int-digits limit's plain ValueError (no .msg)
        why = exc.msg if isinstance(exc, json.JSONDecodeError) else str(exc)
        return _error_row(parser, f"{where}: not valid JSON ({why})")
    if not isinstance(row, dict):
        return _error_row(parser, f"{where}: row is not a JSON object")
    raw, finish, tools = row.get("raw"), row.get("finish_reason"), row.get("tools")
    if not isinstance(raw, str):
        return _error_row(parser, f"{where}: field 'raw' missing or not a string")
    if finish is not None and not isinstance(finish, str):
        return _error_row(parser, f"{where}: field 'finish_reason' is not a string")
    if tools is not None and not (isinstance(tools, list) and all(isinstance(t, dict) for t in tools)):
        return _error_row(parser, f"{where}: field 'tools' is not a list of objects")
    return result_row(parser.name, parse_completion(parser, raw, tools=tools, finish_reason=finish))


def result_row(parser_name: str, result: ParseResult) -> dict[str, Any]:
    calls = []
    for call in result.tool_calls:
        try:
            arguments: Any = json.loads(call.arguments)
        except ValueError:
            arguments = None
        if not isinstance(arguments, dict):  # only an object counts as parsed arguments
            arguments = call.arguments
        calls.append({"name": call.name, "arguments": arguments})
    return {
        "parser": parser_name,
        "reasoning": result.reasoning,
        "content": result.content,
        "tool_calls": calls,
        "errors": result.errors,
        "calls_in_reasoning": result.calls_in_reasoning,  # docs/parser-policies.md §1
        # docs/parser-policies.md §3
        "format_deviation": result.format_deviation.model_dump() if result.format_deviation else None,
    }


def _error_row(parser: ToolParser, message: str) -> dict[str, Any]:
    return result_row(parser.name, ParseResult(errors=[message]))


@parsers.command("compare")
@click.argument("run_dir", type=click.Path(exists=True))
@click.option("--parsers", "names", required=True, envvar="WTB_PARSERS", metavar="A,B,...",
              help="Parsers to compare, comma-separated; the first is the baseline the others are compared with.")
@click.option("--dataset", envvar="WTB_DATASET",
              help="Dataset the run used (default: the file its manifest names; the hash is checked).")
@click.option("--format", "output_format", type=click.Choice(("markdown", "json")), default="markdown",
              show_default=True, envvar="WTB_FORMAT", help="Output format.")
@click.option("--keep", type=click.Path(file_okay=False), envvar="WTB_KEEP",
              help="Keep each parser's replayed run under KEEP/<parser> (default: a removed temporary folder).")
def compare(run_dir: str, names: str, dataset: str | None, output_format: str, keep: str | None) -> None:
    """Compare parsers on RUN_DIR's recorded raw completions: calls extracted, parse failures,
    disagreements (with examples) and the task verdicts each parser leads to (replayed)."""
    from wtb_local.analysis.commands.parser_comparison import compare_parsers, to_markdown
    from wtb_local.contract.errors import RunError  # deferred: start-up (--help)
    from wtb_local.run.job import replay_run  # deferred: start-up (--help)

    wanted = [name.strip() for name in names.split(",") if name.strip()]
    try:
        report = compare_parsers(run_dir, wanted, replay=replay_run, dataset=dataset, keep=keep)
    except (RunError, ValueError) as exc:
        raise click.ClickException(str(exc)) from None
    for note in report.get("notes", []):  # e.g. an incomplete last line dropped, as `run` drops it
        click.echo(f"note: {note}", err=True)
    if output_format == "json":
        click.echo(json.dumps(report, indent=2, ensure_ascii=False))
    else:
        click.echo(to_markdown(report), nl=False)


for _command in (compare,):
    for _param in _command.params:
        if isinstance(_param, click.Option):
            _param.show_envvar = True
