"""`--parser sglang:NAME`: a completion read by SGLang's own function-call parser of that name
(`FunctionCallParser`, `tool_call_parser=NAME`: 0.5.23's 44 names).

SGLang pins another torch than vLLM and cannot share a venv with it, so it runs in its own venv: a small bridge
process (formats/parsers/sglang_bridge.py, JSON lines over stdin/stdout) is started once per run with that
venv's Python and answers every step; the run never imports SGLang. The Python is `WTB_SGLANG_PYTHON`, else
this interpreter when it can import SGLang (docs/parsers-and-templates.md, "SGLang's parsers").

As for `vllm:NAME` (vllm_native.py), what the server does around the parser is done as our parser of the
family does it: end-of-turn tokens stripped off the end, a leading reasoning block split off with the family's
markup (SGLang's server runs its own reasoning parser there). The step's tools are declared as the request's
tools (SGLang reads no call without tools, and keeps only calls naming one); calls keep the arguments as SGLang
wrote them; blank content is no content. A bridge that fails or a parser that raises is an error of the parser,
never a model outcome (`SglangParserCrash`; docs/reliability.md).
"""

from __future__ import annotations

import atexit
import json
import os
import subprocess
import sys
import threading
from collections.abc import Mapping
from functools import cache
from importlib.util import find_spec
from pathlib import Path
from typing import Any, ClassVar

from wtb_local.contract.messages import ToolSchema
from wtb_local.contract.schema import ParsedCall, ParseResult
from wtb_local.formats.end_of_turn import END_OF_TURN, strip_end_of_turn
from wtb_local.formats.parsers.base import ToolParser

PREFIX = "sglang:"
PYTHON_VAR = "WTB_SGLANG_PYTHON"
BRIDGE = Path(__file__).with_name("sglang_bridge.py")
# SGLang's parser names -> our parser of the same format (its reasoning markup, its `format`).
MIRRORS = {
    "apertus2509": "apertus", "cohere_command4": "cohere_command", "deepseekv3": "deepseek_v3",
    "deepseekv31": "deepseek_v31", "deepseekv32": "deepseek_v32", "deepseekv4": "deepseek_v4",
    "deepseekv41": "deepseek_v41", "gemma4": "gemma4", "gigachat3": "gigachat3", "glm": "glm45", "glm45": "glm45",
    "glm47": "glm47", "gpt-oss": "gpt_oss", "hermes": "hermes", "hunyuan": "hy_v3", "kimi_k2": "kimi_k2",
    "kimi_k3": "kimi_k3", "lfm2": "lfm2", "llama3": "llama3_json", "minicpm5": "minicpm5",
    "minimax-m2": "minimax_m2", "minimax-m3": "minimax_m3", "mistral": "mistral", "poolside_v1": "poolside_v1",
    "pythonic": "pythonic", "qwen": "hermes", "qwen25": "hermes", "qwen3_coder": "qwen3_coder",
    "step3p5": "step3p5",
    "beam": "beam", "dots": "dots", "gigachat35": "gigachat35", "inkling": "inkling", "interns1": "internlm",
    "iquest_q1": "iquest_q1", "k2_horizon": "k2_horizon", "ling3": "ling3", "mimo": "mimo", "muse": "muse_glimmer",
    "spark25": "spark25", "trinity": "trinity",
}

# End markers that close a call frame SGLang's detector reads: left on the text (stripped, as our parsers may,
# the last call of gpt-oss and of Beam (Harmony-like frames) is unclosed and gives no call; SGLang's tests keep it).
FRAME_CLOSERS = {"gpt-oss": "<|call|>", "beam": "<|call|>"}


class SglangParserSetupError(ValueError):
    """An SGLang parser that cannot be used for this run (no SGLang venv, unknown name): one line."""


class SglangParserCrash(RuntimeError):
    """SGLang's parser (or its bridge) failed while reading a completion: an error of the parser."""


def is_sglang_parser(name: str | None) -> bool:
    return bool(name) and str(name).startswith(PREFIX)


def sglang_name(name: str) -> str:
    return name[len(PREFIX):] if is_sglang_parser(name) else name


def python() -> str | None:
    """The Python that runs the bridge: WTB_SGLANG_PYTHON, else this one when it imports SGLang."""
    configured = os.environ.get(PYTHON_VAR)
    if configured:
        return configured
    return sys.executable if find_spec("sglang") is not None else None


