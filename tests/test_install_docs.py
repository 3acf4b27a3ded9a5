"""The pages agree on how to install: the CPU torch line of docs/install.md §3 is the one the README's
Quickstart and docs/getting-started.md give, and no page recommends the single `--extra-index-url` line
that §3 retired (it may only be quoted as the former line)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"


def _section(text: str, heading: str) -> str:
    start = text.index(heading)
    following = re.search(r"^## ", text[start + len(heading):], flags=re.MULTILINE)
    return text[start:start + len(heading) + following.start()] if following else text[start:]


def _bash_lines(text: str) -> list[str]:
    blocks = re.findall(r"^```bash\n(.*?)^```", text, flags=re.DOTALL | re.MULTILINE)
    return [line.split("#")[0].strip() for block in blocks for line in block.splitlines() if line.strip()]


def _pip_lines(text: str) -> list[str]:
    return [line for line in _bash_lines(text) if line.startswith("pip install")]


def test_the_cpu_torch_lines_are_the_same_everywhere() -> None:
    install = (DOCS / "install.md").read_text(encoding="utf-8")
    lines = _pip_lines(_section(install, "## 3. torch on a machine without a GPU"))
    torch_line = 'pip install --retries 0 --timeout 5 --index-url https://download.pytorch.org/whl/cpu "torch>=2.4,<2.14"'
    assert lines == [torch_line, 'pip install -e ".[dev]"']
    quickstart = _pip_lines(_section((ROOT / "README.md").read_text(encoding="utf-8"), "## Quickstart"))
    assert quickstart == ["pip install -e .", *lines]
    started = _pip_lines(_section((DOCS / "getting-started.md").read_text(encoding="utf-8"),
                                  "## Installing on CPU"))
    assert started[:2] == lines


def test_no_page_recommends_the_retired_extra_index_line() -> None:
    offending = []
    for page in [ROOT / "README.md", *sorted(DOCS.glob("*.md"))]:
        text = page.read_text(encoding="utf-8")
        for line in _bash_lines(text):
            if "--extra-index-url" in line:
                offending.append(f"{page.name}: {line}")
        for paragraph in re.split(r"\n\s*\n", text):
            if re.search(r"pip install[^`\n]*--extra-index-url", paragraph) and "former" not in paragraph:
                offending.append(f"{page.name}: {' '.join(paragraph.split())[:120]}")
    assert offending == []
