"""What a rerun with the same seed reproduces, for the backend and settings a run really had
(docs/reproducibility.md §1). Recorded in the manifest as `rerun`: `identical` is true (the same command
writes the same result, score and metric files, timing fields aside), false (same seeds and sampling
streams, but the numerics may differ) or null (a server decides), with the reason in `why`. Each backend
states its own claim (`Backend.rerun_claim`) from these reasons; `wtb_local.engines.rerun_claim` asks the
backend a run used. This module imports nothing of the project, so `engines/base.py` and every backend
can read it.
"""

from __future__ import annotations

# One sequence per forward pass, every prompt computed whole: the same shapes, so the same bits.
ONE_SEQUENCE = ("--max-num-seqs 1 --no-enable-prefix-caching: one sequence per forward pass and every prompt "
                "computed whole, so each request's numerics are the same in every run")
BATCH_INVARIANT = ("VLLM_BATCH_INVARIANT=1: vLLM's batch-invariant mode (beta, GPUs only), whose kernels give "
                   "a request the same numerics whatever shares its batch")
BATCHED = ("the same per-request seeds, but continuous batching and the prefix cache change a request's "
           "numerics with what shares its batch, so a token can differ; for identical reruns use "
           "--max-num-seqs 1 --no-enable-prefix-caching, or VLLM_BATCH_INVARIANT=1 on a GPU vLLM supports")


SERVER = ("the server batches and samples: whether a rerun is identical is its own property (for vLLM: see the "
          "vllm backend's conditions)")
