"""The benchmark's argument checker (docs/evaluation.md §5): schema check of the prediction, then gold match.

`check_arguments` returns `"correct"` or the first failure, worded exactly as the reference words it.
Quirks of the reference that decide verdicts are kept on purpose (each is marked where it happens).
"""

from __future__ import annotations

import json
import logging
import re
import warnings
from difflib import SequenceMatcher
from typing import Any

CORRECT = "correct"
TOOL_NOT_DEFINED = "error_schema: tool not defined"
INVALID_JSON = "error: args invalid json format"

_MISSING = ("error_schema: required args missing", "error_schema: required nested args missing")
_UNDEFINED = ("error_schema: args not defined", "error_schema: nested args not defined")
_TYPE = ("error_schema: args type inconsistent", "error_schema: nested args type inconsistent")
_ENUM = ("error_schema: args value not in enum", "error_schema: nested args value not in enum")

_KEYS_MISMATCH = "error_match: args keys mismatch"
_ARRAY_LENGTH = "error_match: array length mismatch"
_VALUE_TYPE = "error_match: value type inconsistent"
_VALUE_MISMATCH = "error_match: value mismatch"
_SIMILARITY = "error_match: string similarity too low"
_ROUGE_FAILED = "error_match: rouge calculation failed"

_PYTHON_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "integer": (int,),
    "float": (float,),
    "number": (int, float),
    "boolean": (bool,),
    "array": (list,),
    "object": (dict,),
    "null": (type(None),),
}
_CJK = re.compile("[\u4e00-\u9fa5]")

_rouge: Any = None
_jieba: Any = None


def check_arguments(
    tools: list[dict], name: str, predicted_arguments: str | Any, gold_arguments: str | Any
) -> str:
    """Verdict of one predicted call against its gold call: `"correct"` or the first failure
    (docs/evaluation.md §5).

    Arguments that are not text are serialized with `json.dumps(..., ensure_ascii=False)` first.
    """
    predicted_text = _as_text(predicted_arguments)
    gold_text = _as_text(gold_arguments)
    schema = _tool_schema(tools, name) if isinstance(name, str) and name else None
    if schema is None:
        return TOOL_NOT_DEFINED
    required, properties = schema
    try:
        predicted = json.loads(predicted_text)
    except (ValueError, RecursionError):
        return INVALID_JSON
    root = {"type": "object", "required": required, "properties": properties}
    error = _schema_error(predicted, root, "")
    if error is not None:
        return error
    try:
        gold = json.loads(gold_text)
    except (ValueError, RecursionError):
        return INVALID_JSON
    try:
        return _match(predicted, gold, properties, "")
    except Exception as exc:  # noqa: BLE001 - the reference reports any failure inside the match as data
        return f"error: comparison failed - {exc}"


def _as_text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def _tool_schema(tools: Any, name: str) -> tuple[list, Any] | None:
    """(required, properties) of the tool called `name`, or None. A malformed definition is skipped, as
    the reference skips it; a name defined twice keeps its last well-formed definition."""
    for tool in reversed(tools) if isinstance(tools, list) else ():
        try:
            function = tool.get("function", {})
            if function.get("name") != name:
                continue
            parameters = function.get("parameters", {})
            required = list(set(parameters.get("required", [])))
            properties = dict(parameters.get("properties", {}).items())
        except (AttributeError, TypeError):
            continue
        return required, properties
    return None


# --- schema check ---------------------------------------------------------------------------------------


def _schema_error(value: Any, schema: Any, path: str) -> str | None:
    if not isinstance(schema, dict):
        # Only reachable with schema nodes that are not objects (refused by the dataset loader); the
        # reference then sees neither `type` nor `anyOf`, which means "a string".
        schema = {}
    nested = 1 if path else 0
    if "anyOf" in schema:
        branches = schema["anyOf"] if isinstance(schema["anyOf"], list) else []
        errors = []
        for branch in branches:
            error = _schema_error(value, branch, path)
            if error is None:
                return None
            errors.append(error)
        return errors[0] if errors else None

    allowed = _allowed_types(schema)
    if allowed and not isinstance(value, allowed):
        return _TYPE[nested]
    if "enum" in schema and not _in_enum(value, schema["enum"]):
        return _ENUM[nested]

    if isinstance(value, dict):
        properties = schema.get("properties", {})
        if not isinstance(properties, dict):
            properties = {}
        required = schema.get("required", [])
        if any(key not in value for key in (required if isinstance(required, list) else [])):
            return _MISSING[nested]
        for key, item in value.items():
            if key not in properties:
                if schema.get("additionalProperties") is True:
                    continue
                return _UNDEFINED[nested]
            error = _schema_error(item, properties[key], f"{path}.{key}" if path else key)
            if error is not None:
                return error

    if isinstance(value, list) and "items" in schema:
        for i, item in enumerate(value):
            error = _schema_error(item, schema["items"], f"{path}[{i}]")
            if error is not None:
                return error
    return None


