"""The context window asked of vLLM when `--max-model-len` is not given: what this benchmark needs.

Left to itself vLLM takes the model's maximum (131,072 for Llama-3.1-8B), whose KV cache for one full
sequence does not fit next to the weights on a 40 GB card, so the engine refuses to start. The benchmark
needs far less. Each task of the chosen sessions is walked along its gold path (the oracle's replies);
the prompt of its last step is rendered with the run's template, and the task needs that many tokens
plus `max_new_tokens` for every step it takes (a model's own replies may be that long, where the gold
replies were short). The run asks for the largest need, rounded up to a multiple of 1,024 tokens, and
never for more than the model's own maximum. A prompt that still does not fit (a model that strays onto
a longer path) stays a step error, as with any `--max-model-len`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from typing_extensions import TypedDict

ROUND_TO = 1024
# Keys under which a model config states its context window; vLLM takes the smallest of those present
# (and may scale it up for some rope types), so the smallest is always a length vLLM accepts.
_WINDOW_KEYS = ("max_position_embeddings", "n_positions", "max_seq_len", "seq_length", "max_sequence_length",
                "max_seq_length", "seq_len")


@dataclass(frozen=True)
class TaskNeed:
    session_id: str
    task_idx: int
    prompt_tokens: int  # of the last gold step's prompt
    steps: int  # gold steps the task takes

    def tokens(self, max_new_tokens: int) -> int:
        return self.prompt_tokens + self.steps * max_new_tokens


class ContextRecord(TypedDict):
    """The manifest's record of an engine's context window: the window (None: the engine's own) and how it
    was chosen, in one line."""

    max_model_len: int | None
    how: str


@dataclass(frozen=True)
class ContextLength:
    max_model_len: int
    how: str  # one line, recorded in the manifest

    def record(self) -> ContextRecord:
        return {"max_model_len": self.max_model_len, "how": self.how}


def round_up(tokens: int, step: int = ROUND_TO) -> int:
    return max(step, -(-tokens // step) * step)


def choose_context_length(renderer: Any, sessions: list[Any], max_new_tokens: int,
                          model_limit: int | None) -> ContextLength | None:
    needs = _needs(renderer, sessions)
    if not needs:
        return None
    worst = max(needs, key=lambda need: need.tokens(max_new_tokens))
    needed = worst.tokens(max_new_tokens)
    value = round_up(needed)
    how = (f"computed: the longest gold-path prompt need, {worst.session_id} task {worst.task_idx}: "
           f"{worst.prompt_tokens} prompt tokens + {worst.steps} step(s) x {max_new_tokens} new tokens = "
           f"{needed}, rounded up to a multiple of {ROUND_TO}")
    if model_limit is not None and value > model_limit:
        value = model_limit
        how += f", capped at the model's maximum {model_limit}"
    return ContextLength(value, how)


def _needs(renderer: Any, sessions: list[Any]) -> list[TaskNeed]:
    from wtb_local.benchmark.evaluator.episode import session_episodes  # deferred: start-up

    tasks: list[tuple[str, int, int]] = []
    texts: list[str] = []
    for session in sessions:
        for episode in session_episodes(session):
            messages, tools = episode.request()
            while not episode.done:  # the gold path; its last prompt is its longest
                messages, tools = episode.request()
                episode.accept(episode.gold_reply())
            try:
                texts.append(renderer.render_text(messages, tools))
            except Exception:  # noqa: BLE001, S112 - a template that raises here fails that step at run time
                continue
            tasks.append((session.id, episode.task_idx, max(episode.step, 1)))
    # One batched tokenizer call (the renderer's own encoding, without special tokens): the fast
    # tokenizers spread a batch over the cores; the whole release is 1,024 long prompts.
    lengths = [len(ids) for ids in renderer.tokenizer(texts, add_special_tokens=False)["input_ids"]] if texts else []
    return [TaskNeed(sid, idx, n, steps) for (sid, idx, steps), n in zip(tasks, lengths, strict=True)]


def model_context_limit(model: str, revision: str | None, trust_remote_code: bool) -> int | None:
    """The smallest context window the model's config states (its text config for multimodal models);
    None when the config cannot be read or states none."""
    try:
        from transformers import AutoConfig

        config = AutoConfig.from_pretrained(model, revision=revision, trust_remote_code=trust_remote_code)
    except Exception:  # noqa: BLE001 - then vLLM's own check decides, as before
        return None
    config = getattr(config, "text_config", None) or config
    values = [getattr(config, key, None) for key in _WINDOW_KEYS]
    windows = [int(v) for v in values if isinstance(v, int) and v > 0]
    return min(windows) if windows else None


def engine_context_length(values: dict[str, Any], renderer: Any,
                          sessions: list[Any]) -> tuple[ContextRecord, int | None]:
    """For a run that starts its own engine: the context window it gets and how it was chosen (recorded in
    the manifest), and the window to ask for when --max-model-len is not given (None: the engine's own)."""
    if values["max_model_len"] is not None:
        return {"max_model_len": values["max_model_len"], "how": "--max-model-len"}, None
    limit = model_context_limit(values["model"], values["revision"], values["trust_remote_code"])
    chosen = choose_context_length(renderer, sessions, values["max_new_tokens"], limit)
    if chosen is None:
        return {"max_model_len": None,
                "how": "vLLM's default (the model's maximum): no prompt could be rendered"}, None
    return chosen.record(), chosen.max_model_len
