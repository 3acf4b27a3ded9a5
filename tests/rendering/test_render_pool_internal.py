"""An error of wtb_local's own rendering or tokenising inside a render worker is an internal error of the
step (docs/reliability.md, "Internal errors"), not the step's `render failed`: the worker says which, and
goes on serving."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from tests.rendering.conftest import make_tokenizer, real_templates
from wtb_local.contract.faults import InternalError
from wtb_local.formats.rendering.pool import RenderPool
from wtb_local.formats.rendering.renderer import PromptRenderer

KEY = "Qwen/Qwen3-0.6B"


class BuggyRenderer(PromptRenderer):
    """The real renderer with a bug of ours: a plain Python error for one conversation's prompt (outside the
    template's code), or while tokenising it. Importable by the worker, which unpickles it."""

    def render_text(self, messages: list[dict[str, Any]], tools: Any, **kwargs: Any) -> str:
        if messages[-1].get("content") == "CRASH":
            raise AttributeError("'NoneType' object has no attribute 'items'")
        return super().render_text(messages, tools, **kwargs)

    def encode_prompt(self, text: str, key: Any = None, family: Any = None) -> list[int]:
        if "TOKENS" in text:
            raise IndexError("list index out of range")
        return super().encode_prompt(text, key, family)


@pytest.mark.parametrize(("content", "kind", "detail"), [
    ("CRASH", "renderer", "AttributeError: 'NoneType' object has no attribute 'items'"),
    ("TOKENS", "tokenizer", "IndexError: list index out of range")])
def test_our_error_in_a_worker_is_an_internal_error_and_the_worker_serves_on(content: str, kind: str,
                                                                             detail: str) -> None:
    renderer = BuggyRenderer(make_tokenizer(real_templates()[KEY]["chat_template"], name=KEY), model_id=KEY)
    fine = [{"role": "user", "content": "fine"}]

    async def body() -> None:
        pool = RenderPool(renderer, 1)
        pool.start()
        try:
            await pool.ready()
            with pytest.raises(InternalError) as raised:
                await pool.build(("s", 0), "s", [{"role": "user", "content": content}], [])
            assert (raised.value.kind, raised.value.detail) == (kind, detail)
            assert raised.value.where.startswith("test_render_pool_internal.py:")
            text, *_ = await pool.build(("s", 1), "s", fine, [])
            assert text == renderer.render_text(fine, [])
        finally:
            pool.close()

    asyncio.run(body())
