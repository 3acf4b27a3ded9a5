"""Per-family rules of the paper harness (paper-harness.md §1.2, §1.5, §2): how the canonical
conversation (history.py) becomes the messages, tools and template kwargs a family's own chat template
receives, how many tokens are generated and whether sampling is on, how live tool results are shaped, and
which parse rule reads the output (parse_rules.py).

Families the harness documents: qwen (Qwen2.5, §2.1), llama (Llama 3.x, §2.2), hammer (Hammer2.1, §2.3),
toolace (§2.4), watt (§2.5), xlam2 (§2.7), gorilla (§2.10), fcm (functionary, §2.11); ChatGLM (§2.8) and
xLAM v1 (§2.6) hand-build prompts whose texts the description only paraphrases, so they take the generic
rule. Families it does not run (Qwen3, GLM-4.5, Kimi-K2, DeepSeek,
...) take the nearest documented rule, marked `documented=False` with the reason; the manifest and report
say so.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any, cast

from typing_extensions import TypedDict

from wtb_local.benchmark.protocols.dates import DATE_MARKER, with_date
from wtb_local.benchmark.protocols.history import CURRENT_TASK_KEY
from wtb_local.contract.messages import ChatMessage, FunctionSchema, ToolCall, ToolSchema

QWEN_SYSTEM = "You are Qwen, created by Alibaba Cloud. You are a helpful assistant."
# The ToolACE / watt-tool model-card prompt (§2.4): its structure, the Python repr of the functions and the
# 8-space indentation of ToolACE's copy are documented; the wording follows the model card.
_TOOLACE_LINES = (
    "You are an expert in composing functions. You are given a question and a set of possible functions. ",
    "Based on the question, you will need to make one or more function/tool calls to achieve the purpose. ",
    ("If none of the function can be used, point it out. If the given question lacks the parameters required "
     "by the function,"),
    "also point it out. You should only return the function call in tools call sections.",
    "",
    ("If you decide to invoke any of the function(s), you MUST put it in the format of "
     "[func_name1(params_name1=params_value1, params_name2=params_value2...), func_name2(params)]"),
    "You SHOULD NOT include any other text in the response.",
    "Here is a list of functions in JSON format that you can invoke.",
    "{functions}",
    "",
)


@dataclass(frozen=True)
class FamilyRule:
    """One family's protocol settings; `documented` False means inferred (with `source` saying from what)."""

    name: str
    documented: bool
    source: str
    max_new_tokens: int
    sampling: str  # "checkpoint default" (the generation_config) or "greedy"
    tool_results: str  # live results: "per_call" (continue_tool_message=True) or "array" (§1.5)
    parse_rule: str
    native_parser: str  # the project parser whose `format` writes this family's replies (oracle)

    def describe(self) -> dict[str, Any]:
        return asdict(self)


RULES: dict[str, FamilyRule] = {
    "qwen": FamilyRule("qwen", True, "paper-harness.md §1.2, §2.1 (Qwen2.5-Instruct)", 512,
                       "checkpoint default", "per_call", "qwen", "hermes"),
    "llama": FamilyRule("llama", True, "paper-harness.md §1.2, §2.2 (Llama 3.1/3.2/3.3)", 1024,
                        "checkpoint default", "per_call", "llama", "llama3_json"),
    "hammer": FamilyRule("hammer", True, "paper-harness.md §1.2, §2.3 (Hammer2.1)", 128,
                         "checkpoint default", "array", "hammer", "hammer"),
    "toolace": FamilyRule("toolace", True, "paper-harness.md §1.2, §2.4 (ToolACE, ToolACE-2)", 512,
                          "greedy", "array", "pythonic", "pythonic"),
    "watt": FamilyRule("watt", True, "paper-harness.md §1.2, §2.5 (watt-tool)", 2048,
                       "greedy", "per_call", "pythonic", "pythonic"),
    "xlam2": FamilyRule("xlam2", True, "paper-harness.md §1.2, §2.7 (xLAM-2)", 256,
                        "checkpoint default", "array", "xlam2", "xlam"),
    "fcm": FamilyRule("fcm", True, "paper-harness.md §1.2, §2.11 (functionary-medium-v3.1)", 512,
                      "checkpoint default", "per_call", "fcm", "native"),
    "gorilla": FamilyRule("gorilla", True, "paper-harness.md §1.2, §2.10 (gorilla-openfunctions-v2)", 512,
                          "greedy", "array", "gorilla", "native"),
    "qwen3": FamilyRule("qwen3", False, "inferred: §2.1 says Qwen3 would go through the Qwen path "
                        "(listed, not wired); thinking text stays in the content", 512,
                        "checkpoint default", "per_call", "qwen", "hermes"),
    "generic": FamilyRule("generic", False, "inferred: the harness's default handle behaviour (§1.4 "
                          "system date, §1.5 per-call results, 512 tokens, checkpoint sampling) with the "
                          "family's native parser; think text kept as content, a broken call read as text",
                          512, "checkpoint default", "per_call", "native", "native"),
}

