"""The HTML report at roster scale (45 runs, the paper's 41 open-weight rows and 4 more) in headless
chromium at 1,400 px: no horizontal scrolling anywhere (page, Table 8, error categories, run health),
"previous" and "next" on one line, the task details scrolled into view when a task is opened. And every
plot marker, at 100% too, drawn inside its axes (for a few runs and for a roster).

The 45 runs are copies of two real runs (oracle on the sample: all correct; scripted on the vectors:
errors in every category), each renamed after a paper row in its files and manifest.
Skipped only when chromium is absent outside CI; in CI (`CI=true`) it must run.
"""

from __future__ import annotations

import csv
import json
import math
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
VECTORS = Path(__file__).parents[1] / "fixtures" / "vectors" / "sessions"
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
WIDTH = 1400

PROBE = """<script>
window.addEventListener("load", function () {
  var out = {}, se = document.scrollingElement;
  out.page = [se.scrollWidth, se.clientWidth, window.innerWidth];
  out.wide = Array.prototype.filter.call(document.querySelectorAll("section"), function (s) {
    return s.scrollWidth > s.clientWidth; }).map(function (s) { return [s.id, s.scrollWidth, s.clientWidth]; });
  out.sections = Array.prototype.map.call(document.querySelectorAll("section"), function (s) { return s.id; });
  var prev = document.getElementById("b-prev"), next = document.getElementById("b-next");
  out.pager = [prev.offsetTop, document.getElementById("b-page").offsetTop, next.offsetTop];
  out.pages = document.getElementById("b-page").textContent;
  // and at any width the filter bar may get (longer model names, a narrower window): never split
  var bar = document.querySelector("#browser .filters");
  out.split = [];
  for (var w = 400; w <= 1340; w += 10) {
    bar.style.width = w + "px";
    if (prev.offsetTop !== next.offsetTop) { out.split.push(w); }
  }
  bar.style.width = "";
  out.before = window.scrollY;
  document.querySelectorAll("#b-rows tr")[7].click();
  var detail = document.getElementById("b-detail"), box = detail.getBoundingClientRect();
  out.opened = detail.getAttribute("data-open");
  out.detail_top = box.top; out.viewport = window.innerHeight; out.after = window.scrollY;
  var pre = document.createElement("pre"); pre.id = "probe"; pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
});
</script>"""


def _cli(*args: str) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-m", "wtb_local", *args], capture_output=True, text=True, env=env,
                          timeout=600, check=False)
    assert done.returncode == 0, done.stderr[-3000:]


def _roster_names() -> list[str]:
    with (ROOT / "wtb_local" / "analysis" / "reports" / "paper_table6.csv").open(encoding="utf-8") as handle:
        names = [row["model"] for row in csv.DictReader(handle) if row["group"].startswith("Open-Source")]
    assert len(names) == 41
    return names + [f"extra-model-{i}" for i in range(4)]


