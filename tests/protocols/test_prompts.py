"""Per-family prompt builders of the paper protocol: the exact messages each family's template receives
for one fixed session (paper-harness.md §1.3 conversation, §1.4 date, §1.5 tool results, §2.1-§2.7)."""

from __future__ import annotations

import json

import pytest

from wtb_local.benchmark.protocols.dates import task_dates
from wtb_local.benchmark.protocols.families import QWEN_SYSTEM, build_prompt, family_for, toolace_system
from wtb_local.benchmark.protocols.history import CURRENT_TASK_KEY, paper_episodes, strip_role, task_texts
from wtb_local.contract.schema import Session

DATE = "2024-06-12 10:23:45 Wednesday"
TOOLS = [{"type": "function", "function": {"name": "getWeather", "description": "Weather of a city.", "parameters": {
    "type": "object", "properties": {"city": {"type": "string", "description": "City"},
                                     "days": {"type": "integer", "description": "Days ahead"}},
    "required": ["city"]}}}]
SESSION = Session.model_validate({
    "id": "wild_tool_bench_0",
    "english_env_info": "2024-06-12 10:23:45 Wednesday",
    "env_info": "当前时间：2024-06-12 10:23:45 星期三",
    "english_tools": TOOLS,
    "english_tasks": ["User: Weather in Paris and Rome?", "And tomorrow in Paris?"],
    "english_answer_list": [
        [{"idx": 0, "action": {"name": "getWeather", "arguments": {"city": "Paris"}}, "observation": '{"t": 20}',
          "dependency_list": []},
         {"idx": 1, "action": {"name": "getWeather", "arguments": {"city": "Rome"}}, "observation": {"t": 25},
          "dependency_list": []},
         {"idx": 2, "action": {"name": "prepare_to_answer", "arguments": {"answer_type": "tool"}},
          "observation": "Paris 20, Rome 25.", "dependency_list": [0, 1]}],
        [{"idx": 0, "action": {"name": "getWeather", "arguments": {"city": "Paris", "days": 1}},
          "observation": "sunny", "dependency_list": []},
         {"idx": 1, "action": {"name": "prepare_to_answer", "arguments": {"answer_type": "tool"}},
          "observation": "Sunny.", "dependency_list": [0]}],
    ],
    "english_task_types": ["Parallel Multi-Tool", "Single-Tool"],
    "english_turn_subtypes": ["Coreferential Reference"],
})
CALL = {"type": "function", "function": {"name": "getWeather", "arguments": {"city": "Paris"}}}
CALL_ROME = {"type": "function", "function": {"name": "getWeather", "arguments": {"city": "Rome"}}}
HISTORY_ARRAY = json.dumps(['{"t": 20}', {"t": 25}])  # one tool message: the JSON array of observations


def _episodes(tool_results: str = "per_call") -> list:
    dates, _ = task_dates(SESSION)
    texts, _ = task_texts(SESSION)
    return paper_episodes(SESSION, dates=dates, texts=texts, tool_results=tool_results)


def _task1() -> list[dict]:
    return _episodes()[1].request()[0]


def _after_live_step(tool_results: str) -> list[dict]:
    """Task 0 after the model called Rome then Paris (the reverse of the gold order), ids c0, c1."""
    episode = _episodes(tool_results)[0]
    episode.accept({"content": None, "tool_calls": [
        {"id": "c0", "type": "function", "function": {"name": "getWeather", "arguments": '{"city": "Rome"}'}},
        {"id": "c1", "type": "function", "function": {"name": "getWeather", "arguments": '{"city": "Paris"}'}}]})
    return episode.request()[0]


LIVE_CALLS = [{"id": "c0", "type": "function", "function": {"name": "getWeather", "arguments": {"city": "Rome"}}},
              {"id": "c1", "type": "function", "function": {"name": "getWeather", "arguments": {"city": "Paris"}}}]


def test_canonical_conversation_of_a_later_task() -> None:
    """§1.3: history = user task + first optimal path, dict arguments, no ids, ONE tool message holding
    the JSON array; role prefix stripped (space kept); the default date system message first (§1.4)."""
    assert _task1() == [
        {"role": "system", "content": "Current Date:" + DATE},
        {"role": "user", "content": " Weather in Paris and Rome?"},
        {"role": "assistant", "content": "", "tool_calls": [CALL, CALL_ROME]},
        {"role": "tool", "content": HISTORY_ARRAY},
        {"role": "assistant", "content": "Paris 20, Rome 25."},
        {"role": "user", "content": "And tomorrow in Paris?", CURRENT_TASK_KEY: True},
    ]