class Bridge:
    """One bridge process: started on first use, its handshake read, requests answered one at a time."""

    def __init__(self, executable: str) -> None:
        self.executable = executable
        self._lock = threading.Lock()
        try:
            self._process = subprocess.Popen([executable, str(BRIDGE)], stdin=subprocess.PIPE,
                                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                                             encoding="utf-8", bufsize=1)
        except OSError as exc:
            raise SglangParserSetupError(f"{PYTHON_VAR}={executable} cannot be started: {exc}") from None
        hello = self._read()
        if hello is None or "names" not in hello:
            raise SglangParserSetupError(f"{executable} cannot import SGLang's function-call parser (run "
                                         f"{executable} {BRIDGE} to see why); set {PYTHON_VAR} to the Python of "
                                         "a venv with sglang installed (docs/parsers-and-templates.md)")
        self.version: str = hello["version"]
        self.names: tuple[str, ...] = tuple(hello["names"])
        atexit.register(self.close)

    def _read(self) -> dict[str, Any] | None:
        line = self._process.stdout.readline() if self._process.stdout else ""
        return json.loads(line) if line.strip() else None

    def ask(self, request: dict[str, Any]) -> dict[str, Any]:
        with self._lock:
            if self._process.poll() is not None or self._process.stdin is None:
                raise SglangParserCrash(f"the SGLang bridge ({self.executable}) has exited "
                                        f"(code {self._process.returncode})")
            self._process.stdin.write(json.dumps(request, ensure_ascii=False) + "\n")
            self._process.stdin.flush()
            answer = self._read()
        if answer is None:
            raise SglangParserCrash(f"the SGLang bridge ({self.executable}) ended without an answer")
        return answer

    def close(self) -> None:
        if self._process.poll() is None:
            if self._process.stdin:
                self._process.stdin.close()
            try:
                self._process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._process.kill()


@cache
def bridge(executable: str) -> Bridge:
    return Bridge(executable)


def build(name: str, **options: Any) -> SglangToolParser:
    """The parser `sglang:NAME`; SglangParserSetupError (one line) when no Python with SGLang is found or
    SGLang has no parser of that name."""
    short = sglang_name(name)
    executable = python()
    if executable is None:
        raise SglangParserSetupError(f"--parser {PREFIX}{short} needs SGLang in its own venv: set {PYTHON_VAR} to "
                                     "its Python (docs/parsers-and-templates.md, \"SGLang's parsers\")")
    found = bridge(executable)
    if short not in found.names:
        raise SglangParserSetupError(f"SGLang {found.version} has no function-call parser {short!r}; its parsers: "
                                     f"{', '.join(found.names)}")
    cls = type(f"SglangToolParser_{short}", (SglangToolParser,),
               {"name": PREFIX + short, "sglang_name": short, "executable": executable})
    return cls(**options)


def _openai_tool(tool: Mapping[str, Any]) -> Mapping[str, Any]:
    return tool if "function" in tool or "name" not in tool else {"type": "function", "function": tool}


class SglangToolParser(ToolParser):
    """SGLang's parser `sglang_name`, read through the bridge (see the module docstring)."""

    sglang_name: ClassVar[str]
    executable: ClassVar[str]
    implementation: ClassVar[str] = "sglang"

    @property
    def version(self) -> str | None:
        return bridge(self.executable).version

    def parse(self, text: str, *, tools: list[ToolSchema] | None = None,
              finish_reason: str | None = None) -> ParseResult:
        from wtb_local.formats.parsers.vllm_native import split_family_reasoning  # deferred: vLLM-free helper

        mirror = self._mirror()
        vllm_family = mirror.vllm_names[0] if mirror is not None and mirror.vllm_names else "hermes"
        reasoning, rest = split_family_reasoning(vllm_family, self._strip_end(text or ""),
                                                 self.options.get("thinking"))
        answer = bridge(self.executable).ask({"parser": self.sglang_name, "text": rest,
                                              "tools": [_openai_tool(t) for t in tools or []]})
        if "error" in answer:
            raise SglangParserCrash(f"SGLang {self.version} parser {self.sglang_name!r} raised {answer['error']}")
        calls = [ParsedCall(name=c["name"], arguments=c["parameters"] if isinstance(c["parameters"], str)
                            else json.dumps(c["parameters"], ensure_ascii=False)) for c in answer["calls"]]
        return ParseResult(reasoning=(reasoning or "").strip() or None,
                           content=(answer.get("content") or "").strip() or None, tool_calls=calls)

    def _strip_end(self, text: str) -> str:
        """The end-of-turn markers off the end, but the frame closer this detector reads (FRAME_CLOSERS)."""
        return strip_end_of_turn(text, [m for m in END_OF_TURN if m != FRAME_CLOSERS.get(self.sglang_name)])

    def _mirror(self) -> type[ToolParser] | None:
        from wtb_local.formats.parsers.registry import parser_classes  # deferred: the registry imports this

        return parser_classes().get(MIRRORS.get(self.sglang_name, ""))

    def format(self, content: str | None, tool_calls: list[ParsedCall], reasoning: str | None = None) -> str:
        """The mirrored parser's format (SGLang's parsers only read)."""
        mirror = self._mirror()
        if mirror is None:
            raise ValueError(f"{self.name}: wtb_local has no parser writing SGLang's {self.sglang_name!r} format")
        return mirror(**{k: v for k, v in self.options.items() if k == "thinking"}).format(
            content, tool_calls, reasoning)
