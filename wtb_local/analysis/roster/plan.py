"""`plan`: what every roster entry will run with, decided offline by the same functions a run uses
(parser selection, the paper protocol's family rules and parse rules, the template lookup, the thinking
switch, the context length), and whether it fits the GPUs it is given (docs/roster.md §2-3).

No weights, no GPU, no network: the model's config.json and tokenizer files are read from the local
Hugging Face cache when they are there, else the roster entry's values are used.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from wtb_local.analysis.roster.file import WEIGHT_BYTES, Entry, Roster
from wtb_local.analysis.roster.memory import (
    Estimate,
    cached_config,
    estimate,
    kv_bytes_per_token,
    shape_from_config,
)
from wtb_local.benchmark.protocols import protocol_named
from wtb_local.contract import vllm_release
from wtb_local.formats.checkpoint import (
    DTYPE_BYTES,
    estimate_parameters,
    model_file,
    stored_dtype,
    weight_bytes,
)

OPEN_GROUPS = ("Open-Source General", "Open-Source Specialized")
LEVELS = ("ok", "warning", "error")
# A note is printed under its entry but changes no status (e.g. a row the paper has no row for).
NOTE = "note"
NO_PAPER_ROW = "no paper row"


@dataclass
class EntryPlan:
    entry: Entry
    parser: str = "?"
    template: str = "?"
    family: str = "-"
    thinking: str = "-"
    context: str = "?"
    context_tokens: int | None = None
    params_b: float | None = None
    params_source: str = "?"
    memory: Estimate | None = None
    messages: list[tuple[str, str]] = field(default_factory=list)

    def add(self, level: str, text: str) -> None:
        self.messages.append((level, text))

    @property
    def status(self) -> str:
        return max((level for level, _ in self.messages if level != NOTE), key=LEVELS.index, default="ok")


def open_weight_rows() -> list[str]:
    """The paper's open-weight Table 6 rows, in the paper's order."""
    from wtb_local.analysis.reports.paper import paper_rows

    return [name for name, row in paper_rows(6).items() if row.get("group") in OPEN_GROUPS]


def _template(plan: EntryPlan, entry: Entry) -> str | None:
    """The template source; returns the template text the run's decisions read (the entry's override, the
    family's renderer, or the cached tokenizer's own template), None when none is on disk."""
    from wtb_local.formats.rendering.templates import (
        TemplateError,
        override_for,
        renderer_for,
        resolve_template,
    )

    if entry.chat_template:
        try:
            source, text = resolve_template(entry.chat_template)
        except TemplateError as exc:
            plan.template = "missing"
            plan.add("error", str(exc))
            return None
        plan.template = source
        return text
    renderer = renderer_for(entry.model)
    if renderer is not None and protocol_named(entry.protocol).uses_template_overrides:
        plan.template = renderer.label  # used in place of the tokenizer's template, as at run time
        return renderer.text()
    from wtb_local.formats.rendering.kwargs import local_template  # deferred: start-up

    fallback = override_for(entry.model)
    uses_overrides = protocol_named(entry.protocol).uses_template_overrides
    tail = f" (fallback: override:{fallback.name})" if fallback and uses_overrides else ""

    cached = model_file(entry.model, "tokenizer_config.json")
    plan.template = ("shipped (cached tokenizer)" if cached else "needs the tokenizer") + tail
    # the cached template decides the parser and the thinking switch, as it will at run time
    return local_template(str(cached.parent)) if cached else None


def _parser(plan: EntryPlan, entry: Entry, template: str | None, config: dict[str, Any] | None) -> None:
    """The parser the run will read replies with, chosen as `prepare` chooses it (run/setup/prepare.py)."""
    from wtb_local.formats.parsers import get_parser, select_parser

    protocol = protocol_named(entry.protocol)
    values = {"model": entry.model, "model_name": entry.row, "paper_family": entry.paper_family}
    try:
        name = entry.parser or protocol.default_parser(values)
        if not name:
            name = select_parser(entry.model, chat_template=template, config=config)
        native = get_parser(name)
    except ValueError as exc:
        plan.add("error", f"parser: {exc}")
        return
    plan.parser, plan.family = protocol.planned_parser(values, native)


def _thinking(plan: EntryPlan, entry: Entry, template: str | None) -> None:
    from wtb_local.formats.rendering.kwargs import thinking_kwargs  # deferred: start-up

    if entry.thinking is None:
        plan.thinking = "default"
        return
    try:
        kwargs = thinking_kwargs(entry.thinking, model_id=entry.model, template=template)
    except ValueError as exc:
        plan.thinking = "no switch"
        plan.add("error", str(exc))
        return
    plan.thinking = ",".join(f"{k}={str(v).lower()}" for k, v in kwargs.items())


def _paper_row(plan: EntryPlan, entry: Entry, compare_with: str) -> None:
    """The paper row the entry's run is compared with. No such row is never an error: the run is scored
    all the same, only without the paper's numbers next to it. In a roster meant to reproduce the paper
    (`compare_with = "paper"`) it is a warning, as it is then most likely a misspelt row name."""
    from wtb_local.analysis.reports.paper import paper_rows

    row = paper_rows(6).get(entry.row)
    if row is None and compare_with == "paper":
        plan.add("warning", f"row {entry.row!r} is not a row of the paper's Table 6: its run has no paper row to "
                            "be compared with")
    elif row is None:
        plan.add(NOTE, NO_PAPER_ROW)
    elif row.get("group") not in OPEN_GROUPS:
        plan.add("warning", f"row {entry.row!r} is in the paper's group {row['group']!r}, not an open-weight one")


def _resources(plan: EntryPlan, entry: Entry, roster: Roster, shape: dict[str, int]) -> None:
    res = roster.resources[entry.resources]
    tp, pp = entry.tensor_parallel_size, entry.pipeline_parallel_size
    if res.gpus and tp * pp > res.gpus:
        plan.add("error", f"tensor x pipeline parallel = {tp} x {pp} = {tp * pp} GPUs, but resources "
                          f"{res.name} give {res.gpus}")
    elif res.gpus and tp * pp < res.gpus:
        plan.add("warning", f"tensor x pipeline parallel = {tp * pp} of the {res.gpus} GPUs of {res.name}: "
                            "the others stay idle")
    if res.nodes > 1 and tp > res.gpus_per_node:
        plan.add("warning", f"tensor parallel {tp} spans nodes ({res.gpus_per_node} GPUs per node): "
                            "use pipeline parallel across nodes")
    heads = shape.get("attention_heads")
    if heads and heads % tp:
        plan.add("error", f"{heads} attention heads are not divisible by tensor parallel {tp} (vLLM refuses)")


def _context(plan: EntryPlan, entry: Entry, shape: dict[str, int]) -> None:
    limit = shape.get("max_position_embeddings")
    if entry.max_model_len:
        plan.context_tokens = entry.max_model_len
        plan.context = f"{entry.max_model_len} (roster)"
        if limit and entry.max_model_len > limit:
            plan.add("error", f"max_model_len {entry.max_model_len} exceeds the model's maximum {limit}")
        return
    # run/setup/context_length.py: computed at start from the gold-path prompts, capped at the model's maximum
    plan.context_tokens = limit
    plan.context = f"computed at start, <= {limit}" if limit else "computed at start"


def _memory(plan: EntryPlan, entry: Entry, roster: Roster, shape: dict[str, int], config: dict[str, Any] | None) -> None:
    res = roster.resources[entry.resources]
    if plan.params_b is None:
        plan.add("error", "no parameter count: set params_b (or cache the model's config.json)")
        return

    # bytes per weight: what vLLM is asked for, else what the checkpoint stores (its config, else the roster)
    kind = entry.quantization or (entry.dtype if entry.dtype != "auto" else None)
    per_weight = (WEIGHT_BYTES[kind] if kind else DTYPE_BYTES.get(stored_dtype(config), 2) if config
                  else WEIGHT_BYTES[entry.checkpoint_dtype])
    weights = plan.params_b * 1e9 * per_weight
    if not kind and config:  # the checkpoint's own byte count when its safetensors index is on disk (doctor)
        size, source = weight_bytes(entry.model, config)
        if size and source in ("safetensors index", "model.safetensors"):
            weights, plan.params_source = float(size), f"{plan.params_source}; weights: {source}"
    kind = kind or (stored_dtype(config).replace("float8_e4m3fn", "fp8") if config else entry.checkpoint_dtype)
    per_token = kv_bytes_per_token(shape, entry.tensor_parallel_size)
    share = entry.gpu_memory_utilization
    if share is None and res.gpus:  # the share vLLM takes by default, as the installed release decides it

        version = vllm_release.target_version()
        share = vllm_release.default_gpu_memory_utilization(version, "cuda")
    usable = (share or 0.0) * res.gpu_memory_gib * res.gpus
    plan.memory = estimate(weights, per_token, plan.context_tokens,
                           entry.batch_sequences * entry.batch_sequence_tokens, usable)
    if res.gpus == 0:
        return  # a CPU class: nothing to compare with
    m = plan.memory
    if m.kv_batch_gib is None:
        plan.add("warning", "no KV cache estimate: set config.layers, kv_heads and head_dim (or cache config.json)")
    if m.weights_gib + (m.kv_one_gib or 0) > usable:
        one = f" + {m.kv_one_gib:.1f} GiB KV for one {plan.context_tokens}-token sequence" if m.kv_one_gib else ""
        plan.add("error", f"does not fit: {m.weights_gib:.1f} GiB weights ({kind}){one} > {usable:.1f} GiB usable "
                          f"on {res.gpus} x {res.gpu}")
    elif m.kv_batch_gib is not None and m.weights_gib + m.kv_batch_gib > usable:
        room = usable - m.weights_gib
        plan.add("warning", f"KV cache for the planned batch ({entry.batch_sequences} x {entry.batch_sequence_tokens} "
                            f"tokens, {m.kv_batch_gib:.1f} GiB) exceeds the {room:.1f} GiB left after the weights: "
                            "vLLM batches fewer sequences")


def plan_entry(entry: Entry, roster: Roster) -> EntryPlan:
    plan = EntryPlan(entry)
    config = cached_config(entry.model)
    shape = {**entry.config, **(shape_from_config(config) if config else {})}

    counted = estimate_parameters(config) if config else None
    plan.params_b, plan.params_source = (counted / 1e9, "config.json") if counted else (entry.params_b, "roster")
    _paper_row(plan, entry, roster.compare_with)
    template = _template(plan, entry)
    _parser(plan, entry, template, config)
    _thinking(plan, entry, template)
    _context(plan, entry, shape)
    _resources(plan, entry, roster, shape)
    _memory(plan, entry, roster, shape, config)
    return plan


def plan_roster(roster: Roster) -> list[EntryPlan]:
    return [plan_entry(entry, roster) for entry in roster.entries]


def format_plan(roster: Roster, plans: list[EntryPlan]) -> str:
    """The plan as aligned text: one line per entry, then its warnings and errors, then a summary."""
    headers = ("row", "model", "resources", "params", "parser", "template", "protocol family", "thinking",
               "context", "memory GiB (w + kv / usable)", "status")
    lines = []
    for p in plans:
        e = p.entry
        res = roster.resources[e.resources]
        params = f"{p.params_b:.2f}B ({p.params_source})" if p.params_b else "?"
        where = f"{e.resources} ({res.nodes}x{res.gpus_per_node} {res.gpu}, tp{e.tensor_parallel_size} pp{e.pipeline_parallel_size})"
        lines.append((e.row, e.model, where, params, p.parser, p.template,
                      p.family if p.family == e.protocol else f"{e.protocol}: {p.family}", p.thinking, p.context,
                      p.memory.line() if p.memory else "?", p.status))
    widths = [max(len(str(cells[i])) for cells in [headers, *lines]) for i in range(len(headers))]
    out = ["  ".join(str(c).ljust(w) for c, w in zip(headers, widths)).rstrip()]
    for p, cells in zip(plans, lines):
        out.append("  ".join(str(c).ljust(w) for c, w in zip(cells, widths)).rstrip())
        out.extend(f"    {level}: {text}" for level, text in p.messages if level != "ok")
    if any(p.entry.gpu_memory_utilization is None for p in plans):
        out.append(_share_line(plans))
    counts = {level: sum(p.status == level for p in plans) for level in LEVELS}
    head = f"{len(plans)} entries: {counts['ok']} ok, {counts['warning']} warning, {counts['error']} error; "
    if roster.compare_with != "paper":  # not meant to cover the paper: no count of the paper's rows it lacks
        without = sum(1 for p in plans if (NOTE, NO_PAPER_ROW) in p.messages)
        out.append(head + f"{without} without a paper row (compare_with = {roster.compare_with!r})")
        return "\n".join(out)
    wanted = open_weight_rows()
    covered = sum(1 for row in wanted if any(p.entry.row == row for p in plans))
    out.append(head + f"{covered} of the paper's {len(wanted)} open-weight rows have an entry")
    missing = [row for row in wanted if not any(p.entry.row == row for p in plans)]
    if missing and len(missing) <= 10:  # a roster meant to cover the paper and missing a few
        out.append(f"rows without an entry: {', '.join(missing)}")
    return "\n".join(out)


def _share_line(plans: list[EntryPlan]) -> str:
    """Where `usable` comes from: the entry's gpu_memory_utilization, else the vLLM release's default."""

    note = vllm_release.share_note(vllm_release.target_version(), "cuda")
    given = sum(p.entry.gpu_memory_utilization is not None for p in plans)
    return (f"usable memory: gpu_memory_utilization as given ({given} of {len(plans)} entries), else {note} "
            f"(set {vllm_release.TARGET_VAR} to plan for another vLLM)")
