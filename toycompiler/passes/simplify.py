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

aten = torch.ops.aten
ADD, SUB, MUL, DIV = aten.add.Tensor, aten.sub.Tensor, aten.mul.Tensor, aten.div.Tensor
IDENTITY_OPERAND = {ADD: 0, SUB: 0, MUL: 1, DIV: 1, aten.pow.Tensor_Scalar: 1}


def simplify(gm: torch.fx.GraphModule) -> list[str]:
    changes: list[str] = []
    for node in list(gm.graph.nodes):  # each rule checks the node's target: placeholders and outputs match none
        if (rule := _identity(node) or _double_negation(node) or _constant_chain(node)) is None:
            continue
        replacement, text = rule
        if replacement is not node and replacement.op == "placeholder" and any(u.op == "output" for u in node.users):
            continue  # eager returns a new tensor here; returning the input itself would alias it
        if replacement is not node:
            node.replace_all_uses_with(replacement)
        changes.append(f"{node.name}: {text}")
    gm.graph.eliminate_dead_code()
    return changes


def _same_kind(a: object, b: torch.fx.Node) -> bool:
    """Whether ``a`` is a node whose tensor has ``b``'s dtype and shape (a number is not)."""
    va, vb = (a.meta.get("val") if isinstance(a, torch.fx.Node) else None), b.meta.get("val")
    return all(isinstance(v, torch.Tensor) for v in (va, vb)) and (va.dtype, va.shape) == (vb.dtype, vb.shape)


def _scalar(x: object) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def _identity(node: torch.fx.Node):
    """``x * 1`` and friends -> ``x``."""
    if node.target not in IDENTITY_OPERAND or len(node.args) != 2 or node.kwargs:
        return None
    x, c = node.args
    if _scalar(c) and c == IDENTITY_OPERAND[node.target] and _same_kind(x, node):
        return x, f"{node.target.overloadpacket.__name__}(x, {c}) is x"
    if node.target in (ADD, MUL) and _scalar(x) and x == IDENTITY_OPERAND[node.target] and _same_kind(c, node):
        return c, f"{node.target.overloadpacket.__name__}({x}, x) is x"


def _double_negation(node: torch.fx.Node):
    inner = node.args[0] if node.target is aten.neg.default else None
    ok = isinstance(inner, torch.fx.Node) and inner.target is aten.neg.default and _same_kind(inner.args[0], node)
    return (inner.args[0], "-(-x) is x") if ok else None


def _affine(node: torch.fx.Node) -> tuple[torch.fx.Node, object, float] | None:
    """``x + c``, ``x - c``, ``x * c`` with c a number, as ``(x, ADD or MUL, c)``: ``x - c`` is ``(x, ADD, -c)``."""
    if node.target not in (ADD, SUB, MUL) or len(node.args) != 2 or node.kwargs \
            or not (isinstance(node.args[0], torch.fx.Node) and _scalar(node.args[1])):
        return None
    x, c = node.args
    return x, MUL if node.target is MUL else ADD, -c if node.target is SUB else c


def _constant_chain(node: torch.fx.Node):
    """``(x + a) + b`` -> ``x + (a + b)``; ``(x * a) * b`` -> ``x * (a * b)``."""
    outer = _affine(node)
    inner = _affine(outer[0]) if outer is not None and len(outer[0].users) == 1 else None
    if inner is None or inner[1] is not outer[1] or not _same_kind(inner[0], node):
        return None
    (x, op, a), b = inner, outer[2]
    if op is MUL:
        node.args = (x, a * b)
        return node, f"(x * {a}) * {b} is x * {a * b}"
    node.target, node.args = ADD, (x, a + b)
    return node, f"(x {_fmt(a)}) {_fmt(b)} is x {_fmt(a + b)}"


def _fmt(c: float) -> str:
    return f"+ {c}" if c >= 0 else f"- {-c}"
