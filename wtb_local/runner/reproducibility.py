"""What a rerun with the same seed reproduces, for the backend and settings a run really had
(docs/reproducibility.md §1). Recorded in the manifest as `rerun`: `identical` is true (the same command
writes the same result, score and metric files, timing fields aside), false (same seeds and sampling
streams, but the numerics may differ) or null (a server decides), with the reason in `why`.
"""

from __future__ import annotations

from typing import Any

# One sequence per forward pass, every prompt computed whole: the same shapes, so the same bits.
ONE_SEQUENCE = ("--max-num-seqs 1 --no-enable-prefix-caching: one sequence per forward pass and every prompt "
                "computed whole, so each request's numerics are the same in every run")
BATCH_INVARIANT = ("VLLM_BATCH_INVARIANT=1: vLLM's batch-invariant mode (beta, GPUs only), whose kernels give "
                   "a request the same numerics whatever shares its batch")
BATCHED = ("the same per-request seeds, but continuous batching and the prefix cache change a request's "
           "numerics with what shares its batch, so a token can differ; for identical reruns use "
           "--max-num-seqs 1 --no-enable-prefix-caching, or VLLM_BATCH_INVARIANT=1 on a GPU vLLM supports")


def rerun_claim(backend: dict[str, Any], scheduling: str | None) -> dict[str, Any]:
    """`{"identical": True | False | None, "why": ...}` for a run made with `backend` (its `describe()`)."""
    name = backend.get("backend")
    if name in ("oracle", "scripted"):
        return {"identical": True, "why": f"the {name} backend does not sample: its replies are fixed"}
    if name == "replay":
        return {"identical": True, "why": "the recorded completions are parsed and judged again: the score and "
                                          "metric files are byte-identical, the result file differs only in "
                                          "each step's runner_ms"}
    if name == "vllm":
        scheduler = backend.get("scheduler") or {}
        if backend.get("batch_invariant"):
            return {"identical": True, "why": BATCH_INVARIANT}
        if scheduler.get("max_num_seqs") == 1 and scheduler.get("enable_prefix_caching") is False:
            return {"identical": True, "why": ONE_SEQUENCE}
        return {"identical": False, "why": BATCHED}
    if name == "transformers":
        if scheduling == "waves":
            return {"identical": True, "why": "step-synchronous waves hold the same requests in every run (sorted "
                                              "ids, --batch-size at a time), each seeded from its request ids"}
        return {"identical": False, "why": "continuous scheduling: a wave holds whatever is pending, which "
                                           "depends on timing; --scheduling waves makes reruns identical"}
    return {"identical": None, "why": "the server batches and samples: whether a rerun is identical is its own "
                                      "property (for vLLM: see the vllm backend's conditions)"}
