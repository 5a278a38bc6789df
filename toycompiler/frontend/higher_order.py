"""Higher-order ops: ``torch.cond(pred, true_fn, false_fn, operands)``.

When ``pred`` is known now (a Python bool, a shape test), ``torch.cond`` is
just an ``if``: the chosen branch is inlined. When ``pred`` is a tensor, both
branches are traced on fake operands with ``make_fx`` into small graphs,
attached to the output graph as submodules (``cond_true_0``,
``cond_false_0``), and one node calls the higher-order op
``torch.ops.higher_order.cond`` on them, as Dynamo does. Branches may read only
their operands: a branch that reads another tensor (a global, a closure, a
parameter) is a graph break that says so.

Mirrors: torch/_dynamo/variables/higher_order_ops.py (CondHigherOrderVariable).
Leaves out: branches that close over tensors (Dynamo lifts them to operands),
nested breaks inside branches.
"""

from __future__ import annotations

import inspect
from typing import Any

import torch
from torch.fx.experimental.proxy_tensor import make_fx

from .variables import TensorVariable, Unsupported, Variable


def trace_cond(tx, /, *args: Variable, **kwargs: Variable) -> Variable:
    """``torch.cond(pred, true_fn, false_fn, operands)``, called with variables as ``torch.cond`` itself is."""
    bound = Unsupported.if_raises("torch.cond(...)", lambda: inspect.signature(torch.cond).bind(*args, **kwargs))
    pred, true_fn, false_fn, *operands = bound.args  # (keywords too, in the signature's order)
    ops = operands[0].unpack(tx) if operands else []  # operands=() by default
    if not isinstance(pred, TensorVariable):  # a Python bool: an ordinary if
        return (true_fn if pred.truth() else false_fn).call(tx, ops, {})
    if not all(isinstance(o, TensorVariable) for o in ops):
        raise Unsupported("torch.cond operands must all be tensors here", "unsupported-call")
    fakes = [o.example for o in ops]
    true_gm, true_out, single = _trace_branch(tx, true_fn, fakes, "true_fn")
    false_gm, false_out, _ = _trace_branch(tx, false_fn, fakes, "false_fn")
    meta = [[(tuple(t.shape), t.dtype) for t in outs] for outs in (true_out, false_out)]
    if meta[0] != meta[1]:
        raise Unsupported(f"torch.cond branches return different shapes/dtypes: {meta[0]} vs {meta[1]}", "exception")
    index = sum(name.startswith("cond_true_") for name in tx.output.submodules)
    names_ = f"cond_true_{index}", f"cond_false_{index}"
    tx.output.submodules.update(zip(names_, (true_gm, false_gm)))
    getattrs = [tx.output.create_node("get_attr", n, (), {}, None) for n in names_]
    args = (pred.node, *getattrs, tuple(o.node for o in ops))
    result = tx.output.wrap_result("call_function", torch.ops.higher_order.cond, args, {}, true_out)  # + getitems
    return result.items[0] if single else result


def _trace_branch(tx, fn: Variable, fakes: list, what: str) -> tuple[torch.fx.GraphModule, tuple, bool]:
    if not fn.is_python_constant():
        raise Unsupported(f"torch.cond {what} captures values only known while tracing; pass them as operands",
                          "unsupported-call")
    single = []

    def as_tuple(*xs: Any) -> tuple:
        out = fn.as_python()(*xs)  # a constant: the real function (checked above)
        single.append(isinstance(out, torch.Tensor))
        return (out,) if isinstance(out, torch.Tensor) else tuple(out)

    try:
        with tx.output.shapes.fake_mode:
            gm = make_fx(as_tuple)(*fakes)
            outputs = gm(*fakes)
    except Exception as e:
        raise Unsupported(f"torch.cond {what} could not be traced: {type(e).__name__}: {e}", "unsupported-call") from e
    if any(n.op == "get_attr" for n in gm.graph.nodes):
        raise Unsupported(f"torch.cond {what} reads a tensor that is not one of its operands; pass it in `operands`",
                          "unsupported-call")
    return gm, tuple(outputs), single[0]
