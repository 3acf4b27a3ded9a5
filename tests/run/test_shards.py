"""Sharded runs: the shard plan, `--shard I/N` / `--shard auto`, resume of a shard, `merge` (equal to the
one-process run, byte for byte) and its refusals, `report` on a sharded run directory."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.run.conftest import (
    METRIC_NAME,
    RESULT_NAME,
    SCORE_NAME,
    VECTORS,
    invoke,
    read_jsonl,
    scripted_args,
    without_timing,
)
from wtb_local.contract.schema import Session
from wtb_local.contract.shard_dirs import Shard, parse_shard_dir
from wtb_local.run.setup.shards import (
    ShardError,
    parse_shard,
    plan_shards,
    resolve_shard,
    session_work,
    shard_from_slurm,
)

ROOT = Path(__file__).resolve().parents[2]
FILES = (f"result/scripted/{RESULT_NAME}", f"score/scripted/{SCORE_NAME}", f"score/scripted/{METRIC_NAME}")


def _cli(*args: str) -> object:
    from wtb_local.cli import cli

    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


# --- the plan ----------------------------------------------------------------------------------------------


def test_parse_shard_and_dir_names() -> None:
    assert parse_shard("2/4") == Shard(2, 4) and parse_shard("2/4").dir_name == "2-of-4"
    for bad in ("4/4", "1/0", "-1/4", "1of4", "01/4", "auto"):
        with pytest.raises(ShardError):
            parse_shard(bad)
    assert parse_shard_dir("3-of-8") == Shard(3, 8)
    assert parse_shard_dir("8-of-8") is None and parse_shard_dir("x") is None
    assert resolve_shard(None) is None and resolve_shard("1/3") == Shard(1, 3)


def test_shard_from_the_slurm_array() -> None:
    env = {"SLURM_ARRAY_TASK_ID": "3", "SLURM_ARRAY_TASK_COUNT": "4", "SLURM_ARRAY_TASK_MIN": "0"}
    assert shard_from_slurm(env) == Shard(3, 4)
    # --array=1-4 and --array=0-6:2 are four shards too
    assert shard_from_slurm({**env, "SLURM_ARRAY_TASK_ID": "4", "SLURM_ARRAY_TASK_MIN": "1"}) == Shard(3, 4)
    stepped = {**env, "SLURM_ARRAY_TASK_ID": "4", "SLURM_ARRAY_TASK_STEP": "2"}
    assert shard_from_slurm(stepped) == Shard(2, 4)
    assert resolve_shard("auto", env) == Shard(3, 4)
    with pytest.raises(ShardError, match="not inside a Slurm array job"):
        resolve_shard("auto", {})
    with pytest.raises(ShardError, match="array task 5 is not one of 4"):
        shard_from_slurm({**env, "SLURM_ARRAY_TASK_ID": "5"})
    with pytest.raises(ShardError, match="SLURM_ARRAY_TASK_COUNT is ''"):
        shard_from_slurm({"SLURM_ARRAY_TASK_ID": "0"})


def _session(tasks: list[str], answers: list[list[dict]], sid: str = "wild_tool_bench_9") -> Session:
    return Session.model_validate({
        "id": sid, "english_env_info": "E", "english_tools": [], "english_tasks": tasks,
        "english_answer_list": answers, "english_task_types": ["Chat"] * len(tasks)})


def test_session_work_counts_calls_times_prompt_characters() -> None:
    node = {"action": {"name": "x", "arguments": {}}, "observation": "ok", "dependency_list": []}
    session = _session(["ab", "c"], [[node, node], []])
    # context "[]" + "E" = 3; task 0: +2 -> 5, 3 calls -> 15; each node adds
    # len('{"name": "x", "arguments": {}}') = 30 and len("ok") = 2; task 1: 5 + 64 + 1 = 70, 1 call -> 70
    assert session_work(session) == 15 + 70


def test_plan_is_longest_first_into_the_least_loaded_shard() -> None:
    from wtb_local.benchmark.dataset import read_dataset
    from wtb_local.contract.resources import sample_dataset_path

    sessions, _ = read_dataset(sample_dataset_path())
    works = {s.id.rsplit("_", 1)[1]: session_work(s) for s in sessions}
    assert works == {"0": 64631, "1": 57258, "2": 47735, "3": 49606, "4": 70609, "5": 66313, "6": 31546,
                     "7": 65350}
    # 4, 5, 7 open the shards; 0 joins the lightest (7's), 1 joins 5's, 3 and 2 join 4's, 6 joins 5's
    assert plan_shards(sessions, 3) == [
        ["wild_tool_bench_2", "wild_tool_bench_3", "wild_tool_bench_4"],
        ["wild_tool_bench_1", "wild_tool_bench_5", "wild_tool_bench_6"],
        ["wild_tool_bench_0", "wild_tool_bench_7"],
    ]
    assert plan_shards(list(reversed(sessions)), 3)[2] == ["wild_tool_bench_7", "wild_tool_bench_0"]
    assert plan_shards(sessions, 10)[8:] == [[], []]  # more shards than sessions: the rest run nothing


# --- end to end ----------------------------------------------------------------------------------------------


def _python(args: list[str], env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    full_env = {key: value for key, value in os.environ.items() if not key.startswith(("WTB_", "SLURM_"))}
    full_env.update(env or {})
    return subprocess.run([sys.executable, "-m", "wtb_local", *args], cwd=ROOT, env=full_env,
                          capture_output=True, text=True, timeout=300, check=False)


@pytest.fixture(scope="module")
def one_process(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("one") / "run"
    result = invoke(scripted_args(out))
    assert result.exit_code == 0, result.output
    return out


@pytest.fixture(scope="module")
def sharded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Three shards through the real command: two by --shard I/N, one by WTB_SHARD=auto in an array task."""
    out = tmp_path_factory.mktemp("sharded") / "run"
    for spec in ("0/3", "2/3"):
        proc = _python(["run", *scripted_args(out), "--shard", spec])
        assert proc.returncode == 0, proc.stderr
    array_task = {"WTB_SHARD": "auto", "SLURM_ARRAY_TASK_ID": "6", "SLURM_ARRAY_TASK_MIN": "5",
                  "SLURM_ARRAY_TASK_COUNT": "3"}
    proc = _python(["run", *scripted_args(out)], env=array_task)
    assert proc.returncode == 0, proc.stderr
    return out