def _allowed_types(schema: dict) -> tuple[type, ...]:
    """Python types `type` allows; empty = no check (unknown type name). No `type` means string."""
    if "type" not in schema:
        return _PYTHON_TYPES["string"]
    declared = schema["type"]
    names = declared if isinstance(declared, list) else [declared]  # a list of names: the union
    allowed: list[type] = []
    for type_name in names:
        if isinstance(type_name, str):
            allowed.extend(_PYTHON_TYPES.get(type_name, ()))
    return tuple(allowed)


def _in_enum(value: Any, enum: Any) -> bool:
    try:
        return value in enum  # Python `in`, as the reference: 1 == 1.0 == True
    except TypeError:
        return False


# --- match against gold ------------------------------------------------------------------------------------


def _match(predicted: Any, gold: Any, schema: Any, path: str) -> str:
    where = f" at '{path}'" if path else ""
    if type(predicted) is not type(gold):
        return f"{_VALUE_TYPE}{where}"
    if isinstance(gold, dict):
        missing = sorted(set(gold) - set(predicted))
        extra = sorted(set(predicted) - set(gold))
        if missing or extra:
            parts = ([f"missing: {missing}"] if missing else []) + ([f"extra: {extra}"] if extra else [])
            return f"{_KEYS_MISMATCH}{where} ({', '.join(parts)})"
        # The reference threads the schema like this (a parameter literally named "properties" or a
        # nested object without `properties` changes what later lookups see); it only matters when a
        # lookup hits a non-object and raises, which the caller turns into "comparison failed".
        properties = schema.get("properties", schema) if isinstance(schema, dict) else {}
        for key in gold:
            result = _match(
                predicted[key], gold[key], properties.get(key, {}), f"{path}.{key}" if path else key
            )
            if result != CORRECT:
                return result
        return CORRECT
    if isinstance(gold, list):
        if len(predicted) != len(gold):
            return f"{_ARRAY_LENGTH}{where}"
        items = schema.get("items", {})
        for i, (p_item, g_item) in enumerate(zip(predicted, gold, strict=True)):
            result = _match(p_item, g_item, items, f"{path}[{i}]")
            if result != CORRECT:
                return result
        return CORRECT
    if isinstance(gold, str):
        return _match_strings(predicted, gold, where)
    return CORRECT if predicted == gold else f"{_VALUE_MISMATCH}{where}"


def _match_strings(predicted: str, gold: str, where: str) -> str:
    if predicted == gold or "".join(predicted.split()).lower() == "".join(gold.split()).lower():
        return CORRECT
    if len(gold) < 10:
        ratio = SequenceMatcher(None, predicted, gold).ratio()
        if ratio < 0.8:
            return f"{_SIMILARITY}{where} (edit score: {ratio:.2f})"
    if _CJK.search(gold) or _CJK.search(predicted):
        cut = _load_jieba().cut
        predicted, gold = " ".join(cut(predicted)), " ".join(cut(gold))
    try:
        score = _load_rouge().get_scores(predicted, gold)[0]["rouge-l"]["f"]
    except Exception:  # noqa: BLE001 - rouge raises on empty or dots-only text; reported as data
        return f"{_ROUGE_FAILED}{where}"
    if score < 0.7:
        return f"{_SIMILARITY}{where} (rouge score: {score:.2f})"
    return CORRECT


def _load_rouge() -> Any:
    global _rouge
    if _rouge is None:
        from rouge import Rouge  # deferred: start-up

        _rouge = Rouge()
    return _rouge


def _load_jieba() -> Any:
    """jieba takes about a second to build its dictionary and logs while doing it: load it only when a
    CJK string is compared, and keep it quiet."""
    global _jieba
    if _jieba is None:
        with warnings.catch_warnings():  # jieba 0.42.1 imports the deprecated pkg_resources
            warnings.simplefilter("ignore", DeprecationWarning)
            import jieba  # deferred: start-up

        jieba.setLogLevel(logging.WARNING)
        logging.getLogger("jieba").setLevel(logging.WARNING)
        _jieba = jieba
    return _jieba
