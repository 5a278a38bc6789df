"""FX passes, run in order before lowering; each reports what it changed.

``run_passes`` is the table of contents: decompose to ATen, then clean up.
Each pass is a function ``GraphModule -> list of change descriptions`` (it
edits the graph in place), kept in its own module.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
import torch.fx

from ..artifacts import PassesArtifact, PassResult
from ..config import Config
from ..graph_view import graph_artifact
from .cse import cse
from .dce import dce
from .decompose import decompose
from .fold import constant_fold
from .fold_conv_bn import fold_conv_bn
from .simplify import simplify


def run_passes(gm: torch.fx.GraphModule, example_inputs: list, config: Config) -> tuple[torch.fx.GraphModule, PassesArtifact]:
    results: list[PassResult] = []
    if config.fold_conv_bn:
        gm, changes = fold_conv_bn(gm)
        results.append(PassResult("fold_conv_bn", tuple(changes), graph_artifact(gm, "after fold_conv_bn")))
    gm, changes = decompose(gm, example_inputs)
    results.append(PassResult("decompose", tuple(changes), graph_artifact(gm, "after decompose")))
    cleanups: list[tuple[str, bool, Callable[[torch.fx.GraphModule], list[str]]]] = [
        ("constant_fold", config.constant_folding, constant_fold),
        ("simplify", config.simplify, simplify),
        ("cse", config.cse, cse),
        ("dce", True, dce),
    ]
    for name, enabled, fn in cleanups:
        if enabled:
            changes = fn(gm)
            gm.recompile()
            results.append(PassResult(name, tuple(changes), graph_artifact(gm, f"after {name}")))
    return gm, PassesArtifact(tuple(results))
