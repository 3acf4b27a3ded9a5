"""`run` (also options without a command): the main job.

fetch the dataset if needed → run the model on every session (resumable) → score → write the result,
score, metric and manifest files under `runs/<model>/` (or `--out`) → print the Table 6/7 rows next to
the paper's. Every option has a `WTB_*` environment twin; engine flags mirror vLLM's.
"""

from __future__ import annotations

import re
import sys
from collections import Counter
from typing import Any

import click

from wtb_local.resources import DEFAULT_DATASET
from wtb_local.runner.loop import SCHEDULING_MODES

_BACKENDS = ("auto", "vllm", "transformers", "openai", "openai-chat", "oracle", "instant", "scripted", "replay")
# Names both vLLM and the transformers backend accept (a typo would otherwise fail only after model load).
_DTYPES = ("auto", "bfloat16", "float16", "float32", "half", "float")


def _sessions(_ctx: click.Context, _param: click.Parameter, value: str | None) -> list[str] | None:
    if value is None:
        return None
    ids = [part.strip() for part in value.replace(" ", ",").split(",") if part.strip()]
    if not ids:  # an empty list must not silently mean "every session"
        raise click.BadParameter(f"no session id in {value!r}; give ids or numbers, e.g. 0,3")
    return ids


def _shard(_ctx: click.Context, _param: click.Parameter, value: str | None) -> str | None:
    if value is None or value.strip() == "auto":
        return value and "auto"
    from wtb_local.runner.shards import ShardError, parse_shard

    try:
        return parse_shard(value).spec
    except ShardError as exc:
        raise click.BadParameter(str(exc).removeprefix("--shard: ")) from None


def _protocol(_ctx: click.Context, _param: click.Parameter, value: str | None) -> str | None:
    return None if value in (None, "release") else value  # release: left out of the run hash (old runs resume)


@click.command(name="run")
@click.option("--model", envvar="WTB_MODEL", help="Hugging Face model id or local directory.")
@click.option("--model-name", envvar="WTB_MODEL_NAME",
              help="Name in the result files and folder (default: the model id; `/` becomes `_` in folders).")
@click.option("--backend", type=click.Choice(_BACKENDS), default="auto", show_default=True,
              envvar="WTB_BACKEND",
              help="auto = vllm when importable and a CUDA GPU is visible, else transformers; "
                   "scripted when --script is given, replay when --replay is given.")
@click.option("--base-url", envvar="WTB_BASE_URL", help="OpenAI-compatible server (openai, openai-chat), e.g. "
              "http://127.0.0.1:8000/v1.")
@click.option("--server-prompt", type=click.Choice(("token-ids", "text")), envvar="WTB_SERVER_PROMPT",
              help="openai backend: send the rendered prompt as token ids (default; vLLM, SGLang) or as text "
                   "with add_special_tokens false (servers that take only text).")
@click.option("--api-key", envvar="WTB_API_KEY", help="API key for --base-url (never written to disk).")
@click.option("--parser", envvar="WTB_PARSER",
              help="Tool-call parser (default: chosen from the template/model id).")
@click.option("--chat-template", envvar="WTB_CHAT_TEMPLATE",
              help="Chat template override: a name from chat_templates/ or a path.")
@click.option("--thinking/--no-thinking", default=None, envvar="WTB_THINKING",
              help="Ask for thinking on/off via the family's template kwarg (default: the template's default); "
                   "the effective mode is read from the rendered prompt and recorded in the manifest.")
@click.option("--template-kwarg", "template_kwarg", multiple=True, envvar="WTB_TEMPLATE_KWARG",
              help="Extra chat-template kwarg k=v (v parsed as JSON when it parses); repeatable.")
@click.option("--dataset", default=DEFAULT_DATASET, show_default=True, envvar="WTB_DATASET",
              help="A path, `sample` (embedded) or `release` (fetched into the cache on first use; "
                   "never replaced by the sample).")
@click.option("--script", envvar="WTB_SCRIPT",
              help="Script file for the scripted backend (script.jsonl format).")