def test_live_results_per_call_take_the_models_ids_in_its_order() -> None:
    """§1.5 continue=True: one tool message per observation (gold order), with the model's j-th id."""
    assert _after_live_step("per_call")[2:] == [
        {"role": "assistant", "content": None, "tool_calls": LIVE_CALLS},
        {"role": "tool", "content": '{"t": 20}', "tool_call_id": "c0"},
        {"role": "tool", "content": '{"t": 25}', "tool_call_id": "c1"},
    ]


def test_live_results_as_one_array_take_the_first_id() -> None:
    """§1.5 continue=False: one tool message with the JSON array of all observations, first call's id."""
    assert _after_live_step("array")[2:] == [
        {"role": "assistant", "content": None, "tool_calls": LIVE_CALLS},
        {"role": "tool", "content": HISTORY_ARRAY, "tool_call_id": "c0"},
    ]


def test_role_prefixes() -> None:
    """§1.3 step 4: only the known English prefixes go, and only the colon with them."""
    assert strip_role("AI Agent: hello") == " hello"
    assert strip_role("user:hi") == "hi"
    assert strip_role("Note: keep me") == "Note: keep me"
    assert strip_role("用户：你好", english=False) == "你好"


def test_english_messages_segments_are_used_when_present() -> None:
    session = SESSION.model_copy(update={"english_tasks": SESSION.english_tasks})
    extra = {"english_messages": [{"role": "user", "content": "User: Weather in Paris and Rome?"},
                                  {"role": "assistant", "content": "AI: Paris 20."}, "=====",
                                  {"role": "user", "content": "USER: And tomorrow in Paris?"}],
             "task_ids": [0, 0]}
    session = Session.model_validate({**SESSION.model_dump(mode="json"), **extra})
    texts, source = task_texts(session)
    assert texts == [" Weather in Paris and Rome?", " And tomorrow in Paris?"]
    assert "documented" in source


# --- per family: §2.1 Qwen --------------------------------------------------------------------------------

def test_qwen_system_loses_its_period_and_live_results_come_reversed_and_named() -> None:
    messages, tools, kwargs = build_prompt("qwen", _after_live_step("per_call"), TOOLS)
    assert messages == [
        {"role": "system", "content": "You are Qwen, created by Alibaba Cloud. You are a helpful assistant"
                                      "\n\nCurrent Date:" + DATE},
        {"role": "user", "content": " Weather in Paris and Rome?"},
        {"role": "assistant", "content": None, "tool_calls": LIVE_CALLS},
        {"role": "tool", "name": "getWeather", "content": '{"t": 25}'},
        {"role": "tool", "name": "getWeather", "content": '{"t": 20}'},
    ]
    assert (tools, kwargs) == (TOOLS, {})
    assert QWEN_SYSTEM.endswith(".")


# --- §2.2 Llama ---------------------------------------------------------------------------------------------

def test_llama_has_no_system_message_and_gets_the_date_as_date_string() -> None:
    messages, tools, kwargs = build_prompt("llama", _task1(), TOOLS)
    assert messages == [
        {"role": "user", "content": " Weather in Paris and Rome?"},
        {"role": "assistant", "content": "", "tool_calls": [CALL, CALL_ROME]},
        {"role": "tool", "content": HISTORY_ARRAY},
        {"role": "assistant", "content": "Paris 20, Rome 25."},
        {"role": "user", "content": "And tomorrow in Paris?"},
    ]
    assert tools == [TOOLS[0]["function"]]  # unwrapped function objects
    assert kwargs == {"date_string": DATE}


# --- §2.3 Hammer ----------------------------------------------------------------------------------------------

def test_hammer_history_calls_as_fenced_json_and_named_results() -> None:
    messages, tools, _ = build_prompt("hammer", _task1(), TOOLS)
    assert messages == [
        {"role": "system", "content": "Current Date:" + DATE},
        {"role": "user", "content": " Weather in Paris and Rome?"},
        {"role": "assistant", "content": '```\n[{"name": "getWeather", "arguments": {"city": "Paris"}}, '
                                         '{"name": "getWeather", "arguments": {"city": "Rome"}}]\n```'},
        {"role": "tool", "content": json.dumps([{"name": "getWeather", "results": '{"t": 20}'},
                                                {"name": "getWeather", "results": {"t": 25}}])},
        {"role": "assistant", "content": "Paris 20, Rome 25."},
        {"role": "user", "content": "And tomorrow in Paris?"},
    ]
    assert tools == [TOOLS[0]["function"]]


def test_hammer_live_results_are_a_user_message_ascii_escaped() -> None:
    canonical = _after_live_step("array")
    canonical[3]["content"] = json.dumps(["{\"t\": \"20°\"}", {"t": 25}])
    messages, _, _ = build_prompt("hammer", canonical, TOOLS)
    assert messages[-1] == {"role": "user", "content": '[{"name": "getWeather", "results": "{\\"t\\": \\"20\\u00b0\\"}"}, '
                                                       '{"name": "getWeather", "results": {"t": 25}}]'}


