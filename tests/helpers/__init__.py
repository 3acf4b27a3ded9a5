"""Test helpers (a tiny local model for pipeline tests without downloads); tests and scripts import them,
the wheel does not ship them."""

from __future__ import annotations

from tests.helpers.tiny_model import build_tiny_model, build_tiny_tokenizer, template_special_tokens

__all__ = ["build_tiny_model", "build_tiny_tokenizer", "template_special_tokens"]