# model id (lowercased) -> family; first match wins
_PATTERNS: tuple[tuple[str, str], ...] = (
    (r"hammer", "hammer"),
    (r"toolace", "toolace"),
    (r"watt", "watt"),
    (r"xlam-2", "xlam2"),
    (r"functionary", "fcm"),
    (r"gorilla", "gorilla"),  # xLAM v1 (§2.6) is in none of the paper's tables: generic
    (r"qwen3|qwq", "qwen3"),
    (r"qwen2\.5|qwen2-", "qwen"),
    (r"llama-?3", "llama"),
)


def family_for(model_id: str) -> FamilyRule:
    """The family rule of a model id; ids matching no documented family get the generic (inferred) rule."""
    lowered = (model_id or "").lower()
    for pattern, name in _PATTERNS:
        if re.search(pattern, lowered):
            return RULES[name]
    return RULES["generic"]


# --- message shaping ------------------------------------------------------------------------------------

def _unwrapped(tools: list[ToolSchema]) -> list[FunctionSchema]:
    # a tool given without its wrapper passes as it is
    return [tool["function"] if "function" in tool else cast(FunctionSchema, tool) for tool in tools]


def _dict_arguments(arguments: Any) -> Any:
    if isinstance(arguments, str):
        try:
            return json.loads(arguments)
        except ValueError:
            return arguments
    return arguments


def _with_dict_arguments(call: ToolCall) -> ToolCall:
    """A call with its arguments decoded (the handles keep dict arguments), its id kept when it has one."""
    function = call["function"]
    shaped: ToolCall = {"type": "function",
                        "function": {"name": function["name"], "arguments": _dict_arguments(function["arguments"])}}
    if "id" in call:
        shaped["id"] = call["id"]
    return shaped


def _date_of(messages: list[ChatMessage]) -> tuple[str, list[ChatMessage]]:
    """The date carried by the canonical system message, and the messages after it."""
    first: ChatMessage = messages[0] if messages else {"role": ""}
    if first.get("role") == "system" and str(first.get("content", "")).startswith(DATE_MARKER):
        return first["content"][len(DATE_MARKER):], messages[1:]
    raise ValueError("paper protocol: the conversation does not start with its Current Date system message")


def _clean(message: ChatMessage) -> ChatMessage:
    clean = message.copy()
    clean.pop(CURRENT_TASK_KEY, None)
    return clean


def _append_date_to_task(messages: list[ChatMessage], date: str) -> None:
    for message in messages:
        if message.get(CURRENT_TASK_KEY):
            message["content"] = f"{message['content']}\n\n{DATE_MARKER}{date}"


def _call_names(message: ChatMessage) -> dict[Any, str]:
    return {call.get("id"): call["function"]["name"] for call in message.get("tool_calls") or []}


def _tool_runs(messages: list[ChatMessage]) -> list[ChatMessage]:
    """Consecutive live tool messages after an assistant call turn are reversed and named by id lookup
    (§2: the id-lookup handles walk backwards from the end; the name is the model's call with that id)."""
    out: list[ChatMessage] = []
    i = 0
    while i < len(messages):
        message = messages[i]
        if message.get("role") == "tool" and message.get("tool_call_id") is not None:
            run = []
            while i < len(messages) and messages[i].get("role") == "tool" and messages[i].get("tool_call_id") is not None:
                run.append(messages[i])
                i += 1
            names = {}
            for previous in reversed(out):
                if previous.get("role") == "assistant" and previous.get("tool_calls"):
                    names = _call_names(previous)
                    break
            for tool in reversed(run):
                out.append({"role": "tool", "name": names.get(tool["tool_call_id"], ""), "content": tool["content"]})
            continue
        out.append(message)
        i += 1
    return out


class _NamedResult(TypedDict):
    """A live result named by its call, as the hammer and toolace handles list them."""

    name: Any
    results: Any


def _named_results(observations: list[Any], calls: list[ToolCall]) -> list[_NamedResult]:
    return [{"name": call["function"]["name"], "results": obs} for call, obs in zip(calls, observations)]


