"""`--dtype auto` resolved once in prepare from the checkpoint and the device (runner/setup/dtype.py): never bf16 on a
CPU that cannot compute it fast, said in one line when it differs from the checkpoint's, recorded with its
reason in the manifest, and what the vLLM and transformers backends are given."""

from __future__ import annotations

import io
import json
import shutil
from pathlib import Path

import pytest

from tests.run.conftest import invoke
from wtb_local.run.setup import dtype as dtype_module
from wtb_local.run.setup.dtype import Device, DtypeChoice, checkpoint_dtype, cpu_flags, resolve_dtype

# Flags as /proc/cpuinfo lists them: an AVX2-only x86 CPU (the kind where bf16 crawls) and an AVX-512 one
# with bf16 instructions (this project's CI machines are either).
AVX2 = frozenset(("fpu", "sse", "sse2", "ssse3", "sse4_1", "sse4_2", "avx", "f16c", "fma", "avx2", "bmi2"))
AVX512_BF16 = AVX2 | {"avx512f", "avx512bw", "avx512vl", "avx512_vnni", "avx512_bf16"}
NO_BF16 = "none of avx512_bf16, amx_bf16, bf16 in its flags"


@pytest.mark.parametrize(("asked", "stored", "device", "expected"), [
    ("auto", "bfloat16", Device("cpu", AVX2), DtypeChoice(
        "float32", f"auto: float32, the CPU has no fast bf16 ({NO_BF16}) (the checkpoint's: bfloat16)",
        f"note: --dtype auto: float32, not the checkpoint's bfloat16: the CPU has no fast bf16 ({NO_BF16}); "
        "--dtype bfloat16 asks for it anyway")),
    ("auto", "bfloat16", Device("cpu", AVX512_BF16), DtypeChoice(
        "bfloat16", "auto: the checkpoint's bfloat16 (the CPU has avx512_bf16)")),
    ("auto", "bfloat16", Device("cpu", frozenset({"fp", "asimd", "bf16"})), DtypeChoice(
        "bfloat16", "auto: the checkpoint's bfloat16 (the CPU has bf16)")),
    ("auto", "bfloat16", Device("cpu", None), DtypeChoice(
        "float32", "auto: float32, this CPU's instruction-set flags are unreadable, so fast bf16 cannot be "
                   "confirmed (the checkpoint's: bfloat16)",
        "note: --dtype auto: float32, not the checkpoint's bfloat16: this CPU's instruction-set flags are "
        "unreadable, so fast bf16 cannot be confirmed; --dtype bfloat16 asks for it anyway")),
    # float32 stays float32 (vLLM's own auto would cast it to bf16, on every device)
    ("auto", "float32", Device("cpu", AVX2), DtypeChoice("float32", "auto: the checkpoint's float32")),
    ("auto", "float32", Device("cuda", compute_capability=(9, 0)),
     DtypeChoice("float32", "auto: the checkpoint's float32")),
    ("auto", "float16", Device("cpu", AVX512_BF16), DtypeChoice(
        "float32", "auto: float32, the CPU has no fast fp16 (none of avx512_fp16, amx_fp16, asimdhp in its "
                   "flags) (the checkpoint's: float16)",
        "note: --dtype auto: float32, not the checkpoint's float16: the CPU has no fast fp16 (none of "
        "avx512_fp16, amx_fp16, asimdhp in its flags); --dtype float16 asks for it anyway")),
    ("auto", "bfloat16", Device("cuda", compute_capability=(7, 5)), DtypeChoice(
        "float16", "auto: float16, the GPU (compute capability 7.5) has no bf16 (the checkpoint's: bfloat16)",
        "note: --dtype auto: float16, not the checkpoint's bfloat16: the GPU (compute capability 7.5) has no "
        "bf16; --dtype bfloat16 asks for it anyway")),
    ("auto", "bfloat16", Device("cuda", compute_capability=(8, 0)), DtypeChoice(
        "bfloat16", "auto: the checkpoint's bfloat16 (GPU compute capability 8.0)")),
    ("auto", "bfloat16", Device("cuda"), DtypeChoice("bfloat16", "auto: the checkpoint's bfloat16 (a CUDA GPU)")),
    ("auto", None, Device("cpu", AVX2), DtypeChoice(
        "auto", "auto: left to the engine (the checkpoint's config.json is unreadable here)")),
    # given: used as given (spellings normalised), on any device
    ("bfloat16", "bfloat16", Device("cpu", AVX2), DtypeChoice("bfloat16", "given (--dtype)")),
    ("half", "bfloat16", Device("cpu", AVX2), DtypeChoice("float16", "given (--dtype)")),
    ("FLOAT", "bfloat16", Device("cpu", AVX2), DtypeChoice("float32", "given (--dtype)")),
])
def test_auto_is_the_checkpoints_dtype_unless_the_device_cannot_compute_it_fast(
        asked: str, stored: str | None, device: Device, expected: DtypeChoice) -> None:
    assert resolve_dtype(asked, stored, device) == expected


