"""The dtype an engine loads the weights in: `--dtype`, or `auto` resolved once from the checkpoint and the
device (prepare.py), recorded with its reason in the manifest (`settings.resolved_dtype`,
`sources.resolved_dtype`).

`auto` means the checkpoint's dtype, unless the device cannot compute it fast: bf16 on a CPU without bf16
instructions (AVX2-only x86, for one) runs many times slower than float32, and a GPU below compute
capability 8.0 has no bf16 at all. The engines' own `auto` differs: vLLM casts a float32 checkpoint to
bf16 on every device, which on such a CPU made no progress in minutes. A choice other than the
checkpoint's dtype is said in one line. The device is read from the machine's facts (CPU flags in
/proc/cpuinfo, `nvidia-smi`), never from its name; torch is not imported.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

# --dtype's spellings for the same dtype
ALIASES = {"half": "float16", "float": "float32", "bf16": "bfloat16", "fp16": "float16", "fp32": "float32"}
# CPU flags (x86 /proc/cpuinfo `flags`, Arm `Features`) that compute a 16-bit dtype natively
_FAST_CPU = {"bfloat16": ("avx512_bf16", "amx_bf16", "bf16"), "float16": ("avx512_fp16", "amx_fp16", "asimdhp")}
_SHORT = {"bfloat16": "bf16", "float16": "fp16"}


@dataclass(frozen=True)
class Device:
    """Where the engine computes: the CPU (with its instruction-set flags; None when unreadable) or a CUDA
    GPU (with its compute capability; None when nvidia-smi does not say)."""

    kind: Literal["cpu", "cuda"]
    cpu_flags: frozenset[str] | None = None
    compute_capability: tuple[int, int] | None = None


@dataclass(frozen=True)
class DtypeChoice:
    dtype: str  # what the engine is given: bfloat16, float16, float32, or auto (config.json unreadable)
    source: str  # recorded as sources["resolved_dtype"]
    note: str | None = None  # the one line said when auto picks other than the checkpoint's dtype


def resolve_dtype(asked: str, checkpoint: str | None, device: Device, given: str = "given (--dtype)") -> DtypeChoice:
    """`asked`: --dtype as given (`given`: where from); `checkpoint`: config.json's dtype (None: unreadable)."""
    asked = ALIASES.get(asked.lower(), asked.lower())
    if asked != "auto":
        return DtypeChoice(asked, given)
    if checkpoint is None:
        return DtypeChoice("auto", "auto: left to the engine (the checkpoint's config.json is unreadable here)")
    stored = ALIASES.get(checkpoint, checkpoint)
    if stored not in _SHORT:  # float32 (or a dtype no device here computes faster by casting)
        return DtypeChoice(stored, f"auto: the checkpoint's {stored}")
    slow = _why_slow(stored, device)
    if slow is None:
        return DtypeChoice(stored, f"auto: the checkpoint's {stored} ({_why_fast(stored, device)})")
    instead = "float16" if device.kind == "cuda" else "float32"
    return DtypeChoice(instead, f"auto: {instead}, {slow} (the checkpoint's: {stored})",
                       note=f"note: --dtype auto: {instead}, not the checkpoint's {stored}: {slow}; "
                            f"--dtype {stored} asks for it anyway")


def _why_slow(dtype: str, device: Device) -> str | None:
    short = _SHORT[dtype]
    if device.kind == "cuda":
        cc = device.compute_capability
        if dtype == "bfloat16" and cc is not None and cc < (8, 0):
            return f"the GPU (compute capability {cc[0]}.{cc[1]}) has no {short}"
        return None
    if device.cpu_flags is None:
        return f"this CPU's instruction-set flags are unreadable, so fast {short} cannot be confirmed"
    if not device.cpu_flags & set(_FAST_CPU[dtype]):
        return f"the CPU has no fast {short} (none of {', '.join(_FAST_CPU[dtype])} in its flags)"
    return None


def _why_fast(dtype: str, device: Device) -> str:
    if device.kind == "cuda":
        cc = device.compute_capability
        return f"GPU compute capability {cc[0]}.{cc[1]}" if cc is not None else "a CUDA GPU"
    found = sorted((device.cpu_flags or frozenset()) & set(_FAST_CPU[dtype]))
    return f"the CPU has {', '.join(found)}"


# --- facts of this machine and checkpoint ------------------------------------------------------------------


def this_device() -> Device:
    """The device an engine started by this run computes on: the first visible CUDA GPU, else the CPU."""
    from wtb_local.engines.environment import gpus

    if gpus():
        return Device("cuda", compute_capability=_compute_capability())
    return Device("cpu", cpu_flags=cpu_flags())


def cpu_flags(cpuinfo: str | None = None) -> frozenset[str] | None:
    """The CPU's instruction-set flags (x86 `flags`, Arm `Features`) from /proc/cpuinfo; None when unreadable."""
    if cpuinfo is None:
        try:
            cpuinfo = Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace")
        except OSError:
            return None
    for line in cpuinfo.splitlines():
        key, sep, value = line.partition(":")
        if sep and key.strip().lower() in ("flags", "features"):
            return frozenset(value.split())
    return None


def _compute_capability() -> tuple[int, int] | None:
    exe = shutil.which("nvidia-smi")
    if exe is None:
        return None
    try:
        out = subprocess.run([exe, "--query-gpu=compute_cap", "--format=csv,noheader"], capture_output=True,
                             text=True, timeout=15, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    first = out.stdout.strip().splitlines()[0].strip() if out.returncode == 0 and out.stdout.strip() else ""
    major, _, minor = first.partition(".")
    return (int(major), int(minor)) if major.isdigit() and minor.isdigit() else None


def checkpoint_dtype(model: str | None, revision: str | None) -> str | None:
    """The dtype config.json stores the weights in (`dtype`, or `torch_dtype` before transformers 5; a
    multimodal model's `text_config`); float32 when it names none, as transformers and vLLM read it. None
    when config.json cannot be read (neither a local directory nor in the hub cache or reachable)."""
    config = _read_config(model, revision) if model else None
    if config is None:
        return None
    text_config = config.get("text_config")
    for section in (config, text_config if isinstance(text_config, dict) else {}):
        value = section.get("dtype") or section.get("torch_dtype")
        if isinstance(value, str) and value:
            return value.removeprefix("torch.")
    return "float32"


def _read_config(model: str, revision: str | None) -> dict[str, Any] | None:
    local = Path(model).expanduser()
    path: Path | None = local / "config.json" if local.is_dir() else None
    if path is None:
        try:
            from huggingface_hub import hf_hub_download

            path = Path(hf_hub_download(model, "config.json", revision=revision))
        except Exception:  # noqa: BLE001 - offline, gated or missing: the engine reports it when it loads
            return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None
