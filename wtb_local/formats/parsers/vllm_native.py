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

The server's decoding is honoured: `adjust_request` decides `skip_special_tokens` (vLLM 0.34 turns it off for
most parsers, 0.32 for fewer); where it stays on, the tokenizer's special tokens are removed from the text
before parsing, as vLLM's detokenizer drops them (our engines always decode with them).
`vllm:TOOL+REASONING` (e.g. `vllm:hunyuan_a13b+hunyuan_a13b`) runs the completion the way a server started
with `--tool-call-parser TOOL --reasoning-parser REASONING` does: vLLM's `ParserManager` composes the two,
and its `parse` splits the reasoning and reads the calls; the run's `thinking` option is passed as the
`enable_thinking`/`thinking` chat-template arguments (the prompt itself is not rendered here).
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
from wtb_local.formats.parsers import cohere_command, gemma4, kimi_k3, minimax_m3, plamo3, seed_oss
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
    # Command 4 and PLaMo 3 think in their own tags, not <think> (the default would swallow a thinking reply whole)
    "cohere_command3": (cohere_command.THINK_OPEN, cohere_command.THINK_CLOSE, (cohere_command.ACTION_OPEN,)),
    "plamo3": (plamo3.THINK_OPEN, plamo3.THINK_CLOSE, (plamo3.REQUESTS_OPEN, plamo3.REQUEST_OPEN)),
    # Kimi-K3's channels: a completion opening a channel itself did not start inside the pre-filled one
    "kimi_k3": (kimi_k3.open_tag("think"), kimi_k3.close_tag("think"), (kimi_k3.OPEN,)),
}


class VllmParserSetupError(ValueError):
    """A vLLM parser that cannot be built for this run (vLLM missing, unknown name, tokenizer lacking what
    the parser needs): one line, raised at set-up."""


class NoWrittenFormat(ValueError, NotImplementedError):
    """A vLLM parser without a wtb_local mirror: it reads, it writes nothing (format deviation detection then
    runs without the run's own format, formats/parsers/deviations.py)."""


class VllmParserCrash(RuntimeError):
    """vLLM's parser raised while reading a completion: an error of the parser, not of the model."""


def is_vllm_parser(name: str | None) -> bool:
    return bool(name) and str(name).startswith(PREFIX)


def vllm_name(name: str) -> str:
    """The tool parser's name: `hermes` for `vllm:hermes` and `vllm:hermes+qwen3`."""
    return (name[len(PREFIX):] if is_vllm_parser(name) else name).split("+", 1)[0]


def reasoning_name(name: str) -> str | None:
    """The reasoning parser of `vllm:TOOL+REASONING`, None without one."""
    return name.split("+", 1)[1] if is_vllm_parser(name) and "+" in name else None


def installed() -> bool:

    return find_spec("vllm") is not None


@cache
def registered_names() -> tuple[str, ...]:
    """Every tool parser name the installed vLLM registers (imports vLLM)."""
    from vllm.tool_parsers import ToolParserManager

    return tuple(ToolParserManager.list_registered())


@cache
def registered_reasoning_names() -> tuple[str, ...]:
    """Every reasoning parser name the installed vLLM registers (imports vLLM)."""
    from vllm.reasoning import ReasoningParserManager

    return tuple(ReasoningParserManager.list_registered())


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


