"""Whether two runs sent the same prompt for the same messages, when a factor that renders them differs.

The result file records each step's messages and tools, not the rendered prompt. Where two runs' prompt
factors differ (template, its kwargs, thinking mode, tokenizer), a template may still render the same
conversation to the same text (a default system line the dataset's own system message replaces, a
branch no message reaches). So the prompts are rendered again from what each run's manifest records
(model, revision, `--chat-template`, template kwargs, parser), as `run` renders them: the tokenizer must be
on disk (a local directory or the hub cache; nothing is downloaded), and the template the renderer
chooses must have the recorded hash. Where that is not possible the answer is None, with the reason.
"""

from __future__ import annotations

import json
from functools import cache
from typing import Any

from wtb_local.analysis.explain.runs import ExplainRun


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


@cache
def _renderer(model: str, revision: str | None, chat_template: str | None, kwargs: str, parser: str | None,
              trust_remote_code: bool) -> tuple[Any, str | None]:
    """(renderer, None) or (None, why not); loaded once per distinct recording."""
    from wtb_local.formats.rendering.renderer import PromptRenderer  # deferred: start-up
    from wtb_local.formats.rendering.templates import tokenizer_on_disk  # deferred: start-up

    if not tokenizer_on_disk(model, revision):
        return None, f"the tokenizer of {model} is not on disk"
    try:  # as a run loads a tokenizer it uses when on disk (run/setup/tokenizer.py)
        renderer = PromptRenderer.from_local(model, revision=revision, trust_remote_code=trust_remote_code,
                                             chat_template=chat_template, template_kwargs=json.loads(kwargs),
                                             parser=parser)
    except Exception as exc:  # noqa: BLE001 - a missing package or file: not re-rendered, and said why
        return None, f"cannot load the tokenizer of {model} ({type(exc).__name__})"
    return renderer, None


def run_renderer(run: ExplainRun) -> tuple[Any, str | None]:
    """The renderer the run's generation used, rebuilt from its manifest, or (None, why not)."""
    from wtb_local.benchmark.protocols import find_protocol  # deferred: start-up

    manifest = run.records.generation
    config = manifest.config
    protocol = find_protocol(manifest.protocol_name)
    if protocol is None or getattr(protocol, "reproduces_paper", False):
        return None, "the protocol renders with its own prompt builder"
    model = config.model
    recorded = config.template_sha256
    if not model or not recorded:
        return None, f"{run.label} records no rendered template"
    renderer, why = _renderer(model, config.resolved_revision or config.revision, config.chat_template,
                              json.dumps(config.template_kwargs or {}, sort_keys=True),
                              config.parser, bool(manifest.settings.trust_remote_code))
    if renderer is None:
        return None, why
    if getattr(renderer.choice, "sha256", None) != recorded:
        return None, f"the template loaded for {run.label} is not the one it recorded"
    return renderer, None


def same_prompt(a: ExplainRun, b: ExplainRun, entry: dict[str, Any]) -> tuple[bool | None, str]:
    """Whether the step's messages and tools (`entry`'s `inference_input`, the same in both runs) render to
    the same prompt in `a` and `b`; None when that cannot be told, with the reason."""
    inputs = _dict(entry.get("inference_input"))
    messages, tools = inputs.get("messages"), inputs.get("tools")
    if not isinstance(messages, list):
        return None, "the step records no messages"
    texts = []
    for run in (a, b):
        renderer, why = run_renderer(run)
        if renderer is None:
            return None, str(why)
        try:
            texts.append(renderer.render_text(messages, tools if isinstance(tools, list) else None))
        except Exception as exc:  # noqa: BLE001 - a template that raises on this step: not comparable
            return None, f"{run.label}'s template cannot render the step ({type(exc).__name__})"
    return texts[0] == texts[1], "re-rendered from the manifests"
