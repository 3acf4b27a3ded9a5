"""Print the parity table of docs/parser-policies.md §4: our parsers against the installed vLLM's own parsers
on every real model output the tests hold (tests/helpers/vllm_parity.py; the causes are named in
tests/parsers/test_vllm_parity.py). Usage: python scripts/vllm_parity.py"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.helpers import vllm_parity
from tests.parsers.test_vllm_parity import NAMED, NOT_RUN


def main() -> None:
    with tempfile.TemporaryDirectory() as scratch:
        outcomes = vllm_parity.compare(vllm_parity.build_tokenizers(Path(scratch)), skip=set(NOT_RUN))
    unnamed = sorted(o.sample.key for o in outcomes if o.differs and o.sample.key not in NAMED)
    if unnamed:
        print(f"differences not named in tests/parsers/test_vllm_parity.py: {', '.join(unnamed)}", file=sys.stderr)
        sys.exit(1)
    print(vllm_parity.counts_table(outcomes, NAMED, NOT_RUN), end="")


if __name__ == "__main__":
    main()
