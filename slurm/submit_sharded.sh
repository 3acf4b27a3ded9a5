#!/usr/bin/env bash
# Submit one model sharded over an array (wtb_shards.sbatch) and the merge-and-report job (wtb_merge.sbatch)
# that starts once every shard has ended (afterany: a requeued shard is not ended; a failed one is, and the
# merge then names it). Extra arguments are sbatch options for both jobs (e.g. --partition=gpu).
#   WTB_MODEL=Qwen/Qwen3-8B WTB_SHARDS=4 slurm/submit_sharded.sh [SBATCH OPTIONS...]
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
shards="${WTB_SHARDS:-4}"
case "$shards" in '' | *[!0-9]* | 0) echo "WTB_SHARDS must be a positive number, got '$shards'" >&2; exit 1 ;; esac
: "${WTB_MODEL:?set WTB_MODEL to a Hugging Face model id or a local model directory}"
mkdir -p logs  # Slurm opens the --output files before the job script runs
array=$(sbatch --parsable --array="0-$((shards - 1))" "$@" "$here/wtb_shards.sbatch")
array="${array%%;*}"  # --parsable prints "id;cluster" on multi-cluster setups
merge=$(sbatch --parsable --dependency="afterany:$array" "$@" "$here/wtb_merge.sbatch")
echo "shards: job $array (array 0-$((shards - 1))); merge: job ${merge%%;*}"
