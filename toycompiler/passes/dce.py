"""Dead code elimination: drop nodes whose results nobody uses (and that have no side effects).

Mirrors: torch.fx.Graph.eliminate_dead_code, which this calls; it only adds the list of what went.
"""

from __future__ import annotations

import torch.fx


def dce(gm: torch.fx.GraphModule) -> list[str]:
    before = {n.name for n in gm.graph.nodes}
    gm.graph.eliminate_dead_code()
    return [f"removed {name} (unused)" for name in sorted(before - {n.name for n in gm.graph.nodes})]
