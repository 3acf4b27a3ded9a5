"""An exported log opens in Inspect's own viewer: `inspect view` started on the loopback over the log
folder, one sample opened in headless Chromium over the DevTools protocol; the page shows the sample's id,
its verdict, its error label and the model's reply (docs/exports.md). Needs the export extra and chromium;
skipped without them unless WTB_REQUIRE_EXPORT=1 (the export stage of .ci/run)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.exports.runs import oracle_demo, wtb
from tests.helpers.devtools import chromium

pytestmark = [pytest.mark.export, pytest.mark.browser]
if os.environ.get("WTB_REQUIRE_EXPORT", "") != "1":  # set by the export stage of .ci/run
    pytest.importorskip("inspect_ai", reason="the export extra is not installed (pip install -e '.[export]')")
    if chromium() is None:
        pytest.skip("chromium is not installed (apt-get install chromium; CI installs it)", allow_module_level=True)


def test_a_sample_of_the_oracle_demo_shows_in_the_viewer(tmp_path: Path) -> None:
    from tests.helpers.devtools import Page
    from tests.helpers.inspect_view import inspect_viewer, sample_url

    demo = oracle_demo(tmp_path, limit=1)
    done = wtb(["export", str(demo), "--to", "inspect", str(tmp_path / "logs")], tmp_path)
    assert done.returncode == 0, done.stderr
    (log,) = sorted((tmp_path / "logs").glob("*.eval"))
    result = json.loads((demo / "result" / "Qwen_Qwen3-8B" / "Wild-Tool-Bench_result.jsonl").read_text()
                        .splitlines()[0])
    task = result["result"][1]["inference_log"]
    last = max((k for k in task if k.startswith("step_")), key=lambda k: int(k[5:]))
    reply = task[last]["inference_output"]["content"]
    with inspect_viewer(tmp_path / "logs") as viewer, Page() as page:
        page.open(sample_url(viewer, log.name, "wild_tool_bench_0_t1"))
        text = page.wait_for_text(["wild_tool_bench_0_t1", "VERDICT", "ERROR_LABEL", reply])
        page.screenshot(tmp_path / "sample.png")
    assert "Qwen/Qwen3-8B" in text
    header = text[text.index("VERDICT"):].split("\n")
    assert header[:4] == ["VERDICT", "C", "ERROR_LABEL", "none"]
    assert (tmp_path / "sample.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
