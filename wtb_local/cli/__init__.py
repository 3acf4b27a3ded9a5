"""Command line: `python -m wtb_local [COMMAND] ...`.

Subcommands live in sibling modules and are imported only when invoked, so `--help` and `score` start
fast and never import torch or vllm. `python -m wtb_local --model M ...` (options first, no command) is
the main job and means `python -m wtb_local run --model M ...`.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import signal
import sys

import click

# name -> (module, attribute, one-line help shown by --help without importing the module)
_COMMANDS: dict[str, tuple[str, str, str]] = {
    "run": ("wtb_local.cli.run", "run", "Run a model on WildToolBench, score it, print its table row (the main job)."),
    "score": ("wtb_local.cli.score", "score",
              "Score a run directory or result file with the benchmark's evaluator."),
    "data": ("wtb_local.cli.data", "data", "Fetch, verify and describe the dataset."),
    "render": ("wtb_local.cli.render", "render", "Print the exact prompt a model is sent for one step."),
    "parsers": ("wtb_local.cli.parsers", "parsers", "List tool-call parsers; parse raw completions."),
    "merge": ("wtb_local.cli.merge", "merge", "Merge the shards of a sharded run (run --shard) and score it."),
    "rescore": ("wtb_local.cli.rescore", "rescore", "Re-score a finished run with the other argument checker (lenient|strict)."),
    "report": ("wtb_local.cli.report", "report", "Print the Table 6 row(s) of scored runs next to the paper."),
    "export": ("wtb_local.cli.export", "export",
               "Export finished runs: Inspect logs, MLflow runs, the benchmark's leaderboard row."),
    "explain": ("wtb_local.cli.explain", "explain",
                "Why the scores of runs differ: factors, flipped tasks, the gap one factor at a time; --plan."),
    "doctor": ("wtb_local.cli.doctor", "doctor", "Check this machine (and a model) before a run: ok/warning/error."),
    "plan": ("wtb_local.cli.plan", "plan", "Check a roster of runs offline (parser, template, memory); --submit it to Slurm."),
    "roster-run": ("wtb_local.cli.plan", "roster_run", "Run one roster entry (a Slurm array task of plan --submit)."),
    "roster-report": ("wtb_local.cli.plan", "roster_report", "The paper's Table 6/7 with a roster's runs, and its reproduction summary."),
}


class _LazyGroup(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(name for name, spec in _COMMANDS.items() if _available(spec))

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        spec = _COMMANDS.get(cmd_name)
        if spec is None or not _available(spec):
            return None
        command = getattr(importlib.import_module(spec[0]), spec[1])
        if not isinstance(command, click.Command):  # a bug of ours in _COMMANDS, said in one line
            raise TypeError(f"{spec[0]}.{spec[1]} is not a click command")
        return command

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = [(name, _COMMANDS[name][2]) for name in self.list_commands(ctx)]
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)


def _available(spec: tuple[str, str, str]) -> bool:
    return importlib.util.find_spec(spec[0]) is not None


@click.group(
    cls=_LazyGroup,
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 110},
    epilog="Main job: python -m wtb_local --model Qwen/Qwen3-8B  (same as `run --model ...`).",
)
@click.version_option(package_name="wtb-local")
def cli() -> None:
    """wtb_local: evaluate open-weight LLMs on WildToolBench, locally, with the benchmark's own verdicts."""


def main(argv: list[str] | None = None) -> None:
    args = list(sys.argv[1:] if argv is None else argv)
    # Options without a command mean the main job.
    if args and args[0].startswith("-") and args[0] not in ("-h", "--help", "--version"):
        args.insert(0, "run")
    elif not args and os.environ.get("WTB_MODEL"):
        args = ["run"]  # `WTB_MODEL=M python -m wtb_local`: the main job, driven by the WTB_* twins
    if argv is not None or not args or args[0] != "run":
        cli.main(args=args, prog_name="python -m wtb_local", auto_envvar_prefix="WTB")
        return
    # The program `run` (not a caller's main(argv)): a signal after the run's record closed, up to the
    # process's last moment, ends it with exit 0 and one line (docs/reliability.md, "Signals").
    from wtb_local.run.loop import stopping  # deferred: start-up (--help)

    for sig in stopping.STOP_SIGNALS:
        signal.signal(sig, stopping.after_run)
    try:
        cli.main(args=args, prog_name="python -m wtb_local", auto_envvar_prefix="WTB")
    except SystemExit as exc:
        stopping.end_process(exc.code)
    stopping.end_process(0)
