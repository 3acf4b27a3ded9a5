"""Every command line in the ```bash blocks of README.md and docs/*.md runs, in order, in one directory.

The README runs first, then the docs/ pages in name order (docs/reference/, which quotes the paper
harness, is not read), so a page may use a run directory the README's lines made (`runs/oracle-demo`, the
main job's `runs/Qwen_Qwen3-8B`).

Lines run as written through bash, with the environment twins below standing in for a GPU and the network:
a line that names no backend runs the oracle backend on the embedded sample (the real parse -> judge ->
score path, with the model's native format). Lines that cannot run here are listed in SKIPPED with the
reason, and a few are rewritten by SUBSTITUTIONS (each with its reason); every other line runs unchanged.
To cover a new command on a page, add nothing; to cover one that needs a GPU or the network, add a rule.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.run.fake_openai import fake_openai_server
from tests.run.test_openai_chat import chat_server

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
PAGES = [README, *sorted((ROOT / "docs").glob("*.md"))]

# What every line runs under: the WTB_* twins of --backend/--dataset/--limit/--progress. A command line's
# own options win over these.
ENVIRONMENT = {
    "WTB_BACKEND": "oracle",  # no GPU: the gold replies, written in the model's own format
    "WTB_DATASET": "sample",  # no network: the embedded sample
    "WTB_LIMIT": "2",  # keeps every page's commands to seconds each
    "WTB_PROGRESS": "none",
    "WTB_MAX_NEW_TOKENS": "8",  # for the lines that run a (tiny) model for real
    "HF_HUB_OFFLINE": "1",
}

# (regex matched against the line, reason): lines that are not run.
SKIPPED: list[tuple[str, str]] = [
    (r"^python3 -m venv ", "creates a virtual environment; the lines run in the project's own (.ci/run makes one)"),
    (r"^\. \.venv/bin/activate$", "activates that environment (each line here runs in its own shell)"),
    (r"^pip (install|uninstall) ", "installs packages: CI's .ci/run does exactly this on a fresh venv"),
    (r"^python -m pytest\b|(^|\s)\S*python -m pytest\b", "the test suite itself (CI runs it)"),
    (r"^vllm serve ", ("starts a vLLM server on a GPU; tests/run/test_openai_chat.py starts the real (CPU) "
                       "server, and the lines that use one run against loopback servers")),
    (r"^mlflow server ", "starts an MLflow tracking server; tests/exports/test_mlflow_export.py starts one"),
    (r"^until curl -sf http://127\.0\.0\.1:\d+/health;", "waits for the server started on the line before"),
    (r"^VLLM_CPU_KVCACHE_SPACE=\S+ vllm serve ", "starts vLLM's CPU-build server; tests/real_model starts one"),
    (r"(^|\s)sbatch ", "needs SLURM; tests/test_slurm.py runs the scripts with a fake srun"),
    (r"(^|\s)slurm/\S+\.sh\b", "submits SLURM jobs (sbatch); the slurm/ scripts are tested with fakes"),
    (r"^python -m wtb_local export \S+ --to (inspect|mlflow)\b|^inspect view |\s--mlflow-uri ",
     "needs the export extra (inspect_ai, mlflow) and a server; tests/exports/ runs these in the export tier"),
    (r"^python -m wtb_local export \S+ --to leaderboard\b",
     ("the release is not here, so the row would be a sample run's custom one; tests/exports/test_leaderboard.py "
      "writes a full-release run's row and the sample's")),
    (r"\svllm:\w|--parser(s)? \S*vllm:",
     ("vLLM's own parsers need vLLM and the run's tokenizer on disk; tests/run/test_vllm_parser.py runs "
      "`parsers compare` and a replay through vllm:hermes (marker vllm)")),
    (r"\s--repeats [2-9]", ("repeats need a backend that samples, and the stand-in oracle does not (it is refused); "
                            "tests/run/test_repeats.py runs them on a loopback server that samples by seed")),
]

# (regex, replacement, reason): rewrites applied before a line runs. `{tiny}` is a tiny random-weight
# model with Qwen2.5's chat template, `{server}` a loopback OpenAI-compatible server.
SUBSTITUTIONS: list[tuple[str, str, str]] = [
    (r"--model Qwen/Qwen2\.5-7B-Instruct --backend transformers",
     "--model {tiny} --model-name Qwen/Qwen2.5-7B-Instruct --backend transformers",
     "the transformers backend on a 7B model needs a GPU and a download: the same backend on a tiny model"),
    (r"--model Qwen/Qwen3-8B --backend openai --base-url http://127\.0\.0\.1:8000/v1",
     "--model {tiny} --model-name Qwen/Qwen3-8B --backend openai --base-url {server}",
     "no GPU server here: a loopback server, prompts rendered with the tiny model's tokenizer"),
    (r"--backend openai-chat --base-url http://127\.0\.0\.1:8000/v1",
     "--backend openai-chat --base-url {chat_server}",
     ("no GPU server here: a loopback chat server, serving Qwen/Qwen3-8B, that answers with parsed tool calls "
     "and text")),
    (r"\s*\[--[a-z-]+(?: [A-Za-z_]+)?\]", "", "an optional argument shown in brackets ([--parser NAME])"),
    (r"runs/other-model", "runs/oracle-demo", "a second model's run: the Quickstart's demo run stands in"),
    (r"report ref_outputs/", "report runs/oracle-demo/",
     "no harness output folder here: a run directory has the same result/ and score/ layout"),
    (r"--dataset release\b", "--dataset sample", "no network: the release cannot be fetched here"),
    (r"doctor --model Qwen/Qwen3-8B\b", "doctor --model {tiny}",
     ("nothing is downloaded here (HF_HUB_OFFLINE=1), and a hub model that is not cached makes doctor exit 1 "
      "(docs/reproducibility.md §4): a local model directory stands in")),
]


def readme_commands(text: str) -> list[str]:
    """The command lines of every ```bash block, continuation lines joined, comments and blanks dropped."""
    commands: list[str] = []
    for block in re.findall(r"^```bash\n(.*?)^```", text, flags=re.DOTALL | re.MULTILINE):
        pending = ""
        for line in block.splitlines():
            if line.rstrip().endswith("\\"):
                pending += line.rstrip()[:-1].rstrip() + " "
                continue
            line = (pending + line).strip()
            pending = ""
            if line and not line.startswith("#"):
                commands.append(line)
    return commands


def skip_reason(line: str) -> str | None:
    for pattern, reason in SKIPPED:
        if re.search(pattern, line):
            return reason
    if line.endswith("&"):
        return "starts a background server"
    return None


def rewrite(line: str, values: dict[str, str]) -> str:
    for pattern, replacement, _reason in SUBSTITUTIONS:
        line = re.sub(pattern, replacement.format(**values), line)
    return line


def page_commands() -> list[tuple[str, str]]:
    """(page, command line) for every page, README first."""
    return [(page.relative_to(ROOT).as_posix(), command)
            for page in PAGES for command in readme_commands(page.read_text(encoding="utf-8"))]


def test_the_readme_has_commands_to_run() -> None:
    commands = readme_commands(README.read_text(encoding="utf-8"))
    runnable = [c for c in commands if skip_reason(c) is None]
    assert any(c.startswith("python -m wtb_local --model Qwen/Qwen3-8B --backend oracle") for c in runnable)
    assert "python -m wtb_local --model Qwen/Qwen3-8B --no-thinking" in runnable


def test_the_docs_pages_have_commands_to_run() -> None:
    runnable = {(page, c) for page, c in page_commands() if skip_reason(c) is None}
    assert ("docs/gpus-and-slurm.md", "python -m wtb_local merge runs/sharded") in runnable
    assert any(page == "docs/reports.md" and c.startswith("python -m wtb_local report runs/Qwen_Qwen3-8B ")
               for page, c in runnable)
    assert not any(page.startswith("docs/reference/") for page, _ in page_commands())


@pytest.mark.slow
@pytest.mark.timeout(900)  # about 30 commands, each a subprocess run: minutes on 2 shared cores
def test_every_readme_command_runs(qwen_tiny_dir: Path, tmp_path: Path) -> None:
    pytest.importorskip("transformers")
    commands = page_commands()
    bindir = str(Path(sys.executable).parent)  # `python` is this interpreter
    env = {**os.environ, **ENVIRONMENT, "PYTHONPATH": str(ROOT), "PATH": f"{bindir}:{os.environ['PATH']}",
           "WTB_CACHE_DIR": str(tmp_path / "cache")}
    # The roster lines name `rosters/paper.toml` as a checkout's path: the folder is laid where they run.
    shutil.copytree(ROOT / "rosters", tmp_path / "rosters")
    ran = 0
    with fake_openai_server(str(qwen_tiny_dir)) as server, chat_server("Qwen/Qwen3-8B") as (chat_url, _bodies):
        server.release.set()
        values = {"tiny": str(qwen_tiny_dir), "server": server.base_url, "chat_server": chat_url}
        for page, command in commands:
            if skip_reason(command):
                continue
            line = rewrite(command, values)
            done = subprocess.run(["bash", "-c", line], cwd=tmp_path, env=env, check=False, capture_output=True, text=True,
                                  timeout=600)
            assert done.returncode == 0, f"{page}: {command}\n-> {line}\n{done.stderr}"
            assert "Traceback" not in done.stderr, f"{page}: {command}\n{done.stderr}"
            ran += 1
    assert ran >= 29  # the runnable lines of README.md and docs/*.md today
