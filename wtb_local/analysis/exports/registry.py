"""The exporters by name, behind one small interface: `export --to NAME` and `run --mlflow-uri` look them up
here and loop over what they return (docs/exports.md). An entry names the module that holds its exporter,
imported only when that exporter is used, so that neither inspect_ai nor mlflow is imported by `--help`, by
another exporter or by a run that exports nothing.

An exporter is built for one destination (`Target`); `check()` runs before any run is read (its package is
installed, a tracking server answers) and `export(runs)` writes one record per score set of each run."""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from wtb_local.contract.install_command import install_command


class ExportError(ValueError):
    """An export refused or impossible; the message is one line naming the run (or the destination) and why."""


@dataclass(frozen=True)
class Target:
    """Where an export goes: `dest` (a folder or file) or a tracking URI and experiment; `uri_option` is
    the option that gave the URI, named in its lines (`--tracking-uri`, `run`'s `--mlflow-uri`)."""

    dest: str | None = None
    tracking_uri: str | None = None
    experiment: str = "wtb_local"
    uri_option: str = "--tracking-uri"


@dataclass(frozen=True)
class Exported:
    """One record written: the run's label, where it went (the line's tail) and what it could not carry."""

    label: str
    where: str
    missing: list[str] = field(default_factory=list)


class Exporter(Protocol):
    def check(self) -> None:
        """Before any run is read: refuse (ExportError, one line) what cannot work."""

    def export(self, runs: list[Any]) -> list[Exported]:
        """Write each run's record (runs: source.py's ExportRun, one per score set); one `Exported` per run,
        in order."""


@dataclass(frozen=True)
class ExporterEntry:
    """One exporter: its name (`--to NAME`), the module and factory that build it, the optional package it
    needs, what DEST is (None: it takes no DEST), the `run` option that exports to it, and its help."""

    name: str
    module: str
    factory: str
    help: str
    package: str | None = None
    dest: str | None = None
    run_option: str | None = None

    def require(self) -> None:
        """One line naming the install command when the package is missing."""
        if self.package is not None and importlib.util.find_spec(self.package) is None:
            raise ExportError(f"--to {self.name}: {self.package} is not installed ({install_command('export')})")

    def build(self, target: Target) -> Exporter:
        """The exporter for `target`, its package checked first and its module imported now."""
        self.require()
        factory: Callable[[Target], Exporter] = getattr(importlib.import_module(self.module), self.factory)
        return factory(target)


EXPORTERS: dict[str, ExporterEntry] = {entry.name: entry for entry in (
    ExporterEntry("inspect", "wtb_local.analysis.exports.inspect_log", "InspectExporter",
                  "one Inspect log per run into DEST (a folder)", package="inspect_ai",
                  dest="a folder for the logs"),
    ExporterEntry("mlflow", "wtb_local.analysis.exports.mlflow_run", "MlflowExporter",
                  "one MLflow run per run at --tracking-uri", package="mlflow", run_option="mlflow_uri"),
    ExporterEntry("leaderboard", "wtb_local.analysis.exports.leaderboard", "LeaderboardExporter",
                  "the benchmark's leaderboard row(s) into DEST (.csv or .json)",
                  dest="a file for the row(s) (.csv or .json)"),
)}


def exporter_entry(name: str) -> ExporterEntry:
    return EXPORTERS[name]


__all__ = ["EXPORTERS", "ExportError", "Exported", "Exporter", "ExporterEntry", "Target", "exporter_entry"]
