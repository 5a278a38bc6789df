"""Common subexpression elimination: the same op on the same inputs is computed once.

Mirrors: torch/fx/passes/dialect/common/cse_pass.py (and Inductor's CSE of kernel lines).
Leaves out: ops with side effects other than randomness, which FX graphs here do not have.
"""

from __future__ import annotations

from collections.abc import Hashable

import torch

# Ops whose result changes from call to call must never be merged.
NONDETERMINISTIC = ("rand", "randn", "randint", "dropout", "bernoulli", "normal", "uniform", "empty")


def cse(gm: torch.fx.GraphModule) -> list[str]:
    seen: dict[tuple, torch.fx.Node] = {}
    changes = []
    for node in list(gm.graph.nodes):
        if node.op != "call_function" or any(k in str(node.target) for k in NONDETERMINISTIC):
            continue
        key = (node.target, _hashable(node.args), _hashable(tuple(sorted(node.kwargs.items()))))
        if (first := seen.setdefault(key, node)) is not node:
            node.replace_all_uses_with(first)
            gm.graph.erase_node(node)
            changes.append(f"{node.name} is the same as {first.name}: reused")
    return changes


def _hashable(x: object) -> object:
    if isinstance(x, list | tuple):
        return tuple(_hashable(i) for i in x)
    # an FX node hashes (and compares) by identity: the same node, the same key
    return (type(x).__name__, x) if isinstance(x, Hashable) else ("id", id(x))
