"""vLLM's second reader of the Qwen3-Coder XML format (`qwen3_xml`), which its recipes name for Nemotron 3
Super. The format is the one `qwen3_coder` reads, so this parser reads it the same way (values typed by the
tool schema; JSON `true`/`false`/`null` inside an array or object parameter stay JSON, which vLLM's
`qwen3_xml` once turned into strings); it exists so that `--parser qwen3_xml` reads as in vLLM.
"""

from __future__ import annotations

from wtb_local.formats.parsers.qwen3_coder import Qwen3CoderParser


class Qwen3XmlParser(Qwen3CoderParser):
    name = "qwen3_xml"
    vllm_names = ("qwen3_xml",)
    families = ("Nemotron 3 Super",)
    model_patterns = (r"nemotron-3-super",)
    template_markers = ()  # a template of this format selects qwen3_coder, which reads it the same way
    priority = 1
