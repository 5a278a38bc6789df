"""Algebraic simplification: rewrite ops whose result is known without computing them.

- identities: ``x * 1``, ``x / 1``, ``x + 0``, ``x - 0``, ``x ** 1`` -> ``x``
- double negation: ``-(-x)`` -> ``x``
- constant chains: ``x * 2 + 3 - 1`` -> ``x * 2 + 2``; ``(x * 2) * 3`` -> ``x * 6``

An identity whose result is a graph output and whose operand is a graph input is kept: eager
returns a new tensor there, and the compiled function must not hand back the input itself.

A rewrite only happens when the result keeps the same shape and dtype (``int_tensor * 1.0`` is a
float tensor, so it stays), and a chain is only merged when its inner node has no other user.
Merging constants re-associates floating point arithmetic; the result can differ from eager in
the last bit, as with Inductor's own simplifications.

Mirrors: the algebraic rules of torch/_inductor/fx_passes/joint_graph.py and post_grad.py.
Leaves out: the pattern matcher those files are written with, and rules over views.
"""

from __future__ import annotations

import torch
import torch.fx

aten = torch.ops.aten
ADD, SUB, MUL, DIV = aten.add.Tensor, aten.sub.Tensor, aten.mul.Tensor, aten.div.Tensor
IDENTITY_OPERAND = {ADD: 0, SUB: 0, MUL: 1, DIV: 1, aten.pow.Tensor_Scalar: 1}


def simplify(gm: torch.fx.GraphModule) -> list[str]:
    changes: list[str] = []
    for node in list(gm.graph.nodes):  # each rule checks the node's target: placeholders and outputs match none
        rule = _identity(node) or _double_negation(node) or _constant_chain(node)
        if rule is None:
            continue
        replacement, text = rule
        if replacement is not node and replacement.op == "placeholder" and any(u.op == "output" for u in node.users):
            continue  # eager returns a new tensor here; returning the input itself would alias it
        if replacement is not node:
            node.replace_all_uses_with(replacement)
        changes.append(f"{node.name}: {text}")
    gm.graph.eliminate_dead_code()
    return changes


def _same_kind(a: torch.fx.Node, b: torch.fx.Node) -> bool:
    va, vb = a.meta.get("val"), b.meta.get("val")
    return isinstance(va, torch.Tensor) and isinstance(vb, torch.Tensor) and va.dtype == vb.dtype \
        and va.shape == vb.shape


def _scalar(x: object) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def _identity(node: torch.fx.Node):
    """``x * 1`` and friends -> ``x``."""
    if node.target not in IDENTITY_OPERAND or len(node.args) != 2 or node.kwargs:
        return None
    x, c = node.args
    if isinstance(x, torch.fx.Node) and _scalar(c) and c == IDENTITY_OPERAND[node.target] and _same_kind(x, node):
        return x, f"{node.target.overloadpacket.__name__}(x, {c}) is x"
    if node.target in (ADD, MUL) and isinstance(c, torch.fx.Node) and _scalar(x) and \
            x == IDENTITY_OPERAND[node.target] and _same_kind(c, node):
        return c, f"{node.target.overloadpacket.__name__}({x}, x) is x"
    return None


def _double_negation(node: torch.fx.Node):
    if node.target is not aten.neg.default:
        return None
    inner = node.args[0]
    if isinstance(inner, torch.fx.Node) and inner.target is aten.neg.default and _same_kind(inner.args[0], node):
        return inner.args[0], "-(-x) is x"
    return None


def _signed(node: torch.fx.Node) -> tuple[torch.fx.Node, float] | None:
    """``x + c`` / ``x - c`` as (x, +-c) when c is a number."""
    if node.target in (ADD, SUB) and len(node.args) == 2 and not node.kwargs and _scalar(node.args[1]) and \
            isinstance(node.args[0], torch.fx.Node):
        return node.args[0], node.args[1] if node.target is ADD else -node.args[1]
    return None


def _constant_chain(node: torch.fx.Node):
    """``(x + a) + b`` -> ``x + (a + b)``; ``(x * a) * b`` -> ``x * (a * b)``."""
    outer = _signed(node)
    if outer is not None:
        inner = _signed(outer[0]) if len(outer[0].users) == 1 else None
        if inner is not None and _same_kind(inner[0], node):
            total = inner[1] + outer[1]
            node.target, node.args = ADD, (inner[0], total)
            return node, f"(x {_fmt(inner[1])}) {_fmt(outer[1])} is x {_fmt(total)}"
    if node.target is MUL and len(node.args) == 2 and _scalar(node.args[1]) and not node.kwargs:
        inner = node.args[0]
        if isinstance(inner, torch.fx.Node) and inner.target is MUL and len(inner.users) == 1 and \
                len(inner.args) == 2 and _scalar(inner.args[1]) and _same_kind(inner.args[0], node):
            a, b = inner.args[1], node.args[1]
            node.args = (inner.args[0], a * b)
            return node, f"(x * {a}) * {b} is x * {a * b}"
    return None


def _fmt(c: float) -> str:
    return f"+ {c}" if c >= 0 else f"- {-c}"
