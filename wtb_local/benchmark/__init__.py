"""The benchmark itself, which both halves use and which imports neither: the dataset, the evaluator (gold
paths and the judge), scoring and the two protocols (docs/architecture.md, "The rooms")."""
