"""Resume across requeues: a first run that downloads the model from the hub and the requeued run that
finds it in the cache must record the same revision and tokenizer hash, or resume is refused.

The hub is a loopback fake (fake_hub.py) serving a tiny model; HF_HOME is a fresh temporary cache. The
repository also ships a sentencepiece `tokenizer.model` next to `tokenizer.json`, as Mistral, Llama 2 and
Gemma repositories do. The first run (transformers backend: it downloads the weights itself) starts from
an empty cache. Between the runs, the download a vLLM engine makes when it starts: vLLM 0.32 loads the
tokenizer from a snapshot of every non-weight file of the repository
(`vllm/transformers_utils/repo_utils.py`, `get_non_weight_snapshot_path`), so files the renderer's
tokenizer never fetched appear in the cache. The requeued run is offline, on what the first one left."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.run.fake_hub import fake_hub

REPO = "wtb-test/tiny-qwen"
COMMIT = "0123456789abcdef0123456789abcdef01234567"
WEIGHT_PATTERNS = ["*.safetensors", "*.bin", "*.pt", "*.pth"]


def _run(env: dict[str, str], out: Path, limit: int) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "wtb_local", "run", "--model", REPO, "--backend", "transformers",
           "--dataset", "sample", "--limit", str(limit), "--max-new-tokens", "4", "--model-name", "tiny",
           "--out", str(out), "--progress", "none"]
    return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600, check=False)


def test_requeued_run_resumes_after_the_first_run_downloaded_the_model(qwen_tiny_dir: Path,
                                                                        tmp_path: Path) -> None:
    from huggingface_hub import snapshot_download

    files = tmp_path / "repo"
    shutil.copytree(qwen_tiny_dir, files)
    # Bytes the fast tokenizer never reads; only their presence in the cache changes between the runs.
    (files / "tokenizer.model").write_bytes(b"sentencepiece model of the slow tokenizer\n")
    out, cache = tmp_path / "run", tmp_path / "hf"
    env = {**os.environ, "HF_HOME": str(cache), "HF_HUB_DISABLE_TELEMETRY": "1"}
    env.pop("HF_HUB_OFFLINE", None)
    with fake_hub(REPO, files, COMMIT) as hub:
        first = _run({**env, "HF_ENDPOINT": hub.endpoint}, out, 1)
        assert first.returncode == 0, first.stderr[-3000:]
        fetched = hub.downloaded()
        assert "model.safetensors" in fetched and "tokenizer.model" not in fetched
        snapshot = snapshot_download(REPO, cache_dir=cache / "hub", endpoint=hub.endpoint,
                                     ignore_patterns=WEIGHT_PATTERNS)
    assert (Path(snapshot) / "tokenizer.model").is_file() and Path(snapshot).name == COMMIT
    before = json.loads((out / "manifest.json").read_text())["config"]
    # The requeued job: the same command (a larger --limit so it has work left), offline.
    second = _run({**env, "HF_HUB_OFFLINE": "1"}, out, 2)
    assert second.returncode == 0, second.stderr[-3000:]
    assert "1 finished session(s) skipped, 1 to run" in second.stderr
    after = json.loads((out / "manifest.json").read_text())["config"]
    assert before == after
    assert after["resolved_revision"] == COMMIT and after["tokenizer_sha256"] is not None


def test_revision_read_from_the_tokenizer_files_alone(qwen_tiny_dir: Path, tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """A tokenizer that does not fetch config.json (transformers 4 with `tokenizer_class` set) leaves
    only its own files in the cache before the weights come: the revision is read from those."""
    import huggingface_hub.constants
    from huggingface_hub import snapshot_download

    from wtb_local.engines.environment import resolved_revision, tokenizer_sha256

    cache = tmp_path / "hub"
    with fake_hub(REPO, qwen_tiny_dir, COMMIT) as hub:
        snapshot_download(REPO, cache_dir=cache, endpoint=hub.endpoint, allow_patterns=["tokenizer*"])
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(cache))
    assert not (cache / "models--wtb-test--tiny-qwen" / "snapshots" / COMMIT / "config.json").exists()
    assert resolved_revision(REPO, None) == COMMIT
    assert resolved_revision(REPO, COMMIT) == COMMIT
    assert resolved_revision("wtb-test/not-cached", None) is None
    # Two files cached (tokenizer.json, tokenizer_config.json): their hash, as a local directory of them
    # would give.
    local = tmp_path / "local"
    local.mkdir()
    for name in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(qwen_tiny_dir / name, local / name)
    assert tokenizer_sha256(REPO, None) == tokenizer_sha256(str(local), None) is not None
