"""Constant folding: an op whose inputs are all constants is computed now, at compile time.

In a graph captured from a function, constants show up as ``aten.full`` /
``aten.scalar_tensor`` results and as ops on them (``full(...) * 2``). Those
small tensors are computed once and stored as attributes of the graph module.

Mirrors: torch/_inductor/fx_passes/joint_graph.py (constant_fold_uniform_value)
and torch/_inductor/constant_folding.py.
Leaves out: folding large constants (see MAX_FOLD_NUMEL) and lifting them to graph inputs.
"""

from __future__ import annotations

import torch

# Only fold tensors this small: folding a big constant trades compute for memory.
MAX_FOLD_NUMEL = 64
FACTORIES = ("aten.full.", "aten.scalar_tensor.", "aten.arange.", "aten.zeros.", "aten.ones.")


def constant_fold(gm: torch.fx.GraphModule) -> list[str]:
    changes = []
    constant: set[torch.fx.Node] = set()
    for node in list(gm.graph.nodes):
        val = node.meta.get("val")
        small = node.op == "call_function" and isinstance(val, torch.Tensor) and val.numel() <= MAX_FOLD_NUMEL
        if node.op == "get_attr" or (small and str(node.target).startswith(FACTORIES)):
            constant.add(node)  # a weight, or a small factory: the ops reading it can be folded
            continue
        if not (small and node.all_input_nodes and all(i in constant for i in node.all_input_nodes)):
            continue
        attr = constant_node(gm, f"_folded_{node.name}", _evaluate(gm, node), before=node)  # a get_attr node
        node.replace_all_uses_with(attr, propagate_meta=True)  # attr takes node's meta (its fake value...)
        gm.graph.erase_node(node)
        constant.add(attr)
        changes.append(f"{node.name} computed at compile time -> {attr.target}")
    return changes


def constant_node(gm: torch.fx.GraphModule, name: str, value: torch.Tensor, before: torch.fx.Node) -> torch.fx.Node:
    """Store ``value`` in the module as ``name``; return a ``get_attr`` node that reads it, placed before ``before``."""
    gm.register_buffer(name, value)
    with gm.graph.inserting_before(before):
        return gm.graph.get_attr(name)


def _evaluate(gm: torch.fx.GraphModule, node: torch.fx.Node) -> torch.Tensor:
    """``node``'s value, computing the constant nodes it reads first."""
    if node.op == "get_attr":
        return getattr(gm, node.target)
    args, kwargs = torch.fx.node.map_arg((node.args, node.kwargs), lambda n: _evaluate(gm, n))
    return node.target(*args, **kwargs)