# --- §2.4 ToolACE, §2.5 watt ----------------------------------------------------------------------------------------

def test_toolace_prompt_python_history_and_date_on_the_task() -> None:
    messages, tools, kwargs = build_prompt("toolace", _task1(), TOOLS)
    system = messages[0]["content"]
    assert system.splitlines()[1].startswith(" " * 8 + "Based on the question")  # the 8-space indentation
    assert str([TOOLS[0]["function"]]) in system  # Python repr, single quotes
    assert messages[1:] == [
        {"role": "user", "content": " Weather in Paris and Rome?"},
        {"role": "assistant", "content": '[getWeather(city="Paris"), getWeather(city="Rome")]'},
        {"role": "tool", "content": json.dumps([{"name": "getWeather", "results": '{"t": 20}'},
                                                {"name": "getWeather", "results": {"t": 25}}])},
        {"role": "assistant", "content": "Paris 20, Rome 25."},
        {"role": "user", "content": "And tomorrow in Paris?\n\nCurrent Date:" + DATE},
    ]
    assert (tools, kwargs) == (None, {})


def test_watt_prompt_unindented_date_after_it_results_split_per_call() -> None:
    messages, tools, kwargs = build_prompt("watt", _task1(), TOOLS)
    assert messages[0]["content"] == toolace_system(TOOLS, indent=False) + "Current Date:" + DATE
    assert messages[2:4] == [
        {"role": "assistant", "content": '[getWeather(city="Paris"), getWeather(city="Rome")]'},
        {"role": "tool", "name": "getWeather", "content": json.dumps('{"t": 20}')},
    ]
    assert messages[4] == {"role": "tool", "name": "getWeather", "content": '{"t": 25}'}
    assert (tools, kwargs) == (None, {"date_string": DATE})
    live, _, _ = build_prompt("watt", _after_live_step("per_call"), TOOLS)
    assert live[2:] == [
        {"role": "assistant", "content": '[getWeather(city="Rome"), getWeather(city="Paris")]'},
        {"role": "tool", "name": "getWeather", "content": '{"t": 25}'},
        {"role": "tool", "name": "getWeather", "content": '{"t": 20}'},
    ]


def test_python_history_refuses_a_none_argument() -> None:
    canonical = _task1()
    canonical[2]["tool_calls"][0]["function"]["arguments"] = {"city": None}
    with pytest.raises(ValueError, match="None argument"):
        build_prompt("toolace", canonical, TOOLS)


# --- §2.7 xLAM-2 ---------------------------------------------------------------------------------------------

def test_xlam2_date_on_the_task_and_own_turns_as_use_text() -> None:
    messages, tools, _ = build_prompt("xlam2", _after_live_step("array"), TOOLS)
    assert messages == [
        {"role": "user", "content": " Weather in Paris and Rome?\n\nCurrent Date:" + DATE},
        {"role": "assistant", "content": "use getWeather, getWeather to solve user problem", "tool_calls": LIVE_CALLS},
        {"role": "tool", "content": HISTORY_ARRAY, "tool_call_id": "c0"},
    ]
    assert tools == TOOLS


def test_generic_keeps_the_default_date_system_message() -> None:
    messages, tools, kwargs = build_prompt("generic", _task1(), TOOLS)
    assert messages[0] == {"role": "system", "content": "Current Date:" + DATE}
    assert CURRENT_TASK_KEY not in messages[-1]
    assert (tools, kwargs) == (TOOLS, {})


@pytest.mark.parametrize(("model", "family", "documented", "tokens", "sampling"), [
    ("Qwen/Qwen2.5-7B-Instruct", "qwen", True, 512, "checkpoint default"),
    ("meta-llama/Llama-3.1-8B-Instruct", "llama", True, 1024, "checkpoint default"),
    ("MadeAgents/Hammer2.1-7b", "hammer", True, 128, "checkpoint default"),
    ("Team-ACE/ToolACE-2-8B", "toolace", True, 512, "greedy"),
    ("watt-ai/watt-tool-8B", "watt", True, 2048, "greedy"),
    ("Salesforce/Llama-xLAM-2-8b-fc-r", "xlam2", True, 256, "checkpoint default"),
    ("Qwen/Qwen3-8B", "qwen3", False, 512, "checkpoint default"),
    ("zai-org/GLM-4.5", "generic", False, 512, "checkpoint default"),
    ("moonshotai/Kimi-K2-Instruct", "generic", False, 512, "checkpoint default"),
    ("meetkai/functionary-medium-v3.1", "fcm", True, 512, "checkpoint default"),
    ("gorilla-llm/gorilla-openfunctions-v2", "gorilla", True, 512, "greedy"),
    ("THUDM/glm-4-9b-chat-hf", "generic", False, 512, "checkpoint default"),
])
def test_family_generation_settings(model: str, family: str, documented: bool, tokens: int, sampling: str) -> None:
    """§1.2's table: generation length and sampling per family; undocumented families are marked inferred."""
    rule = family_for(model)
    assert (rule.name, rule.documented, rule.max_new_tokens, rule.sampling) == (family, documented, tokens, sampling)


