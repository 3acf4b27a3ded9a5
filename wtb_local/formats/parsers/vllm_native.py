"""`--parser vllm:NAME`: a completion read by the installed vLLM's own tool parser of that name.

Any name in vLLM's `ToolParserManager` registry works, through vLLM's public parser interface: the parser
class is built with the run's tokenizer (as vLLM loads it, `vllm.tokenizers.get_tokenizer`) and the step's
tools, the request is a `ChatCompletionRequest` carrying those tools (`adjust_request` applied, as vLLM's
server does before generating), and `extract_tool_calls(model_output, request)` reads the text. Its calls
and content become a `ParseResult` the way a chat server's reply does (engines/openai_chat.py): call ids
are left to the evaluator, arguments kept as vLLM wrote them, blank content is no content.

What vLLM's server does around the tool parser is done here the way our own parsers do it, so a difference
with our parser of the same name is the tool parser's: end-of-turn tokens are stripped off the end (vLLM's
engine stops before them), and a leading reasoning block is split off with the mirrored parser's reasoning
markup, as our parser splits it (vLLM's separate reasoning parser of the family; `<think>` where we mirror no
parser of that name): its tags, Gemma 4's channels, and an unclosed block ending at the family's first call
marker, honouring the run's `thinking` option. vLLM is imported only when such a parser is built (docs/parsers-and-templates.md, "vLLM's own
parsers"). A vLLM parser that raises is an error of the parser, never a model outcome: `VllmParserCrash`
reaches the step driver through `parsers.parse_reply`, which makes it an internal error (docs/reliability.md).
"""

from __future__ import annotations

import inspect
import json
from functools import cache
from importlib.util import find_spec
from typing import Any, ClassVar, cast

from wtb_local.contract.messages import FunctionSchema, ToolSchema
from wtb_local.contract.schema import ParsedCall, ParseResult
from wtb_local.formats.end_of_turn import strip_end_of_turn
from wtb_local.formats.parsers import gemma4, kimi_k3, minimax_m3, seed_oss
from wtb_local.formats.parsers._common import split_reasoning
from wtb_local.formats.parsers.base import ToolParser
from wtb_local.formats.parsers.registry import parser_classes

PREFIX = "vllm:"
# The reasoning markup of the families whose parsers do not expose it as `think_open`/`think_close`/`open_tag`
# (the hermes family does): (opening tag, closing tag, the call markers that end an unclosed block), as those
# parsers split reasoning.
_REASONING_MARKUP: dict[str, tuple[str, str, tuple[str, ...]]] = {
    "qwen3_coder": ("<think>", "</think>", ("<tool_call>", "<function=")),
    "minimax_m3": (minimax_m3.THINK_OPEN, minimax_m3.THINK_CLOSE, (minimax_m3.OPEN, f"{minimax_m3.NS}<invoke")),
    "seed_oss": ("<seed:think>", "</seed:think>", (seed_oss.OPEN,)),
    # Kimi-K3's channels: a completion opening a channel itself did not start inside the pre-filled one
    "kimi_k3": (kimi_k3.open_tag("think"), kimi_k3.close_tag("think"), (kimi_k3.OPEN,)),
}


class VllmParserSetupError(ValueError):
    """A vLLM parser that cannot be built for this run (vLLM missing, unknown name, tokenizer lacking what
    the parser needs): one line, raised at set-up."""


class VllmParserCrash(RuntimeError):
    """vLLM's parser raised while reading a completion: an error of the parser, not of the model."""


def is_vllm_parser(name: str | None) -> bool:
    return bool(name) and str(name).startswith(PREFIX)


def vllm_name(name: str) -> str:
    return name[len(PREFIX):] if is_vllm_parser(name) else name


def installed() -> bool:

    return find_spec("vllm") is not None


@cache
def registered_names() -> tuple[str, ...]:
    """Every tool parser name the installed vLLM registers (imports vLLM)."""
    from vllm.tool_parsers import ToolParserManager

    return tuple(ToolParserManager.list_registered())


def version() -> str | None:
    from wtb_local.contract.vllm_release import installed_version  # deferred: start-up

    return installed_version()


def load_tokenizer(model: str | None, *, revision: str | None = None, trust_remote_code: bool = False) -> Any:
    """The run's tokenizer as vLLM loads it for its parsers; VllmParserSetupError when there is none."""
    if not model:
        raise VllmParserSetupError("needs the run's tokenizer: pass --model (a checkpoint or tokenizer folder)")
    try:
        from vllm.tokenizers import get_tokenizer

        return get_tokenizer(model, revision=revision, trust_remote_code=trust_remote_code)
    except Exception as exc:  # noqa: BLE001 - hub, file and tokenizer errors all mean "no tokenizer"
        raise VllmParserSetupError(f"needs the run's tokenizer; vLLM cannot load it from {model}: "
                                   f"{' '.join(str(exc).split())[:300]}") from None


