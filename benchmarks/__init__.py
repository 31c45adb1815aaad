"""The benchmarks: each a module run from the repository's root, ``.venv/bin/python -m
benchmarks.<name>``; what they share is in ``benchmarks.common``. Figures, commands and the
method are in docs/benchmarks.md."""
