"""Decompose: re-trace the graph down to ATen ops, splitting composite ops.

``torch.sin`` and ``x.sin()`` and ``x + y`` all become ``aten.sin`` /
``aten.add.Tensor``; ``softmax``, ``layer_norm``, ``gelu``... become the
handful of pointwise and reduction ops they are made of, using torch's own
decomposition table. The backend then only needs lowerings for those.

Mirrors: torch/_inductor/decomposition.py (on top of torch/_decomp).
"""

from __future__ import annotations

import torch
import torch.fx
from torch._decomp import core_aten_decompositions
from torch._subclasses.fake_tensor import FakeTensor, FakeTensorMode
from torch.fx.experimental.proxy_tensor import make_fx
from torch.fx import traceback as fx_traceback

aten = torch.ops.aten


def decomposition_table() -> dict:
    table = dict(core_aten_decompositions())
    return table


def decompose(gm: torch.fx.GraphModule, example_inputs: list) -> tuple[torch.fx.GraphModule, list[str]]:
    before = [n for n in gm.graph.nodes if n.op in ("call_function", "call_method")]
    with fx_traceback.preserve_node_meta():
        # Running through an Interpreter lets FX copy each node's provenance onto the ATen nodes it becomes.
        interpret = torch.fx.Interpreter(gm).run
        fake_mode, fakes = fake_inputs(example_inputs)
        with fake_mode:
            new = make_fx(interpret, decomposition_table=decomposition_table())(*fakes)
    after = [n for n in new.graph.nodes if n.op == "call_function"]
    changes = [f"{len(before)} graph op(s) became {len(after)} ATen op(s)"]
    for n in after:
        changes.append(f"{n.name} = {_name(n.target)}")
    return new, changes


def fake_inputs(example_inputs: list) -> tuple[FakeTensorMode, list]:
    """Fake copies of the inputs (their own mode if they are fake already, else a fresh static one)."""
    for t in example_inputs:
        if isinstance(t, FakeTensor):
            return t.fake_mode, list(example_inputs)
    mode = FakeTensorMode(allow_non_fake_inputs=True)
    return mode, [mode.from_tensor(t, static_shapes=True) if isinstance(t, torch.Tensor) else t for t in example_inputs]


def _name(target: object) -> str:
    return str(target)