def build(name: str, tokenizer: Any, *, server_decoded: bool = False, **options: Any) -> VllmToolParser:
    """The parser `vllm:NAME` reading with `tokenizer`; VllmParserSetupError (one line) when vLLM is not
    installed, has no parser of that name, or the parser refuses the tokenizer (a special token missing from
    its vocabulary, ...). `server_decoded`: the texts it reads are already what vLLM's server hands its
    parser (vLLM's own parser tests, the parity samples), so no special token is removed."""
    short, reasoning = vllm_name(name), reasoning_name(name)
    if not installed():
        raise VllmParserSetupError(f"--parser {PREFIX}{short} needs vLLM installed (pip install -e \".[vllm]\")")
    if short not in registered_names():
        raise VllmParserSetupError(f"vLLM {version()} has no tool parser {short!r}; its parsers: "
                                   f"{', '.join(registered_names())}")
    if reasoning is not None and reasoning not in registered_reasoning_names():
        raise VllmParserSetupError(f"vLLM {version()} has no reasoning parser {reasoning!r}; its reasoning "
                                   f"parsers: {', '.join(registered_reasoning_names())}")
    if tokenizer is None:
        raise VllmParserSetupError(f"--parser {PREFIX}{short} needs the run's tokenizer (vLLM's parsers read "
                                   "special tokens from its vocabulary); pass --model with a tokenizer on disk")
    cls = _variant(short, tokenizer, reasoning=reasoning, server_decoded=server_decoded)
    parser = cls(**options)
    try:
        parser.instance(None)  # vLLM's parsers check their special tokens when built
    except Exception as exc:  # noqa: BLE001 - one line naming what the tokenizer lacks
        raise VllmParserSetupError(f"vLLM {version()}'s parser {short!r} refuses the run's tokenizer "
                                   f"({getattr(tokenizer, 'name_or_path', '?')}): "
                                   f"{type(exc).__name__}: {' '.join(str(exc).split())[:300]}") from None
    return parser


def _variant(short: str, tokenizer: Any, *, reasoning: str | None = None,
             server_decoded: bool = False) -> type[VllmToolParser]:
    # A class per (name, tokenizer), so `type(parser)(**options)` builds a sibling as for our own parsers
    # (the per-step reasoning pre-fill, the calls counted inside reasoning: formats/parsers/prefill.py, __init__).
    name = PREFIX + short + (f"+{reasoning}" if reasoning else "")
    return type(f"VllmToolParser_{short}", (VllmToolParser,),
                {"name": name, "vllm_name": short, "reasoning_parser": reasoning, "tokenizer": tokenizer,
                 "server_decoded": server_decoded})


def _special_tokens(tokenizer: Any) -> tuple[str, ...]:
    """The tokenizer's special tokens, longest first: what vLLM's detokenizer drops with
    `skip_special_tokens` (the ids it skips are those of these strings)."""
    tokens = set(getattr(tokenizer, "all_special_tokens", None) or ())
    for added in (getattr(tokenizer, "added_tokens_decoder", None) or {}).values():
        if getattr(added, "special", False):
            tokens.add(str(added.content))
    return tuple(sorted((t for t in tokens if t), key=lambda t: (-len(t), t)))


def decoded(text: str, request: Any, tokenizer: Any) -> str:
    """`text` as vLLM's server hands it to the parser after `adjust_request`: without the special tokens when
    the request still skips them (the default)."""
    skip = getattr(request, "skip_special_tokens", True)
    if skip is False:  # None (0.34's unset field): the model's generation config, else True; ours sets none
        return text
    for token in _special_tokens(tokenizer):
        text = text.replace(token, "")
    return text


def _openai_tool(tool: ToolSchema | FunctionSchema) -> ToolSchema:
    """A tool in the chat API's shape, `{"type": "function", "function": {...}}` (a bare function
    description, as some sources write tools, is wrapped)."""
    if "function" in tool or "name" not in tool:
        return cast(ToolSchema, tool)
    return {"type": "function", "function": tool}


def split_family_reasoning(family: str, text: str, thinking: Any) -> tuple[str | None, str]:
    """(reasoning, the rest) as our parser mirroring vLLM's parser `family` splits them: its tags, Gemma 4's
    channels, an unclosed block ending at the family's first call marker (imports no vLLM)."""
    if family == "gemma4":
        return gemma4.split_channels(text, thinking)
    mirror = _mirror(family)
    opener = getattr(mirror, "open_tag", None)
    open_tag, close_tag, markers = _REASONING_MARKUP.get(family) or (
        getattr(mirror, "think_open", "<think>"), getattr(mirror, "think_close", "</think>"),
        (opener,) if isinstance(opener, str) else ())
    return split_reasoning(text, thinking=thinking, open_tag=open_tag, close_tag=close_tag, call_markers=markers)


