"""The hot loop and what it counts (docs/architecture.md, "Layout").

`SessionRunner` (loop.py) keeps every episode in flight, `StepDriver` (steps.py) runs one model call,
with stopping, length cuts, progress, throughput and per-request seeds beside them. Modules are imported
by their full path; this package re-exports nothing.
"""