@click.option("--replay", envvar="WTB_REPLAY",
              help="Replay backend: a finished run (directory or result file) whose recorded raw completions "
                   "are parsed and judged again (default parser: the recorded run's).")
@click.option("--out", envvar="WTB_OUT", help="Run directory (default: runs/<model>).")
@click.option("--limit", type=click.IntRange(min=1), envvar="WTB_LIMIT",
              help="Run only the first N sessions.")
@click.option("--sessions", callback=_sessions, envvar="WTB_SESSIONS",
              help="Run only these sessions: ids or numbers, comma-separated.")
@click.option("--shard", envvar="WTB_SHARD", callback=_shard,
              help="Run one shard of the sessions: I/N (0-based), or auto = this Slurm array task "
                   "(SLURM_ARRAY_TASK_ID of SLURM_ARRAY_TASK_COUNT); into <out>/shards/I-of-N/, joined by "
                   "`merge`.")
@click.option("--resume/--no-resume", default=True, show_default=True, envvar="WTB_RESUME",
              help="Skip sessions already finished in the run directory (same configuration only); "
                   "--no-resume starts afresh, replacing its results.")
@click.option("--overwrite", is_flag=True, default=False, envvar="WTB_OVERWRITE",
              help="Discard the run directory's results and start afresh.")
@click.option("--temperature", type=click.FloatRange(min=0.0), envvar="WTB_TEMPERATURE",
              help="Sampling temperature (default: the model's generation_config, the paper's protocol).")
@click.option("--top-p", type=click.FloatRange(min=0.0, max=1.0, min_open=True), envvar="WTB_TOP_P",
              help="Top-p (default: the model's generation_config).")
@click.option("--max-new-tokens", type=click.IntRange(min=1), envvar="WTB_MAX_NEW_TOKENS",
              help="Tokens generated per step at most [default: 512 (the paper's) when the prompt turns "
                   "thinking off, 8192 when it turns thinking on].")
@click.option("--seed", type=int, default=0, show_default=True, envvar="WTB_SEED",
              help="Run seed; per-request seeds are derived from it with sha256.")
@click.option("--revision", envvar="WTB_REVISION", help="Model revision (branch, tag or commit).")
@click.option("--trust-remote-code", is_flag=True, default=False, envvar="WTB_TRUST_REMOTE_CODE",
              help="Allow the model repository's own code (off unless asked).")
@click.option("--dtype", type=click.Choice(_DTYPES, case_sensitive=False), default="auto", show_default=True,
              envvar="WTB_DTYPE", help="Weight and activation dtype (vllm, transformers); auto: the checkpoint's.")
@click.option("--quantization", envvar="WTB_QUANTIZATION",
              help="vLLM: quantization method, e.g. fp8, awq, gptq (default: from the checkpoint's config).")
@click.option("--max-model-len", type=click.IntRange(min=1), envvar="WTB_MAX_MODEL_LEN",
              help="Context window; longer prompts become step errors.")
@click.option("--tensor-parallel-size", type=click.IntRange(min=1), default=1, show_default=True,
              envvar="WTB_TENSOR_PARALLEL_SIZE", help="vLLM: GPUs the model is split over (tensor parallel).")
@click.option("--pipeline-parallel-size", type=click.IntRange(min=1), default=1, show_default=True,
              envvar="WTB_PIPELINE_PARALLEL_SIZE", help="vLLM: pipeline-parallel stages.")
@click.option("--data-parallel-size", type=click.IntRange(min=1), envvar="WTB_DATA_PARALLEL_SIZE",
              help="vLLM: engine replicas on this node, each on tensor x pipeline GPUs, requests balanced by "
                   "vLLM (needs a vLLM with data parallelism; default: not passed, one replica).")
@click.option("--distributed-executor-backend", type=click.Choice(["mp", "ray", "uni", "external_launcher"]),
              envvar="WTB_DISTRIBUTED_EXECUTOR_BACKEND",
              help="vLLM: how the engine starts its workers; ray: on the nodes of a running Ray cluster "
                   "(several nodes, slurm/wtb_multinode.sbatch) [default: not passed, vLLM's choice].")
