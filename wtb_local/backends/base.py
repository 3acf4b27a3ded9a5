"""The one interface every generation backend implements.

The runner keeps every episode in flight and awaits `generate` once per step; a backend batches the
requests that are pending at once (vLLM's continuous batching, a wave of left-padded `generate`, or
concurrent HTTP requests). A request that cannot be served comes back as a Completion with `error` set
and `finish_reason == "error"`; `generate` never raises for one bad request.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, ClassVar

from wtb_local.schema import Completion, GenerationRequest


class Backend(ABC):
    name: ClassVar[str]
    produces_text: ClassVar[bool] = True  # False: Completion.reply holds an already-parsed reply
    needs_prompt: ClassVar[bool] = True  # False: the runner need not render prompts (scripted)
    needs_gold: ClassVar[bool] = False  # True: the runner fills GenerationRequest.gold_reply (oracle)

    async def start(self) -> None:
        """Load weights / connect. Called once before the first request."""

    async def close(self) -> None:
        """Release the engine. Called once at the end, also after a failure."""

    @abstractmethod
    async def generate(self, request: GenerationRequest) -> Completion:
        """One completion for one request."""

    def describe(self) -> dict[str, Any]:
        """Settings and versions recorded in the run manifest."""
        return {"backend": self.name}
