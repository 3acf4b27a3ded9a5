"""The logic of the commands that work on finished runs (docs/architecture.md, "Layout"): merging shards
(merge_runs.py), repeated runs and their error bars (repeat_runs.py), and comparing parsers on recorded
outputs (parser_comparison.py). `cli/` holds their click wrappers; analysis/reports/ and analysis/explain/ read these modules
too, which is why they live outside `cli/` (importing them never imports click).
"""