def _python_value(value: Any) -> str:
    if value is None:
        raise ValueError("a None argument cannot be written as a Python call (the harness errors, §2.4)")
    if isinstance(value, str):
        return f'"{value}"'  # no escaping (§2.4)
    return repr(value)  # bools print True/False (§2.4)


def python_calls(calls: list[ToolCall]) -> str:
    """`[fn(a="x", n=3, flag=True)]` for ToolACE/watt histories (§2.4)."""
    parts = []
    for call in calls:
        arguments = _dict_arguments(call["function"]["arguments"]) or {}
        inner = ", ".join(f"{key}={_python_value(value)}" for key, value in arguments.items())
        parts.append(f"{call['function']['name']}({inner})")
    return "[" + ", ".join(parts) + "]"


def toolace_system(tools: list[ToolSchema], *, indent: bool) -> str:
    lines = [line.replace("{functions}", str(_unwrapped(tools))) for line in _TOOLACE_LINES]
    head, rest = lines[0], lines[1:]
    pad = " " * 8 if indent else ""
    return "\n".join([head, *(pad + line if line else line for line in rest)])


# (messages, the tools the template gets: wrapped, unwrapped or none, the template keyword arguments)
Built = tuple[list[ChatMessage], list[ToolSchema] | list[FunctionSchema] | None, dict[str, str]]


def build_qwen(messages: list[ChatMessage], tools: list[ToolSchema]) -> Built:
    date, rest = _date_of(messages)
    body = [_clean(m) for m in rest]
    for m in body:
        if m.get("tool_calls"):
            m["tool_calls"] = [_with_dict_arguments(c) for c in m["tool_calls"]]
    system: ChatMessage = {"role": "system", "content": with_date(QWEN_SYSTEM, date)}
    return [system, *_tool_runs(body)], tools, {}


def build_llama(messages: list[ChatMessage], tools: list[ToolSchema]) -> Built:
    date, rest = _date_of(messages)
    body = _tool_runs([_clean(m) for m in rest])
    return body, _unwrapped(tools), {"date_string": date}


def build_hammer(messages: list[ChatMessage], tools: list[ToolSchema]) -> Built:
    date, rest = _date_of(messages)
    out: list[ChatMessage] = [{"role": "system", "content": DATE_MARKER + date}]
    last_calls: list[ToolCall] = []
    for message in (_clean(m) for m in rest):
        if message.get("role") == "assistant" and message.get("tool_calls"):
            last_calls = message["tool_calls"]
            listing = [{"name": c["function"]["name"], "arguments": _dict_arguments(c["function"]["arguments"])}
                       for c in last_calls]
            out.append({"role": "assistant", "content": "```\n" + json.dumps(listing, ensure_ascii=False) + "\n```"})
        elif message.get("role") == "tool":
            named = _named_results(json.loads(message["content"]), last_calls)
            if message.get("tool_call_id") is None:  # history: role tool, non-ASCII kept
                out.append({"role": "tool", "content": json.dumps(named, ensure_ascii=False)})
            else:  # live: role user, ASCII-escaped (§2.3)
                out.append({"role": "user", "content": json.dumps(named)})
        else:
            out.append(message)
    return out, _unwrapped(tools), {}


def _pythonic_history(rest: list[ChatMessage], *, split_results: bool) -> list[ChatMessage]:
    out: list[ChatMessage] = []
    last_calls: list[ToolCall] = []
    for message in rest:
        if message.get("role") == "assistant" and message.get("tool_calls"):
            last_calls = message["tool_calls"]
            out.append({"role": "assistant", "content": python_calls(last_calls)})
        elif message.get("role") == "tool" and message.get("tool_call_id") is None and "name" not in message:
            observations = json.loads(message["content"])  # a history step: one JSON array
            if split_results:  # watt: one tool message per result with its name (§2.5)
                out.extend({"role": "tool", "name": c["function"]["name"], "content": json.dumps(obs, ensure_ascii=False)}
                           for c, obs in zip(last_calls, observations))
            else:
                out.append({"role": "tool", "content": json.dumps(_named_results(observations, last_calls),
                                                                  ensure_ascii=False)})
        else:
            out.append(message)
    return out


def build_toolace(messages: list[ChatMessage], tools: list[ToolSchema]) -> Built:
    date, rest = _date_of(messages)
    body = [m.copy() for m in rest]
    _append_date_to_task(body, date)
    body = [_clean(m) for m in body]
    system: ChatMessage = {"role": "system", "content": toolace_system(tools, indent=True)}
    return [system, *_pythonic_history(body, split_results=False)], None, {}


