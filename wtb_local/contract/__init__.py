"""The run directory's contract: the run's specification, the manifest and the result rows, as pydantic models."""
