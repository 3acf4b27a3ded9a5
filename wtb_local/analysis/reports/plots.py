"""PNG plots of a report (matplotlib, the `report` extra): accuracy by task type, task order, turn
subtype and number of instruction transitions, the error distribution as stacked bars, and a multi-run
comparison. Each run is one colour; the paper's values, where it has the model, are black markers.
Beyond `MANY_RUNS` runs (a roster) bars and lines per run are unreadable: the same figures become dot
plots, one row per run, one colour per column, the paper's values as black outlines (docs/multinode.md §5).
Accuracy axes end a little above 100 so markers at 100% are drawn whole, not cut at the top edge.

matplotlib is imported only here; `available()` says whether it is installed.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from wtb_local.analysis.reports.sections import TRANSITIONS, Section

PLOT_NAMES = ("accuracy_by_task_type.png", "accuracy_by_task_order.png", "accuracy_by_subtype.png",
              "accuracy_by_transitions.png", "error_distribution.png", "run_comparison.png")
_DPI = 150
MANY_RUNS = 6
_TOP = 104.0  # accuracy axes: 0-100 ticks, room above for a whole marker at 100%


def available() -> bool:
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return False
    return True


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")  # no display; same pixels everywhere
    import matplotlib.pyplot as plt

    plt.rcParams.update({"font.size": 10, "axes.spines.top": False, "axes.spines.right": False,
                         "svg.hashsalt": "wtb", "axes.titlesize": 11})
    return plt


def _rows(section: Section | None, kind: str) -> list[dict[str, Any]]:
    return [row for row in (section.rows if section else []) if row.get("kind") == kind]


def _paper_for(section: Section, label: str) -> dict[str, Any] | None:
    """The paper row that follows a run's row in the section, if any."""
    rows = section.rows
    for i, row in enumerate(rows):
        if row["label"] == label and row.get("kind") == "ours":
            nxt = rows[i + 1] if i + 1 < len(rows) else None
            return nxt if nxt is not None and nxt.get("kind") == "paper" else None
    return None


def _value(row: dict[str, Any], key: str) -> float:
    value = row.get(key)
    return float(value) if isinstance(value, int | float) and not math.isnan(float(value)) else math.nan


def _grouped_bars(plt: Any, path: Path, section: Section, keys: Sequence[tuple[str, str]], title: str,
                  paper: bool = True) -> None:
    runs = _rows(section, "ours")
    if len(runs) > MANY_RUNS:
        _dots(plt, path, section, keys, title, paper=paper)
        return
    fig, ax = plt.subplots(figsize=(7.0, 3.8))
    width = 0.8 / max(1, len(runs))
    xs = range(len(keys))
    for j, row in enumerate(runs):
        offsets = [x - 0.4 + width * (j + 0.5) for x in xs]
        values = [_value(row, key) for key, _ in keys]
        ax.bar(offsets, [0 if math.isnan(v) else v for v in values], width * 0.95, label=row["label"])
        known = _paper_for(section, row["label"]) if paper else None
        if known is not None:
            ax.scatter(offsets, [_value(known, key) for key, _ in keys], marker="_", s=180, color="black",
                       zorder=3, label="paper" if j == 0 else None)
    ax.set_xticks(list(xs), [header for _, header in keys])
    _finish(plt, fig, ax, path, title)


_SHARED_ROW = 24  # characters of a legend label beyond which each label gets its own row


def _finish(plt: Any, fig: Any, ax: Any, path: Path, title: str) -> None:
    """Shared axis, legend below the plot (never over the bars), tight PNG."""
    ax.set_ylabel("accuracy (%)")
    ax.set_ylim(0, _TOP)
    ax.set_yticks(range(0, 101, 20))
    ax.set_title(title)
    handles, labels = ax.get_legend_handles_labels()
    # long run names (a model id of 50 characters) get a column each, short ones share a row
    columns = 1 if max((len(label) for label in labels), default=0) > _SHARED_ROW else 3
    ax.legend(fontsize=8, frameon=False, loc="upper center",
              bbox_to_anchor=(0.5, -0.2 if ax.get_xlabel() else -0.1),
              ncol=min(columns, max(1, len(handles))))
    _save(plt, fig, path)