def test_each_shard_runs_its_planned_sessions(sharded: Path) -> None:
    seen: list[str] = []
    for index in range(3):
        folder = sharded / "shards" / f"{index}-of-3"
        manifest = json.loads((folder / "manifest.json").read_text())
        ids = [row["id"] for row in read_jsonl(folder / "result" / "scripted" / RESULT_NAME)]
        assert manifest["status"] == "complete" and manifest["shard"]["sessions"] == ids
        assert (manifest["shard"]["index"], manifest["shard"]["count"]) == (index, 3)
        assert manifest["shard"]["selection_size"] == 64
        seen += ids
    assert sorted(seen) == sorted(f"wild_tool_bench_{i}" for i in range(64))
    works = [json.loads((sharded / "shards" / f"{i}-of-3" / "manifest.json").read_text())["shard"]["work"]
             for i in range(3)]
    assert max(works) - min(works) < max(works) // 50  # balanced to within 2%


def test_merged_sharded_run_equals_the_one_process_run(sharded: Path, one_process: Path,
                                                        tmp_path: Path) -> None:
    report = _python(["report", str(sharded)])
    assert report.returncode == 1
    assert report.stderr.strip().endswith(f"{sharded}: a sharded run that is not merged yet; run "
                                          f"`python -m wtb_local merge {sharded}` first")
    merged = tmp_path / "run"
    shutil.copytree(sharded, merged)
    proc = _python(["merge", str(merged)])
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("merged 3 shards, 64 sessions\n")
    for name in FILES:  # equal but for the per-step timings (runner_ms differs between any two runs)
        assert _untimed(merged / name) == _untimed(one_process / name), name
    manifest = json.loads((merged / "manifest.json").read_text())
    single = json.loads((one_process / "manifest.json").read_text())
    assert manifest["status"] == "complete" and manifest["config_hash"] == single["config_hash"]
    untimed = {k: v for k, v in manifest["summary"].items() if k != "throughput"}
    assert untimed == {k: v for k, v in single["summary"].items() if k != "throughput"}
    assert [len(part["sessions"]) for part in manifest["shards"]["parts"]] == [21, 21, 22]
    # report reads the merged metric (not a shard's); replay finds the merged result file
    report = _python(["report", str(merged), "--no-paper"])
    assert report.returncode == 0, report.stderr
    one = _python(["report", str(one_process), "--no-paper"])
    def measured_apart(text: str) -> str:  # run health holds wall times, which differ between any two runs
        return text.split("Run health")[0]

    assert "Table 6" in report.stdout and "Run health" in report.stdout
    assert measured_apart(report.stdout) == measured_apart(one.stdout)
    assert [i["shard"] for i in manifest["invocations"]] == ["0-of-3", "1-of-3", "2-of-3"]
    from wtb_local.engines.replay import find_result_file

    assert find_result_file(merged) == merged / FILES[0]  # --replay of the merged run, not of a shard
    scored = _python(["score", str(merged / FILES[0]), "--dataset", str(VECTORS / "dataset.jsonl"),
                      "--out", str(tmp_path / "rescored")])
    assert scored.returncode == 0, scored.stderr
    assert (tmp_path / "rescored" / METRIC_NAME).read_bytes() == (one_process / FILES[2]).read_bytes()


