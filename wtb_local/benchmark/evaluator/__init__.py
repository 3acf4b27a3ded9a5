"""The benchmark's evaluation semantics (docs/evaluation.md, sections cited as §N). Pure Python: no I/O,
no torch.

- `paths`: lazy execution-path engine (candidates per step, min_length, first optimal path), §2
- `tools`: float -> number tool conversion, §1
- `conversation`: gold-history conversation builder, §3
- `episode`: per-task step-loop state machine, §4
- `checker`: argument checker, §5
- `judge`: argument scoring of one result row, §5
- `metrics`: metric.json computation, §6
"""
