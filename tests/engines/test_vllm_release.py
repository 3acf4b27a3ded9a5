"""What the installed vLLM release decides before the engine starts (wtb_local/contract/vllm_release.py): the memory
share it takes by default and the settings it refuses. The rules were read in the vLLM 0.32.0, 0.33.0 and
0.34.0 sources (docs/install.md, "vLLM versions"); the version is faked here, the installed one (0.32 on the
CPU build) is checked against its own `CacheConfig` in tests/parsers/test_vllm_parity.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.run.conftest import invoke
from wtb_local.contract import vllm_release
from wtb_local.engines.config import VLLMConfig
from wtb_local.engines.vllm_engine import memory_share


@pytest.mark.parametrize(("version", "device", "share"), [
    ("0.32.0", "cuda", 0.92), ("0.32.0+cpu", "cpu", 0.92), ("0.33.0", "cuda", 0.92), ("0.33.1rc1", "rocm", 0.92),
    ("0.34.0", "cuda", 1.0), ("0.34.0", "rocm", 1.0), ("0.34.0", "tpu", 0.92), ("0.34.0", "cpu", 0.92),
    ("1.0.0", "cuda", 1.0), (None, "cuda", 1.0), (None, "cpu", 0.92),
])
def test_the_default_memory_share_is_the_releases(version: str | None, device: str, share: float) -> None:
    assert vllm_release.default_gpu_memory_utilization(version, device) == share


def test_the_manifest_records_the_share_the_engine_took() -> None:
    assert memory_share(VLLMConfig(model="m"), "0.34.0", "cuda") == {
        "value": 1.0, "from": "1: the default of vLLM 0.34.0 on cuda (its extensible KV cache)"}
    assert memory_share(VLLMConfig(model="m"), "0.32.0", "cuda") == {
        "value": 0.92, "from": "0.92: the default of vLLM 0.32.0 on cuda"}
    assert memory_share(VLLMConfig(model="m", gpu_memory_utilization=0.5), "0.34.0", "cuda") == {
        "value": 0.5, "from": "given"}
    assert memory_share(VLLMConfig(model="m"), "0.32.0", "cpu")["value"] == 0.2


def test_version_tuples() -> None:
    assert [vllm_release.version_tuple(v) for v in ("0.34.0", "0.32.0+cpu", "0.33.1rc1", "1", "", None)] == [
        (0, 34, 0), (0, 32, 0), (0, 33, 1), (1,), (), ()]


@pytest.mark.parametrize(("version", "refused"), [("0.32.0", False), ("0.33.0", False), ("0.34.0", True),
                                                  ("0.35.2", True)])
def test_external_launcher_with_pipeline_parallelism(version: str, refused: bool) -> None:
    line = vllm_release.refused_setting(version, distributed_executor_backend="external_launcher",
                                        pipeline_parallel_size=2)
    assert (line is not None) == refused
    assert vllm_release.refused_setting(version, distributed_executor_backend="external_launcher",
                                        pipeline_parallel_size=1) is None
    assert vllm_release.refused_setting(version, distributed_executor_backend="mp", pipeline_parallel_size=2) is None


def test_a_run_vllm_034_would_refuse_stops_at_set_up_in_one_line(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("vllm")  # the vllm backend's package check comes first
    monkeypatch.setattr(vllm_release, "installed_version", lambda: "0.34.0")
    args = ["--backend", "vllm", "--model", "nobody/no-such-model", "--dataset", "sample", "--out",
            str(tmp_path / "run"), "--distributed-executor-backend", "external_launcher",
            "--pipeline-parallel-size", "2", "--progress", "none"]
    result = invoke(args)
    assert result.exit_code != 0
    assert result.stderr.strip().splitlines() == [(
        "Error: --distributed-executor-backend external_launcher with --pipeline-parallel-size 2: vLLM 0.34.0 "
        "refuses it at engine start (\"The GPU model runner does not support: pipeline parallelism with "
        "external_launcher\"); use mp or ray, or one pipeline stage")]
    assert not (tmp_path / "run").exists()
    monkeypatch.setattr(vllm_release, "installed_version", lambda: "0.32.0")  # 0.32 starts it: no refusal
    assert "external_launcher" not in invoke(args).stderr
