"""The HTML report in a real headless browser (Debian's chromium): it loads without console errors, and
its trajectory browser's filters, paging and task view work. A test script is appended to a copy of the
page; it drives the filters like a user (select + change event), and writes what it saw into the DOM,
which chromium's --dump-dom prints.

Skipped only when chromium is absent outside CI; in CI (`CI=true`, `.ci/run` installs it) it must run.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
VECTORS = Path(__file__).parents[1] / "fixtures" / "vectors" / "sessions"
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
if CHROMIUM is None and os.environ.get("CI", "").lower() not in ("true", "1", "yes"):
    pytest.skip("chromium is not installed (apt-get install chromium; CI installs it)", allow_module_level=True)

CAPTURE = """<script>window.__errors = [];
window.addEventListener("error", function (e) { window.__errors.push(String(e.message)); });</script>"""
SELFTEST = """<script>
(function () {
  var out = {};
  function set(id, value) { var s = document.getElementById(id); s.value = value;
    s.dispatchEvent(new Event(s.tagName === "INPUT" ? "input" : "change")); }
  function count() { return Number(document.getElementById("b-count").textContent); }
  function rows() { return document.querySelectorAll("#b-rows tr").length; }
  out.total = count(); out.rows_page1 = rows(); out.page = document.getElementById("b-page").textContent;
  document.getElementById("b-next").click(); out.page_after_next = document.getElementById("b-page").textContent;
  set("f-verdict", "error"); out.errors = count();
  set("f-model", "1"); set("f-category", "Refusal"); out.scripted_refusals = count();
  var first = document.querySelector("#b-rows tr"); first.click();
  var detail = document.getElementById("b-detail");
  out.opened = detail.getAttribute("data-open");
  out.detail_has_gold = detail.textContent.indexOf("gold candidates at this step") !== -1;
  out.detail_steps = detail.querySelectorAll(".step").length;
  out.history_closed = !detail.querySelector("details.history").open;
  out.first_own_role = detail.querySelector("details[open] .msg .role").textContent;
  set("f-category", ""); set("f-verdict", ""); set("f-model", ""); set("f-type", "Chat"); out.chat = count();
  set("f-type", ""); set("f-session", "wild_tool_bench_7"); out.session7 = count();
  set("f-session", ""); set("f-session-verdict", "correct"); out.solved_sessions_tasks = count();
  set("f-session-verdict", "");
  set("f-session", ""); set("f-model", "0"); set("f-verdict", "correct"); out.oracle_correct = count();
  var opened = document.querySelector("#b-rows tr"); opened.click();
  out.oracle_opened = detail.getAttribute("data-open");
  out.oracle_raw = detail.querySelector("pre.raw").textContent;
  out.categories = Array.prototype.map.call(document.querySelectorAll("#f-category option"), function (o) { return o.value; });
  out.tables = document.querySelectorAll("section[id^=sec-] table.t").length;
  out.images = Array.prototype.map.call(document.querySelectorAll("#plots img"), function (i) { return i.naturalWidth > 0; });
  out.errors_seen = window.__errors;
  var pre = document.createElement("pre"); pre.id = "selftest"; pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
})();
</script>"""


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "wtb_local", *args], capture_output=True, text=True, env=env,
                          timeout=300, check=False)


@pytest.fixture(scope="module")
def page(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    base = tmp_path_factory.mktemp("html")
    for args in (["--backend", "oracle", "--model", "Qwen/Qwen3-8B", "--dataset", "sample", "--out",
                  str(base / "oracle")],
                 ["--backend", "scripted", "--script", str(VECTORS / "script.jsonl"), "--dataset",
                  str(VECTORS / "dataset.jsonl"), "--model", "scripted", "--out", str(base / "scripted")]):
        done = _cli("run", *args, "--progress", "none")
        assert done.returncode == 0, done.stderr
    done = _cli("report", str(base / "oracle"), str(base / "scripted"), "--out", str(base / "report"),
                "--format", "html")
    assert done.returncode == 0, done.stderr
    return base, base / "report" / "report.html"


def _dump(html_file: Path, profile: Path) -> tuple[str, str]:
    browser = subprocess.run(
        [CHROMIUM or "chromium", "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         f"--user-data-dir={profile}", "--enable-logging=stderr", "--v=0", "--dump-dom", html_file.as_uri()],
        capture_output=True, text=True, timeout=120, check=False)
    assert browser.returncode == 0, browser.stderr[-2000:]
    return browser.stdout, browser.stderr


def _expected(base: Path) -> dict[str, Counter[str]]:
    tasks: dict[str, Counter[str]] = {}
    for name, model in (("oracle", "Qwen_Qwen3-8B"), ("scripted", "scripted")):
        path = base / name / "score" / model / "Wild-Tool-Bench_score.jsonl"
        counts: Counter[str] = Counter()
        for line in path.read_text(encoding="utf-8").splitlines():
            row = json.loads(line)
            for task in row["results"]:
                counts["all"] += 1
                counts[task["label"]] += 1
                counts[f"cat:{task['error_category']}"] += 1
                if row["id"] == "wild_tool_bench_7":
                    counts["session7"] += 1
            if all(task["label"] == "correct" for task in row["results"]):
                counts["solved_tasks"] += len(row["results"])
        tasks[name] = counts
    return tasks


def test_report_html_loads_and_filters_work_in_chromium(page: tuple[Path, Path], tmp_path: Path) -> None:
    base, html_file = page
    text = html_file.read_text(encoding="utf-8")
    assert "http://" not in text.split("<body>")[0] and "src=\"http" not in text  # nothing fetched
    probe = tmp_path / "probe.html"
    probe.write_text(text.replace("<head>", "<head>" + CAPTURE, 1).replace("</body>", SELFTEST + "</body>", 1),
                     encoding="utf-8")
    dom, log = _dump(probe, tmp_path / "profile")
    match = re.search(r'<pre id="selftest">(.*?)</pre>', dom, re.DOTALL)
    assert match, dom[-2000:]
    seen = json.loads(match.group(1).replace("&quot;", '"').replace("&lt;", "<").replace("&gt;", ">")
                      .replace("&amp;", "&"))
    expected = _expected(base)
    oracle, scripted = expected["oracle"], expected["scripted"]
    assert seen["total"] == oracle["all"] + scripted["all"] == 32 + 256
    assert seen["rows_page1"] == 50 and seen["page"] == "1 / 6" and seen["page_after_next"] == "2 / 6"
    assert seen["errors"] == oracle["error"] + scripted["error"] == 120
    assert seen["scripted_refusals"] == scripted["cat:Refusal"] == 12
    assert seen["opened"].startswith("1/wild_tool_bench_") and seen["detail_has_gold"]
    assert seen["detail_steps"] >= 1 and seen["history_closed"] and seen["first_own_role"] == "user"
    assert seen["chat"] == 5 + 43  # chat tasks: the sample's 5 and the vectors' 43
    assert seen["session7"] == oracle["session7"] + scripted["session7"] == 8
    assert seen["solved_sessions_tasks"] == 32 + scripted["solved_tasks"] == 32 + 4 * 3  # 3 of 64 solved
    assert seen["oracle_correct"] == 32 and seen["oracle_opened"] == "0/wild_tool_bench_0/0"
    assert seen["oracle_raw"].startswith("<tool_call>\n{\"name\": \"getRealtimeCity\"")
    assert set(seen["categories"]) == {""} | {c[4:] for c in scripted if c.startswith("cat:") and c != "cat:None"}
    assert seen["tables"] == 8  # the versions table included: both runs' manifests record them
    assert seen["images"] == [True] * 6
    assert seen["errors_seen"] == []
    console = [line for line in log.splitlines() if "CONSOLE" in line]
    assert console == [], console
