"""Date extraction and placement quirks of the paper harness (paper-harness.md §1.4)."""

from __future__ import annotations

import pytest

from wtb_local.benchmark.protocols.dates import (
    DateError,
    add_weekday,
    harness_dates,
    session_date,
    task_dates,
    with_date,
)
from wtb_local.contract.schema import Session


def test_entries_are_kept_only_with_xingqi_and_cut_before_it() -> None:
    assert harness_dates("当前时间：2024-06-12 10:23:45 星期三") == ["当前时间：2024-06-12 10:23:45"]
    assert harness_dates(["2024-06-12 10:23:45 星期三", "2024-06-13 09:00:00", "环境：2024-06-14 08:00:00 星期五"]) == [
        "2024-06-12 10:23:45", "环境：2024-06-14 08:00:00"]


def test_weekday_is_recomputed_in_english_after_the_prefixes_go() -> None:
    assert add_weekday("当前时间：2024-06-12 10:23:45") == "2024-06-12 10:23:45 Wednesday"
    assert add_weekday("环境：2025-01-08 10:00:00") == "2025-01-08 10:00:00 Wednesday"


def test_default_placement_has_no_space_after_the_colon() -> None:
    assert with_date(None, "2024-06-12 10:23:45 Wednesday") == "Current Date:2024-06-12 10:23:45 Wednesday"


def test_system_text_without_marker_loses_its_last_character() -> None:
    """rfind returns -1: the slice drops the last character (Qwen's default loses its final period)."""
    assert with_date("You are a helpful assistant.", "D") == "You are a helpful assistant\n\nCurrent Date:D"
    # with a marker the text before it is kept as is, blank lines included, and the date block appended
    assert with_date("Be brief.\n\nCurrent Date:old", "new") == "Be brief.\n\n\n\nCurrent Date:new"


def _session(**extra: object) -> Session:
    return Session.model_validate({
        "id": "wild_tool_bench_0", "english_env_info": "2025-01-08 10:00:00 Friday", "english_tools": [],
        "english_tasks": ["hi"], "english_answer_list": [[{"action": {"name": "prepare_to_answer",
                                                                       "arguments": {}}, "observation": "x"}]],
        "english_task_types": ["Chat"], **extra})


def test_session_date_prefers_the_chinese_env_info() -> None:
    assert session_date(_session(env_info="当前时间：2024-06-12 10:23:45 星期三"))[0] == "2024-06-12 10:23:45 Wednesday"


def test_without_env_info_the_english_timestamp_is_used_and_marked_inferred() -> None:
    date, source = session_date(_session())
    assert date == "2025-01-08 10:00:00 Wednesday"  # the weekday is recomputed, not copied ("Friday")
    assert source.startswith("english_env_info") and "inferred" in source


def test_no_date_at_all_is_a_one_line_error() -> None:
    with pytest.raises(DateError, match="wild_tool_bench_0: field env_info/english_env_info"):
        session_date(_session(english_env_info="sometime"))


def test_a_string_serves_every_task_and_a_list_gives_one_per_task() -> None:
    two = {"english_tasks": ["a", "b"], "english_answer_list": [[{"action": {"name": "prepare_to_answer",
           "arguments": {}}, "observation": "x"}]] * 2, "english_task_types": ["Chat", "Chat"],
           "english_turn_subtypes": ["Partial Information"]}
    assert task_dates(_session(env_info="2024-06-12 10:23:45 星期三", **two))[0] == ["2024-06-12 10:23:45 Wednesday"] * 2
    dates, source = task_dates(_session(env_info=["2024-06-12 10:23:45 星期三", "2024-06-13 08:00:00 星期四"], **two))
    assert dates == ["2024-06-12 10:23:45 Wednesday", "2024-06-13 08:00:00 Thursday"]
    assert "documented" in source
    dates, source = task_dates(_session(env_info=["2024-06-12 10:23:45 星期三", "2024-06-13 08:00:00"], **two))
    assert dates == ["2024-06-12 10:23:45 Wednesday"] * 2
    assert "inferred" in source
