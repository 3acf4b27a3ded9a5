"""Inject an error of wtb_local's own step code at one step of a real run, for every kind of internal error
and many steps, and count how many runs ended as docs/reliability.md ("Internal errors") says: exit 3, the
one line naming the kind, the place and the step, the kind counted once in the manifest, and the fixed
rerun reusing exactly the kept completions to the files of a run that never met the error, with the failed
invocation kept before the complete one.

    python scripts/inject_internal_errors.py                       # each kind at one step of each session
    python scripts/inject_internal_errors.py --scheduling waves    # the same with wave scheduling
    python scripts/inject_internal_errors.py --limit 1             # each kind at each task of a one-session run

The runs are the oracle backend with the hermes parser on the embedded sample, in process (the `run`
command through click's runner), each error raised by a patched function of the step code; it prints each
injection that did not end as specified and the count.
"""

from __future__ import annotations

import json
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(HERE))

KINDS = ("parser", "judge", "reply", "gold_reply", "annotation", "throughput", "step")


def _boom() -> None:
    raise KeyError("injected")


def _accepting(target: tuple[str, int, int]) -> bool:
    """Whether the step being accepted (found in the step driver's or the session loop's frame) is `target`."""
    frame = sys._getframe(2)
    while frame is not None:
        episode, step, at = frame.f_locals.get("episode"), frame.f_locals.get("step"), frame.f_locals.get("at")
        if episode is not None and isinstance(step, int):
            return (episode.session_id, episode.task_idx, step) == target
        if isinstance(at, tuple):
            return at == target
        frame = frame.f_back
    return False


def _patches(kind: str, target: tuple[str, int, int]) -> list[tuple[Any, str, Callable[..., Any]]]:
    """(object, attribute, replacement) raising at `target`'s step in the code of `kind`."""
    from wtb_local.benchmark.evaluator import gold_replies
    from wtb_local.benchmark.evaluator.episode import Episode
    from wtb_local.run.loop import steps
    from wtb_local.run.loop.progress import Progress
    from wtb_local.run.loop.throughput import ThroughputMeter

    rid = "/".join(map(str, target))
    if kind == "parser":
        parse = steps.StepDriver._parse

        def parser(self: Any, completion: Any, tools: Any, prefilled: Any = None) -> Any:
            if completion.request_id == rid:
                _boom()
            return parse(self, completion, tools, prefilled)
        return [(steps.StepDriver, "_parse", parser)]
    if kind == "judge":
        accept = Episode.accept

        def judge(self: Any, *args: Any, **kwargs: Any) -> Any:
            if (self.session_id, self.task_idx, self.step) == target:
                _boom()
            return accept(self, *args, **kwargs)
        return [(Episode, "accept", judge)]
    if kind == "reply":
        reply_from_parse = steps.reply_from_parse

        def reply(result: Any, request_id: str, id_style: str = "openai") -> Any:
            if request_id == rid:
                _boom()
            return reply_from_parse(result, request_id, id_style)
        return [(steps, "reply_from_parse", reply)]
    if kind == "gold_reply":
        gold_reply = gold_replies.gold_reply

        def gold(episode: Any) -> Any:
            if (episode.session_id, episode.task_idx, episode.step) == target:
                _boom()
            return gold_reply(episode)
        return [(gold_replies, "gold_reply", gold)]
    if kind == "annotation":
        annotate = Episode.annotate

        def annotation(self: Any, step: int, fields: Any) -> None:
            if (self.session_id, self.task_idx, step) == target:
                _boom()
            annotate(self, step, fields)
        return [(Episode, "annotate", annotation)]
    if kind == "throughput":
        meter_step = ThroughputMeter.step

        def throughput(self: Any, **fields: Any) -> None:
            if _accepting(target):
                _boom()
            meter_step(self, **fields)
        return [(ThroughputMeter, "step", throughput)]
    count = Progress.step  # kind "step": counting the step for the progress display

    def counted(self: Any, prompt_tokens: int, completion_tokens: int) -> None:
        if _accepting(target):
            _boom()
        count(self, prompt_tokens, completion_tokens)
    return [(Progress, "step", counted)]


def main() -> int:
    import pytest

    from tests.run.conftest import METRIC_NAME, RESULT_NAME, SCORE_NAME, invoke, read_jsonl, without_timing

    extra = sys.argv[1:]

    def args(out: Path) -> list[str]:
        return ["--backend", "oracle", "--parser", "hermes", "--dataset", "sample", "--out", str(out),
                "--progress", "none", *extra]

    def files(out: Path) -> Any:
        return (without_timing(read_jsonl(out / "result" / "oracle" / RESULT_NAME)),
                without_timing(read_jsonl(out / "score" / "oracle" / SCORE_NAME)),
                json.loads((out / "score" / "oracle" / METRIC_NAME).read_text(encoding="utf-8")))

    root = Path(tempfile.mkdtemp(prefix="wtb-inject-"))
    assert invoke(args(root / "clean")).exit_code == 0
    clean = files(root / "clean")
    one = "--limit" in extra
    targets = ([("wild_tool_bench_0", task, 0) for task in range(4)] if one
               else [(f"wild_tool_bench_{i}", i % 4, 0) for i in range(8)])
    ended = total = 0
    for kind in KINDS:
        for target in targets:
            out = root / f"{kind}-{target[0]}-{target[1]}"
            patch = pytest.MonkeyPatch()
            for owner, name, replacement in _patches(kind, target):
                patch.setattr(owner, name, replacement)
            try:
                failed = invoke(args(out))
            finally:
                patch.undo()  # the bug fixed
            line = failed.stderr.strip().splitlines()[-1] if failed.stderr.strip() else ""
            first = json.loads((out / "manifest.json").read_text(encoding="utf-8"))["invocations"][-1]
            kept_file = out / "internal_errors.jsonl"
            kept = sum(len(row["completions"]) for row in read_jsonl(kept_file)) if kept_file.exists() else None
            fixed = invoke(args(out))
            invocations = json.loads((out / "manifest.json").read_text(encoding="utf-8"))["invocations"]
            checks = {
                "exit 3": failed.exit_code == 3,
                "the line": line.startswith(f"Error: internal error ({kind}): KeyError: 'injected' at ")
                and f" in _boom (session {target[0]}, task {target[1]}, step {target[2]}); " in line,
                "counted": first["internal_errors"] == {kind: 1},
                "kept": kept is not None,
                "rerun": fixed.exit_code == 0,
                "history": [i["status"] for i in invocations] == ["failed", "complete"],
                "reused": invocations[-1]["completions_reused"] == kept,
                "identical": fixed.exit_code == 0 and files(out) == clean,
            }
            total += 1
            if all(checks.values()):
                ended += 1
            else:
                print(f"{kind} at {target}: not as specified: {[k for k, ok in checks.items() if not ok]}; "
                      f"{line[:200]}")
    print(f"{ended}/{total} ended as specified ({' '.join(extra) or 'continuous scheduling'})")
    return 0 if ended == total else 1


if __name__ == "__main__":
    raise SystemExit(main())
