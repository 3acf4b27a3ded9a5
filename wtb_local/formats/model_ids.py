"""The one normalisation of a model id, shared by parser selection, template lookup and the thinking
switch: lowercased, without the `::variant` suffix the template collections use (`deepseek-ai/X::vllm`)."""

from __future__ import annotations


def normalize_model_id(model_id: str) -> str:
    return model_id.split("::", 1)[0].strip().lower()
