"""``python -m toycompiler.bench``: eager vs torch.compile vs toycompiler, measured in one run.

Workloads live in :mod:`.workloads`, the contenders in :mod:`.runners`, how
time is measured in :mod:`.measure`; :mod:`.__main__` runs them and writes
JSON, a markdown table and (with ``--chart``) a PNG.
"""
