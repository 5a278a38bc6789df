"""The TorchInductor half: FX graph -> loop IR -> fused kernels -> output code.

``toycompiler.pipeline.compile_graph`` calls the stages in order; each module
here is one stage (see the package layout in the README).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..artifacts import BackendArtifacts


class CompiledGraph:
    """What the toy backend returns: callable like the graph, carrying its artifacts."""

    def __init__(self, call: Callable, artifacts: BackendArtifacts):
        self.call, self.artifacts = call, artifacts

    def __call__(self, *args: Any) -> Any:
        return self.call(*args)