@click.option("--gpu-memory-utilization", type=click.FloatRange(min=0.0, max=1.0, min_open=True),
              envvar="WTB_GPU_MEMORY_UTILIZATION",
              help="vLLM: share of GPU memory to use [default: 0.9; 0.2 of host RAM on vLLM's CPU build].")
@click.option("--max-num-seqs", type=click.IntRange(min=1), envvar="WTB_MAX_NUM_SEQS",
              help="vLLM: sequences per batch; openai: concurrent requests.")
@click.option("--max-num-batched-tokens", type=click.IntRange(min=1), envvar="WTB_MAX_NUM_BATCHED_TOKENS",
              help="vLLM: tokens per engine step (default: vLLM's offline default for the device).")
@click.option("--enable-prefix-caching/--no-enable-prefix-caching", default=True, show_default=True,
              envvar="WTB_ENABLE_PREFIX_CACHING",
              help="vLLM: reuse the KV cache of shared prompt prefixes. Off, with --max-num-seqs 1, a rerun with "
                   "the same seed is identical (docs/reproducibility.md).")
@click.option("--enforce-eager", is_flag=True, default=False, envvar="WTB_ENFORCE_EAGER",
              help="vLLM: no CUDA graphs (less memory, slower decoding).")
@click.option("--batch-size", type=click.IntRange(min=1), default=16, show_default=True,
              envvar="WTB_BATCH_SIZE",
              help="transformers: prompts per generate call.")
@click.option("--scheduling", type=click.Choice(SCHEDULING_MODES), default="auto", show_default=True,
              envvar="WTB_SCHEDULING",
              help="continuous: each episode's next step goes out as soon as its reply is judged; waves: "
                   "step-synchronous (auto: waves for transformers only).")
@click.option("--repeats", type=click.IntRange(min=1), default=1, show_default=True, envvar="WTB_REPEATS",
              help="Run K seeds of a sampled run (one engine) and report mean ± standard error; each repeat is "
                   "a run directory under <run dir>/repeats/.")
@click.option("--progress", type=click.Choice(("auto", "rich", "plain", "none")), default="auto",
              show_default=True, envvar="WTB_PROGRESS",
              help="auto: a bar on a terminal, plain lines otherwise.")
@click.option("--protocol", type=click.Choice(("release", "paper")), default="release", show_default=True,
              envvar="WTB_PROTOCOL", callback=_protocol,
              help="release: the benchmark's released evaluator; paper: the paper harness's per-family prompts, "
                   "generation, parse rules and lenient checker (README: \"Which numbers can I compare with the paper?\").")
@click.option("--paper-family", envvar="WTB_PAPER_FAMILY",
              type=click.Choice(("qwen", "llama", "hammer", "toolace", "watt", "xlam2", "fcm", "gorilla", "qwen3",
                                 "generic")),
              help="--protocol paper: the family rule to apply (default: chosen from the model id; needed for a "
                   "local directory whose name does not say the family).")
