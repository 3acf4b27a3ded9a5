"""Submitting a roster (docs/roster.md §4): entries grouped by resource class, one Slurm array per
single-node class (slurm/wtb_roster.sbatch, one entry per array task), one job per multi-node entry
(slurm/wtb_multinode.sbatch, driven by WTB_* variables and WTB_NODES), then the report job
(slurm/wtb_roster_report.sbatch) with `--dependency=afterany` on all of them.

An entry's `run` options are decided here once (`entry_options`); the array task's command line and
the multi-node job's WTB_* variables are both written from them.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from wtb_local.analysis.roster.file import Entry, Roster
from wtb_local.contract.resources import project_root

SAFE_ROW = re.compile(r"[A-Za-z0-9._-]+")
# Test and debugging overrides (docs/roster.md §5): extra `run` options for every entry, GPUs per node
# for every job, and multi-node entries run as single-node array tasks.
RUN_OPTIONS_VAR = "WTB_ROSTER_RUN_OPTIONS"


class SubmitError(ValueError):
    """The roster cannot be submitted; one line."""


def entry_options(entry: Entry, runs_dir: str | Path) -> list[tuple[str, str | None]]:
    """The entry's `run` options as (option, value) pairs; value None for a flag."""
    options: list[tuple[str, str | None]] = [
        ("--model", entry.model), ("--model-name", entry.row), ("--out", str(Path(runs_dir) / entry.row)),
        ("--protocol", entry.protocol)]
    if entry.thinking is not None:
        options.append(("--thinking" if entry.thinking else "--no-thinking", None))
    for option, value in (("--parser", entry.parser), ("--chat-template", entry.chat_template),
                          ("--paper-family", entry.paper_family), ("--quantization", entry.quantization),
                          ("--max-model-len", entry.max_model_len)):
        if value is not None:
            options.append((option, str(value)))
    if entry.dtype != "auto":
        options.append(("--dtype", entry.dtype))
    options += [("--tensor-parallel-size", str(entry.tensor_parallel_size)),
                ("--pipeline-parallel-size", str(entry.pipeline_parallel_size))]
    if entry.gpu_memory_utilization is not None:  # else the job's vLLM keeps its own default
        options.append(("--gpu-memory-utilization", str(entry.gpu_memory_utilization)))
    options.append(("--progress", "plain"))
    return options


def entry_run_arguments(entry: Entry, runs_dir: str | Path) -> list[str]:
    return [part for option, value in entry_options(entry, runs_dir) for part in (option, value) if part is not None]


def override_arguments() -> list[str]:
    """WTB_ROSTER_RUN_OPTIONS, appended after the entry's own options (the later value wins)."""
    return shlex.split(os.environ.get(RUN_OPTIONS_VAR, ""))


def options_as_env(options: list[tuple[str, str | None]]) -> dict[str, str]:
    """`run` options as their WTB_* twins (`--tensor-parallel-size 8` -> WTB_TENSOR_PARALLEL_SIZE=8,
    `--no-thinking` -> WTB_THINKING=false)."""
    env = {}
    for option, value in options:
        name = option.removeprefix("--")
        if value is None and name.startswith("no-"):
            name, value = name[3:], "false"
        env["WTB_" + name.upper().replace("-", "_")] = "true" if value is None else value
    return env


def _pairs(arguments: list[str]) -> list[tuple[str, str | None]]:
    pairs: list[tuple[str, str | None]] = []
    for part in arguments:
        if part.startswith("--") and "=" in part:
            pairs.append(tuple(part.split("=", 1)))  # type: ignore[arg-type]
        elif part.startswith("--"):
            pairs.append((part, None))
        elif pairs and pairs[-1][1] is None:
            pairs[-1] = (pairs[-1][0], part)
        else:
            raise SubmitError(f"{RUN_OPTIONS_VAR}: {part!r} follows no option")
    return pairs


@dataclass
class Job:
    key: str  # the resource class, the multi-node entry's row, or "report"
    script: Path
    options: list[str]
    env: dict[str, str]
    rows: list[str] = field(default_factory=list)

    def command(self, dependency: str | None = None) -> list[str]:
        extra = [f"--dependency=afterany:{dependency}"] if dependency else []
        return ["sbatch", "--parsable", *self.options, *extra, str(self.script)]

    def line(self, dependency: str | None = None) -> str:
        """The shell line; `dependency` is written unquoted (`${JOB_GPU1}:...` must expand)."""
        env = " ".join(f"{k}={shlex.quote(v)}" for k, v in sorted(self.env.items()))
        *head, script = self.command()
        extra = f" --dependency=afterany:{dependency}" if dependency else ""
        return f"{env} {shlex.join(head)}{extra} {shlex.quote(script)}"