def test_fcm_model_turns_are_raw_function_tags() -> None:
    """§2.11: system `Current Date:`, wrapped tools; the model's own turns are stored as its raw text."""
    messages, tools, _ = build_prompt("fcm", _after_live_step("per_call"), TOOLS)
    assert messages == [
        {"role": "system", "content": "Current Date:" + DATE},
        {"role": "user", "content": " Weather in Paris and Rome?"},
        {"role": "assistant", "content": '<function=getWeather>{"city": "Rome"}</function>'
                                         '<function=getWeather>{"city": "Paris"}</function>'},
        {"role": "tool", "name": "getWeather", "content": '{"t": 25}'},
        {"role": "tool", "name": "getWeather", "content": '{"t": 20}'},
    ]
    assert tools == TOOLS


def test_gorilla_one_user_prompt_with_the_date_as_its_system_part() -> None:
    """§2.10: with a date, `<sys>` is just the date; gold calls (empty content) are lost from the history."""
    messages, tools, kwargs = build_prompt("gorilla", _task1(), TOOLS)
    assert messages == [{"role": "user", "content": (
        "\n\nCurrent Date:" + DATE + "\n### Instruction:  <<history>> "
        "<<user>> Weather in Paris and Rome?<<user>>\n<<assistant>><<assistant>>\n"
        "<<tool>>" + HISTORY_ARRAY + "<<tool>>\n<<assistant>>Paris 20, Rome 25.<<assistant>>\n"
        "<<user>>And tomorrow in Paris?<<user>>\n\n<<function>>" + json.dumps(TOOLS)
        + "\n<<question>>And tomorrow in Paris?\n### Response: ")}]
    assert (tools, kwargs) == (None, {})


# --- the dataset's own tool schemas (§2.12: converting types is the API handlers' step, not the local models') --

FLOAT_TOOLS = [{"type": "function", "function": {"name": "getWeather", "description": "Weather of a city.", "parameters": {
    "type": "object", "properties": {"city": {"type": "string", "description": "City"},
                                     "min_temp": {"type": "float", "description": "Lowest temperature"}},
    "required": ["city"]}}}]
FLOAT_SESSION = Session.model_validate({**SESSION.model_dump(mode="json"), "english_tools": FLOAT_TOOLS})
FLOAT_FUNCTION = FLOAT_TOOLS[0]["function"]


def _float_step() -> tuple[list[dict], list[dict]]:
    dates, _ = task_dates(FLOAT_SESSION)
    texts, _ = task_texts(FLOAT_SESSION)
    messages, tools = paper_episodes(FLOAT_SESSION, dates=dates, texts=texts, tool_results="per_call")[1].request()
    return messages, tools


def test_paper_episodes_hand_the_dataset_schemas_over_unconverted() -> None:
    from wtb_local.benchmark.evaluator.tools import convert_tools

    _, tools = _float_step()
    assert tools == FLOAT_TOOLS
    assert tools != convert_tools(FLOAT_TOOLS)  # the release evaluator's request says "number"


@pytest.mark.parametrize("family", ["qwen", "qwen3", "llama", "hammer", "toolace", "watt", "xlam2", "fcm", "gorilla",
                                    "generic"])
def test_every_family_shows_the_schema_type_as_the_dataset_wrote_it(family: str) -> None:
    messages, tools = _float_step()
    shaped, family_tools, _ = build_prompt(family, messages, tools)
    expected_tools = {"llama": [FLOAT_FUNCTION], "hammer": [FLOAT_FUNCTION], "toolace": None, "watt": None,
                      "gorilla": None}.get(family, FLOAT_TOOLS)
    assert family_tools == expected_tools
    text = json.dumps(shaped, ensure_ascii=False)
    if family in ("toolace", "watt"):  # the functions as a Python repr in the system prompt
        assert shaped[0]["content"].startswith(toolace_system(FLOAT_TOOLS, indent=family == "toolace"))
        assert "'min_temp': {'type': 'float', 'description': 'Lowest temperature'}" in shaped[0]["content"]
    elif family == "gorilla":  # the wrapped tools as JSON inside the one user prompt
        assert "<<function>>" + json.dumps(FLOAT_TOOLS) + "\n<<question>>" in shaped[0]["content"]
    assert '"number"' not in text and "'number'" not in text