def build(name: str, tokenizer: Any, **options: Any) -> VllmToolParser:
    """The parser `vllm:NAME` reading with `tokenizer`; VllmParserSetupError (one line) when vLLM is not
    installed, has no parser of that name, or the parser refuses the tokenizer (a special token missing from
    its vocabulary, ...)."""
    short = vllm_name(name)
    if not installed():
        raise VllmParserSetupError(f"--parser {PREFIX}{short} needs vLLM installed (pip install -e \".[vllm]\")")
    if short not in registered_names():
        raise VllmParserSetupError(f"vLLM {version()} has no tool parser {short!r}; its parsers: "
                                   f"{', '.join(registered_names())}")
    if tokenizer is None:
        raise VllmParserSetupError(f"--parser {PREFIX}{short} needs the run's tokenizer (vLLM's parsers read "
                                   "special tokens from its vocabulary); pass --model with a tokenizer on disk")
    cls = _variant(short, tokenizer)
    parser = cls(**options)
    try:
        parser.instance(None)  # vLLM's parsers check their special tokens when built
    except Exception as exc:  # noqa: BLE001 - one line naming what the tokenizer lacks
        raise VllmParserSetupError(f"vLLM {version()}'s parser {short!r} refuses the run's tokenizer "
                                   f"({getattr(tokenizer, 'name_or_path', '?')}): "
                                   f"{type(exc).__name__}: {' '.join(str(exc).split())[:300]}") from None
    return parser


def _variant(short: str, tokenizer: Any) -> type[VllmToolParser]:
    # A class per (name, tokenizer), so `type(parser)(**options)` builds a sibling as for our own parsers
    # (the per-step reasoning pre-fill, the calls counted inside reasoning: formats/parsers/prefill.py, __init__).
    return type(f"VllmToolParser_{short}", (VllmToolParser,),
                {"name": PREFIX + short, "vllm_name": short, "tokenizer": tokenizer})


def _openai_tool(tool: ToolSchema | FunctionSchema) -> ToolSchema:
    """A tool in the chat API's shape, `{"type": "function", "function": {...}}` (a bare function
    description, as some sources write tools, is wrapped)."""
    if "function" in tool or "name" not in tool:
        return cast(ToolSchema, tool)
    return {"type": "function", "function": tool}


def _mirror(short: str) -> type[ToolParser] | None:
    """Our parser of that vLLM name: the registry's own name, else the one parser mirroring it."""

    classes = parser_classes()
    if short in classes:
        return classes[short]
    owners = [cls for cls in classes.values() if short in cls.vllm_names]
    return owners[0] if len(owners) == 1 else None


class VllmToolParser(ToolParser):
    """vLLM's parser `vllm_name`, read through its public interface (see the module docstring)."""

    vllm_name: ClassVar[str]
    tokenizer: ClassVar[Any]
    implementation: ClassVar[str] = "vllm"

    @property
    def version(self) -> str | None:
        return version()

    def instance(self, tools: list[Any] | None) -> Any:
        from vllm.tool_parsers import ToolParserManager

        cls = ToolParserManager.get_tool_parser(self.vllm_name)
        takes_tools = "tools" in inspect.signature(cls.__init__).parameters
        return cls(self.tokenizer, tools=tools) if takes_tools else cls(self.tokenizer)

    def parse(self, text: str, *, tools: list[ToolSchema] | None = None,
              finish_reason: str | None = None) -> ParseResult:
        text = strip_end_of_turn(text or "")
        reasoning, rest = self._split_reasoning(text)
        try:
            from vllm.entrypoints.openai.chat_completion.protocol import ChatCompletionRequest

            request = ChatCompletionRequest(model="wtb-local", messages=[{"role": "user", "content": ""}],
                                            tools=[_openai_tool(tool) for tool in tools or []] or None)
            parser = self.instance(request.tools)
            request = parser.adjust_request(request)
            extracted = parser.extract_tool_calls(rest, request)
        except Exception as exc:
            raise VllmParserCrash(f"vLLM {self.version} parser {self.vllm_name!r} raised "
                                  f"{type(exc).__name__}: {' '.join(str(exc).split())[:300]}") from exc
        calls = []
        if extracted.tools_called:
            for call in extracted.tool_calls:
                arguments = call.function.arguments
                if not isinstance(arguments, str):  # as a chat server's reply is read (openai_chat.py)
                    arguments = json.dumps(arguments, ensure_ascii=False)
                calls.append(ParsedCall(name=call.function.name, arguments=arguments))
        content = extracted.content if isinstance(extracted.content, str) else None
        return ParseResult(reasoning=reasoning.strip() or None if reasoning else None,
                           content=(content or "").strip() or None, tool_calls=calls)

    def _split_reasoning(self, text: str) -> tuple[str | None, str]:
        """(reasoning, the rest) as the mirrored parser splits them (vLLM's reasoning parser of the family)."""
        thinking = self.options.get("thinking")
        if self.vllm_name == "gemma4":
            return gemma4.split_channels(text, thinking)
        mirror = _mirror(self.vllm_name)
        opener = getattr(mirror, "open_tag", None)
        open_tag, close_tag, markers = _REASONING_MARKUP.get(self.vllm_name) or (
            getattr(mirror, "think_open", "<think>"), getattr(mirror, "think_close", "</think>"),
            (opener,) if isinstance(opener, str) else ())
        return split_reasoning(text, thinking=thinking, open_tag=open_tag, close_tag=close_tag, call_markers=markers)

    def format(self, content: str | None, tool_calls: list[ParsedCall], reasoning: str | None = None) -> str:
        """The mirrored parser's format (vLLM's parsers only read)."""
        mirror = _mirror(self.vllm_name)
        if mirror is None:
            raise ValueError(f"{self.name}: wtb_local has no parser writing vLLM's {self.vllm_name!r} format")
        return mirror(**{k: v for k, v in self.options.items() if k == "thinking"}).format(
            content, tool_calls, reasoning)
