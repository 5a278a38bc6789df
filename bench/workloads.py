"""The benchmark's workloads: plain functions over tensors, sized per device.

Each workload says how to build its inputs and how many bytes an ideal
implementation must move (read every input once, write every output once),
which turns a time into achieved GB/s for the bandwidth-bound ones.
Weights are passed as arguments (functions, not modules) so every compiler
sees the same graph.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import torch
import torch.nn.functional as F


@dataclass(frozen=True)
class Workload:
    name: str
    fn: Callable
    make_inputs: Callable[[str, bool], tuple]  # (device, quick) -> inputs
    bandwidth_bound: bool  # whether achieved GB/s is a meaningful figure
    training: bool = False  # time forward + backward (gradients of every input that requires grad)
    describe: str = ""


# -- pointwise ------------------------------------------------------------------------


def sin_cos(x, y):
    return torch.sin(x) + torch.cos(y)


def gelu_tanh(x):
    return 0.5 * x * (1.0 + torch.tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)))


def chain8(x, y):
    a = x * y
    b = a + 1.5
    c = torch.sigmoid(b)
    d = c - y
    e = torch.abs(d)
    f = torch.sqrt(e + 1.0)
    g = f * x
    return torch.exp(-g)


def ten_ops(x, y):
    """The 10-op function whose cold compile time is a target."""
    a = torch.sin(x) * y + 1.5
    b = torch.relu(a - y) / (torch.abs(x) + 1)
    return torch.exp(-b) * torch.tanh(a) - torch.cos(y)


# -- reductions -------------------------------------------------------------------------


def softmax(x):
    return torch.softmax(x, dim=-1)


def layer_norm(x, w, b):
    return F.layer_norm(x, (x.shape[-1],), w, b)


def row_sum(x):
    return x.sum(dim=-1)


# -- models -------------------------------------------------------------------------------


def mlp(x, w1, b1, w2, b2):
    return F.linear(F.relu(F.linear(x, w1, b1)), w2, b2)


def mlp_loss(x, w1, b1, w2, b2):
    out = F.linear(F.relu(F.linear(x, w1, b1)), w2, b2)  # mlp(), written out: one frame to trace
    return (out**2).mean()


def transformer_block(x, ln1_w, ln1_b, w_qkv, w_out, ln2_w, ln2_b, w_up, w_down):
    """Pre-norm block: causal self-attention (4 heads) then a GELU MLP; x is [batch, seq, dim].

    Written with ``x.shape[i]`` and ``narrow`` rather than tuple unpacking and
    slices, which not every translator handles yet.
    """
    batch, seq, dim = x.shape[0], x.shape[1], x.shape[2]
    head = dim // 4
    h = F.layer_norm(x, (dim,), ln1_w, ln1_b)
    qkv = h @ w_qkv  # [batch, seq, 3 * dim]
    q = qkv.narrow(2, 0, dim).reshape(batch, seq, 4, head).transpose(1, 2)  # [batch, heads, seq, head]
    k = qkv.narrow(2, dim, dim).reshape(batch, seq, 4, head).transpose(1, 2)
    v = qkv.narrow(2, 2 * dim, dim).reshape(batch, seq, 4, head).transpose(1, 2)
    scores = (q @ k.transpose(-2, -1)) / math.sqrt(head)  # [batch, heads, seq, seq]
    keep = torch.ones(seq, seq, device=x.device).tril()  # 1 where a position may attend
    att = torch.softmax(scores.masked_fill(keep == 0, float("-inf")), dim=-1)
    y = (att @ v).transpose(1, 2).reshape(batch, seq, dim)
    x = x + y @ w_out
    return x + F.gelu(F.layer_norm(x, (dim,), ln2_w, ln2_b) @ w_up, approximate="tanh") @ w_down


# -- inputs -------------------------------------------------------------------------------


def _numel(device: str, quick: bool) -> int:
    if device == "cuda":
        return 1 << (22 if quick else 24)
    return 1 << (18 if quick else 22)


def _rows(device: str, quick: bool) -> tuple[int, int]:
    if device == "cuda":
        return (2048, 1024) if quick else (8192, 1024)
    return (256, 1024) if quick else (1024, 1024)


def _vectors(n: int) -> Callable[[str, bool], tuple]:
    def make(device: str, quick: bool) -> tuple:
        size = _numel(device, quick)
        return tuple(torch.randn(size, device=device) for _ in range(n))
    return make


def _matrix(device: str, quick: bool) -> tuple:
    return (torch.randn(*_rows(device, quick), device=device),)


def _layer_norm_inputs(device: str, quick: bool) -> tuple:
    rows, cols = _rows(device, quick)
    return (torch.randn(rows, cols, device=device), torch.randn(cols, device=device),
            torch.randn(cols, device=device))


def _mlp_inputs(requires_grad: bool) -> Callable[[str, bool], tuple]:
    def make(device: str, quick: bool) -> tuple:
        batch, dim, hidden = (256, 512, 1024) if quick or device == "cpu" else (4096, 1024, 4096)
        x = torch.randn(batch, dim, device=device)
        params = [torch.randn(hidden, dim, device=device) / math.sqrt(dim), torch.zeros(hidden, device=device),
                  torch.randn(dim, hidden, device=device) / math.sqrt(hidden), torch.zeros(dim, device=device)]
        return (x, *(p.requires_grad_(requires_grad) for p in params))
    return make


def _block_inputs(device: str, quick: bool) -> tuple:
    batch, seq, dim = (2, 128, 256) if quick or device == "cpu" else (8, 512, 512)
    w = lambda *s: torch.randn(*s, device=device) / math.sqrt(s[0])  # noqa: E731
    return (torch.randn(batch, seq, dim, device=device), torch.ones(dim, device=device),
            torch.zeros(dim, device=device), w(dim, 3 * dim), w(dim, dim), torch.ones(dim, device=device),
            torch.zeros(dim, device=device), w(dim, 4 * dim), w(4 * dim, dim))


WORKLOADS = [
    Workload("sin_cos", sin_cos, _vectors(2), True, describe="sin(x) + cos(y)"),
    Workload("gelu_tanh", gelu_tanh, _vectors(1), True, describe="tanh-approximated GELU"),
    Workload("chain8", chain8, _vectors(2), True, describe="8 pointwise ops"),
    Workload("softmax", softmax, _matrix, True, describe="softmax over rows"),
    Workload("layer_norm", layer_norm, _layer_norm_inputs, True, describe="layer_norm over rows"),
    Workload("row_sum", row_sum, _matrix, True, describe="sum over rows"),
    Workload("mlp", mlp, _mlp_inputs(False), False, describe="2-layer MLP (ReLU)"),
    Workload("transformer_block", transformer_block, _block_inputs, False, describe="pre-norm attention + MLP"),
    Workload("mlp_train_step", mlp_loss, _mlp_inputs(True), False, training=True,
             describe="MLP forward + backward"),
]

COMPILE_WORKLOAD = Workload("ten_ops", ten_ops, _vectors(2), True, describe="10 pointwise ops")


def by_name(name: str) -> Workload:
    for w in (*WORKLOADS, COMPILE_WORKLOAD):
        if w.name == name:
            return w
    raise KeyError(name)


def ideal_bytes(inputs: tuple, outputs: object) -> int:
    """Bytes an ideal kernel moves: every input read once, every output written once."""
    outs = outputs if isinstance(outputs, (tuple, list)) else (outputs,)
    tensors = [t for t in (*inputs, *outs) if isinstance(t, torch.Tensor)]
    return sum(t.numel() * t.element_size() for t in tensors)