def _call(name: str, arguments: Any) -> ParsedCall:
    if not isinstance(arguments, str):  # as a chat server's reply is read (openai_chat.py)
        arguments = json.dumps(arguments, ensure_ascii=False)
    return ParsedCall(name=name, arguments=arguments)


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
    reasoning_parser: ClassVar[str | None] = None
    tokenizer: ClassVar[Any]
    server_decoded: ClassVar[bool] = False  # our engines decode with every special token kept
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
        try:
            from vllm.entrypoints.openai.chat_completion.protocol import ChatCompletionRequest

            request = ChatCompletionRequest(model="wtb-local", messages=[{"role": "user", "content": ""}],
                                            tools=[_openai_tool(tool) for tool in tools or []] or None)
            if self.reasoning_parser:
                return self._parse_as_served(text, request)
            parser = self.instance(request.tools)
            request = parser.adjust_request(request)
        except Exception as exc:
            raise self._crash(exc) from exc
        reasoning, rest = self._split_reasoning(self._decoded(text, request))
        try:
            extracted = parser.extract_tool_calls(rest, request)
        except Exception as exc:
            raise self._crash(exc) from exc
        calls = []
        if extracted.tools_called:
            calls = [_call(call.function.name, call.function.arguments) for call in extracted.tool_calls]
        content = extracted.content if isinstance(extracted.content, str) else None
        return ParseResult(reasoning=reasoning.strip() or None if reasoning else None,
                           content=(content or "").strip() or None, tool_calls=calls)

    def _parse_as_served(self, text: str, request: Any) -> ParseResult:
        """vLLM's server path: the composed reasoning + tool parser (`ParserManager.get_parser`), its
        `adjust_request`, the decoded text, `parse(..., enable_auto_tools=True)`."""
        from vllm.parser.parser_manager import ParserManager

        thinking = self.options.get("thinking")
        kwargs = {} if thinking in (None, "per-step") else {"enable_thinking": bool(thinking),
                                                              "thinking": bool(thinking)}
        try:
            cls = ParserManager.get_parser(tool_parser_name=self.vllm_name, reasoning_parser_name=self.reasoning_parser,
                                           enable_auto_tools=True)
            if cls is None:  # only when neither name is given, which build() rules out
                raise RuntimeError("vLLM's ParserManager composed no parser")
            parser = cls(self.tokenizer, request.tools, chat_template_kwargs=kwargs)
            request = parser.adjust_request(request)
            if not request.tools:  # the server reads no call without tools; WildToolBench always declares them
                request.tool_choice = "auto"
            reasoning, content, calls = parser.parse(self._decoded(text, request), request, enable_auto_tools=True)
        except Exception as exc:
            raise self._crash(exc) from exc
        return ParseResult(reasoning=(reasoning or "").strip() or None, content=(content or "").strip() or None,
                           tool_calls=[_call(call.name, call.arguments) for call in calls or []])

    def _decoded(self, text: str, request: Any) -> str:
        return text if self.server_decoded else decoded(text, request, self.tokenizer)

    def _crash(self, exc: Exception) -> VllmParserCrash:
        which = self.vllm_name + (f"+{self.reasoning_parser}" if self.reasoning_parser else "")
        return VllmParserCrash(f"vLLM {self.version} parser {which!r} raised "
                               f"{type(exc).__name__}: {' '.join(str(exc).split())[:300]}")

    def _split_reasoning(self, text: str) -> tuple[str | None, str]:
        """(reasoning, the rest) as the mirrored parser splits them (vLLM's reasoning parser of the family)."""
        return split_family_reasoning(self.vllm_name, text, self.options.get("thinking"))

    def format(self, content: str | None, tool_calls: list[ParsedCall], reasoning: str | None = None) -> str:
        """The mirrored parser's format (vLLM's parsers only read)."""
        mirror = _mirror(self.vllm_name)
        if mirror is None:
            raise NoWrittenFormat(f"{self.name}: wtb_local has no parser writing vLLM's {self.vllm_name!r} format")
        return mirror(**{k: v for k, v in self.options.items() if k == "thinking"}).format(
            content, tool_calls, reasoning)
