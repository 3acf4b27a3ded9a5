"""A roster: many model runs described in one TOML file (docs/roster.md), checked offline by `plan`,
submitted to Slurm as one array per resource class plus a report job, and reported against the paper's
Table 6/7 rows. Imports no torch, vllm or transformers."""
