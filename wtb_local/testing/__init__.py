"""Test helpers shipped with the package (a tiny local model for pipeline tests without downloads)."""

from __future__ import annotations

from wtb_local.testing.tiny_model import build_tiny_model, build_tiny_tokenizer, template_special_tokens

__all__ = ["build_tiny_model", "build_tiny_tokenizer", "template_special_tokens"]
