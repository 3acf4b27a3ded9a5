"""Test tiers (docs/testing.md): the fast tier is every test without a tier marker, and the pytest config in
pyproject.toml deselects the marked ones unless `-m` names them. A marker on a test or module puts it in its
tier; the tables below add the markers a whole folder or file earns by what it needs, so a test added there
lands in its tier without a decorator, and `slow` on the tests measured slow."""

from __future__ import annotations

from pathlib import Path

import pytest

# The heavy tiers, in the order CI runs them (each a marker registered in pyproject.toml).
TIERS = ("vllm", "real_model", "cluster", "faults", "wheel", "browser", "export", "sglang", "slow")

# Path (relative to tests/, a folder ending in "/") -> the tier everything in it needs.
BY_PATH = {
    "slurm/": "cluster",  # a private single-node Slurm cluster, and Ray
    "faults/": "faults",  # kills, signals, full disks against real runs in subprocesses
    "run/test_signals.py": "faults",  # signals sent to real runs in subprocesses
    "test_wheel_install.py": "wheel",  # builds the sdist and wheel, installs them into a clean venv
    "analysis/test_report_html.py": "browser",  # headless Chromium
    "rendering/test_render_pool.py": "slow",  # render worker processes, each loading a tokenizer: 6-20 s a test
}

# A fixture -> the tier every test using it needs.
BY_FIXTURE = {
    "real_model_dir": "real_model",  # the trained model, fetched and converted once (tests/real_model/)
}

# Tests that need nothing heavy but take seconds each (subprocess runs, the render pool, whole reports),
# measured with --durations on 2 cores shared at a load of 4 to 14 (2 workers): seconds there, per test or
# summed over its parameters. `slow` on them keeps the fast tier within minutes (docs/testing.md §4).
SLOW = {
    "protocols/test_paper_run.py::test_values_the_protocol_replaces_are_named_in_one_line_and_recorded": 75.6,
    "rendering/test_cli_probe.py::test_render_refuses_and_the_override_serves": 52.5,
    "protocols/test_render.py::test_render_command_prints_the_paper_prompt": 35.2,
    "explain/test_explain.py::test_a_checker_only_difference_is_wholly_the_checker": 24.5,
    "rendering/test_cli_probe.py::test_run_refuses_before_loading_the_model": 24.3,
    "protocols/test_paper_run.py::test_paper_oracle_run_rescore_and_report_in_subprocesses": 19.8,
    "real_model/test_figures_script.py::test_tables_from_finished_runs_with_a_replay": 19.2,
    "run/test_dtype.py::test_a_run_records_the_choice_and_its_reason_in_the_manifest": 16.1,
    "roster/test_report.py::test_roster_runs_and_report": 13.3,
    "rendering/test_prompt_checks.py::test_reference_mode_on_the_loop_records_the_mismatch_and_sends_the_reference_prompts":
        8.9,
    "roster/test_plan.py::test_a_cached_config_json_overrides_the_roster": 8.0,
    "roster/test_report.py::test_a_roster_compared_with_no_paper_table_reports_its_own_rows": 7.8,
    "protocols/test_harness_scoring.py::test_wrong_arguments_fail_the_task_but_not_the_action": 7.6,
    "explain/test_explain.py::test_seed_repeats_give_the_spread_and_gaps_are_tested_against_it": 7.5,
    "protocols/test_paper_run.py::test_report_splits_the_gap_to_the_paper_into_the_checkers_part_and_the_rest": 7.0,
    "run/test_requeue.py::test_requeued_run_resumes_after_the_first_run_downloaded_the_model": 82.8,
    "run/test_thinking_mode.py::test_qwen3_without_flag_records_thinking_and_picks_the_thinking_row": 63.1,
    "run/test_never_strand.py::test_a_failed_start_says_failed_and_the_corrected_command_runs": 40.6,
    "analysis/test_presenter.py::test_repeats_and_merge_take_the_paper_row_of_the_recorded_thinking_mode": 36.7,
    "analysis/test_presenter.py::test_report_on_a_repeats_folder_shows_the_mean_row_run_printed": 28.4,
    "run/test_repeats.py::test_repeats_of_a_greedy_generation_config_are_refused": 27.3,
    "run/test_shards.py::test_merged_sharded_run_equals_the_one_process_run": 26.5,
    "analysis/test_presenter.py::test_the_gap_line_sees_every_run_of_the_report": 26.0,
    "run/test_thinking_mode.py::test_steps_cut_inside_reasoning_are_counted_and_warned_about": 24.0,
    "run/test_repeats.py::test_repeats_run_report_and_resume": 23.1,
    "run/test_repeats.py::test_repeats_of_greedy_decoding_are_refused": 21.8,
    "run/test_replay.py::test_replay_with_the_recorded_parser_gives_the_same_files": 21.1,
    "run/test_failed_requests.py::test_one_failed_request_count_in_progress_warning_manifest_report_and_result_file":
        20.5,
    "run/test_step_prefill.py::test_replay_parses_each_step_as_recorded_with_or_without_parser": 19.6,
    "run/test_openai_run.py::test_resume_after_a_kill_gives_the_same_files": 18.1,
    "cli/test_fail_fast.py::test_offline_with_a_cached_model_passes_the_check": 16.1,
    "rendering/test_cli_render.py::test_prints_the_exact_prompt_of_step_zero": 15.9,
    "analysis/test_report_full.py::test_benchmark_harness_layout_from_the_vectors": 15.2,
    "analysis/test_report_full.py::test_without_matplotlib_the_default_skips_png_and_an_asked_png_is_an_error": 14.1,
    "analysis/test_report_full.py::test_plots_are_drawn_and_not_blank": 10.8,
    "analysis/test_presenter.py::test_a_paper_run_has_one_label_and_paper_row_in_every_command": 9.7,
    "run/test_oracle_templates_2026h2_fam_a.py::test_oracle_through_muse_glimmers_template": 15.4,
    "run/test_throughput.py::test_cli_instant_backend_runs_every_stage_and_records_the_runner_ceiling":
        9.2,
    "run/test_reproducibility.py::test_a_replay_rerun_is_byte_identical_but_for_runner_ms": 8.8,
    "analysis/test_report_full.py::test_a_folder_of_runs_keeps_runs_of_one_model_apart": 8.7,
    "run/test_openai_run.py::test_text_prompts_on_request_and_recorded": 8.2,
    "run/test_secrets_run.py::test_planted_credentials_work_and_appear_in_no_output_and_no_file": 51.9,
    "run/test_estimate.py::test_a_run_states_its_estimate_before_it_starts": 11.8,
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
