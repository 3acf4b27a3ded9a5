"""`wtb_local.run` loads its public names when asked (docs/architecture.md, "Layout"): importing one module
of the runner does not import the whole of it, and every name the package lists is the object its module
defines."""

from __future__ import annotations

import importlib
import subprocess
import sys

import wtb_local.run as run_package


def test_importing_one_runner_module_loads_only_it_and_its_packages() -> None:
    probe = ("import sys, wtb_local.run.loop.seeds; "
             "print(sorted(m for m in sys.modules if m.startswith('wtb_local.run')))")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, check=True)
    assert done.stdout.strip() == str(["wtb_local.run", "wtb_local.run.loop", "wtb_local.run.loop.seeds"])


def test_every_listed_name_is_its_modules_own_object() -> None:
    assert run_package.__all__ == [
        "PreparedRun", "ResolvedRun", "RunError", "RunOptions", "RunOutcome", "RunPaths", "SessionRunner",
        "StepDriver", "config_diff", "config_hash", "hashed_config", "prepare", "reply_from_parse", "request_id",
        "request_seed", "resolve_scheduling", "run_job", "run_job_async", "run_paths"]
    homes = {"RunError": "wtb_local.contract.errors", "config_diff": "wtb_local.contract.config_diff",
             "run_job": "wtb_local.run.job", "RunOptions": "wtb_local.run.setup.options",
             "StepDriver": "wtb_local.run.loop.steps", "PreparedRun": "wtb_local.run.setup.prepare"}
    assert set(run_package.__all__) == set(run_package._EXPORTS)
    for name in run_package.__all__:
        assert getattr(run_package, name) is getattr(importlib.import_module(run_package._EXPORTS[name]), name)
    for name, module in homes.items():
        assert run_package._EXPORTS[name] == module
    assert set(run_package.__all__) <= set(dir(run_package))


def test_an_unknown_name_is_an_attribute_error() -> None:
    try:
        run_package.no_such_name  # noqa: B018
    except AttributeError as exc:
        assert str(exc) == "module 'wtb_local.run' has no attribute 'no_such_name'"
    else:
        raise AssertionError("no AttributeError")
