"""The paper harness's lenient argument checker (paper-harness.md §3.1, `analysis_result.py`).

Per predicted call: the mean over the *predicted* arguments of a per-argument score; a call passes when
that mean is >= 0.7. Optional gold arguments the model left out are free; extra optional arguments score 1
when their value appears in the parameter's description. Strings score ROUGE-L F (the `rouge_score`
package, jieba tokens, case-sensitive). Whatever raises here (bad JSON, a schema node without `type`, a
prediction without arguments where the gold has some) is caught by the caller and turns the task into an
action error, as in the harness.
"""

from __future__ import annotations

import json
import re
from typing import Any

from wtb_local.contract.messages import JSONObject, ToolSchema

PASS_THRESHOLD = 0.7
LATLON = re.compile(r"^\d+\.\d+,\d+\.\d+$")
# error labels in the harness's precedence order (§3.2 B)
MISS_REQUIRED = "miss required params"
HALLUCINATION = "param hallucination"
TYPE_ERROR = "type error"
VALUE_HALLUCINATION = "param value hallucination"
VALUE_ERROR = "param value error"

_scorer: Any = None


class LenientCheckError(ValueError):
    """What the harness's checker raises on; the task becomes an action error."""


def rouge_l(prediction: str, gold: str) -> float:
    """ROUGE-L F of two strings, tokens from `jieba.cut` (whitespace tokens kept, case kept), as the
    harness's `rouge_scorer.RougeScorer(..., tokenizer=<jieba>)` computes it."""
    global _scorer
    if _scorer is None:
        import warnings

        with warnings.catch_warnings():  # jieba imports the deprecated pkg_resources
            warnings.simplefilter("ignore", DeprecationWarning)
            import jieba  # deferred: start-up
        from rouge_score import rouge_scorer  # deferred: start-up

        jieba.setLogLevel(60)  # jieba prints its dictionary loading to stderr otherwise

        class _JiebaTokens:
            def tokenize(self, text: str) -> list[str]:
                return list(jieba.cut(text))

        _scorer = rouge_scorer.RougeScorer(["rougeL"], tokenizer=_JiebaTokens())
    return float(_scorer.score(prediction, gold)["rougeL"].fmeasure)


def _as_float(value: Any) -> Any:
    # ints compare as floats (3 == 3.0); bools are not ints here (type() is compared, not isinstance)
    return float(value) if type(value) is int else value


def _free_extra(value: Any, description: str) -> bool:
    """An argument the gold does not have passes when its value is in the parameter's description."""
    text = str(value).lower()
    return text in description.lower() or (text == "none" and "null" in description.lower())


def check_value(pred: Any, gold: Any, schema: JSONObject) -> tuple[float, list[str]]:
    """(score in [0, 1], error labels) of one predicted value against the gold value."""
    pred, gold = _as_float(pred), _as_float(gold)
    if type(pred) is not type(gold):
        return 0.0, [TYPE_ERROR]
    if pred == gold:
        return 1.0, []
    if isinstance(pred, str) and (pred.lower() == gold.lower()
                                  or "".join(pred.split()).lower() == "".join(gold.split()).lower()):
        return 1.0, []
    if isinstance(pred, dict):
        return _check_dict(pred, gold, schema)
    kind = schema.get("type") if isinstance(schema, dict) else None
    if kind is None:
        raise LenientCheckError(f"schema without type: {json.dumps(schema, ensure_ascii=False)[:80]}")
    if kind in ("integer", "boolean", "float", "number"):
        return 0.0, [VALUE_ERROR]
    if kind == "string":
        if LATLON.match(str(pred)) and LATLON.match(str(gold)):
            return 1.0, []
        score = rouge_l(str(pred), str(gold))
        return score, [] if score > PASS_THRESHOLD else [VALUE_ERROR]
    if kind == "array":
        return _check_array(pred, gold, schema)
    raise LenientCheckError(f"unknown schema type {kind!r}")


def _check_dict(pred: JSONObject, gold: JSONObject, schema: JSONObject) -> tuple[float, list[str]]:
    if "items" in schema:
        fields = schema.get("items", {"type": "string"})
    elif "properties" in schema:
        fields = schema.get("properties", {"type": "string"})
    else:
        fields = schema
    if "properties" in fields:
        fields = fields["properties"]
    scores: list[float] = []
    errors: list[str] = []
    for key, value in pred.items():
        if key not in fields:
            return 0.0, [HALLUCINATION]
        if key not in gold:
            if _free_extra(value, fields[key].get("description", "")):
                scores.append(1.0)
            else:
                scores.append(0.0)
                errors.append(VALUE_HALLUCINATION)
        else:
            score, more = check_value(value, gold[key], fields[key])
            scores.append(score)
            errors += more
    if not scores:
        return (1.0, []) if len(gold) == 0 else (0.0, [VALUE_ERROR])
    return sum(scores) / len(scores), errors


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True)


def _check_array(pred: Any, gold: Any, schema: JSONObject) -> tuple[float, list[str]]:
    if isinstance(pred, list):
        left, right = sorted(pred, key=_canonical), sorted(gold, key=_canonical)
    else:
        left, right = sorted(pred.values()), sorted(gold.values())
    if len(left) != len(right):
        return 0.0, [VALUE_ERROR]
    item_schema = schema.get("items", {"type": "string"})
    if "properties" in item_schema:
        item_schema = item_schema["properties"]
    scores: list[float] = []
    errors: list[str] = []
    for p, g in zip(left, right):
        score, more = check_value(p, g, item_schema)
        scores.append(score)
        errors += more
    if not scores:  # unreachable for lists (two empty lists are equal); the harness would divide by 0
        raise LenientCheckError("empty array compared")
    return sum(scores) / len(scores), errors


def call_arguments(arguments: Any) -> JSONObject:
    """A call's arguments as a dict: JSON text is decoded (a failure raises, as in the harness)."""
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments)
        except ValueError as exc:
            raise LenientCheckError(f"arguments are not JSON: {arguments[:80]!r}") from exc
    if not isinstance(arguments, dict):
        raise LenientCheckError(f"arguments are not an object: {type(arguments).__name__}")
    return arguments


def check_call(pred_arguments: Any, gold_arguments: Any, tool: ToolSchema) -> tuple[float, dict[str, float], list[str]]:
    """(call score, score per predicted argument, error labels) of one predicted call against one gold call."""
    pred = call_arguments(pred_arguments)
    gold = gold_arguments if isinstance(gold_arguments, dict) else call_arguments(gold_arguments)
    parameters = tool["function"]["parameters"]
    for name in parameters.get("required", []):
        if name not in pred:
            return 0.0, {name: 0.0}, [MISS_REQUIRED]
    if len(pred) == 0 and len(gold) == 0:
        return 1.0, {}, []
    if len(pred) == 0:
        # the harness divides by the number of predicted arguments here (ZeroDivisionError)
        raise LenientCheckError("no predicted arguments where the gold has some")
    properties = parameters.get("properties", {})
    scores: dict[str, float] = {}
    errors: list[str] = []
    for name, value in pred.items():
        if name not in properties:
            scores[name] = 0.0
            errors.append(HALLUCINATION)
        elif name in gold:
            score, more = check_value(value, gold[name], properties[name])
            scores[name] = score
            errors += more
        elif _free_extra(value, properties[name].get("description", "")):
            scores[name] = 1.0
        else:
            scores[name] = 0.0
            errors.append(VALUE_HALLUCINATION)
    return sum(scores.values()) / len(scores), scores, errors
