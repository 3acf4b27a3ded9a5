"""The dataset: loading and validating release-schema files, fetching the pinned release, statistics.

`load_dataset("sample")` reads the embedded sample, `load_dataset("release")` the release file in the
user cache (fetched on first use), anything else is a path.
"""

from __future__ import annotations

from wtb_local.benchmark.dataset.errors import DatasetError
from wtb_local.benchmark.dataset.loader import (
    DATASET_NAMES,
    DEFAULT_DATASET,
    RELEASE_NAME,
    SAMPLE_NAME,
    dataset_sha256,
    load_dataset,
    read_dataset,
    resolve_dataset,
)

__all__ = [
    "DATASET_NAMES",
    "DEFAULT_DATASET",
    "RELEASE_NAME",
    "SAMPLE_NAME",
    "DatasetError",
    "dataset_sha256",
    "load_dataset",
    "read_dataset",
    "resolve_dataset",
]
