"""`explain`: why the scores of runs of the same tasks differ (docs/explain.md).

- factors.py: what a factor is and where it is read from (the one table);
- runs.py: RUN_DIR arguments read into runs (a `--repeats` run as its seeds) and the tasks compared;
- divergence.py: each flipped task's first point of divergence (prompt, completion, parse, verdict);
- decompose.py: the gap one factor at a time (re-parse, re-score, the rest is generation);
- stats.py: the exact McNemar test and the seed flip rates;
- build.py: the whole explanation as one dict; render.py: tables and files;
- plan.py: `explain --plan MODEL`, the runs that measure the usual factors.
"""
