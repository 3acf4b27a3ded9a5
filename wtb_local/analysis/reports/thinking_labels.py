"""The thinking mode of a finished run, for picking the paper's row: the one its manifest records, else
the one its model family's chat template has by default."""

from __future__ import annotations

import re

from wtb_local.contract.manifest import Manifest
from wtb_local.formats.model_ids import normalize_model_id


def recorded_thinking(manifest: Manifest | None) -> bool | None:
    """The effective mode a run directory's manifest records (None for older manifests)."""
    return manifest.thinking.effective if manifest is not None else None


# The mode a family's own chat template has when no switch is passed, by the model name after its
# organisation (lowercase): (regex, on, why). For runs that rendered no prompt (the oracle without a
# tokenizer, scripted replies): `analysis/reports/present.py` picks the paper's row with it. Each entry agrees with
# the real template's default in tests/run/test_thinking_mode.py (DEFAULT_MODE).
_TEMPLATE_DEFAULTS: tuple[tuple[str, bool, str], ...] = (
    (r"^qwen3-(0\.6b|1\.7b|4b|8b|14b|32b|30b-a3b|235b-a22b)$", True,
     "Qwen3's chat template thinks unless enable_thinking=false"),
    (r"^qwq-", True, "QwQ's chat template pre-fills <think>"),
    (r"^glm-4\.[5-9]", True, "GLM-4.5+'s chat template thinks unless enable_thinking=false"),
    (r"^deepseek-v3\.1", False, "DeepSeek-V3.1's chat template thinks only with thinking=true"),
    (r"^deepseek-r1", True, "DeepSeek-R1 always reasons in a <think> block"),
    (r"^seed-oss-", True, "Seed-OSS's chat template thinks unless thinking_budget=0"),
    (r"^hunyuan-a13b", True, "Hunyuan-A13B's chat template thinks unless enable_thinking=false"),
)


def template_default(model: str) -> tuple[bool, str] | None:
    """(mode, why) of the model family's chat template when no thinking switch is passed, for a model id
    (`Qwen/Qwen3-8B`) or a run name (`Qwen_Qwen3-8B`); None when the family is not listed."""
    name = normalize_model_id(model.replace("_", "/")).rsplit("/", 1)[-1]
    for pattern, mode, why in _TEMPLATE_DEFAULTS:
        if re.search(pattern, name):
            return mode, why
    return None
