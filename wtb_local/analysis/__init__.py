"""The reader half: reports, explain, roster, the commands on finished runs and the exports. It reads run
directories through `contract/` and never imports `run/` or `engines/` (docs/architecture.md, "The rooms")."""