def _save(plt: Any, fig: Any, path: Path) -> None:
    # bbox_inches="tight" grows the image to hold the legend and long labels outside the axes; tight_layout
    # cannot (it only moves the axes, and warns "Tight layout not applied" when they leave no room)
    fig.savefig(path, dpi=_DPI, bbox_inches="tight", pad_inches=0.15)
    plt.close(fig)


def _dots(plt: Any, path: Path, section: Section, keys: Sequence[tuple[str, str]], title: str,
          paper: bool = True) -> None:
    """One row per run, one marker per column; the paper's value as a black outline of the same marker."""
    runs = _rows(section, "ours")
    fig, ax = plt.subplots(figsize=(7.0, 1.4 + 0.24 * len(runs)))
    ys = list(range(len(runs)))
    colours, shapes = plt.get_cmap("tab10").colors, "osD^v<>ph*"
    for i, (key, header) in enumerate(keys):
        ax.scatter([_value(row, key) for row in runs], ys, s=28, marker=shapes[i % len(shapes)],
                   color=colours[i % len(colours)], label=header, zorder=3)
        if paper:
            known = [(found, y) for row, y in zip(runs, ys, strict=True)
                     if (found := _paper_for(section, row["label"])) is not None]
            if known:
                ax.scatter([_value(row, key) for row, _ in known], [y for _, y in known], s=60,
                           marker=shapes[i % len(shapes)], facecolors="none", edgecolors="black",
                           linewidths=0.8, zorder=2, label="paper" if i == 0 else None)
    ax.set_yticks(ys, [row["label"] for row in runs], fontsize=8)
    ax.set_ylim(len(runs) - 0.5, -0.5)
    ax.set_xlim(0, _TOP)
    ax.set_xticks(range(0, 101, 20))
    ax.set_xlabel("accuracy (%)")
    ax.grid(axis="x", color="#e5e5e5", zorder=0)
    ax.set_title(title)
    handles, labels = ax.get_legend_handles_labels()
    order = sorted(range(len(labels)), key=lambda i: labels[i] == "paper")  # the columns first, paper last
    ax.legend([handles[i] for i in order], [labels[i] for i in order], fontsize=8, frameon=False,
              loc="lower center", bbox_to_anchor=(0.5, 1.02 + 0.3 / len(runs)), ncol=min(6, len(labels)))
    _save(plt, fig, path)


def _lines(plt: Any, path: Path, section: Section, keys: Sequence[tuple[str, str]], title: str,
           xlabel: str) -> None:
    if len(_rows(section, "ours")) > MANY_RUNS:
        _dots(plt, path, section, keys, f"{title} ({xlabel})")
        return
    fig, ax = plt.subplots(figsize=(6.0, 3.8))
    for row in _rows(section, "ours"):
        ax.plot([header for _, header in keys], [_value(row, key) for key, _ in keys], marker="o",
                label=row["label"])
        known = _paper_for(section, row["label"])
        if known is not None:
            ax.plot([header for _, header in keys], [_value(known, key) for key, _ in keys], marker="x",
                    linestyle="--", color="black", label=known["label"])
    ax.set_xlabel(xlabel)
    _finish(plt, fig, ax, path, title)


