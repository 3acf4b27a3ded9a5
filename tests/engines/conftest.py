"""Tiny local models shared by the backend tests (built once per session, in a temporary directory)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.engines.helpers import CHATML, MIXED_GENERATION, MIXED_LOGITS


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A plain random-weight model: output depends on the input, text is noise."""
    from tests.helpers import build_tiny_model

    return build_tiny_model(tmp_path_factory.mktemp("tiny") / "model", CHATML,
                            special_tokens=["<tool_call>", "</tool_call>"])


@pytest.fixture(scope="session")
def mixed_model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Samples `<tool_call>` often and stops (EOS) now and then: both finish reasons, markers in text."""
    from tests.helpers import build_tiny_model

    return build_tiny_model(tmp_path_factory.mktemp("mixed") / "model", CHATML,
                            special_tokens=["<tool_call>", "</tool_call>"],
                            fixed_logits=MIXED_LOGITS, generation_config=MIXED_GENERATION)


@pytest.fixture(scope="session")
def stop_model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Always emits EOS first."""
    from tests.helpers import build_tiny_model

    return build_tiny_model(tmp_path_factory.mktemp("stop") / "model", CHATML,
                            fixed_logits={"<|im_end|>": 50.0})