@pytest.fixture(scope="module")
def roster_report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("roster")
    _cli("run", "--backend", "oracle", "--model", "Qwen/Qwen3-8B", "--dataset", "sample", "--out",
         str(base / "oracle"), "--progress", "none")
    _cli("run", "--backend", "scripted", "--script", str(VECTORS / "script.jsonl"), "--dataset",
         str(VECTORS / "dataset.jsonl"), "--model", "scripted", "--out", str(base / "scripted"), "--progress", "none")
    runs = base / "runs"
    for i, name in enumerate(_roster_names()):
        source, old = (base / "oracle", "Qwen_Qwen3-8B") if i % 2 == 0 else (base / "scripted", "scripted")
        target = runs / f"{i:02d}-{name}"
        shutil.copytree(source, target)
        for sub in ("result", "score"):
            (target / sub / old).rename(target / sub / name)
        manifest = json.loads((target / "manifest.json").read_text(encoding="utf-8"))
        manifest["config"].update(model=name, model_name=name)
        (target / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    _cli("report", str(runs), "--out", str(base / "report"), "--format", "html")
    return base / "report" / "report.html"


def _chromium(*args: str, profile: Path) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [CHROMIUM or "chromium", "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         f"--user-data-dir={profile}", *args], capture_output=True, text=True, timeout=180, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    return done


@pytest.mark.browser
def test_a_45_run_report_fits_1400_px(roster_report: Path, tmp_path: Path) -> None:
    if CHROMIUM is None:
        if os.environ.get("CI", "").lower() in ("true", "1", "yes"):
            pytest.fail("CI=true but chromium is not installed (.ci/run installs it)")
        pytest.skip("chromium is not installed (apt-get install chromium; CI installs it)")
    probe = tmp_path / "probe.html"
    probe.write_text(roster_report.read_text(encoding="utf-8").replace("</body>", PROBE + "</body>", 1),
                     encoding="utf-8")
    dom = _chromium(f"--window-size={WIDTH},900", "--dump-dom", probe.as_uri(), profile=tmp_path / "p").stdout
    match = re.search(r'<pre id="probe">(.*?)</pre>', dom, re.DOTALL)
    assert match, dom[-2000:]
    seen = json.loads(match.group(1).replace("&quot;", '"').replace("&amp;", "&"))
    assert {"sec-table8", "sec-errors", "sec-health", "plots", "browser"} <= set(seen["sections"])
    scroll_width, client_width, inner = seen["page"]
    assert inner == WIDTH and scroll_width <= client_width <= WIDTH  # no horizontal scrollbar on the page
    assert seen["wide"] == []  # and none inside a section (each scrolls on its own when it must)
    prev, page, nxt = seen["pager"]
    assert prev == nxt and abs(page - prev) <= 4  # one line (the page count sits on the buttons' text baseline)
    assert seen["split"] == []
    assert seen["pages"] == "1 / 128"  # 23 oracle x 32 + 22 scripted x 256 = 6,368 tasks, 50 a page
    assert seen["opened"].startswith("0/wild_tool_bench_") and seen["before"] == 0
    assert seen["after"] > 0 and 0 <= seen["detail_top"] < seen["viewport"] / 4  # details brought into view


def _section(key: str, columns: list[tuple[str, str]], runs: int, value: float) -> object:
    from wtb_local.analysis.reports.sections import Section

    rows = []
    for i in range(runs):
        rows.append({"label": f"model-{i}", "kind": "ours", **{k: value for k, _ in columns}})
        rows.append({"label": f"paper: model-{i}", "kind": "paper", **{k: value for k, _ in columns}})
    return Section(key, key, columns, rows)


@pytest.mark.parametrize("runs", [2, 45])
def test_plot_markers_at_100_percent_are_inside_the_axes(runs: int, tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("matplotlib")
    from wtb_local.analysis.reports import plots
    from wtb_local.analysis.reports.sections import SUBTYPE_COLUMNS, TRANSITIONS
    from wtb_local.analysis.reports.table import COLUMNS, HEADERS

    sections = [
        _section("table6", list(zip(COLUMNS[6], HEADERS[6], strict=True)), runs, 100.0),
        _section("subtypes", list(SUBTYPE_COLUMNS), runs, 100.0),
        _section("transitions", [(f"t{n}", str(n)) for n in TRANSITIONS], runs, 100.0),
    ]
    checked: list[tuple[str, int]] = []

    def save(plt: object, fig: object, path: Path) -> None:
        fig.tight_layout()  # type: ignore[attr-defined]
        fig.canvas.draw()  # type: ignore[attr-defined]
        scale = fig.dpi / 72  # type: ignore[attr-defined]
        for ax in fig.axes:  # type: ignore[attr-defined]
            box = ax.get_window_extent()
            marks = []  # (x, y, half width, half height) in pixels
            for line in ax.get_lines():
                if line.get_marker() not in (None, "", "None"):
                    radius = line.get_markersize() / 2 * scale
                    marks += [(x, y, radius, radius) for x, y in ax.transData.transform(line.get_xydata())]
            for collection in ax.collections:  # scatter: the marker's own shape ("_" is flat), scaled by size
                shape = collection.get_paths()[0].get_extents()
                half_w, half_h = max(abs(shape.x0), abs(shape.x1)), max(abs(shape.y0), abs(shape.y1))
                sizes = collection.get_sizes()
                for j, (x, y) in enumerate(ax.transData.transform(collection.get_offsets())):
                    side = math.sqrt(sizes[j % len(sizes)]) * scale
                    marks.append((x, y, half_w * side, half_h * side))
            outside = [m for m in marks if not (box.x0 - 0.5 <= m[0] - m[2] and m[0] + m[2] <= box.x1 + 0.5
                                                and box.y0 - 0.5 <= m[1] - m[3] and m[1] + m[3] <= box.y1 + 0.5)]
            assert outside == [], f"{path.name}: {len(outside)} marker(s) cut at the axes' edge"
            checked.append((path.name, len(marks)))
        plt.close(fig)  # type: ignore[attr-defined]

    monkeypatch.setattr(plots, "_save", save)
    plots.write_plots(sections, tmp_path)
    names = dict(checked)
    # markers exist where the values are drawn as points: 2 runs as lines, a roster as dot plots
    assert names["accuracy_by_task_order.png"] == runs * 2 * 4
    assert names["accuracy_by_transitions.png"] == runs * 2 * 4
    if runs > plots.MANY_RUNS:
        assert names["accuracy_by_task_type.png"] == runs * 2 * 4 and names["run_comparison.png"] == runs * 2 * 2
