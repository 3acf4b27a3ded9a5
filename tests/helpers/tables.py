"""What the printed Table 6/7 say about themselves, for tests that expect a row's label."""

from __future__ import annotations

import re

from wtb_local.analysis.reports.table import LABEL_WIDTH, short_label

_NOTE = re.compile(r"^note: a model label longer than (\d+) characters is shortened in the tables", re.MULTILINE)


def label_width(output: str) -> int:
    """The width the tables in `output` gave their labels: the one their note names (the cells decide it,
    analysis/reports/table.py `label_width`), else LABEL_WIDTH (no label was shortened)."""
    widths = {int(found) for found in _NOTE.findall(output)}
    assert len(widths) <= 1, f"the tables name several label widths: {sorted(widths)}"
    width = widths.pop() if widths else LABEL_WIDTH
    assert 30 <= width <= LABEL_WIDTH, width
    return width


def printed_label(label: str, output: str) -> str:
    """`label` as the tables in `output` print it."""
    return short_label(label, label_width(output))