def roster_jobs(roster: Roster, runs_dir: str | Path, sbatch_options: list[str], *,
                gpus_per_node: int | None = None, single_node: bool = False) -> list[Job]:
    """The jobs of a roster submission, the report job last (its dependency is filled in at submission)."""
    slurm = project_root() / "slurm"
    runs = Path(runs_dir).resolve()
    path = str(roster.path.resolve())
    bad = [e.row for e in roster.entries if not SAFE_ROW.fullmatch(e.row)]
    if bad:
        raise SubmitError(f"{roster.path}: entry {bad[0]!r}: field 'row': only letters, digits, '.', '_' and '-' "
                          "can name a run folder and an array task")
    jobs: list[Job] = []  # the arrays first, then the multi-node jobs
    multinode: list[Job] = []
    arrays: dict[str, list[Entry]] = {}
    for entry in roster.entries:
        res = roster.resources[entry.resources]
        if res.nodes > 1 and not single_node:
            gpus = res.gpus_per_node if gpus_per_node is None else gpus_per_node
            env = {**options_as_env(entry_options(entry, runs)), **options_as_env(_pairs(override_arguments())),
                   "WTB_NODES": str(res.nodes)}
            options = [f"--job-name=wtb_{entry.row}", f"--nodes={res.nodes}",
                       *([f"--gpus-per-node={gpus}"] if gpus else []), *res.sbatch, *sbatch_options]
            multinode.append(Job(entry.row, slurm / "wtb_multinode.sbatch", options, env, [entry.row]))
        else:
            arrays.setdefault(entry.resources, []).append(entry)
    for name, entries in arrays.items():
        res = roster.resources[name]
        gpus = res.gpus_per_node if gpus_per_node is None else gpus_per_node
        rows = [e.row for e in entries]
        env = {"WTB_ROSTER": path, "WTB_ROSTER_ROWS": " ".join(rows), "WTB_RUNS_DIR": str(runs)}
        options = [f"--job-name=wtb_roster_{name}", f"--array=0-{len(rows) - 1}", "--nodes=1",
                   *([f"--gpus={gpus}"] if gpus else []), *res.sbatch, *sbatch_options]
        jobs.append(Job(name, slurm / "wtb_roster.sbatch", options, env, rows))
    jobs += multinode
    report_env = {"WTB_ROSTER": path, "WTB_RUNS_DIR": str(runs)}
    jobs.append(Job("report", slurm / "wtb_roster_report.sbatch", ["--job-name=wtb_roster_report", *sbatch_options],
                    report_env))
    return jobs


def submit_jobs(jobs: list[Job], *, dry_run: bool = False) -> list[str]:
    """Submit (or, dry, print) every job; the report job depends on all the others (afterany). Returns
    one line per job."""
    lines, ids = [], []
    *work, report = jobs
    if not dry_run:
        if shutil.which("sbatch") is None:  # before anything is submitted or created
            raise SubmitError("sbatch is not on PATH: --submit needs Slurm (run it where jobs are submitted, "
                              "e.g. a login node); --dry-run prints the sbatch command lines instead")
        Path("logs").mkdir(exist_ok=True)  # Slurm opens the templates' --output=logs/... before they start
    for job in work:
        if dry_run:
            ids.append(f"${{{_var(job.key)}}}")
            lines.append(f"{_var(job.key)}=$({job.line()})")
            continue
        if not job.script.is_file():
            raise SubmitError(f"{job.script}: not found (entry {job.key}: multi-node entries need it; "
                              "--dry-run prints its command line)")
        ids.append(_sbatch(job))
        what = f"array 0-{len(job.rows) - 1}" if job.script.name == "wtb_roster.sbatch" else "multi-node"
        lines.append(f"{job.key}: job {ids[-1]} ({what}: {' '.join(job.rows)})")
    dependency = ":".join(ids)
    if dry_run:
        lines.append(report.line(dependency))
    else:
        lines.append(f"report: job {_sbatch(report, dependency)} (afterany:{dependency})")
    return lines


def _var(key: str) -> str:
    return "JOB_" + re.sub(r"[^A-Za-z0-9]", "_", key).upper()


def _sbatch(job: Job, dependency: str | None = None) -> str:
    try:
        proc = subprocess.run(job.command(dependency), capture_output=True, text=True,
                              env={**os.environ, **job.env}, check=False)
    except OSError as exc:  # sbatch gone or not executable since the check
        raise SubmitError(f"sbatch {job.script.name} ({job.key}) could not run: {exc.strerror or exc}") from None
    if proc.returncode != 0:
        raise SubmitError(f"sbatch {job.script.name} ({job.key}) failed: {' '.join(proc.stderr.split())}")
    return proc.stdout.strip().split(";")[0]