def run(**options: Any) -> None:
    """Run a model on WildToolBench, score it and print its Table 6 row (the main job)."""
    from wtb_local.runner import RunError, run_job, settings_from_options
    from wtb_local.runner.stopping import RunInterrupted

    repeats = options.pop("repeats", 1) or 1
    try:
        settings = settings_from_options(options)
        if repeats > 1:
            from wtb_local.cli.repeats import run_repeated

            run_repeated(settings, repeats)
            return
        outcome = run_job(settings)
    except RunInterrupted as exc:  # Ctrl-C or SIGTERM (e.g. SLURM preemption) while sessions ran
        click.echo(str(exc), err=True)
        sys.exit(130)
    except KeyboardInterrupt:  # the same before any session ran (or a second signal)
        click.echo("interrupted: finished sessions are kept; rerun the same command to resume", err=True)
        sys.exit(130)
    except (RunError, ValueError) as exc:  # DatasetError, ScoringError, TemplateError are ValueErrors
        raise click.ClickException(str(exc)) from None
    except OSError as exc:
        where = f"{exc.filename}: " if exc.filename else ""
        raise click.ClickException(f"{where}{exc.strerror or exc}") from None

    paths = outcome.paths
    click.echo(f"result:   {paths.result_file}")
    click.echo(f"score:    {paths.score_dir}")
    click.echo(f"manifest: {paths.run_dir / 'manifest.json'}")
    throughput = (outcome.manifest.get("summary") or {}).get("throughput")
    if throughput and throughput.get("steps"):
        from wtb_local.runner.throughput import summary_line

        click.echo(summary_line(throughput))
    if outcome.manifest.get("status") != "complete":
        click.echo(f"warning: run status {outcome.manifest.get('status')}", err=True)
    examples: dict[str, str] = {}
    failed = failed_requests(outcome.result_rows, set(outcome.ran_sessions), examples)
    if failed:
        # The progress line only counts them; say why, or a 0% row looks like the model's fault.
        reasons = ", ".join(f"{examples[reason]} ({count})"
                            for reason, count in failed.most_common(3))
        more = f", {len(failed) - 3} other reason(s)" if len(failed) > 3 else ""
        click.echo(f"warning: {sum(failed.values())} request(s) failed and were scored as step errors: "
                   f"{reasons}{more}", err=True)
    from wtb_local.reports.present import present
    from wtb_local.runner.length_cuts import cuts_line, cuts_warning

    run_settings = outcome.settings
    cuts = (outcome.manifest.get("summary") or {}).get("length_cuts")
    if cuts and cuts.get("steps"):
        click.echo(f"steps cut at the token limit: {cuts_line(cuts)} "
                   f"(max_new_tokens {run_settings.sampling.max_new_tokens})")
        warning = cuts_warning(cuts, run_settings.sampling.max_new_tokens)
        if warning:
            click.echo(warning, err=True)
    from wtb_local.reports.health import reasoning_calls_line

    hidden = reasoning_calls_line(outcome.result_rows, run_settings.protocol)
    if hidden:
        click.echo(hidden)
    # label, paper row (by the recorded thinking mode) and notes as every command shows this run
    shown = present(paths.run_dir, outcome.metric, manifest=outcome.manifest)
    shown.show(sys.stdout)
    _save_summary(outcome, shown.rows, [f"note: {note}" for note in shown.notes])


def _save_summary(outcome: Any, rows: list[Any], notes: list[str]) -> None:
    """The tables and notes just printed, also in the run folder (summary.md, summary.json)."""
    from wtb_local.reports.table import format_plain
    from wtb_local.runner.run_record import write_summary

    text = "\n\n".join(format_plain(rows, table) for table in (6, 7))
    write_summary(outcome.paths.run_dir, rows, text, notes)


def failed_requests(result_rows: list[dict[str, Any]], sessions: set[str],
                    examples: dict[str, str] | None = None) -> Counter[str]:
    """Why the requests of these sessions failed (steps with finish_reason "error"), grouped by reason with
    its numbers masked ("prompt too long: N tokens > max_model_len N" once, not once per length); the
    warning shows each group's first message with its real numbers (filled into `examples`)."""
    examples = {} if examples is None else examples
    reasons: Counter[str] = Counter()
    for row in result_rows:
        if row.get("id") not in sessions:
            continue
        for task in row.get("result") or []:
            log = task.get("inference_log") if isinstance(task, dict) else None
            for key, step in (log or {}).items():
                output = step.get("inference_output") if key.startswith("step_") and isinstance(step, dict) else None
                if isinstance(output, dict) and output.get("finish_reason") == "error":
                    reason = str(output.get("error_reason") or "unknown")
                    masked = re.sub(r"\d+", "N", reason)
                    examples.setdefault(masked, reason)
                    reasons[masked] += 1
    return reasons


# `--help` lists each option's environment twin.
for _param in run.params:
    if isinstance(_param, click.Option):
        _param.show_envvar = True
