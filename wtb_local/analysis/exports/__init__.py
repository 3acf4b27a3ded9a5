"""Exports of finished runs into the tools researchers already use (docs/exports.md): an Inspect evaluation
log per run (`inspect_log`), an MLflow run per run (`mlflow_run`) and the benchmark's leaderboard row
(`leaderboard`). Every exporter reads runs through `source` and names what it could not carry. inspect_ai and
mlflow are the optional `export` extra, imported only by the exporter that needs them."""
