"""`explain --plan MODEL`: the few runs that measure the usual factors for one model, and the `explain`
line over them (docs/explain.md, "Planning the runs"):

- the baseline: the model with every default on one engine, three seeds (`--repeats 3`) where its decoding
  samples (the seed spread every other gap is tested against);
- each alternative parser known for the family: a replay of the baseline's first seed (no generation),
  and, when asked (`generated_parsers`), a run with it: a replay judges only the steps the baseline
  generated, so where the other parser reads a call the baseline's did not, the conversation goes on to
  steps only a run with that parser generates;
- the template override that serves the model, where there is one (`--chat-template NAME`);
- each other in-process engine;
- the protocol that reproduces the paper's harness (`--protocol paper`).

Decided offline by the functions a run uses (parser selection, the override lookup, the engines and
protocols registered); nothing is downloaded or loaded.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from wtb_local.formats.checkpoint import model_file
from wtb_local.formats.model_ids import normalize_model_id

SEEDS = 3
# parser -> (alternative parser, why): how other harnesses and configurations read the same family's calls
ALTERNATIVE_PARSERS: dict[str, tuple[tuple[str, str], ...]] = {
    "hermes": (("qwen3_coder", ("the Qwen3-Coder/Qwen3.5 XML reader, which also reads Hermes-style JSON blocks: "
                                "a deployment configured for the newer Qwen format")),
               ("llama3_json", ("a bare JSON-object reader: takes the calls of a <tool_call> block and keeps the "
                                "markup as text (docs/parser-policies.md §2)"))),
    "qwen3_coder": (("hermes", "the JSON <tool_call> reader of Qwen2.5/Qwen3, which reads no XML parameters"),),
    "llama3_json": (("pythonic", "the pythonic call lists Llama 3.2/3.3 write with the pythonic prompt"),),
    "pythonic": (("llama3_json", "the JSON calls of the Llama 3.1 base these models are tuned from"),),
    "xlam": (("hermes", "without the xLAM parser: the JSON <tool_call> reader"),
             ("llama3_json", "without the xLAM parser: a bare JSON-object reader")),
    "hammer": (("xlam", "the xLAM list reader Hammer's parser is built on, without its fence"),),
    "deepseek_v31": (("deepseek_v3", "DeepSeek-V3's call layout, which V3.1 changed: a harness set up for V3"),),
    "deepseek_v3": (("deepseek_v31", "DeepSeek-V3.1's call layout: a harness set up for V3.1"),),
    "granite": (("hermes", "Granite 4's Hermes-style blocks: a harness set up for the newer Granite"),),
}


class PlanError(ValueError):
    """A plan that cannot be made; one line."""


@dataclass(frozen=True)
class PlannedRun:
    name: str  # its folder under the runs directory
    factor: str  # what it measures against the baseline
    why: str
    args: tuple[str, ...]  # `python -m wtb_local` arguments

    @property
    def out(self) -> str:
        return self.args[self.args.index("--out") + 1]


@dataclass
class Plan:
    model: str
    runs_dir: str
    runs: list[PlannedRun] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    explain_args: tuple[str, ...] = ()


def _template_text(model: str) -> str | None:
    from wtb_local.formats.rendering.kwargs import local_template  # deferred: start-up

    found = model_file(model, "tokenizer_config.json")
    return local_template(str(found.parent)) if found is not None else None


def _sampled(model: str, options: Sequence[str]) -> bool | None:
    """Whether the model's decoding samples: a --temperature among the options decides; else its
    generation_config.json (a local checkpoint without one decodes greedily, as transformers does); None
    when the file is not on disk."""
    from wtb_local.contract.jsonl import read_json_object

    if "--temperature" in options:
        at = list(options).index("--temperature")
        try:
            return float(options[at + 1]) > 0
        except (IndexError, ValueError):
            return None
    found = model_file(model, "generation_config.json")
    if found is None:
        return False if Path(model).expanduser().is_dir() else None
    return bool((read_json_object(found) or {}).get("do_sample", False))


def _default_dir(model: str) -> str:
    return f"runs/explain-{normalize_model_id(model).rsplit('/', 1)[-1] or 'model'}"


def make_plan(model: str, *, engines: Sequence[str], runs_dir: str | None = None, engine: str | None = None,
              run_options: Sequence[str] = (), explain_out: str | None = None,
              generated_parsers: bool = False, context_window: int | None = None) -> Plan:
    """The runs for `model`; `engines`: the in-process engine backends, the first the default engine
    (`backends.engine_backends()`, which `explain --plan` passes); `run_options` are shell-split and added to every run; `explain_out`: where the
    explanation goes (default: `explain` in the runs directory); `generated_parsers`: each alternative
    parser also run with generation, on the baseline's engine and first seed; `context_window`: a run with
    that `--max-model-len` (a deployment with a smaller window, where long prompts end their step)."""
    from wtb_local.analysis.roster.memory import cached_config  # deferred: start-up
    from wtb_local.benchmark.protocols import protocol_named, protocol_names  # deferred: start-up
    from wtb_local.formats.parsers import select_parser  # deferred: start-up
    from wtb_local.formats.rendering.templates import override_for  # deferred: start-up

    options = tuple(word for text in run_options for word in shlex.split(text))
    engines = list(engines)
    base_engine = engine or engines[0]
    if base_engine not in engines:
        raise PlanError(f"--engine {base_engine}: choose an in-process engine backend ({', '.join(engines)})")
    folder = runs_dir or _default_dir(model)
    plan = Plan(model, folder)
    try:
        parser = select_parser(model, chat_template=_template_text(model), config=cached_config(model))
    except ValueError as exc:
        raise PlanError(str(exc)) from None

    sampled = _sampled(model, options)
    seeds = () if sampled is False else ("--repeats", str(SEEDS))
    base_out = f"{folder}/base"
    base = ("run", "--model", model, "--backend", base_engine, *seeds, *options, "--out", base_out)
    if sampled is False:
        plan.notes.append(f"{model} decodes greedily (its generation_config.json, or --temperature 0): every seed "
                          "gives the same completions, so there are no seed runs; the noise left is the engine's "
                          "own")
    elif sampled is None:
        plan.notes.append(f"{model}'s generation_config.json is not on disk: if it decodes greedily, `run "
                          "--repeats` refuses; add --temperature T to every run (--run-option)")
    plan.runs.append(PlannedRun("base", "baseline" + (f", {SEEDS} seeds" if seeds else ""),
                                f"engine {base_engine}, parser {parser}, the defaults", base))
    recorded = f"{base_out}/repeats/0" if seeds else base_out

    alternatives = ALTERNATIVE_PARSERS.get(parser, ())
    for other, why in alternatives:
        plan.runs.append(PlannedRun(f"parser-{other}", "parser", f"{other}: {why}; a replay, no generation",
                                    ("run", "--backend", "replay", "--replay", recorded, "--parser", other,
                                     *options, "--out", f"{folder}/parser-{other}")))
    for other, _why in alternatives if generated_parsers else ():
        plan.runs.append(PlannedRun(
            f"parser-{other}-generated", "parser, generated",
            f"{other} with generation: the steps the replay could not judge (where {other} reads a call "
            f"{parser} did not, the conversation goes on to steps the baseline never generated)",
            ("run", "--model", model, "--backend", base_engine, "--parser", other, *options,
             "--out", f"{folder}/parser-{other}-generated")))
    if not alternatives:
        plan.notes.append(f"no alternative parser is known for {parser}")

    override = override_for(model)
    if override is not None:
        plan.runs.append(PlannedRun(
            f"template-{override.name}", "template",
            f"the override chat_templates/{override.name}.jinja (the baseline renders with the model's own "
            "template where it passes the start-up probe, else with this override: then the two are the same)",
            ("run", "--model", model, "--backend", base_engine, "--chat-template", override.name, *options,
             "--out", f"{folder}/template-{override.name}")))
    else:
        plan.notes.append(f"no template override serves {model}")

    for other in (name for name in engines if name != base_engine):
        plan.runs.append(PlannedRun(f"engine-{other}", "engine", f"the {other} engine, everything else the same",
                                    ("run", "--model", model, "--backend", other, *options,
                                     "--out", f"{folder}/engine-{other}")))
    if context_window is not None:
        plan.runs.append(PlannedRun(
            f"context-{context_window}", "context window",
            f"--max-model-len {context_window}: a deployment with a smaller context window; a prompt that does not "
            "fit ends its step as 'prompt too long', scored as a wrong step",
            ("run", "--model", model, "--backend", base_engine, *options, "--max-model-len", str(context_window),
             "--out", f"{folder}/context-{context_window}")))
    for name in protocol_names():
        if protocol_named(name).reproduces_paper:
            plan.runs.append(PlannedRun(f"protocol-{name}", "protocol",
                                        "the paper harness's prompts, lengths, sampling, parse rules and checker",
                                        ("run", "--model", model, "--backend", base_engine, "--protocol", name,
                                         *options, "--out", f"{folder}/protocol-{name}")))
    plan.explain_args = ("explain", *(run.out for run in plan.runs), "--out", explain_out or f"{folder}/explain")
    return plan


def plan_script(plan: Plan) -> str:
    """The plan as a bash script: one commented `python -m wtb_local` line per run, then `explain`."""
    def line(args: Sequence[str]) -> str:
        return " ".join(["python", "-m", "wtb_local", *(shlex.quote(a) for a in args)])

    out = ["#!/usr/bin/env bash",
           f"# explain --plan {plan.model}: the runs that measure the usual factors (docs/explain.md)",
           "set -e"]
    out += [f"# note: {note}" for note in plan.notes]
    for run in plan.runs:
        out += [f"# {run.factor}: {run.why}", line(run.args)]
    out += ["# why the numbers differ", line(plan.explain_args)]
    return "\n".join(out) + "\n"
