"""FX GraphModule -> GraphArtifact (readable code plus a node table with provenance)."""

from __future__ import annotations

import torch

from .artifacts import GraphArtifact, NodeRow
from .provenance import line_of, offset_of


def graph_artifact(gm: torch.fx.GraphModule, name: str) -> GraphArtifact:
    code = "\n".join(line for line in gm.code.strip().splitlines() if line.strip())  # FX leaves blank lines
    return GraphArtifact(name, code, tuple(map(_row, gm.graph.nodes)))


def _row(n: torch.fx.Node) -> NodeRow:
    val = n.meta.get("val", n.meta.get("example_value"))
    shape = str(list(val.shape)) if isinstance(val, torch.Tensor) else ""
    dtype = str(val.dtype).replace("torch.", "") if isinstance(val, torch.Tensor) else ""
    target = n.target if isinstance(n.target, str) else getattr(n.target, "__name__", str(n.target))
    args = ", ".join([str(a) for a in n.args] + [f"{k}={v}" for k, v in n.kwargs.items()])
    return NodeRow(n.name, n.op, str(target), args, shape, dtype, line_of(n), offset_of(n))
