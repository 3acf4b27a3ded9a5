"""Test tiers (docs/testing.md): the fast tier is every test without a tier marker, and the pytest config in
pyproject.toml deselects the marked ones unless `-m` names them. A marker on a test or module puts it in its
tier; the tables below add the markers a whole folder or file earns by what it needs, so a test added there
lands in its tier without a decorator, and `slow` on the tests measured slow."""

from __future__ import annotations

from pathlib import Path

import pytest

# The heavy tiers, in the order CI runs them (each a marker registered in pyproject.toml).
TIERS = ("vllm", "real_model", "cluster", "faults", "wheel", "browser", "export", "slow")

# Path (relative to tests/, a folder ending in "/") -> the tier everything in it needs.
BY_PATH = {
    "slurm/": "cluster",  # a private single-node Slurm cluster, and Ray
    "faults/": "faults",  # kills, signals, full disks against real runs in subprocesses
    "runner/test_signals.py": "faults",  # signals sent to real runs in subprocesses
    "test_wheel_install.py": "wheel",  # builds the sdist and wheel, installs them into a clean venv
    "test_report_html.py": "browser",  # headless Chromium
    "rendering/test_render_pool.py": "slow",  # render worker processes, each loading a tokenizer: 6-20 s a test
}

# A fixture -> the tier every test using it needs.
BY_FIXTURE = {
    "real_model_dir": "real_model",  # the trained model, fetched and converted once (tests/real_model/)
}

# Tests that need nothing heavy but take seconds each (subprocess runs, the render pool, whole reports),
# measured with --durations on 2 cores shared at a load of 8 to 14: seconds there, per test or summed over
# its parameters. `slow` on them keeps the fast tier within minutes (docs/testing.md §4).
SLOW = {
    "protocols/test_paper_run.py::test_values_the_protocol_replaces_are_named_in_one_line_and_recorded": 75.6,
    "rendering/test_cli_probe.py::test_render_refuses_and_the_override_serves": 52.5,
    "protocols/test_render.py::test_render_command_prints_the_paper_prompt": 35.2,
    "explain/test_explain.py::test_a_checker_only_difference_is_wholly_the_checker": 24.5,
    "rendering/test_cli_probe.py::test_run_refuses_before_loading_the_model": 24.3,
    "protocols/test_paper_run.py::test_paper_oracle_run_rescore_and_report_in_subprocesses": 19.8,
    "real_model/test_figures_script.py::test_tables_from_finished_runs_with_a_replay": 19.2,
    "runner/test_dtype.py::test_a_run_records_the_choice_and_its_reason_in_the_manifest": 16.1,
    "roster/test_report.py::test_roster_runs_and_report": 13.3,
    "rendering/test_prompt_checks.py::test_reference_mode_on_the_loop_records_the_mismatch_and_sends_the_reference_prompts":
        8.9,
    "roster/test_plan.py::test_a_cached_config_json_overrides_the_roster": 8.0,
    "roster/test_report.py::test_a_roster_compared_with_no_paper_table_reports_its_own_rows": 7.8,
    "protocols/test_harness_scoring.py::test_wrong_arguments_fail_the_task_but_not_the_action": 7.6,
    "explain/test_explain.py::test_seed_repeats_give_the_spread_and_gaps_are_tested_against_it": 7.5,
    "protocols/test_paper_run.py::test_report_splits_the_gap_to_the_paper_into_the_checkers_part_and_the_rest": 7.0,
}

SLOW_LIMIT_S = 300

TESTS = Path(__file__).resolve().parent


@pytest.hookimpl(tryfirst=True)  # before `-m` deselects by marker
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        where = item.path.relative_to(TESTS).as_posix() if item.path.is_relative_to(TESTS) else ""
        for prefix, tier in BY_PATH.items():
            if where == prefix or (prefix.endswith("/") and where.startswith(prefix)):
                item.add_marker(tier)
        if item.nodeid.split("[", 1)[0].removeprefix("tests/") in SLOW:  # every parameter of a function
            item.add_marker("slow")
            if item.get_closest_marker("timeout") is None:  # up to 76 s measured: 120 s is no headroom
                item.add_marker(pytest.mark.timeout(SLOW_LIMIT_S))
        for fixture, tier in BY_FIXTURE.items():
            if fixture in getattr(item, "fixturenames", ()):
                item.add_marker(tier)


def pytest_report_header(config: pytest.Config) -> str:
    chosen = config.getoption("markexpr") or "every tier"
    return f"test tier: {chosen} (docs/testing.md; a heavy tier runs with -m, e.g. python -m pytest -m vllm)"