def test_cpu_flags_are_read_from_cpuinfo_on_x86_and_arm() -> None:
    x86 = "processor\t: 0\nvendor_id\t: AuthenticAMD\nflags\t\t: fpu avx2 avx512_bf16\nbugs\t\t: sysret_ss_attrs\n"
    arm = "processor\t: 0\nBogoMIPS\t: 50.00\nFeatures\t: fp asimd asimdhp bf16\nCPU implementer\t: 0x41\n"
    assert cpu_flags(x86) == frozenset({"fpu", "avx2", "avx512_bf16"})
    assert cpu_flags(arm) == frozenset({"fp", "asimd", "asimdhp", "bf16"})
    assert cpu_flags("processor\t: 0\n") is None


@pytest.mark.parametrize(("config", "expected"), [
    ({"dtype": "bfloat16"}, "bfloat16"),
    ({"torch_dtype": "float16"}, "float16"),  # before transformers 5
    ({"torch_dtype": "torch.bfloat16"}, "bfloat16"),
    ({"text_config": {"dtype": "bfloat16"}}, "bfloat16"),  # multimodal configs
    ({"hidden_size": 8}, "float32"),  # no dtype: float32, as transformers and vLLM read it
])
def test_the_checkpoints_dtype_is_read_from_its_config(tmp_path: Path, config: dict[str, object],
                                                       expected: str) -> None:
    (tmp_path / "config.json").write_text(json.dumps(config))
    assert checkpoint_dtype(str(tmp_path), None) == expected


def test_an_unreadable_config_leaves_the_dtype_to_the_engine(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text("{not json")
    assert checkpoint_dtype(str(tmp_path), None) is None
    assert checkpoint_dtype(str(tmp_path / "missing"), None) is None  # neither a directory nor a hub id here


@pytest.fixture
def bf16_dir(qwen_tiny_dir: Path, tmp_path: Path) -> Path:
    """The tiny Qwen model with its config saying bfloat16, as released checkpoints do."""
    folder = tmp_path / "bf16-model"
    shutil.copytree(qwen_tiny_dir, folder)
    config = json.loads((folder / "config.json").read_text())
    config["dtype"] = "bfloat16"
    (folder / "config.json").write_text(json.dumps(config))
    return folder


@pytest.mark.parametrize(("flags", "expected", "line"), [
    (AVX2, "float32", True), (AVX512_BF16, "bfloat16", False)])
def test_prepare_resolves_it_once_for_the_engines_and_says_so(bf16_dir: Path, monkeypatch: pytest.MonkeyPatch,
                                                              flags: frozenset[str], expected: str,
                                                              line: bool) -> None:
    from wtb_local.run.setup.options import RunOptions
    from wtb_local.run.setup.prepare import prepare

    monkeypatch.setattr(dtype_module, "this_device", lambda: Device("cpu", flags))
    for backend in ("transformers", "vllm"):
        err = io.StringIO()
        options = RunOptions(model=str(bf16_dir), backend=backend, dataset="sample", limit=1)
        if backend == "vllm":
            pytest.importorskip("vllm")
        prep = prepare(options, stderr=err, engine=False)
        assert prep.run.resolved_dtype == expected and prep.run.dtype == "auto"
        notes = [text for text in err.getvalue().splitlines() if text.startswith("note: --dtype auto")]
        assert notes == ([(f"note: --dtype auto: float32, not the checkpoint's bfloat16: the CPU has no fast bf16 "
                           f"({NO_BF16}); --dtype bfloat16 asks for it anyway")] if line else [])
        assert prep.build_backend().config.dtype == expected  # what the engine is given
    # a backend that loads no weights resolves none
    oracle = prepare(RunOptions(model=str(bf16_dir), backend="oracle", dataset="sample", limit=1),
                     stderr=io.StringIO())
    assert oracle.run.resolved_dtype is None and "resolved_dtype" not in oracle.run.sources


def test_a_run_records_the_choice_and_its_reason_in_the_manifest(bf16_dir: Path, tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(dtype_module, "this_device", lambda: Device("cpu", AVX2))
    out = tmp_path / "run"
    result = invoke(["--model", str(bf16_dir), "--backend", "transformers", "--dataset", "sample", "--limit", "1",
                     "--max-new-tokens", "4", "--out", str(out), "--progress", "none"])
    assert result.exit_code == 0, result.output
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["config"]["dtype"] == "auto"  # the hashed value is the option as given
    assert manifest["settings"]["resolved_dtype"] == "float32"
    assert manifest["sources"]["resolved_dtype"] == (
        f"auto: float32, the CPU has no fast bf16 ({NO_BF16}) (the checkpoint's: bfloat16)")
    assert manifest["backend"]["settings"]["dtype"] == "float32" and manifest["backend"]["dtype"] == "float32"
    assert result.stderr.count("note: --dtype auto:") == 1

    given = tmp_path / "given"
    result = invoke(["--model", str(bf16_dir), "--backend", "transformers", "--dataset", "sample", "--limit", "1",
                     "--max-new-tokens", "4", "--out", str(given), "--progress", "none", "--dtype", "bfloat16"])
    assert result.exit_code == 0, result.output
    manifest = json.loads((given / "manifest.json").read_text())
    assert (manifest["settings"]["resolved_dtype"], manifest["sources"]["resolved_dtype"]) == (
        "bfloat16", "given (--dtype)")
    assert manifest["backend"]["dtype"] == "bfloat16" and "note: --dtype" not in result.stderr