def test_a_requeued_shard_resumes(sharded: Path, tmp_path: Path) -> None:
    run = tmp_path / "run"
    shutil.copytree(sharded, run)
    result_file = run / "shards" / "1-of-3" / "result" / "scripted" / RESULT_NAME
    lines = result_file.read_text().splitlines(keepends=True)
    result_file.write_text("".join(lines[:5]) + lines[5][:40])  # killed mid-write after 5 sessions
    proc = _python(["run", *scripted_args(run), "--shard", "1/3"])
    assert proc.returncode == 0, proc.stderr
    assert f"resuming {run / 'shards' / '1-of-3'}: 5 finished session(s) skipped, 16 to run" in proc.stderr
    assert without_timing([json.loads(x) for x in result_file.read_text().splitlines()]) == without_timing(
        [json.loads(x) for x in lines])


def _untimed(path: Path) -> object:
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".jsonl":
        return without_timing([json.loads(x) for x in text.splitlines() if x.strip()])
    return without_timing(json.loads(text))


# --- refusals ---------------------------------------------------------------------------------------------------


@pytest.fixture
def copy(sharded: Path, tmp_path: Path) -> Path:
    run = tmp_path / "run"
    shutil.copytree(sharded, run)
    return run


def _manifest_edit(run: Path, shard: str, **changes: object) -> None:
    path = run / "shards" / shard / "manifest.json"
    manifest = json.loads(path.read_text())
    for dotted, value in changes.items():
        target = manifest
        *parents, last = dotted.split("__")
        for key in parents:
            target = target[key]
        target[last] = value
    path.write_text(json.dumps(manifest))


def _merge_error(run: Path) -> str:
    result = _cli("merge", str(run))
    assert result.exit_code == 1
    lines = result.output.strip().splitlines()
    assert len(lines) == 1, result.output
    return lines[0]


def test_merge_refuses_missing_and_unfinished_shards(copy: Path) -> None:
    shutil.rmtree(copy / "shards" / "1-of-3")
    _manifest_edit(copy, "2-of-3", status="interrupted")
    assert _merge_error(copy) == (f"Error: {copy}: cannot merge: 1-of-3: missing, 2-of-3: status interrupted "
                                  "(rerun or requeue that shard: it resumes)")
    assert not (copy / "result").exists()


def test_merge_refuses_conflicting_manifests(copy: Path) -> None:
    _manifest_edit(copy, "1-of-3", config__sampling__seed=7)
    _manifest_edit(copy, "2-of-3", config__parser="llama3_json", config__protocol="paper")
    assert _merge_error(copy) == (
        f"Error: {copy}: shards disagree, cannot merge: 1-of-3 vs 0-of-3: config.sampling.seed: 0 -> 7, "
        '2-of-3 vs 0-of-3: config.parser: null -> "llama3_json", 2-of-3 vs 0-of-3: config.protocol: null -> "paper"')


def test_merge_refuses_duplicated_and_missing_sessions(copy: Path) -> None:
    first = copy / "shards" / "0-of-3" / "result" / "scripted" / RESULT_NAME
    second = copy / "shards" / "1-of-3" / "result" / "scripted" / RESULT_NAME
    moved = first.read_text().splitlines(keepends=True)[0]
    third = copy / "shards" / "2-of-3" / "result" / "scripted" / RESULT_NAME
    dropped = third.read_text().splitlines(keepends=True)
    third.write_text("".join(dropped[2:]))
    second.write_text(second.read_text() + moved)
    sid, gone = json.loads(moved)["id"], [json.loads(line)["id"] for line in dropped[:2]]
    assert _merge_error(copy) == (f"Error: {copy}: cannot merge: session(s) in two shards: "
                                  f"{sid} (0-of-3, 1-of-3); session(s) in no shard: {gone[0]}, {gone[1]}")


def test_merge_refuses_mixed_counts_and_unsharded_dirs(copy: Path, tmp_path: Path) -> None:
    shutil.copytree(copy / "shards" / "0-of-3", copy / "shards" / "0-of-2")
    assert _merge_error(copy) == (f"Error: {copy / 'shards'}: shards of different counts (0-of-2, 0-of-3, "
                                  "1-of-3, 2-of-3); remove the folders of the run you abandoned")
    assert _merge_error(tmp_path) == (f"Error: {tmp_path}: not a sharded run (no shards/ folder; "
                                      "run with --shard I/N first)")


def test_shard_option_errors() -> None:
    result = invoke(["--backend", "oracle", "--model", "Qwen/Qwen3-8B", "--shard", "3/3"])
    assert result.exit_code == 2
    assert result.output.strip().splitlines()[-1] == (
        "Error: Invalid value for '--shard' (env var: 'WTB_SHARD'): index 3 is not below the shard count 3 "
        "(shards are 0..2)")
    result = invoke(["--backend", "oracle", "--model", "Qwen/Qwen3-8B", "--dataset", "sample", "--shard",
                     "auto"], env={"SLURM_ARRAY_TASK_ID": ""})
    assert result.exit_code == 1
    assert result.output.strip().splitlines()[-1] == (
        "Error: --shard auto: not inside a Slurm array job (SLURM_ARRAY_TASK_ID is unset); submit with "
        "sbatch --array=0-N or pass --shard I/N")
