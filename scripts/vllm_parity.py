"""Print the parity table of docs/parser-policies.md §4: our parsers against vLLM's own parsers on every real
model output the tests hold (tests/helpers/vllm_parity.py; the causes are named in
tests/parsers/test_vllm_parity.py), for the installed vLLM and, when WTB_VLLM_NEXT names the folder holding
another release's `vllm` package (its wheel unpacked), for that one too.
Usage: [WTB_VLLM_NEXT=/path/to/vllm-0.34.0] python scripts/vllm_parity.py"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.helpers import vllm_parity
from tests.parsers.test_vllm_parity import NEXT, NOT_RUN, named_at, unexamined_at
from wtb_local.formats.parsers.vllm_native import version


def main() -> None:
    with tempfile.TemporaryDirectory() as scratch:
        measured = {str(version()): vllm_parity.compare(vllm_parity.build_tokenizers(Path(scratch)), skip=set(NOT_RUN))}
    if os.environ.get(NEXT):
        other, outcomes = vllm_parity.measure_elsewhere(os.environ[NEXT], set(NOT_RUN))
        measured[other] = outcomes
    tables = {}
    for release, outcomes in measured.items():
        named = named_at(release)
        unexamined = unexamined_at(release)
        unnamed = sorted(o.sample.key for o in outcomes
                         if o.differs and o.sample.key not in named and o.sample.key not in unexamined)
        if unnamed:
            print(f"vLLM {release}: differences not named in tests/parsers/test_vllm_parity.py: {', '.join(unnamed)}",
                  file=sys.stderr)
            sys.exit(1)
        tables[release] = vllm_parity.counts(outcomes, named, NOT_RUN, unexamined)
    print(vllm_parity.render_table(tables), end="")


if __name__ == "__main__":
    main()