def build_watt(messages: list[ChatMessage], tools: list[ToolSchema]) -> Built:
    date, rest = _date_of(messages)
    # live results are named from the model's calls before those become Python text
    body = _pythonic_history(_tool_runs([_clean(m) for m in rest]), split_results=True)
    system_text = (DATE_MARKER + date).replace("\n", "")
    system: ChatMessage = {"role": "system", "content": toolace_system(tools, indent=False) + system_text}
    return [system, *body], None, {"date_string": date}


def build_xlam2(messages: list[ChatMessage], tools: list[ToolSchema]) -> Built:
    date, rest = _date_of(messages)
    body = [m.copy() for m in rest]
    _append_date_to_task(body, date)
    out = []
    for message in (_clean(m) for m in body):
        if message.get("role") == "assistant" and message.get("tool_calls"):
            calls = [_with_dict_arguments(c) for c in message["tool_calls"]]
            content = message.get("content") or ""
            if "id" in message["tool_calls"][0]:  # the model's own turn (§2.7)
                content = "use {} to solve user problem".format(", ".join(c["function"]["name"] for c in calls))
            message = {"role": "assistant", "content": content, "tool_calls": calls}
        out.append(message)
    return out, tools, {}


def _function_tags(calls: list[ToolCall]) -> str:
    return "".join(f"<function={c['function']['name']}>"
                   f"{json.dumps(_dict_arguments(c['function']['arguments']), ensure_ascii=False)}</function>"
                   for c in calls)


def build_fcm(messages: list[ChatMessage], tools: list[ToolSchema]) -> Built:
    """§2.11: system `Current Date:<date>`, wrapped tools; the model's own turns as its raw text (written
    back in its `<function=name>{...}</function>` form), gold history calls as given; live results one per
    call, reversed, named by id."""
    date, rest = _date_of(messages)
    body = _tool_runs([_clean(m) for m in rest])
    out: list[ChatMessage] = [{"role": "system", "content": DATE_MARKER + date}]
    for message in body:
        calls = message.get("tool_calls") if message.get("role") == "assistant" else None
        if calls and "id" in calls[0]:  # the model's own turn: raw text, no tool_calls field
            out.append({"role": "assistant", "content": _function_tags(calls)})
        else:
            out.append(message)
    return out, tools, {}


def build_gorilla(messages: list[ChatMessage], tools: list[ToolSchema]) -> Built:
    """§2.10: one user message built by the client; with a date, `<sys>` is just the date (the Gorilla
    system sentence is replaced); the history is every non-system message as `<<role>>content<<role>>`
    (gold calls have empty content, so they are lost); the tools as ASCII-escaped JSON."""
    date, rest = _date_of(messages)
    lines = []
    for message in (_clean(m) for m in rest):
        content = message.get("content") or ""
        calls = message.get("tool_calls") if message.get("role") == "assistant" else None
        if calls and "id" in calls[0]:  # the model's own turn keeps its raw `<<function>>` text
            content = "".join(f"<<function>>{python_calls([c])[1:-1]}" for c in calls)
        lines.append(f"<<{message['role']}>>{content}<<{message['role']}>>")
    query = rest[-1].get("content", "") if rest and rest[-1].get("role") == "user" else next(
        (m.get("content", "") for m in reversed(rest) if m.get("role") == "user"), "")
    prompt = (f"\n\n{DATE_MARKER}{date}\n### Instruction:  <<history>> " + "\n".join(lines)
              + f"\n\n<<function>>{json.dumps(tools)}\n<<question>>{query}\n### Response: ")
    return [{"role": "user", "content": prompt}], None, {}


def build_generic(messages: list[ChatMessage], tools: list[ToolSchema]) -> Built:
    """The harness's default handle: system `Current Date:<date>`, own template with the wrapped tools."""
    return [_clean(m) for m in messages], tools, {}


BUILDERS: dict[str, Callable[[list[ChatMessage], list[ToolSchema]], Built]] = {
    "qwen": build_qwen, "qwen3": build_qwen, "llama": build_llama, "hammer": build_hammer,
    "toolace": build_toolace, "watt": build_watt, "xlam2": build_xlam2, "generic": build_generic,
    "fcm": build_fcm, "gorilla": build_gorilla,
}


def build_prompt(family: str, messages: list[ChatMessage], tools: list[ToolSchema]) -> Built:
    """(messages, tools for the template or None, template kwargs) of one step for a family."""
    return BUILDERS[family]([m.copy() for m in messages], tools)
