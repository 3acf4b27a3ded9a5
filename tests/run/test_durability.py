"""A session the runner reports finished survives a kill -9, with the result writer off the event loop
(docs/runner-speed.md §3): a real run in its own process is SIGKILLed after it has reported some sessions
finished; every reported session is on disk, whole and equal to an uninterrupted run's, and a resumed
run skips exactly the finished sessions on disk and ends with the uninterrupted run's file. The same holds
with render workers (docs/runner-speed.md §6), which leave with the killed run."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.run.conftest import read_jsonl, without_timing
from wtb_local.contract.errors import RecordError
from wtb_local.run.record.store import ResultStore

ROOT = Path(__file__).resolve().parents[2]
REPORTED_BEFORE_KILL = 5
COPIES = 8  # 64 sessions: far more than are finished when the kill lands


@pytest.fixture(scope="module")
def workload(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    from tests.helpers import build_tiny_tokenizer
    from tests.helpers.workload import replicated_dataset
    from wtb_local.contract.resources import sample_dataset_path

    work = tmp_path_factory.mktemp("durable")
    template = json.loads((ROOT / "tests" / "fixtures" / "rendering" / "chat_templates.json")
                          .read_text(encoding="utf-8"))["Qwen/Qwen3-0.6B"]["chat_template"]
    tokenizer = build_tiny_tokenizer(work / "tokenizer", template, special_tokens=["<tool_call>", "</tool_call>"],
                                     vocab_size=2048, max_position_embeddings=1 << 17)
    return tokenizer, replicated_dataset(sample_dataset_path(), COPIES, work / "dataset.jsonl")


def _command(workload: tuple[Path, Path], result: Path, *extra: str) -> list[str]:
    tokenizer, dataset = workload
    return [sys.executable, "-m", "tests.run.durable_run", str(tokenizer), str(dataset), str(result), *extra]


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT), "PYTHONUNBUFFERED": "1", "TOKENIZERS_PARALLELISM": "false"}


def _complete_rows(path: Path) -> dict[str, dict]:
    """The whole session lines of a file a killed process may have left a partial last line in."""
    rows = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            row = json.loads(line)
        except json.JSONDecodeError:
            continue
        rows[row["id"]] = row
    return rows


@pytest.mark.faults  # kills a real run in its own process
@pytest.mark.parametrize("workers", ["0", "2"])
def test_reported_sessions_survive_kill_9_and_resume_skips_exactly_the_finished(workload: tuple[Path, Path],
                                                                                tmp_path: Path, workers: str) -> None:
    reference = tmp_path / "reference.jsonl"
    subprocess.run(_command(workload, reference), env=_env(), check=True, capture_output=True, timeout=600,
                   cwd=ROOT)
    expected = {row["id"]: without_timing(row) for row in read_jsonl(reference)}
    assert len(expected) == 8 * COPIES

    killed = tmp_path / "killed.jsonl"
    proc = subprocess.Popen(_command(workload, killed, "--workers", workers), env=_env(), stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True, cwd=ROOT)
    reported: list[str] = []
    pids: list[int] = []
    for line in proc.stdout:
        if line.startswith("workers "):
            pids = [int(pid) for pid in line.split()[1:]]
            continue
        reported.append(line.split()[1])
        if len(reported) == REPORTED_BEFORE_KILL:
            os.kill(proc.pid, signal.SIGKILL)
            break
    rest, _ = proc.communicate(timeout=60)
    reported += [line.split()[1] for line in rest.splitlines() if line.startswith("finished ")]
    assert proc.returncode == -signal.SIGKILL
    assert len(pids) == int(workers)
    deadline = time.monotonic() + 30  # a worker reads the end of its pipe and leaves
    while any(_alive(pid) for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not any(_alive(pid) for pid in pids), "a render worker outlived the killed run"

    on_disk = _complete_rows(killed)
    assert set(reported) <= set(on_disk), "a session reported finished is missing after kill -9"
    assert len(on_disk) < len(expected), "the kill came after the whole run: nothing was tested"
    for sid, row in on_disk.items():  # every line on disk is a whole finished session, as run uninterrupted
        assert without_timing(row) == expected[sid]

    resumed = subprocess.run(_command(workload, killed, "--resume", "--workers", workers), env=_env(), check=True,
                             capture_output=True, text=True, timeout=600, cwd=ROOT)
    lines = [line for line in resumed.stdout.splitlines() if not line.startswith("workers ")]
    assert lines[0] == "resumed " + json.dumps(sorted(on_disk))
    assert sorted(line.split()[1] for line in lines[1:]) == sorted(set(expected) - set(on_disk))
    final = read_jsonl(killed)
    assert [row["id"] for row in final] == [row["id"] for row in read_jsonl(reference)]  # sorted by number
    assert [without_timing(row) for row in final] == [expected[row["id"]] for row in final]


def _alive(pid: int) -> bool:
    """Running, not a zombie waiting for its (killed) parent's reaper."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state != "Z"


def test_group_commit_reports_rows_in_order_only_after_they_are_written(tmp_path: Path) -> None:
    store = ResultStore(tmp_path / "result.jsonl")
    store.open(fresh=True)
    seen: list[tuple[str, int]] = []

    def durable(sid: str):
        def done(error: BaseException | None) -> None:
            assert error is None
            lines = (tmp_path / "result.jsonl").read_text(encoding="utf-8").splitlines()
            seen.append((sid, len(lines)))  # the row is in the file when it is reported
        return done

    ids = [f"wild_tool_bench_{i}" for i in (3, 1, 2, 0)]
    for sid in ids:
        store.submit({"id": sid, "model_name": "m", "result": []}, durable(sid))
    store.wait()
    assert [sid for sid, _ in seen] == ids
    assert all(count >= ids.index(sid) + 1 for sid, count in seen)
    assert [json.loads(x)["id"] for x in (tmp_path / "result.jsonl").read_text().splitlines()] == ids
    assert store.commits <= len(ids) and store.finished() == set(ids)
    assert [row["id"] for row in store.finalize()] == sorted(ids, key=lambda s: int(s.rsplit("_", 1)[1]))


def test_a_failed_write_fails_the_run_instead_of_reporting(tmp_path: Path) -> None:
    store = ResultStore(tmp_path / "result.jsonl")
    store.open(fresh=True)
    store._handle.close()  # writing now raises ValueError (I/O on a closed file)
    errors: list[BaseException | None] = []
    store.submit({"id": "wild_tool_bench_0", "model_name": "m", "result": []}, errors.append)
    with pytest.raises(RecordError) as info:
        store.wait()
    assert str(info.value) == f"writing {tmp_path / 'result.jsonl'} failed (ValueError: I/O operation on closed file.)"
    assert errors == [info.value] and isinstance(info.value.cause, ValueError) and store.finished() == set()
