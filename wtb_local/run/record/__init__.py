"""What a run writes, and how it ends (docs/architecture.md, "Layout").

The result store (store.py), the run record that owns the manifest from its first write to its last
(record.py, run_record.py, manifest.py), the run directory's lock and resuming. Modules are imported by
their full path; this package re-exports nothing.
"""
