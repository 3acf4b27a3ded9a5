"""The screenshot in docs/exports.md: a run exported to an Inspect log, one sample opened in Inspect's own
viewer (`inspect view` on the loopback) in headless Chromium.

    python scripts/inspect_view_screenshot.py runs/oracle-demo wild_tool_bench_0_t0 docs/images/inspect-view-sample.png

Needs the export extra and chromium. The log is written into a temporary folder named `inspect-logs`."""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # this checkout's wtb_local and tests.helpers


def main(run_dir: str, sample_id: str, out: str) -> None:
    from tests.helpers.devtools import Page
    from tests.helpers.inspect_view import inspect_viewer, sample_url

    with tempfile.TemporaryDirectory() as scratch:
        logs = Path(scratch) / "inspect-logs"
        subprocess.run([sys.executable, "-m", "wtb_local", "export", run_dir, "--to", "inspect", str(logs)],
                       check=True)
        (log,) = sorted(logs.glob("*.eval"))
        with inspect_viewer(logs) as viewer, Page() as page:
            page.open(sample_url(viewer, log.name, sample_id))
            page.wait_for_text([sample_id, "VERDICT", "ASSISTANT"])
            page.screenshot(out)
    print(out)


if __name__ == "__main__":
    main(*sys.argv[1:4])
