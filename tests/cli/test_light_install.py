"""The Quickstart's demo needs only the light install (`pip install -e .`): it runs with torch,
transformers, tokenizers and huggingface_hub unimportable (README, "Quickstart")."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HEAVY = ("torch", "transformers", "tokenizers", "huggingface_hub", "vllm", "accelerate")


def test_the_demo_runs_with_the_light_install(tmp_path: Path) -> None:
    blocked = "".join(f"sys.modules[{name!r}] = None; " for name in HEAVY)
    code = f"import sys; {blocked}from wtb_local.cli import main; main(sys.argv[1:])"
    env = {k: v for k, v in os.environ.items() if k not in ("HF_HUB_OFFLINE", "WTB_OFFLINE")}
    env["PYTHONPATH"] = str(ROOT)
    done = subprocess.run([sys.executable, "-c", code, "--model", "Qwen/Qwen3-8B", "--backend", "oracle",
                           "--dataset", "sample", "--out", "runs/oracle-demo", "--progress", "none"],
                          check=False, capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    metric = json.loads((tmp_path / "runs" / "oracle-demo" / "score" / "Qwen_Qwen3-8B" /
                         "Wild-Tool-Bench_metric.json").read_text())
    assert metric["total_info"]["task"] == {"accuracy": 1.0, "correct_count": 32, "total_count": 32}
