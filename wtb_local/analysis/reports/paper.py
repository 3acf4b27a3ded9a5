"""The paper's Table 6, 7 and 8 rows (shipped CSVs, values as printed) and the map from Hugging Face
model ids to the paper's model names.

The paper's names are its own: `Llama-3.3-1B/3B/8B-Instruct` are Llama 3.2 1B/3B and Llama 3.1 8B (Meta
released 3.3 only as 70B), and Qwen3 models have two rows, with and without thinking.
"""

from __future__ import annotations

import csv
import io
import re
from functools import cache

from wtb_local.analysis.reports.columns import keys_of
from wtb_local.contract.resources import package_file

# named as the paper's CSVs name them (analysis/reports/columns.py)
TABLE6_COLUMNS = keys_of("table6")
TABLE7_COLUMNS = keys_of("table7")

# Hugging Face id (lowercase, without organisation) -> paper name. Qwen3 ids get "-Thinking" appended
# when the run used thinking (see `paper_name`).
_ALIASES: dict[str, str] = {
    "llama-3.2-1b-instruct": "Llama-3.3-1B-Instruct",
    "llama-3.2-3b-instruct": "Llama-3.3-3B-Instruct",
    "llama-3.1-8b-instruct": "Llama-3.3-8B-Instruct",
    "meta-llama-3.1-8b-instruct": "Llama-3.3-8B-Instruct",
    "llama-3.3-70b-instruct": "Llama-3.3-70B-Instruct",
    "llama-xlam-2-70b-fc-r": "xLAM-2-70B",
    "xlam-2-32b-fc-r": "xLAM-2-32B",
    "llama-xlam-2-8b-fc-r": "xLAM-2-8B",
    "xlam-2-3b-fc-r": "xLAM-2-3B",
    "xlam-2-1b-fc-r": "xLAM-2-1B",
    "toolace-2-8b": "ToolACE2-8B",
    "toolace-2-llama-3.1-8b": "ToolACE2-8B",
    "watt-tool-8b": "Watt-8B",
    "hammer2.1-7b": "Hammer2.1-7B",
    "hammer2.1-3b": "Hammer2.1-3B",
    "hammer2.1-1.5b": "Hammer2.1-1.5B",
    "hammer2.1-0.5b": "Hammer2.1-0.5B",
    "kimi-k2-instruct": "Kimi-K2",
    "glm-4.5": "GLM-4.5",
    "deepseek-v3": "DeepSeek-V3",
    "deepseek-v3.1": "DeepSeek-V3.1",
    "deepseek-r1": "DeepSeek-R1",
}
_QWEN3 = re.compile(r"qwen3-(0\.6b|1\.7b|4b|8b|14b|32b|30b-a3b)(-thinking)?")
_QWEN25 = re.compile(r"qwen2\.5-(0\.5b|1\.5b|3b|7b|14b|32b|72b)-instruct")


@cache
def paper_rows(table: int) -> dict[str, dict[str, str]]:
    """Paper name -> {column: printed value} for Table 6, 7 or 8 (plus `group`)."""
    if table not in (6, 7, 8):
        raise ValueError(f"the paper's tables shipped here are 6, 7 and 8, not {table}")
    path = package_file("analysis", "reports", f"paper_table{table}.csv")
    # Traversable.open takes no `newline`; a StringIO with newline="" reads as open(newline="") would
    # (the csv module's rule).
    handle = io.StringIO(path.read_text(encoding="utf-8"), newline="")
    return {row["model"]: {k: v for k, v in row.items() if k != "model"} for row in csv.DictReader(handle)}


def paper_name(model: str, thinking: bool | None = None) -> str | None:
    """The paper's name for a model id (`Qwen/Qwen3-8B`, `Qwen_Qwen3-8B`, or a paper name), or None.

    `thinking` picks between a Qwen3 model's two rows; None means the non-thinking row unless the name
    itself says `-Thinking`.
    """
    known = {name.lower(): name for name in (*paper_rows(6), *paper_rows(7), *paper_rows(8))}
    base = model.strip().replace("_", "/").rsplit("/", 1)[-1].lower()
    qwen3 = _QWEN3.fullmatch(base)
    if qwen3:
        size = qwen3.group(1).upper()
        wants_thinking = thinking if thinking is not None else bool(qwen3.group(2))
        return f"Qwen3-{size}" + ("-Thinking" if wants_thinking else "")
    qwen25 = _QWEN25.fullmatch(base)
    if qwen25:
        return f"Qwen2.5-{qwen25.group(1).upper()}-Instruct"
    if base in _ALIASES:
        return _ALIASES[base]
    return known.get(base) or known.get(model.strip().lower())
