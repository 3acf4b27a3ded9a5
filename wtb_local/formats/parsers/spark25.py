"""Spark 2.5 (SGLang-only `spark25`): GLM-4.7's call format with no newline after the name,

    <tool_call>NAME<arg_key>KEY</arg_key><arg_value>VALUE</arg_value></tool_call>

values typed by the tool schema, where a boolean parameter may also be written `1` / `0` (SGLang's
detector reads them as true / false). An empty `<tool_call></tool_call>` is no call: its text stays content,
with an error. No checkpoint id is public (the SGLang test names none); `spark-2.5` ids select it.
"""

from __future__ import annotations

from typing import Any, ClassVar

from wtb_local.formats.parsers._common import _schema_types
from wtb_local.formats.parsers.glm47 import Glm47Parser

_BITS = {"1": True, "0": False}


class Spark25Parser(Glm47Parser):
    name = "spark25"
    vllm_names: ClassVar[tuple[str, ...]] = ()
    families: ClassVar[tuple[str, ...]] = ("Spark 2.5",)
    model_patterns: ClassVar[tuple[str, ...]] = (r"(^|/)spark-?2\.5",)
    template_markers: ClassVar[tuple[str, ...]] = ()
    priority = 1

    def typed(self, raw: str, schema: dict[str, Any] | None) -> Any:
        types = _schema_types(schema)
        if "boolean" in types and "string" not in types and raw.strip() in _BITS:
            return _BITS[raw.strip()]
        return super().typed(raw, schema)
