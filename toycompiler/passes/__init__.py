"""FX passes, run in order before lowering; each reports what it changed.

``run_passes`` is the table of contents: decompose to ATen, then clean up.
Each pass is a function ``GraphModule -> list of change descriptions`` (it
edits the graph in place), kept in its own module. Like every backend stage,
``run_passes`` returns a :class:`~toycompiler.artifacts.StageResult`: the
ATen graph for lowering, and the passes' artifact for the views.

Mirrors: torch/_inductor/fx_passes/ (pre_grad, joint_graph, post_grad) and
torch/_inductor/decomposition.py. Leaves out: pattern matching (the
``pattern_matcher`` replacements), reinplacing, and passes on the joint graph.
"""

from __future__ import annotations

import torch.fx

from ..artifacts import PassesArtifact, PassResult, StageResult
from ..config import Config
from ..graph_view import graph_artifact
from .cse import cse
from .dce import dce
from .decompose import decompose
from .fold import constant_fold
from .fold_conv_bn import fold_conv_bn
from .simplify import simplify


def run_passes(gm: torch.fx.GraphModule, example_inputs: list, config: Config) -> StageResult[torch.fx.GraphModule]:
    """FX graph -> ATen FX graph (a new module; ``gm`` is left alone), each pass's changes in the artifact."""
    results: list[PassResult] = []

    def record(name: str, after: torch.fx.GraphModule, changes: list[str]) -> torch.fx.GraphModule:
        results.append(PassResult(name, tuple(changes), graph_artifact(after, f"after {name}")))
        return after

    gm = record("fold_conv_bn", *fold_conv_bn(gm)) if config.fold_conv_bn else gm
    gm = record("decompose", *decompose(gm, example_inputs, bool(config.matmul_template)))
    # the clean-ups, each with the setting that turns it on
    for name, enabled, fn in [("constant_fold", config.constant_folding, constant_fold),
                              ("simplify", config.simplify, simplify), ("cse", config.cse, cse), ("dce", True, dce)]:
        if enabled:
            changes = fn(gm)
            gm.recompile()
            record(name, gm, changes)
    return StageResult(gm, PassesArtifact(tuple(results)))
