"""The full report: sections from loaded runs, written as Markdown, CSV, JSON, HTML and PNG files."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from wtb_local.analysis.reports.runs import Run
from wtb_local.analysis.reports.sections import Section, build_sections

FORMATS = ("md", "csv", "json", "html", "png")


def no_matplotlib(what: str) -> str:
    """The note (or error) for plots that cannot be drawn: matplotlib and the command that installs it."""
    from wtb_local.contract.install_command import install_command  # deferred: start-up

    return f"{what}: matplotlib is not installed ({install_command('report')})"


def png_refused(asked: bool, chosen: Any, out_dir: Any) -> str | None:
    """The one-line error when png files were asked for explicitly (`--format`, or its WTB_* twin) and cannot
    be drawn; None otherwise (the default format set skips png with a note). Checked before anything is read
    or written: `report` and `explain` without the png asked for are not what was asked."""
    if out_dir is None or not asked or "png" not in chosen:
        return None
    from wtb_local.analysis.reports.plots import available  # deferred: start-up

    return None if available() else no_matplotlib("--format png") + "; or leave png out of --format"


@dataclass
class Written:
    files: list[Path] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def parse_formats(text: str) -> tuple[str, ...]:
    """`md,csv` -> ("md", "csv"); an unknown name raises ValueError with the known ones."""
    chosen = tuple(dict.fromkeys(part.strip().lower() for part in text.split(",") if part.strip()))
    unknown = [name for name in chosen if name not in FORMATS]
    if unknown or not chosen:
        raise ValueError(f"unknown format {', '.join(unknown) or '(none)'}: choose from {','.join(FORMATS)}")
    return chosen


def run_notes(runs: Sequence[Run], paper: bool) -> list[str]:
    """What a reader must know before comparing, per row: the notes every command gives its run
    (analysis/reports/present.py), each after the row's label."""
    from wtb_local.analysis.reports.present import paper_row_of  # deferred: start-up
    from wtb_local.analysis.reports.present import run_notes as notes_of  # deferred: start-up
    from wtb_local.analysis.reports.run_status import status_note  # deferred: start-up

    notes = []
    for run in runs:
        if run.note:
            notes.append(f"{run.label}: {run.note}")
        said = status_note(run.base, run.manifest)  # still running, or its process died
        if said:
            notes.append(f"{run.label}: {said}")
        if run.facts.rescore:
            continue  # a re-scoring: its run's notes apply
        shown = paper and paper_row_of(run.facts) is not None
        # the protocol line is the report's legend; the rest as `run` prints it
        notes += [f"{run.label}: {note}" for note in notes_of(run.facts, run.metric, paper_shown=shown,
                                                                    protocol_note=False)]
    return notes


def write_report(runs: Sequence[Run], out_dir: str | Path, formats: Sequence[str], paper: bool = True,
                 sections: Sequence[Section] | None = None) -> Written:
    """Write the chosen formats into `out_dir`: report.md, <section>.csv, report.json, report.html,
    plots/*.png. Without matplotlib, PNGs are skipped with a note and the HTML has no plots (the `report`
    command refuses a png it was asked for explicitly before calling this)."""
    from wtb_local.analysis.reports import render

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    sections = list(sections if sections is not None else build_sections(runs, paper))
    written = Written(notes=run_notes(runs, paper))
    plots: list[Path] = []
    if "png" in formats or "html" in formats:
        from wtb_local.analysis.reports import plots as plotting

        if plotting.available():
            plots = plotting.write_plots(sections, out / "plots")
            if "png" in formats:
                written.files += plots
        elif "png" in formats or "html" in formats:
            written.notes.append(no_matplotlib("png skipped" if "png" in formats else "no plots in the HTML"))
    if "md" in formats:
        written.files.append(_write(out / "report.md", render.report_markdown(
            sections, [p.name for p in plots] if "png" in formats else [], written.notes)))
    if "csv" in formats:
        written.files += [_write(out / f"{s.key}.csv", render.section_csv(s)) for s in sections]
    if "json" in formats:
        written.files.append(_write(out / "report.json", render.report_json(sections, runs)))
    if "html" in formats:
        from wtb_local.analysis.reports.html import report_html  # deferred: start-up

        written.files.append(_write(out / "report.html", report_html(sections, runs, plots, written.notes)))
    if plots and "png" not in formats:  # drawn only to be embedded in the HTML
        for path in plots:
            path.unlink()
        if (out / "plots").is_dir() and not any((out / "plots").iterdir()):
            (out / "plots").rmdir()
    return written


def _write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path