def _errors(plt: Any, path: Path, section: Section) -> None:
    rows = [row for row in section.rows if row.get("kind") in ("ours", "paper")]
    per_row = 0.45 if len(rows) <= 2 * MANY_RUNS else 0.24  # a roster: thinner bars, same readable labels
    fig, ax = plt.subplots(figsize=(8.0, 1.2 + per_row * max(1, len(rows))))
    left = [0.0] * len(rows)
    labels = [row["label"] + ("" if any(not math.isnan(_value(row, k)) for k, _ in section.columns)
                              else " (no failed tasks)") for row in rows]
    colours = plt.get_cmap("tab10").colors
    for i, (key, header) in enumerate(section.columns):
        values = [0.0 if math.isnan(_value(row, key)) else _value(row, key) for row in rows]
        ax.barh(labels, values, left=left, color=colours[i % len(colours)], label=header)
        left = [a + b for a, b in zip(left, values, strict=True)]
    ax.set_ylim(len(rows) - 0.5, -0.5)  # first row on top, no empty margin above it (5% of a roster's rows)
    ax.set_xlim(0, 100)
    ax.set_xlabel("% of failed tasks")
    ax.set_title("Error distribution (Table 8 layout)")
    ax.legend(fontsize=7, frameon=False, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    _save(plt, fig, path)


def write_plots(sections: Sequence[Section], out_dir: Path) -> list[Path]:
    """Write every plot the sections allow into `out_dir`; returns the files written."""
    plt = _pyplot()
    out_dir.mkdir(parents=True, exist_ok=True)
    by_key = {section.key: section for section in sections}
    written: list[Path] = []

    def target(name: str) -> Path:
        path = out_dir / name
        written.append(path)
        return path

    six = by_key.get("table6")
    if six is not None:
        _grouped_bars(plt, target(PLOT_NAMES[0]), six, [(k, h) for k, h in six.columns[:4]],
                      "Accuracy by task type")
        # Table 6's order1..order4 (the paper's names); tasks themselves are numbered from 0 (task_idx 0..3)
        _lines(plt, target(PLOT_NAMES[1]), six, [(k, f"order{k[-1]}") for k, _ in six.columns[4:8]],
               "Accuracy by task order", "task order in the session (order1 = task 0)")
    subtypes = by_key.get("subtypes")
    if subtypes is not None:
        # every column of the table, so the plot and the table never disagree
        _grouped_bars(plt, target(PLOT_NAMES[2]), subtypes, list(subtypes.columns),
                      "Accuracy by hidden-intention subtype", paper=False)
    transitions = by_key.get("transitions")
    if transitions is not None:
        _lines(plt, target(PLOT_NAMES[3]), transitions, [(f"t{n}", str(n)) for n in TRANSITIONS],
               "Accuracy by instruction transitions", "transitions in the session up to the task")
    errors = by_key.get("table8")
    if errors is not None:
        _errors(plt, target(PLOT_NAMES[4]), errors)
    if six is not None:
        _grouped_bars(plt, target(PLOT_NAMES[5]), six, [(k, h) for k, h in six.columns[8:]],
                      "Runs compared: task and session accuracy")
    return written


def write_waterfall(decompositions: Sequence[dict[str, Any]], path: Path) -> Path:
    """`explain`'s waterfall (docs/explain.md): per comparison, task and session accuracy from the first
    run's bar, through one floating bar per part (green up, red down), to the second run's bar."""
    plt = _pyplot()
    path.parent.mkdir(parents=True, exist_ok=True)
    rows = max(1, len(decompositions))
    fig, axes = plt.subplots(rows, 2, figsize=(10.0, 3.4 * rows), squeeze=False)
    for row, item in zip(axes, decompositions, strict=False):
        for ax, level in zip(row, ("task", "session"), strict=True):
            names = ["A", *(part["part"] for part in item["parts"]), "B"]
            level_value = float(item[level]["a"])
            bottoms, heights, colours = [0.0], [level_value], ["#4c72b0"]
            for part in item["parts"]:
                delta = float(part[level])
                bottoms.append(level_value if delta >= 0 else level_value + delta)
                heights.append(abs(delta))
                colours.append("#55a868" if delta > 0 else "#c44e52" if delta < 0 else "#999999")
                level_value += delta
            bottoms.append(0.0)
            heights.append(float(item[level]["b"]))
            colours.append("#4c72b0")
            ax.bar(names, heights, bottom=bottoms, color=colours, width=0.6)
            for x, (bottom, height) in enumerate(zip(bottoms, heights, strict=True)):
                value = height if x in (0, len(names) - 1) else float(item["parts"][x - 1][level])
                text = f"{value:.2f}" if x in (0, len(names) - 1) else f"{value:+.2f}"
                ax.text(x, bottom + height + 1.0, text, ha="center", va="bottom", fontsize=8)
            ax.set_ylim(0, _TOP + 6)
            ax.set_yticks(range(0, 101, 20))
            ax.set_ylabel(f"{level} accuracy (%)")
        row[0].set_title(f"A: {_tail(item['a'])}\nB: {_tail(item['b'])}", fontsize=8, loc="left")
    _save(plt, fig, path)
    return path


def _tail(label: str, width: int = 60) -> str:
    """A run label cut to its last `width` characters (a path's end names the run)."""
    return label if len(label) <= width else "…" + label[-(width - 1):]
