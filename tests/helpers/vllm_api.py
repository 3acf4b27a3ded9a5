"""Whether a vLLM release's own declarations accept the engine and sampling arguments the vllm backend builds
(wtb_local/engines/vllm_engine.py, engines/config.py): `AsyncEngineArgs(**args)` and `SamplingParams(**args)`
constructed, not run, and the values of our `Literal` settings among those vLLM's annotations allow. The
installed release is checked in this process, another (WTB_VLLM_NEXT: the folder holding its `vllm` package)
in a subprocess, since vLLM is imported once per process (tests/engines/test_vllm_engine_args.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import typing
from pathlib import Path
from typing import Any


def _literals(annotation: Any) -> set[Any] | None:
    """Every value the Literals inside `annotation` allow; None when it holds a plain `str` (any value)."""
    values: set[Any] = set()
    stack = [annotation]
    while stack:
        item = stack.pop()
        if item is str:
            return None
        if typing.get_origin(item) is typing.Literal:
            values.update(typing.get_args(item))
        else:
            stack.extend(typing.get_args(item))
            value = getattr(item, "__value__", None)  # a `type X = ...` alias
            if value is not None:
                stack.append(value)
    return values


def _annotation(cls: Any, name: str) -> Any:
    """The declared type of dataclass field `name` (evaluated in its module: vLLM writes string annotations,
    and some elsewhere in the class name what only type checkers import); Literal[()] when there is none."""
    import dataclasses

    for field in dataclasses.fields(cls):
        if field.name == name:
            owner = next(c for c in cls.__mro__ if name in getattr(c, "__annotations__", {}))
            declared = field.type
            return eval(declared, vars(sys.modules[owner.__module__])) if isinstance(declared, str) else declared
    return typing.Literal[()]


def check(engine: list[dict[str, Any]], sampling: list[dict[str, Any]],
          literal_fields: dict[str, list[Any]]) -> dict[str, Any]:
    """The installed vLLM's verdict: per argument set, None (accepted) or the one-line error; per Literal
    field, our values it does not allow."""
    import vllm
    from vllm import AsyncEngineArgs, SamplingParams

    def verdict(cls: Any, args: dict[str, Any]) -> str | None:
        try:
            cls(**args)
        except Exception as exc:  # noqa: BLE001 - the verdict, one line
            return f"{type(exc).__name__}: {' '.join(str(exc).split())[:300]}"
        return None

    refused = {}
    for name, ours in literal_fields.items():
        allowed = _literals(_annotation(AsyncEngineArgs, name))
        refused[name] = sorted(v for v in ours if allowed is not None and v not in allowed)
    return {"version": vllm.__version__, "file": vllm.__file__,
            "engine": [verdict(AsyncEngineArgs, args) for args in engine],
            "sampling": [verdict(SamplingParams, args) for args in sampling],
            "literals": refused}


_CHECK = """
import json, sys
from tests.helpers.vllm_api import check
payload = json.loads(sys.stdin.read())
print(json.dumps(check(payload["engine"], payload["sampling"], payload["literals"])))
"""


def check_elsewhere(vllm_path: str, engine: list[dict[str, Any]], sampling: list[dict[str, Any]],
                    literal_fields: dict[str, list[Any]], *, timeout: float = 300) -> dict[str, Any]:
    """`check` with the vLLM whose `vllm` package lies in `vllm_path`, in a subprocess."""
    repo = str(Path(__file__).resolve().parents[2])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([repo, vllm_path, os.environ.get("PYTHONPATH", "")])}
    payload = json.dumps({"engine": engine, "sampling": sampling, "literals": literal_fields})
    done = subprocess.run([sys.executable, "-c", _CHECK], input=payload, capture_output=True, text=True, env=env,
                          cwd=repo, timeout=timeout, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"the check with vLLM from {vllm_path} failed (exit {done.returncode}): "
                           f"{done.stderr.strip()[-2000:]}")
    report = json.loads(done.stdout.strip().splitlines()[-1])
    if not Path(report["file"]).resolve().is_relative_to(Path(vllm_path).resolve()):
        raise RuntimeError(f"{vllm_path}: the subprocess imported vLLM from {report['file']}")
    return report
