"""What a model reads and writes: prompts rendered with chat templates, native tool-call parsers, end-of-turn
and reasoning markers, model ids and a checkpoint's files (docs/architecture.md, "The rooms")."""
