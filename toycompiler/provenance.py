"""Where an FX node came from: the user's source line and bytecode offset.

The translator stores both in ``node.meta["custom"]``, a field that
``torch.fx`` copies onto every node made while re-tracing (decompositions,
AOTAutograd), so kernels can still say which line they came from. Graphs
captured by the real TorchDynamo carry a ``stack_trace`` instead; its last
line number is used.
"""

from __future__ import annotations

import re

import torch.fx


def tag(node: torch.fx.Node, line: int | None, offset: int | None, filename: str, source: str) -> None:
    node.meta["custom"] = {"toy_line": line, "toy_offset": offset}
    if line is not None:
        node.meta["stack_trace"] = f'  File "{filename}", line {line}, in <traced>\n    {source}\n'


def line_of(node: torch.fx.Node) -> int | None:
    if (line := (node.meta.get("custom") or {}).get("toy_line")) is not None:
        return line
    found = re.findall(r"line (\d+)", node.meta.get("stack_trace") or "")
    return int(found[-1]) if found else None


def offset_of(node: torch.fx.Node) -> int | None:
    return (node.meta.get("custom") or {}).get("toy_offset")
