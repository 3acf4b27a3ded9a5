"""The failed-request count is one number (wtb_local/contract/faults.py, `failed_request`): the progress line, the
warning at the end of the run, the manifest's invocation, the run-health report and the result file's steps
say the same. A failed request is a step whose request got no reply: not built (the chat template refused
the conversation), not sent or not served (a prompt too long, here by the server's 400); a reply the parser
cannot read is the model's and is not one."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.run.conftest import RESULT_NAME, chat_template, read_jsonl
from tests.run.fake_openai import fake_openai_server

# The chat template with a refusal in front: a conversation holding `refuse` (a template kwarg) raises.
REFUSING = ("{%- if refuse is defined %}{%- for m in messages %}{%- if m['content'] is string and refuse in "
            "m['content'] %}{{ raise_exception('this conversation is refused') }}{%- endif %}{%- endfor %}"
            "{%- endif %}")


def test_one_failed_request_count_in_progress_warning_manifest_report_and_result_file(qwen_tiny_dir: Path,
                                                                                        tmp_path: Path) -> None:
    from wtb_local.analysis.reports.health import run_health
    from wtb_local.benchmark.dataset import load_dataset

    template = tmp_path / "refusing.jinja"
    template.write_text(REFUSING + chat_template("Qwen/Qwen2.5-7B-Instruct"), encoding="utf-8")
    refuse = load_dataset("sample")[2].english_tasks[0]  # every prompt of session 2 carries its first task
    out = tmp_path / "run"
    with fake_openai_server(str(qwen_tiny_dir)) as server:
        proc = subprocess.run(
            [sys.executable, "-m", "wtb_local", "--backend", "openai", "--base-url", server.base_url, "--model",
             str(qwen_tiny_dir), "--model-name", "fake", "--dataset", "sample", "--out", str(out), "--progress",
             "plain", "--chat-template", str(template), "--template-kwarg", f"refuse={json.dumps(refuse)}",
             "--render-workers", "0"],
            capture_output=True, text=True, timeout=300, check=False,
            env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2]), "HF_HUB_OFFLINE": "1"})
    assert proc.returncode == 0, proc.stderr[-3000:]

    rows = read_jsonl(out / "result" / "fake" / RESULT_NAME)
    steps = [step["inference_output"] for row in rows for task in row["result"]
             for key, step in task["inference_log"].items() if key.startswith("step_")]
    reasons = [str(s.get("error_reason")) for s in steps]
    refused = sum(r.startswith("render failed: TemplateError: this conversation is refused") for r in reasons)
    not_served = sum(s.get("finish_reason") == "error" for s in steps)  # the canned 400s
    unreadable = sum(r.startswith("parse error") for r in reasons)
    # the four tasks of session 2 and the 400s; the unreadable replies are the model's, not counted
    assert refused == 4 and not_served >= 1 and unreadable >= 1
    failed = refused + not_served

    progress = [line for line in proc.stderr.splitlines() if line.startswith("sessions ")]
    assert progress[-1].startswith("sessions 8/8  tasks 32/32") and f"(failed {failed})" in progress[-1]
    warning = [line for line in proc.stderr.splitlines() if line.startswith("warning: ")]
    assert len(warning) == 1 and warning[0].startswith(
        f"warning: {failed} request(s) failed and were scored as step errors: ")
    manifest = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["invocations"][-1]["failed_requests"] == failed
    assert run_health(rows, None, manifest)["failed_requests"] == failed
    # the server's 400 said the prompt is too long: the step's outcome (docs/reliability.md)
    assert all(r.startswith("prompt too long: HTTP 400 from /completions: This model's maximum context length")
               for s, r in zip(steps, reasons, strict=True) if s.get("finish_reason") == "error")
