"""Set-up: what is resolved before the first request (docs/architecture.md, "Layout").

The options the user gave (options.py), `prepare` (prepare.py) turning them into the frozen `ResolvedRun`
(resolved.py) with the source of every value, the hashed run config (config.py), and the pieces `prepare`
decides with: context window, dtype, environment, naming, parser, paths, preflight checks, session
selection and shards, thinking mode and tokenizer. Modules are imported by their full path; this package
re-exports nothing, so importing one of them never imports the others.
"""
