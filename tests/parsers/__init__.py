"""Tool-call parser tests: the shared conformance mixin and one module per family."""
