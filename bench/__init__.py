"""``python -m toycompiler.bench``: eager vs torch.compile vs toycompiler, measured in one run.

Workloads live in :mod:`.workloads`, the contenders in :mod:`.runners`, how
time is measured in :mod:`.measure`; :mod:`.__main__` runs them and writes
JSON, a markdown table and (with ``--chart``) a PNG. ``bench/guards.py`` is a
separate script for the per-call cost of guards. Results are kept as data in
``bench/results/``.

This folder is not part of the compiler: it is installed as
``toycompiler.bench`` (pyproject.toml maps it) so that the command keeps its
short name; it imports the compiler, never the reverse.
"""
