"""Find a chat template: the tokenizer's own, a shipped override by name, or a file path.

Override files live in `chat_templates/NAME.jinja` at the repository root (read through
wtb_local.contract.resources, also from a wheel). Each starts with a Jinja
comment whose `models:` line lists the model-id regexes (matched with `re.search` on the lowercased id,
`::variant` suffix stripped) that the override serves; the probe uses it as the fallback for them.

A file whose comment also has a `renderer:` line is a renderer: it writes the prompt layout of a family
trained on a Python encoder rather than on any Jinja template (DeepSeek-V3.2, V4, V4.1, Kimi-K3), as vLLM
renders those families whatever their tokenizer carries. A renderer is used for its models in place of the
tokenizer's template (docs/parsers-and-templates.md, "Renderers"); it is probed, hashed and recorded like
any template, under the source `renderer:NAME`.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from importlib.resources.abc import Traversable
from pathlib import Path

from wtb_local.formats.model_ids import normalize_model_id

_MODELS_LINE = re.compile(r"^\s*models:\s*(?P<patterns>.+?)\s*$", re.MULTILINE)
_RENDERER_LINE = re.compile(r"^\s*renderer:\s*(?P<what>.+?)\s*$", re.MULTILINE)
_LEADING_COMMENT = re.compile(r"\A\s*\{#(?P<body>.*?)#\}", re.DOTALL)


class TemplateError(ValueError):
    """A template could not be found, read or used."""


@dataclass(frozen=True)
class OverrideTemplate:
    name: str
    path: Traversable  # a Path, or a file inside a zip
    patterns: tuple[str, ...]
    renderer: str | None = None  # what a renderer follows (its `renderer:` line); None for an override

    @property
    def label(self) -> str:
        """The template source a run records: `renderer:NAME` or `override:NAME`."""
        return f"{'renderer' if self.renderer else 'override'}:{self.name}"

    def serves(self, model_id: str) -> bool:
        key = normalize_model_id(model_id)
        return any(re.search(pattern, key) for pattern in self.patterns)

    def text(self) -> str:
        return self.path.read_text(encoding="utf-8")


def chat_templates_dir() -> Traversable:
    """The shipped override folder."""
    from wtb_local.contract.resources import chat_templates_dir as shipped

    return shipped()


def template_sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def read_model_patterns(text: str, *, origin: str = "<template>") -> tuple[str, ...]:
    """The regexes of the `models:` line in the template's leading Jinja comment."""
    comment = _LEADING_COMMENT.match(text)
    found = _MODELS_LINE.search(comment.group("body")) if comment else None
    if found is None:
        raise TemplateError(f"{origin}: line 1: field 'models': no leading '{{# ... models: <regex>, ... #}}' comment")
    patterns = tuple(p.strip() for p in found.group("patterns").split(",") if p.strip())
    for pattern in patterns:
        try:
            re.compile(pattern)
        except re.error as exc:
            raise TemplateError(f"{origin}: field 'models': bad regex {pattern!r}: {exc}") from exc
    return patterns


def read_renderer(text: str) -> str | None:
    """The `renderer:` line of the template's leading Jinja comment (what the renderer follows), if any."""
    comment = _LEADING_COMMENT.match(text)
    found = _RENDERER_LINE.search(comment.group("body")) if comment else None
    return found.group("what") if found else None


def list_overrides(directory: Traversable | None = None) -> list[OverrideTemplate]:
    """Every override file (renderers included) with the model-id patterns it serves, sorted by name."""
    folder = directory or chat_templates_dir()
    overrides = []
    for path in sorted((p for p in folder.iterdir() if p.name.endswith(".jinja") and p.is_file()),
                       key=lambda p: p.name):
        text = path.read_text(encoding="utf-8")
        name = path.name[: -len(".jinja")]
        overrides.append(OverrideTemplate(name, path, read_model_patterns(text, origin=str(path)),
                                          read_renderer(text)))
    return overrides


def renderer_for(model_id: str, directory: Traversable | None = None) -> OverrideTemplate | None:
    """The renderer (by name, the first) that serves the model id: used in place of its tokenizer's template."""
    for override in list_overrides(directory):
        if override.renderer and override.serves(model_id):
            return override
    return None


def override_for(model_id: str, directory: Traversable | None = None) -> OverrideTemplate | None:
    """The first override (by name) whose patterns match the model id."""
    for override in list_overrides(directory):
        if override.serves(model_id):
            return override
    return None


def resolve_template(spec: str, directory: Traversable | None = None) -> tuple[str, str]:
    """`--chat-template` value -> (source label, template text).

    A value naming a shipped override (`llama3_json`) wins over a relative file of the same name; anything
    else must be a readable file.
    """
    folder = directory or chat_templates_dir()
    named = folder / f"{spec}.jinja"
    if "/" not in spec and not spec.endswith(".jinja") and named.is_file():
        text = named.read_text(encoding="utf-8")
        return f"{'renderer' if read_renderer(text) else 'override'}:{spec}", text
    path = Path(spec).expanduser()
    if path.is_file():
        return f"path:{path}", path.read_text(encoding="utf-8")
    names = ", ".join(o.name for o in list_overrides(folder)) or "none"
    raise TemplateError(f"--chat-template {spec!r}: neither a shipped override (known: {names}) nor a file")


# What transformers' AutoTokenizer loads a tokenizer from; a directory with none of them holds no tokenizer.
TOKENIZER_FILES = ("tokenizer_config.json", "tokenizer.json", "tokenizer.model", "vocab.json", "tiktoken.model")


def tokenizer_on_disk(model: str | None, revision: str | None) -> bool:
    """A local model directory holding a tokenizer, or a hub id whose tokenizer is in the local hub cache. A
    directory without tokenizer files (a folder named only for the run's name) has none to load."""
    if not model:
        return False
    if Path(model).is_dir():
        return any((Path(model) / name).is_file() for name in TOKENIZER_FILES)
    try:
        from huggingface_hub import try_to_load_from_cache

        return isinstance(try_to_load_from_cache(model, "tokenizer_config.json", revision=revision), str)
    except Exception:  # noqa: BLE001 - an id the hub library rejects is simply not on disk
        return False
