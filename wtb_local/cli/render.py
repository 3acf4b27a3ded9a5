"""`render --model M`: print the exact prompt a model is sent for one step of one task.

Steps beyond 0 are reached by replaying the gold path's replies (the oracle's choices), so the prompt is
the one a model that has been right so far would see. The prompt goes to stdout byte for byte; the
template choice (source, hash, adaptation, reason) goes to stderr.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from wtb_local.benchmark.protocols import protocol_named, protocol_names
from wtb_local.contract.messages import ChatMessage, ToolSchema

if TYPE_CHECKING:  # the evaluator is imported when the command runs (start-up, --help)
    from wtb_local.benchmark.evaluator.episode import Episode


@click.command(name="render")
@click.option("--model", required=True, envvar="WTB_MODEL", help="Hugging Face model id or local directory.")
@click.option("--session", "session_id", envvar="WTB_SESSION",
              help="Session id (wild_tool_bench_N) or its number N (default: the first session).")
@click.option("--task", type=click.IntRange(min=0), default=0, show_default=True, envvar="WTB_TASK",
              help="Task index inside the session.")
@click.option("--step", type=click.IntRange(min=0), default=0, show_default=True, envvar="WTB_STEP",
              help="Step of the task; earlier steps are answered with the gold replies.")
@click.option("--dataset", default="sample", show_default=True, envvar="WTB_DATASET",
              help="A dataset path, `sample` or `release`.")
@click.option("--chat-template", envvar="WTB_CHAT_TEMPLATE",
              help="Override template: a name from chat_templates/ or a .jinja path.")
@click.option("--thinking/--no-thinking", default=None, envvar="WTB_THINKING",
              help="Set the family's thinking switch (default: the template's own default).")
@click.option("--template-kwarg", "template_kwarg", multiple=True, envvar="WTB_TEMPLATE_KWARG",
              help="KEY=VALUE passed to the chat template (VALUE parsed as JSON when it parses). Repeatable.")
@click.option("--parser", envvar="WTB_PARSER", metavar="NAME",
              help="Tool-call parser the template probe reads past calls back with (default: auto-selected).")
@click.option("--revision", envvar="WTB_REVISION", help="Model revision (branch, tag or commit).")
@click.option("--trust-remote-code", is_flag=True, default=False, envvar="WTB_TRUST_REMOTE_CODE")
@click.option("--protocol", type=click.Choice(protocol_names()), default="release", show_default=True,
              envvar="WTB_PROTOCOL", help="paper: the paper harness's conversation and the family's prompt builder.")
def render(model: str, session_id: str | None, task: int, step: int, dataset: str, chat_template: str | None,
           thinking: bool | None, template_kwarg: tuple[str, ...], parser: str | None, revision: str | None,
           trust_remote_code: bool, protocol: str) -> None:
    """Print the prompt MODEL is given for one step (stdout) and the template choice (stderr)."""
    from wtb_local.benchmark.dataset import load_dataset  # deferred: start-up (--help)
    from wtb_local.engines import preflight
    from wtb_local.formats.rendering.kwargs import parse_template_kwargs  # deferred: start-up (--help)

    try:  # cheap checks first: transformers importable, the hub reachable when a hub id is read
        preflight.require_packages("render", preflight.RENDER_PACKAGES)
    except ValueError as exc:
        raise click.ClickException(str(exc)) from None
    try:
        preflight.require_hub(model, revision)
    except ValueError as exc:
        # a model not on disk: render reads only its tokenizer's files, so a user may fetch just those
        needs = ("" if Path(model).expanduser().is_dir() or preflight.in_hub_cache(model, revision) else
                 " (render needs only its tokenizer files: tokenizer.json, tokenizer_config.json and the chat "
                 "template, not its weights)")
        raise click.ClickException(f"{exc}{needs}") from None
    from wtb_local.formats.rendering.renderer import PromptRenderer  # deferred: start-up (--help)

    try:
        kwargs = parse_template_kwargs(template_kwarg)
        sessions = load_dataset(dataset)  # `release` that cannot be fetched is a one-line error
        messages, tools = _step_request(sessions, session_id, task, step, protocol_named(protocol), model)
    except ValueError as exc:  # DatasetError included
        raise click.ClickException(str(exc)) from None
    try:
        renderer = PromptRenderer.from_pretrained(model, revision=revision, trust_remote_code=trust_remote_code,
                                                  chat_template=chat_template, template_kwargs=kwargs,
                                                  thinking=thinking, parser=parser)
        renderer = protocol_named(protocol).step_renderer(renderer, model, chat_template_given=bool(chat_template))
        rendered = renderer.render(messages, tools)
    except ValueError as exc:  # TemplateError, --thinking without a switch, a tokenizer transformers rejects
        # transformers' messages span several lines; the CLI's errors are one line.
        raise click.ClickException(" ".join(str(exc).split())) from None
    except OSError as exc:  # tokenizer files missing or unreadable, hub unreachable offline
        raise click.ClickException(f"{model}: cannot load the tokenizer: {' '.join(str(exc).split())}") from None

    sys.stdout.write(rendered.text)
    sys.stdout.flush()
    choice = renderer.choice
    click.echo("", err=True)
    click.echo(f"template: {choice.source} sha256={choice.sha256}", err=True)
    if hasattr(choice, "adaptation"):
        click.echo(f"adaptation: {choice.adaptation.label()}", err=True)
    click.echo(f"reason: {choice.reason}", err=True)
    for problem in getattr(choice, "problems", []):
        click.echo(f"rejected: {problem}", err=True)
    if renderer.template_kwargs:
        click.echo(f"template kwargs: {renderer.template_kwargs}", err=True)
    click.echo(f"prompt tokens: {len(rendered.token_ids)}", err=True)
    foreign = foreign_template(model, chat_template)  # the id given, whichever protocol renders
    if foreign:
        click.echo(f"warning: {foreign}", err=True)


def _step_request(sessions: list[Any], session_id: str | None, task: int, step: int, protocol: Any,
                  model: str) -> tuple[list[ChatMessage], list[ToolSchema]]:
    """The request of one step on the gold path, in the protocol's conversation for `model`."""
    session = _find_session(sessions, session_id)
    episodes = protocol.step_episodes(session, model)
    if task >= len(episodes):
        raise ValueError(f"--task {task}: session {session.id} has {len(episodes)} tasks (0..{len(episodes) - 1})")
    episode: Episode = episodes[task]  # PaperEpisode included
    for taken in range(step):
        if episode.done:
            raise ValueError(f"--step {step}: task {task} of {session.id} ends after {taken} steps on the gold path")
        episode.accept(episode.gold_reply())
    if episode.done:
        raise ValueError(f"--step {step}: task {task} of {session.id} ends after {step} steps on the gold path")
    return episode.request()


def _find_session(sessions: list[Any], session_id: str | None) -> Any:
    if not sessions:
        raise ValueError("the dataset has no sessions")
    if session_id is None:
        return sessions[0]
    for session in sessions:
        if session.id == session_id or (session_id.isdigit() and session.index == int(session_id)):
            return session
    raise ValueError(f"--session {session_id}: no such session in the dataset")


def foreign_template(model_id: str, chat_template: str | None) -> str | None:
    """A shipped template named with --chat-template that is written for other models than `model_id`: the
    prompt is then tokenised with this model's tokenizer, which those models do not use (one line)."""
    if not chat_template:
        return None
    from wtb_local.formats.rendering.templates import list_overrides  # deferred: start-up (--help)

    named = next((o for o in list_overrides() if o.name == chat_template), None)
    if named is None or named.serves(model_id):
        return None
    return (f"--chat-template {chat_template} is written for other models (ids matching "
            f"{', '.join(named.patterns)}); the prompt is tokenised with {model_id}'s tokenizer, so the token ids "
            "and the count are not what those models get")
