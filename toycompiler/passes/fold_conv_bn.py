"""Fold an eval-mode BatchNorm into the convolution that feeds it.

In eval mode BatchNorm is an affine map per channel, ``y = (x - mean) / sqrt(var + eps) * w + b``,
so ``bn(conv(x))`` equals one convolution with rescaled weights and a new bias. This is done only
when the convolution's and the BatchNorm's tensors are constants of the graph (module attributes
or ``get_attr`` nodes): graph *inputs* may change between calls, so they are left alone.

Runs before decomposition, on the captured graph: it matches ``Conv -> BatchNorm`` modules
(``call_module``) and ATen ``convolution -> native_batch_norm / _native_batch_norm_legit_no_training``
with ``training=False``. The new weights come from ``torch.nn.utils.fusion``.

Mirrors: torch/_inductor/fx_passes/freezing_patterns.py and torch/fx/experimental/optimization.py
(``fuse``). Leaves out: linear + BatchNorm, and BatchNorm in training mode (statistics change).
"""

from __future__ import annotations

import copy
import operator

import torch
import torch.fx
from torch.nn.utils.fusion import fuse_conv_bn_eval, fuse_conv_bn_weights

aten = torch.ops.aten
BN_OPS = {aten.native_batch_norm.default: 5, aten._native_batch_norm_legit_no_training.default: None}


def fold_conv_bn(gm: torch.fx.GraphModule) -> tuple[torch.fx.GraphModule, list[str]]:
    """Return a graph module (a copy, if anything changed) and what was folded."""
    if not any(_module_pair(gm, n) or _aten_pair(gm, n) for n in gm.graph.nodes):
        return gm, []
    gm = copy.deepcopy(gm)
    changes = []
    for node in list(gm.graph.nodes):
        if _module_pair(gm, node):
            changes.append(_fold_modules(gm, node))
        elif _aten_pair(gm, node):
            changes.append(_fold_aten(gm, node))
    gm.graph.eliminate_dead_code()
    gm.recompile()
    return gm, changes


# -- Conv2d module -> BatchNorm2d module (symbolic_trace / nn.Module graphs) ----------


def _module_pair(gm: torch.fx.GraphModule, node: torch.fx.Node) -> bool:
    if node.op != "call_module" or not isinstance(gm.get_submodule(node.target), torch.nn.modules.batchnorm._BatchNorm):
        return False
    bn, conv = gm.get_submodule(node.target), node.args[0]
    return (not bn.training and bn.track_running_stats and isinstance(conv, torch.fx.Node) and conv.op == "call_module"
            and isinstance(gm.get_submodule(conv.target), torch.nn.modules.conv._ConvNd) and len(conv.users) == 1)


def _fold_modules(gm: torch.fx.GraphModule, bn_node: torch.fx.Node) -> str:
    conv_node = bn_node.args[0]
    fused = fuse_conv_bn_eval(gm.get_submodule(conv_node.target), gm.get_submodule(bn_node.target))
    _set_submodule(gm, conv_node.target, fused)
    bn_node.replace_all_uses_with(conv_node)
    gm.graph.erase_node(bn_node)
    return f"{bn_node.name} folded into {conv_node.name}: new weights and bias, one op fewer"


def _set_submodule(gm: torch.nn.Module, target: str, module: torch.nn.Module) -> None:
    parent, _, name = target.rpartition(".")
    setattr(gm.get_submodule(parent) if parent else gm, name, module)


# -- aten.convolution -> aten batch norm (graphs already at ATen level) -----------------


def _is_constant(n: object) -> bool:
    """A tensor of the graph itself (``get_attr``), or an argument left out (None)."""
    return n is None or (isinstance(n, torch.fx.Node) and n.op == "get_attr")


def _constant(gm: torch.fx.GraphModule, n: torch.fx.Node | None) -> torch.Tensor | None:
    return None if n is None else getattr(gm, n.target)


def _aten_pair(gm: torch.fx.GraphModule, node: torch.fx.Node) -> bool:
    if node.op != "call_function" or node.target not in BN_OPS:
        return False
    training = BN_OPS[node.target]
    if training is not None and node.args[training]:
        return False
    conv = node.args[0]
    if not (isinstance(conv, torch.fx.Node) and conv.target is aten.convolution.default and len(conv.users) == 1):
        return False
    if conv.args[6] or not all(map(_is_constant, (conv.args[1], conv.args[2], *node.args[1:5]))):
        return False  # a transposed convolution, or weights and statistics that are graph inputs
    return all(u.target is operator.getitem for u in node.users)


def _fold_aten(gm: torch.fx.GraphModule, bn: torch.fx.Node) -> str:
    conv = bn.args[0]
    w, b = _constant(gm, conv.args[1]), _constant(gm, conv.args[2])
    bn_w, bn_b, mean, var = (_constant(gm, a) for a in bn.args[1:5])
    eps = bn.args[-1]
    new_w, new_b = fuse_conv_bn_weights(w, b, mean, var, eps, bn_w, bn_b)
    names = []
    for value in (new_w, new_b):
        name = f"_folded_conv_bn_{len([n for n in gm.graph.nodes if n.op == 'get_attr'])}_{len(names)}"
        gm.register_buffer(name, value.detach())
        with gm.graph.inserting_before(conv):
            names.append(gm.graph.get_attr(name))
    conv.args = (conv.args[0], names[0], names[1], *conv.args[3:])
    for user in list(bn.users):
        if user.args[1] == 0:
            user.replace_all_uses_with(conv)
    return f"{bn.name} folded into {conv.name}: new weights and bias, one op fewer"
