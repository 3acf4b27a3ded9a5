"""Time `report` on full-size runs: three models x 256 sessions / 1,024 tasks (the golden vectors' result
rows replicated, as in bench_scoring.py), in the benchmark harness's layout. Prints the report command's
wall time, the HTML file's size, and how long headless chromium takes to load the page and render the
browser's first page (`--dump-dom`), when chromium is installed.

Usage: python scripts/bench_report.py [--models N]
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))

from bench_scoring import build


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as temp:
        folder = Path(temp)
        dataset, result = build(folder)
        for i in range(args.models):
            target = folder / "harness" / "result" / f"model-{i}"
            target.mkdir(parents=True)
            shutil.copy(result, target / "Wild-Tool-Bench_result.jsonl")
        start = time.perf_counter()
        subprocess.run([sys.executable, "-m", "wtb_local", "report", str(folder / "harness"), "--dataset",
                        str(dataset), "--out", str(folder / "report"), "--format", "html,csv"],
                       check=True, capture_output=True, cwd=ROOT)
        wall = time.perf_counter() - start
        html = folder / "report" / "report.html"
        print(f"| report, {args.models} models x 1,024 tasks (html,csv) | {wall:.1f} s |")
        print(f"| report.html size | {html.stat().st_size / 1e6:.1f} MB |")
        chromium = shutil.which("chromium") or shutil.which("chromium-browser")
        if chromium is None:
            print("| chromium load | not installed |")
            return
        start = time.perf_counter()
        dom = subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                              "--disable-background-networking", "--disable-component-update", "--disable-sync",
                              f"--user-data-dir={folder / 'profile'}", "--dump-dom", html.as_uri()],
                             check=True, capture_output=True, text=True).stdout
        load = time.perf_counter() - start
        rows = dom.count('class="b-row ')
        print(f"| chromium: load the page, render the first page of the browser ({rows} rows) | {load:.1f} s |")


if __name__ == "__main__":
    main()
