"""Reading a roster file (TOML, docs/roster.md §1): resource classes, defaults and one entry per run.

Every problem is one line naming the file, the entry (by its paper row, else its position) and the field.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from wtb_local.benchmark.protocols import protocol_names

PROTOCOLS = tuple(sorted(protocol_names()))  # as listed in errors
# Bytes per weight of a storage or quantisation type (docs/roster.md §3).
WEIGHT_BYTES = {"float32": 4.0, "float": 4.0, "bfloat16": 2.0, "float16": 2.0, "half": 2.0, "auto": 2.0,
                "fp8": 1.0, "int8": 1.0, "int4": 0.5, "mxfp4": 0.5, "awq": 0.5, "gptq": 0.5}
# What a roster's runs are compared with (top-level `compare_with`, docs/roster.md §1): the paper's Table 6/7
# open-weight rows (the default), or nothing (a roster of models the paper has no row for).
COMPARE_WITH = ("paper", "none")
# Model shape values an entry may state (used when no config.json is cached).
CONFIG_KEYS = {"layers": int, "attention_heads": int, "kv_heads": int, "head_dim": int, "kv_lora_rank": int,
               "qk_rope_head_dim": int, "max_position_embeddings": int}


class RosterError(ValueError):
    """A bad roster file; the message is one line naming the file, entry and field."""


@dataclass(frozen=True)
class ResourceClass:
    name: str
    gpus_per_node: int
    nodes: int
    gpu: str
    gpu_memory_gib: float
    sbatch: tuple[str, ...] = ()  # extra sbatch options for this class (partition, constraint, ...)

    @property
    def gpus(self) -> int:
        return self.gpus_per_node * self.nodes


@dataclass(frozen=True)
class Entry:
    """One run: the paper row it is compared with, the model, its flags and resources."""

    row: str
    model: str
    resources: str
    index: int
    params_b: float | None = None
    config: dict[str, int] = field(default_factory=dict)
    thinking: bool | None = None
    protocol: str = "paper"
    parser: str | None = None
    chat_template: str | None = None
    paper_family: str | None = None
    tensor_parallel_size: int = 1
    pipeline_parallel_size: int = 1
    dtype: str = "auto"
    checkpoint_dtype: str = "bfloat16"  # how the weights are stored (memory estimate only)
    quantization: str | None = None  # asked of vLLM (--quantization)
    max_model_len: int | None = None
    gpu_memory_utilization: float | None = None  # None: the installed vLLM's default (vllm_release.py)
    batch_sequences: int = 64
    batch_sequence_tokens: int = 4096
    why: str | None = None  # why this model id, where the paper's name is ambiguous


@dataclass(frozen=True)
class Roster:
    path: Path
    resources: dict[str, ResourceClass]
    entries: list[Entry]
    compare_with: str = "paper"

    def entry(self, row: str) -> Entry:
        for entry in self.entries:
            if entry.row == row:
                return entry
        raise RosterError(f"{self.path}: no entry for row {row!r}")


_ENTRY_FIELDS: dict[str, tuple[type, ...]] = {
    "row": (str,), "model": (str,), "resources": (str,), "params_b": (int, float), "config": (dict,),
    "thinking": (bool,), "protocol": (str,), "parser": (str,), "chat_template": (str,), "paper_family": (str,),
    "tensor_parallel_size": (int,), "pipeline_parallel_size": (int,), "dtype": (str,), "checkpoint_dtype": (str,),
    "quantization": (str,), "max_model_len": (int,), "gpu_memory_utilization": (int, float),
    "batch_sequences": (int,), "batch_sequence_tokens": (int,), "why": (str,),
}
_DEFAULT_FIELDS = set(_ENTRY_FIELDS) - {"row", "model", "params_b", "config", "why"}
_RESOURCE_FIELDS: dict[str, tuple[type, ...]] = {
    "gpus_per_node": (int,), "nodes": (int,), "gpu": (str,), "gpu_memory_gib": (int, float), "sbatch": (list,),
}
_POSITIVE = {"params_b", "tensor_parallel_size", "pipeline_parallel_size", "max_model_len", "batch_sequences",
             "batch_sequence_tokens", "nodes", "gpu_memory_gib"}


def _check(where: str, key: str, value: Any, types: tuple[type, ...]) -> None:
    if isinstance(value, bool) and bool not in types:
        raise RosterError(f"{where}: field '{key}': expected {types[0].__name__}, got {value!r}")
    if not isinstance(value, types):
        raise RosterError(f"{where}: field '{key}': expected {types[0].__name__}, got {value!r}")
    if key in _POSITIVE and isinstance(value, int | float) and value <= 0:  # every _POSITIVE key is a number
        raise RosterError(f"{where}: field '{key}': must be positive, got {value!r}")


def _fields(where: str, table: Any, allowed: dict[str, tuple[type, ...]], keys: set[str] | None = None) -> dict[str, Any]:
    if not isinstance(table, dict):
        raise RosterError(f"{where}: expected a table, got {table!r}")
    for key, value in table.items():
        if key not in allowed or (keys is not None and key not in keys):
            known = ", ".join(sorted(keys if keys is not None else allowed))
            raise RosterError(f"{where}: unknown field '{key}' (known: {known})")
        _check(where, key, value, allowed[key])
    return dict(table)


def _resource(path: Path, name: str, table: Any) -> ResourceClass:
    where = f"{path}: resources.{name}"
    data = _fields(where, table, _RESOURCE_FIELDS)
    for key in ("gpus_per_node", "gpu", "gpu_memory_gib"):
        if key not in data:
            raise RosterError(f"{where}: field '{key}': missing")
    if data["gpus_per_node"] < 0:
        raise RosterError(f"{where}: field 'gpus_per_node': must be 0 or more, got {data['gpus_per_node']}")
    sbatch = data.get("sbatch", [])
    if not all(isinstance(option, str) and option.startswith("--") for option in sbatch):
        raise RosterError(f"{where}: field 'sbatch': expected a list of --options, got {sbatch!r}")
    return ResourceClass(name, data["gpus_per_node"], data.get("nodes", 1), data["gpu"],
                         float(data["gpu_memory_gib"]), tuple(sbatch))


def _entry(path: Path, index: int, table: Any, defaults: dict[str, Any], resources: dict[str, ResourceClass]) -> Entry:
    label = row if isinstance(table, dict) and isinstance(row := table.get("row"), str) else f"#{index + 1}"
    where = f"{path}: entry {label!r}" if not label.startswith("#") else f"{path}: entry {label}"
    data = {**defaults, **_fields(where, table, _ENTRY_FIELDS)}
    for key in ("row", "model", "resources"):
        if not data.get(key):
            raise RosterError(f"{where}: field '{key}': missing")
    if data["resources"] not in resources:
        raise RosterError(f"{where}: field 'resources': unknown class {data['resources']!r} "
                          f"(known: {', '.join(sorted(resources)) or 'none'})")
    if data.get("protocol", "paper") not in PROTOCOLS:
        raise RosterError(f"{where}: field 'protocol': expected one of {', '.join(PROTOCOLS)}, got {data['protocol']!r}")
    for key in ("dtype", "checkpoint_dtype", "quantization"):
        if key in data and data[key] not in WEIGHT_BYTES:
            raise RosterError(f"{where}: field '{key}': unknown {data[key]!r} (known: {', '.join(sorted(WEIGHT_BYTES))})")
    config = data.get("config", {})
    for key, value in config.items():
        if key not in CONFIG_KEYS:
            raise RosterError(f"{where}: field 'config.{key}': unknown (known: {', '.join(sorted(CONFIG_KEYS))})")
        if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
            raise RosterError(f"{where}: field 'config.{key}': expected a positive integer, got {value!r}")
    utilization = data.get("gpu_memory_utilization")
    if utilization is not None and not 0 < utilization <= 1:
        raise RosterError(f"{where}: field 'gpu_memory_utilization': must be in (0, 1], got {utilization!r}")
    return Entry(index=index, **data)


def load_roster(path: str | Path) -> Roster:
    """The roster at `path`; RosterError (one line) for anything malformed."""
    path = Path(path)
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise RosterError(f"{path}: cannot read ({exc.strerror or exc})") from None
    except tomllib.TOMLDecodeError as exc:
        raise RosterError(f"{path}: not valid TOML: {exc}") from None
    unknown = sorted(set(data) - {"compare_with", "defaults", "resources", "entry"})
    if unknown:
        raise RosterError(f"{path}: unknown top-level key '{unknown[0]}' (known: compare_with, defaults, resources, "
                          "entry)")
    compare_with = data.get("compare_with", "paper")
    if compare_with not in COMPARE_WITH:
        raise RosterError(f"{path}: compare_with: expected one of {', '.join(COMPARE_WITH)}, got {compare_with!r}")
    defaults = _fields(f"{path}: defaults", data.get("defaults", {}), _ENTRY_FIELDS, _DEFAULT_FIELDS)
    if not isinstance(data.get("resources", {}), dict):
        raise RosterError(f"{path}: resources: expected tables [resources.NAME]")
    resources = {name: _resource(path, name, table) for name, table in data.get("resources", {}).items()}
    tables = data.get("entry", [])
    if not isinstance(tables, list) or not tables:
        raise RosterError(f"{path}: no [[entry]] tables")
    entries = [_entry(path, i, table, defaults, resources) for i, table in enumerate(tables)]
    seen: dict[str, int] = {}
    for entry in entries:
        if entry.row in seen:
            raise RosterError(f"{path}: entry {entry.row!r}: field 'row': also entry #{seen[entry.row] + 1}")
        seen[entry.row] = entry.index
    return Roster(path, resources, entries, compare_with)
