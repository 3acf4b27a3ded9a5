"""Extract the tool-call parser names vLLM and SGLang register, from their unpacked packages' source (read,
never imported), into tests/fixtures/parsers/engine_parser_names.json with the versions.

    python scripts/extract_engine_parser_names.py --vllm /path/to/vllm-0.34.0 --sglang /path/to/sglang-0.5.23

vLLM: the keys of `_TOOL_PARSERS_TO_REGISTER` in `vllm/tool_parsers/__init__.py` plus any name passed to a
`register_module("NAME")` decorator in `vllm/tool_parsers/`. SGLang: the keys of `ToolCallParserEnum` in
`sglang/srt/function_call/function_call_parser.py`, checked against `TOOL_CALL_PARSER_NAMES` of
`parser_names.py`. The version is read from each package's `version.py` / `dist-info` when present, else from
the folder name. Run once per engine release; tests/parsers/test_engine_names.py reads the result.
"""

from __future__ import annotations

import argparse
import ast
import json
import re
from pathlib import Path

OUT = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "parsers" / "engine_parser_names.json"


def _assigned(path: Path, target: str) -> ast.expr:
    """The value assigned to `target` (a module- or class-level name) in the file at `path`."""
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == target for t in node.targets):
            return node.value
        if isinstance(node, ast.AnnAssign) and getattr(node.target, "id", None) == target and node.value:
            return node.value
    raise SystemExit(f"{path}: no assignment to {target}")


def _version(root: Path, package: str) -> str:
    for info in sorted(root.glob(f"{package}-*.dist-info/METADATA")):
        found = re.search(r"^Version: (\S+)$", info.read_text(encoding="utf-8"), re.MULTILINE)
        if found:
            return found.group(1)
    for name in ("version.py", "_version.py"):
        path = root / package / name
        if path.exists():
            found = re.search(r"""__version__\s*(?::[^=]*)?=\s*['"]([^'"]+)['"]""", path.read_text(encoding="utf-8"))
            if found:
                return found.group(1)
    found = re.search(r"(\d+\.\d+\.\d+)", root.name)
    if not found:
        raise SystemExit(f"{root}: no version found")
    return found.group(1)


def vllm_names(root: Path) -> list[str]:
    folder = root / "vllm" / "tool_parsers"
    table = _assigned(folder / "__init__.py", "_TOOL_PARSERS_TO_REGISTER")
    if not isinstance(table, ast.Dict):
        raise SystemExit("vLLM: _TOOL_PARSERS_TO_REGISTER is not a dict literal")
    names = {ast.literal_eval(key) for key in table.keys if key is not None}
    for path in sorted(folder.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.ClassDef, ast.FunctionDef)) and node.decorator_list:
                for deco in node.decorator_list:
                    if (isinstance(deco, ast.Call) and getattr(deco.func, "attr", "") == "register_module"
                            and deco.args and isinstance(deco.args[0], ast.Constant)):
                        names.add(deco.args[0].value)
    return sorted(names)


def sglang_names(root: Path) -> list[str]:
    folder = root / "sglang" / "srt" / "function_call"
    table = _assigned(folder / "function_call_parser.py", "ToolCallParserEnum")
    if not isinstance(table, ast.Dict):
        raise SystemExit("SGLang: ToolCallParserEnum is not a dict literal")
    names = [ast.literal_eval(key) for key in table.keys if key is not None]
    listed = ast.literal_eval(_assigned(folder / "parser_names.py", "TOOL_CALL_PARSER_NAMES"))
    if sorted(listed) != sorted(names):
        raise SystemExit(f"SGLang: parser_names.py and ToolCallParserEnum differ: {sorted(set(listed) ^ set(names))}")
    return sorted(names)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--vllm", type=Path, required=True, help="folder holding the unpacked vllm package")
    parser.add_argument("--sglang", type=Path, required=True, help="folder holding the unpacked sglang package")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    data = {
        "vllm": {"version": _version(args.vllm, "vllm"), "source": "vllm/tool_parsers/__init__.py "
                 "(_TOOL_PARSERS_TO_REGISTER) + register_module decorators", "tool_parsers": vllm_names(args.vllm)},
        "sglang": {"version": _version(args.sglang, "sglang"), "source": "sglang/srt/function_call/"
                   "function_call_parser.py (ToolCallParserEnum)", "tool_parsers": sglang_names(args.sglang)},
    }
    args.out.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
    print(f"{args.out}: vLLM {data['vllm']['version']} {len(data['vllm']['tool_parsers'])} names, "
          f"SGLang {data['sglang']['version']} {len(data['sglang']['tool_parsers'])} names")


if __name__ == "__main__":
    main()
