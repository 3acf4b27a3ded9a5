"""The SGLang side of `--parser sglang:NAME` (formats/parsers/sglang_native.py): run by the Python of a venv
holding SGLang (it pins another torch than vLLM, so it cannot share wtb_local's venv), by file path, with
nothing but the standard library and SGLang imported. JSON lines over stdin/stdout: first it writes
{"version", "names"}; then per request {"parser", "text", "tools"} it writes {"content", "calls"} (each call
{"name", "parameters"} as SGLang's `FunctionCallParser.parse_non_stream` returns it) or {"error"} (one line).
Logs go to stderr, never to stdout."""

from __future__ import annotations

import json
import logging
import sys


def main() -> None:
    out = sys.stdout
    sys.stdout = sys.stderr  # an import or a detector that prints must not corrupt the protocol
    logging.basicConfig(stream=sys.stderr, level=logging.ERROR)
    from importlib.metadata import version  # deferred: once stdout is the protocol's alone

    from sglang.srt.entrypoints.openai.protocol import Tool  # deferred: its imports print
    from sglang.srt.function_call.function_call_parser import (
        FunctionCallParser,  # deferred: its imports print
    )

    def reply(message: dict) -> None:
        out.write(json.dumps(message, ensure_ascii=False) + "\n")
        out.flush()

    reply({"version": version("sglang"), "names": sorted(FunctionCallParser.ToolCallParserEnum)})
    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            request = json.loads(line)
            tools = [Tool(**tool) for tool in request.get("tools") or []]
            parser = FunctionCallParser(tools=tools, tool_call_parser=request["parser"])
            content, calls = parser.parse_non_stream(request["text"])
            reply({"content": content, "calls": [{"name": c.name, "parameters": c.parameters} for c in calls]})
        except Exception as exc:  # noqa: BLE001 - the parser's crash, reported to the caller in one line
            reply({"error": f"{type(exc).__name__}: {' '.join(str(exc).split())[:300]}"})


if __name__ == "__main__":
    main()
