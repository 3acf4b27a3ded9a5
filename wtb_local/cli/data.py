"""`data` commands: fetch the pinned release, verify a file, print dataset statistics."""

from __future__ import annotations

import json

import click

from wtb_local.benchmark.dataset import DEFAULT_DATASET, DatasetError, read_dataset, resolve_dataset
from wtb_local.benchmark.dataset.blob import file_blob_sha1
from wtb_local.benchmark.dataset.fetch import (
    DEFAULT_TIMEOUT_S,
    RELEASE_BLOB_SHA1,
    RELEASE_URL,
    FetchError,
    fetch_release,
)


@click.group(name="data")
def data() -> None:
    """Fetch, verify and describe the dataset."""


# The pinned release's git blob SHA-1, for both `fetch` and `verify`.
_sha1_option = click.option(
    "--sha1",
    "expected_sha1",
    default=RELEASE_BLOB_SHA1,
    show_default=True,
    envvar="WTB_DATASET_SHA1",
    help="Expected git blob SHA-1 of the file.",
)


@data.command(name="fetch")
@click.option(
    "--url",
    default=RELEASE_URL,
    show_default=True,
    envvar="WTB_DATASET_URL",
    help="Where to download the release file from.",
)
@_sha1_option
@click.option(
    "--force",
    is_flag=True,
    envvar="WTB_DATASET_FORCE",
    help="Download again even when a verified file is already in the cache.",
)
@click.option(
    "--timeout",
    type=float,
    default=DEFAULT_TIMEOUT_S,
    show_default=True,
    envvar="WTB_DATASET_TIMEOUT",
    help="Network timeout in seconds.",
)
def fetch(url: str, expected_sha1: str, force: bool, timeout: float) -> None:
    """Download the pinned WildToolBench release into the user cache, verifying its git blob SHA-1."""
    try:
        path = fetch_release(url=url, expected_sha1=expected_sha1, force=force, timeout=timeout)
    except FetchError as exc:
        raise click.ClickException(str(exc)) from None
    click.echo(f"{path} (git blob sha1 {expected_sha1})")


@data.command(name="verify")
@click.argument("path", type=click.Path(dir_okay=False))
@_sha1_option
@click.option(
    "--schema-only",
    is_flag=True,
    envvar="WTB_VERIFY_SCHEMA_ONLY",
    help="Report the hash but do not fail on a mismatch (for files other than the release).",
)
def verify(path: str, expected_sha1: str, schema_only: bool) -> None:
    """Check a dataset file: its git blob SHA-1 against the pinned release, then its schema."""
    try:
        got = file_blob_sha1(path)
    except OSError as exc:
        raise click.ClickException(f"{path}: cannot read: {exc.strerror or exc}") from None
    matches = got == expected_sha1
    if matches:
        click.echo(f"git blob sha1: {got} (matches the pinned release)")
    else:
        click.echo(f"git blob sha1: MISMATCH, expected {expected_sha1}, got {got}")
    try:
        sessions, warnings = read_dataset(path)
    except DatasetError as exc:
        raise click.ClickException(f"invalid dataset: {exc}") from None
    for warning in warnings:
        click.echo(f"warning: {warning}", err=True)
    tasks = sum(len(s.english_tasks) for s in sessions)
    click.echo(f"schema: valid ({len(sessions)} sessions, {tasks} tasks, {len(warnings)} warnings)")
    if not matches and not schema_only:
        raise click.ClickException("the file is valid but is not the pinned release file "
                                   "(--schema-only checks a file that is not the release)")


@data.command(name="stats")
@click.argument("dataset", required=False, default=DEFAULT_DATASET)
@click.option("--json", "as_json", is_flag=True, help="Print the statistics as JSON.")
def stats(dataset: str, as_json: bool) -> None:
    """Print dataset statistics. DATASET is a path, `sample` or `release` (default)."""
    from wtb_local.benchmark.dataset.stats import dataset_stats, format_stats  # deferred: start-up (--help)

    try:
        path = resolve_dataset(dataset)
        sessions, _ = read_dataset(path)
    except DatasetError as exc:
        raise click.ClickException(str(exc)) from None
    figures = dataset_stats(sessions)
    if as_json:
        click.echo(json.dumps({"path": str(path), **figures}, ensure_ascii=False, indent=2))
    else:
        click.echo(format_stats(figures, title=str(path)))
