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
    from wtb_local.resources import checkout_root

    root = checkout_root()
    if root is None:
        return f'pip install "{DISTRIBUTION}[{extra}]"'
    try:
        here = Path.cwd().resolve() == root
    except OSError:  # the current directory was removed
        here = False
    return f'pip install -e "{"." if here else root}[{extra}]"'
