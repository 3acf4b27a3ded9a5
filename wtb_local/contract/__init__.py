"""The run directory's contract and the package's own files: the run's specification, the manifest and the result
rows as pydantic models, paths, locks, faults, shipped files; it imports nothing else of wtb_local."""
