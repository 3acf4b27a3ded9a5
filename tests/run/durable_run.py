"""A run for the kill -9 test (test_durability.py), in a process of its own: the instant backend through
the real renderer, tokenizer, parser, evaluator and result store, printing `finished <session id>` the
moment the runner reports a session finished (after its line is fsynced by the writer thread).

    python -m tests.run.durable_run TOKENIZER_DIR DATASET RESULT_FILE [--resume] [--workers N]

Sessions run 8 at a time (each batch all in flight at once), so reports come all through the run.
With --resume the finished sessions already in RESULT_FILE are skipped, and listed first as one line
`resumed <json list of ids>`. With --workers N prompts are rendered by N render workers (their process
ids printed first as `workers <pid> ...`).
"""

from __future__ import annotations

import asyncio
import functools
import json
import sys
from pathlib import Path

BATCH = 8


def main(tokenizer_dir: str, dataset: str, result_file: str, resume: bool, workers: int = 0) -> None:
    from transformers import AutoTokenizer

    from wtb_local.benchmark.dataset import read_dataset
    from wtb_local.benchmark.evaluator.episode import session_episodes, session_result
    from wtb_local.contract.schema import SamplingConfig
    from wtb_local.engines.instant import InstantBackend
    from wtb_local.formats.parsers import get_parser
    from wtb_local.formats.rendering.renderer import PromptRenderer
    from wtb_local.run.loop.loop import SessionRunner
    from wtb_local.run.loop.progress import Progress, ProgressStats
    from wtb_local.run.loop.steps import StepDriver
    from wtb_local.run.record.store import ResultStore

    renderer = PromptRenderer(AutoTokenizer.from_pretrained(tokenizer_dir), model_id="Qwen/Qwen3-0.6B")
    parser = get_parser("hermes")
    sessions, _ = read_dataset(Path(dataset))
    store = ResultStore(result_file)
    store.open(fresh=not resume)
    finished = store.finished()
    if resume:
        print("resumed " + json.dumps(sorted(finished)), flush=True)
    pending = [s for s in sessions if s.id not in finished]
    def make_runner(pool: object) -> SessionRunner:
        driver = StepDriver(InstantBackend(parser=parser, renderer=renderer), sampling=SamplingConfig(seed=0),
                            parser=parser, renderer=renderer, pool=pool)
        return SessionRunner(driver, store, model_name="durable", progress=Progress(ProgressStats(len(sessions), 0)),
                             episodes_for=session_episodes,
                             session_row=functools.partial(session_result, fresh=False),
                             on_finished=lambda sid: print(f"finished {sid}", flush=True))

    async def run() -> None:
        pool = None
        if workers:
            from wtb_local.formats.rendering.pool import RenderPool

            pool = RenderPool(renderer, workers)
            pool.start()
            await pool.ready()
            print("workers " + " ".join(map(str, pool.pids)), flush=True)
        runner = make_runner(pool)
        # a batch at a time, so sessions are reported all through the run (a kill lands mid-run)
        for start in range(0, len(pending), BATCH):
            await runner.run(pending[start:start + BATCH], "continuous")
        if pool is not None:
            pool.close()

    asyncio.run(run())
    store.finalize()


if __name__ == "__main__":
    extra = sys.argv[4:]
    main(sys.argv[1], sys.argv[2], sys.argv[3], "--resume" in extra,
         int(extra[extra.index("--workers") + 1]) if "--workers" in extra else 0)
