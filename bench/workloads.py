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


def gelu_builtin(x):
    """The same function through the built-in op: eager runs it as one kernel (the honest eager baseline)."""
    return F.gelu(x, approximate="tanh")


def gelu_cube(x):
    """tanh-GELU as a learner writes it, with ``x ** 3``."""
    return 0.5 * x * (1.0 + torch.tanh(0.7978845608028654 * (x + 0.044715 * x**3)))


def silu_mul(x, y):
    """The gate of a SwiGLU MLP (LLaMA's): ``silu(x) * y``, two inputs, one output."""
    return F.silu(x) * y


def transcendental_chain(x, y):
    """sigmoid, abs, pow (constant and tensor exponents), erf, where: one of each vector path."""
    a = torch.sigmoid(x * y) - torch.abs(y) ** 1.5
    return torch.where(a > 0, torch.erf(a) * x**3, torch.rsqrt(torch.abs(a) + 1.0) ** y)


def triangle_wave(x):
    """A triangle wave of period 2, through Python's %: a float remainder (C's fmod, then the divisor added where
    the signs differ), whose C++ vector path is SLEEF's fmod. (Continuous where the remainder jumps, so a rounding
    apart in ``x * 10 + 1`` stays a rounding apart: an angle wrapped to [-pi, pi) by % jumps by 2 pi there.)"""
    return ((x * 10 + 1) % 2 - 1).abs()


def chain8(x, y):
    a = x * y
    b = a + 1.5
    c = torch.sigmoid(b)
    d = c - y
    e = torch.abs(d)
    f = torch.sqrt(e + 1.0)
    g = f * x
    return torch.exp(-g)


def rotary_cat(x, cos, sin):
    """A rotary position embedding as LLaMA-style code writes it: the rotated half by ``torch.cat``."""
    half = x.shape[-1] // 2
    return x * cos + torch.cat((-x[..., half:], x[..., :half]), -1) * sin


def stack_boxes(boxes):
    """Boxes from centre and size to corners: a ``torch.stack`` of four values along a new last dim."""
    cx, cy, w, h = boxes.unbind(-1)
    return torch.stack((cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2), -1)


def heads_merge(y, r):
    """Attention's heads merged back and a residual added: [B, H, T, D] to [B, T, H * D], a transposing reshape."""
    b, h, t, d = y.shape
    return r + y.transpose(1, 2).reshape(b, t, h * d)


def heads_split(x):
    """Queries scaled and split into 12 heads: [B, T, C] to a contiguous [B, 12, T, C / 12]."""
    b, t, c = x.shape
    return (x * 0.125).view(b, t, 12, c // 12).transpose(1, 2).contiguous()


def ten_ops(x, y):
    """The 10-op function whose cold compile time is a target."""
    a = torch.sin(x) * y + 1.5
    b = torch.relu(a - y) / (torch.abs(x) + 1)
    return torch.exp(-b) * torch.tanh(a) - torch.cos(y)


# -- reductions -------------------------------------------------------------------------


def softmax(x):
    return torch.softmax(x, dim=-1)


def amax_rows(x):
    return x.amax(-1)


def var_rows(x):
    return x.var(-1)


def log_softmax(x):
    return torch.log_softmax(x, dim=-1)


def layer_norm(x, w, b):
    return F.layer_norm(x, (x.shape[-1],), w, b)


def row_sum(x):
    return x.sum(dim=-1)


def max_dim(x):
    """The largest value of each row and its index: ``torch.max`` is eager's built-in op for both."""
    return torch.max(x, dim=-1)


def masked_softmax(x, mask):
    """Attention's softmax under a causal mask: about half the scores become -inf, and their exp 0. A C++
    kernel on glibc's vector exp computed every vector holding a -inf lane one lane at a time."""
    return x.masked_fill(~mask, float("-inf")).softmax(-1)


def softmax_manual(x):
    """softmax written with amax/exp/sum (the built-in is ``softmax``)."""
    e = torch.exp(x - x.amax(-1, keepdim=True))
    return e / e.sum(-1, keepdim=True)


def col_sum(x):
    """A reduction along the non-contiguous axis: a column sum."""
    return x.sum(dim=0)


def mean_023(x):
    """Several reduced axes: the per-channel mean of an NCHW activation."""
    return x.mean((0, 2, 3))


def batch_norm_stats(x):
    """Batch-norm statistics then normalise: mean and variance over N, H, W of NCHW."""
    mean = x.mean((0, 2, 3), keepdim=True)
    var = x.var((0, 2, 3), keepdim=True, unbiased=False)
    return (x - mean) * torch.rsqrt(var + 1e-5)


def softmax_channels(x):
    """A softmax over the channels of NCHW (a segmentation head's): a reduction along a middle axis whose
    exp the normalising pass reads again."""
    return F.softmax(x, dim=1)


def sum_middle(x):
    """A sum over the middle axis of a 3-D tensor: rows of the kept last axis, one image at a time."""
    return x.sum(1)


def sum_w_channels_last(x):
    """A sum over W of a channels-last activation: memory runs along C, a kept axis but not the last kept one."""
    return x.sum(-1)


def embedding_position(idx, wte, wpe):
    """GPT-2's input: token embeddings looked up by index, plus position embeddings (``F.embedding`` is eager's
    built-in). Only the looked-up rows of the table are read, so no GB/s figure."""
    return F.embedding(idx, wte) + wpe


def upsample_bilinear(x):
    """A decoder's 2x bilinear upsampling of NCHW; torch decomposes it into four gathers and their blend."""
    return F.interpolate(x, scale_factor=2, mode="bilinear", align_corners=False)


def channels_last_affine(x, scale, shift):
    """A folded batch norm and ReLU on a channels-last activation: eager keeps the layout, so must a compiler
    (a row-major result would read the input with a stride of C, and hand back other strides)."""
    return torch.relu(x * scale[None, :, None, None] + shift[None, :, None, None])


def transpose_add(x, y):
    """A pointwise op on a transposed operand: whichever order the loop walks the result in, one of the two
    reads crosses the other's rows."""
    return x.t() + y


def cross_entropy(logits, target):
    """A language model's loss over GPT-2's vocabulary: rows of 50257 logits, longer than a kernel holds."""
    return F.cross_entropy(logits, target)


# -- models -------------------------------------------------------------------------------


def linear_gelu(x, w, b):
    """A narrow linear layer then GELU: the library matmul writes its output and a second kernel reads
    it back, unless the GELU is fused into a matmul template (``mode="max-autotune"``)."""
    return F.gelu(F.linear(x, w, b), approximate="tanh")


def linear_residual(x, w, b, r):
    """A linear layer with ReLU added to a residual stream: a cheap epilogue that reads a second
    [tokens, out] tensor, so fusing it into the matmul saves two full passes over memory."""
    return r + F.relu(F.linear(x, w, b))


def mlp(x, w1, b1, w2, b2):
    return F.linear(F.relu(F.linear(x, w1, b1)), w2, b2)


def mlp_loss(x, w1, b1, w2, b2):
    out = F.linear(F.relu(F.linear(x, w1, b1)), w2, b2)  # mlp(), written out: one frame to trace
    return (out**2).mean()


def norm_gelu_loss(x, w, b):
    """A layer norm and GELU, trained: the backward's weight gradients are column sums of GELU's derivative."""
    return F.gelu(F.layer_norm(x, x.shape[-1:], w, b)).square().mean()


def bn_relu_loss(x, w, b):
    """Batch norm (batch statistics) and ReLU, trained: the backward selects the gradient where the ReLU passed."""
    return F.relu(F.batch_norm(x, None, None, w, b, training=True)).square().mean()


def group_norm_silu_loss(x, w, b):
    """Group norm (8 groups) and SiLU, trained, as in a diffusion model's blocks: the backward sums the gradient
    over each channel's pixels, then over each group's channels."""
    return F.silu(F.group_norm(x, 8, w, b)).square().mean()


def rms_norm_loss(x, w):
    """LLaMA's RMS norm, written out, trained: the weight's gradient is a column sum, the input's a row sum."""
    return (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * w).square().mean()


def embedding_loss(idx, wte, wpe):
    """GPT-2's embeddings, trained: the table's gradient adds each token's row into the row its id names."""
    return (F.embedding(idx, wte) + wpe).square().mean()


def avg_pool_loss(x):
    """A 2x2 average pool, trained: its input gradient spreads each window's gradient over the window."""
    return F.avg_pool2d(x, 2).square().mean()


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


def block_loss(*inputs):
    return transformer_block(*inputs).square().mean()


# -- inputs -------------------------------------------------------------------------------


def _numel(device: str, quick: bool) -> int:
    if device == "cuda":
        return 1 << (22 if quick else 24)
    return 1 << (18 if quick else 22)


def _rows(device: str, quick: bool) -> tuple[int, int]:
    if device == "cuda":  # 128 MB in float32, as the pointwise workloads move: the size where a reduction's
        # launch and last wave are a small share. At 32 MB, row sums of both compilers took 18% longer
        # than a copy of the same bytes, at 128 MB 5% longer, at 512 MB as long (H100)
        return (2048, 1024) if quick else (32768, 1024)
    return (256, 1024) if quick else (1024, 1024)


def _vectors(n: int) -> Callable[[str, bool], tuple]:
    def make(device: str, quick: bool) -> tuple:
        size = _numel(device, quick)
        return tuple(torch.randn(size, device=device) for _ in range(n))
    return make


def _rotary(device: str, quick: bool) -> tuple:
    """Queries of ``_numel`` floats as [batch * heads, 512 positions, 64 per head], and cos and sin per position."""
    t, d = 512, 64
    return (torch.randn(_numel(device, quick) // (t * d), t, d, device=device), torch.randn(t, d, device=device),
            torch.randn(t, d, device=device))


def _heads(device: str, quick: bool) -> tuple:
    """Attention's output of ``_numel`` floats as [B, 12 heads, 512 positions, 64], and a residual [B, 512, 768]."""
    b = max(1, _numel(device, quick) // (12 * 512 * 64))
    return torch.randn(b, 12, 512, 64, device=device), torch.randn(b, 512, 768, device=device)


def _boxes(device: str, quick: bool) -> tuple:
    return (torch.randn(_numel(device, quick) // 4, 4, device=device),)


def _matrix(device: str, quick: bool) -> tuple:
    return (torch.randn(*_rows(device, quick), device=device),)


def _short_rows(width: int) -> Callable[[str, bool], tuple]:
    """The elements of ``_matrix`` in rows of ``width``: a row reduction whose end of row comes often."""
    def make(device: str, quick: bool) -> tuple:
        rows, cols = _rows(device, quick)
        return (torch.randn(rows * cols // width, width, device=device),)
    return make


def _causal(device: str, quick: bool) -> tuple:
    """A matrix of scores and a causal mask (True on and below the diagonal), as attention's."""
    (x,) = _matrix(device, quick)
    return x, torch.ones(x.shape, dtype=torch.bool, device=device).tril()


def _layer_norm_inputs(device: str, quick: bool) -> tuple:
    rows, cols = _rows(device, quick)
    return (torch.randn(rows, cols, device=device), torch.randn(cols, device=device),
            torch.randn(cols, device=device))


def _odd_matrix(device: str, quick: bool) -> tuple:
    """Sizes that are not powers of two (odd tails everywhere)."""
    rows, cols = _rows(device, quick)
    return (torch.randn(rows - 3, cols + 13, device=device),)


def _nchw(device: str, quick: bool) -> tuple:
    shape = (128, 64, 56, 56) if device == "cuda" and not quick else (8, 48, 29, 29) if quick else (16, 64, 29, 29)
    return (torch.randn(*shape, device=device),)


def _channels_last(device: str, quick: bool) -> tuple:
    (x,) = _nchw(device, quick)
    c = x.shape[1]
    return x.to(memory_format=torch.channels_last), torch.randn(c, device=device), torch.randn(c, device=device)


def _middle(device: str, quick: bool) -> tuple:
    """[64, 512, 1000] floats (131 MB) on a GPU, [32, 512, 1000] (66 MB: more than this CPU's caches) on a CPU."""
    return (torch.randn(8 if quick else 64 if device == "cuda" else 32, 512, 1000, device=device),)


def _nhwc(device: str, quick: bool) -> tuple:
    return _channels_last(device, quick)[:1]


def _transposed_pair(device: str, quick: bool) -> tuple:
    """x.t() and y of [rows - 24, cols + 13] ([1000, 1037] on the CPU). Not _odd_matrix's [1021, 1037]: x's rows
    would be 4084 bytes apart, 12 short of 4 KiB, and on the development machine every contender then takes
    about 2.7 ms (eager, torch.compile and toycompiler alike, 1 thread), nine times as long as at [1000, 1037]:
    a cache effect of that stride, not a measure of the kernels."""
    rows, cols = _rows(device, quick)
    return torch.randn(cols + 13, rows - 24, device=device), torch.randn(rows - 24, cols + 13, device=device)


def _logits(device: str, quick: bool) -> tuple:
    rows = (4096 if device == "cuda" else 256) // (8 if quick else 1)  # 800 MB of float32 on a GPU
    return torch.randn(rows, 50257, device=device), torch.randint(0, 50257, (rows,), device=device)


def _tokens(device: str, quick: bool) -> tuple:
    batch, seq = (8, 1024) if device == "cuda" and not quick else (4, 256)
    vocab, dim = 50257 // (8 if quick else 1), 768
    return (torch.randint(0, vocab, (batch, seq), device=device), torch.randn(vocab, dim, device=device),
            torch.randn(seq, dim, device=device))


def _half(make: Callable, dtype: torch.dtype) -> Callable[[str, bool], tuple]:
    """The same inputs with the floating ones in ``dtype`` (cross entropy's targets stay int64)."""
    return lambda device, quick: tuple(t.to(dtype) if t.is_floating_point() else t for t in make(device, quick))


def _odd_vectors(n: int) -> Callable[[str, bool], tuple]:
    def make(device: str, quick: bool) -> tuple:
        size = _numel(device, quick) + 37
        return tuple(torch.randn(size, device=device) for _ in range(n))
    return make


def _mlp_inputs(requires_grad: bool) -> Callable[[str, bool], tuple]:
    def make(device: str, quick: bool) -> tuple:
        batch, dim, hidden = (256, 512, 1024) if quick or device == "cpu" else (4096, 1024, 4096)
        x = torch.randn(batch, dim, device=device)
        params = [torch.randn(hidden, dim, device=device) / math.sqrt(dim), torch.zeros(hidden, device=device),
                  torch.randn(dim, hidden, device=device) / math.sqrt(hidden), torch.zeros(dim, device=device)]
        return (x, *(p.requires_grad_(requires_grad) for p in params))
    return make


def _linear_inputs(device: str, quick: bool) -> tuple:
    tokens, dim, out = (2000, 96, 384) if quick or device == "cpu" else (50_000, 96, 384)
    return (torch.randn(tokens, dim, device=device), torch.randn(out, dim, device=device) / math.sqrt(dim),
            torch.randn(out, device=device))


def _residual_inputs(device: str, quick: bool) -> tuple:
    x, w, b = _linear_inputs(device, quick)
    return x, w, b, torch.randn(x.shape[0], w.shape[0], device=device)


def _block_inputs(device: str, quick: bool) -> tuple:
    batch, seq, dim = (2, 128, 256) if quick or device == "cpu" else (8, 512, 512)
    w = lambda *s: torch.randn(*s, device=device) / math.sqrt(s[0])  # noqa: E731
    return (torch.randn(batch, seq, dim, device=device), torch.ones(dim, device=device),
            torch.zeros(dim, device=device), w(dim, 3 * dim), w(dim, dim), torch.ones(dim, device=device),
            torch.zeros(dim, device=device), w(dim, 4 * dim), w(4 * dim, dim))


def _with_grad(make: Callable[[str, bool], tuple]) -> Callable[[str, bool], tuple]:
    """The same inputs, each float tensor requiring grad (a training step's)."""
    def inputs(device: str, quick: bool) -> tuple:
        return tuple(t.requires_grad_(True) if t.is_floating_point() else t for t in make(device, quick))
    return inputs


def _nchw_affine(device: str, quick: bool) -> tuple:
    (x,) = _nchw(device, quick)
    return x, torch.randn(x.shape[1], device=device), torch.randn(x.shape[1], device=device)


def _block_inputs_grad(device: str, quick: bool) -> tuple:
    x, *params = _block_inputs(device, quick)
    return (x, *(p.requires_grad_(True) for p in params))


WORKLOADS = [
    Workload("sin_cos", sin_cos, _vectors(2), True, describe="sin(x) + cos(y)"),
    Workload("gelu_tanh", gelu_builtin, _vectors(1), True, describe="F.gelu(approximate='tanh'), eager: one kernel"),
    Workload("gelu_tanh_formula", gelu_tanh, _vectors(1), True, describe="tanh-GELU written as 8 ops (x * x * x)"),
    Workload("gelu_cube", gelu_cube, _odd_vectors(1), True, describe="tanh-GELU written with x ** 3, odd size"),
    Workload("transcendental", transcendental_chain, _odd_vectors(2), True,
             describe="sigmoid/abs/pow/erf/rsqrt/where chain"),
    Workload("chain8", chain8, _vectors(2), True, describe="8 pointwise ops"),
    Workload("triangle_wave", triangle_wave, _odd_vectors(1), True, describe="|(10x + 1) % 2 - 1|, odd size"),
    Workload("rotary_cat", rotary_cat, _rotary, True, describe="rotary embedding, rotate-half by torch.cat"),
    Workload("stack_boxes", stack_boxes, _boxes, True, describe="torch.stack of 4 box corners along a new dim"),
    Workload("heads_merge", heads_merge, _heads, True, describe="r + y.transpose(1, 2).reshape(B, T, C)"),
    Workload("heads_split", heads_split, lambda device, quick: _heads(device, quick)[1:], True,
             describe="(x * 0.125).view(B, T, 12, 64).transpose(1, 2).contiguous()"),
    Workload("softmax", softmax, _matrix, True, describe="F.softmax over rows"),
    Workload("masked_softmax", masked_softmax, _causal, True, describe="softmax of scores with a causal -inf mask"),
    Workload("softmax_manual", softmax_manual, _odd_matrix, True, describe="softmax with amax/exp/sum, odd sizes"),
    Workload("softmax_rows_of_64", softmax, _short_rows(64), True, describe="F.softmax over rows of 64 (as 64 keys)"),
    Workload("amax_rows_of_20", amax_rows, _short_rows(20), True, describe="amax over rows of 20"),
    Workload("var_rows_of_20", var_rows, _short_rows(20), True, describe="var over rows of 20"),
    Workload("log_softmax_rows_of_20", log_softmax, _short_rows(20), True,
             describe="F.log_softmax over rows of 20 (as 20 classes)"),
    Workload("layer_norm", layer_norm, _layer_norm_inputs, True, describe="F.layer_norm over rows"),
    Workload("row_sum", row_sum, _matrix, True, describe="sum over rows"),
    Workload("max_dim", max_dim, _odd_matrix, True, describe="torch.max(x, -1): values and indices, odd sizes"),
    Workload("col_sum", col_sum, _odd_matrix, True, describe="sum over dim 0 (non-contiguous axis), odd sizes"),
    Workload("mean_023", mean_023, _nchw, True, describe="mean over N, H, W of NCHW"),
    Workload("batch_norm_stats", batch_norm_stats, _nchw, True, describe="batch-norm mean/var then normalise"),
    Workload("softmax_channels", softmax_channels, _nchw, True, describe="F.softmax over the channels of NCHW"),
    Workload("sum_middle", sum_middle, _middle, True, describe="sum over dim 1 of [N, 512, 1000]"),
    Workload("sum_w_channels_last", sum_w_channels_last, _nhwc, True, describe="sum over W of channels-last NCHW"),
    Workload("cross_entropy", cross_entropy, _logits, True, describe="F.cross_entropy over rows of 50257"),
    Workload("embedding_position", embedding_position, _tokens, False,
             describe="token embedding lookup plus position embedding"),
    Workload("upsample_bilinear", upsample_bilinear, _nchw, True, describe="2x bilinear upsampling of NCHW"),
    Workload("channels_last_affine", channels_last_affine, _channels_last, True,
             describe="relu(x * scale + shift) per channel, channels-last NCHW"),
    Workload("transpose_add", transpose_add, _transposed_pair, True, describe="x.t() + y, odd sizes"),
    Workload("linear_gelu", linear_gelu, _linear_inputs, False, describe="narrow F.linear then GELU, odd sizes"),
    Workload("linear_residual", linear_residual, _residual_inputs, False, describe="r + relu(F.linear(x)), odd sizes"),
    Workload("mlp", mlp, _mlp_inputs(False), False, describe="2-layer MLP (ReLU)"),
    Workload("transformer_block", transformer_block, _block_inputs, False, describe="pre-norm attention + MLP"),
    Workload("mlp_train_step", mlp_loss, _mlp_inputs(True), False, training=True,
             describe="MLP forward + backward"),
    Workload("block_train_step", block_loss, _block_inputs_grad, False, training=True,
             describe="GPT-2-style block forward + backward"),
    Workload("norm_gelu_train_step", norm_gelu_loss, _with_grad(_layer_norm_inputs), False, training=True,
             describe="layer norm + GELU forward + backward"),
    Workload("bn_relu_train_step", bn_relu_loss, _with_grad(_nchw_affine), False, training=True,
             describe="batch norm + ReLU forward + backward, NCHW"),
    Workload("group_norm_silu_train_step", group_norm_silu_loss, _with_grad(_nchw_affine), False, training=True,
             describe="group norm + SiLU forward + backward, NCHW"),
    Workload("rms_norm_train_step", rms_norm_loss, _with_grad(lambda d, q: _layer_norm_inputs(d, q)[:2]), False,
             training=True, describe="RMS norm (hand-written) forward + backward"),
    Workload("embedding_train_step", embedding_loss, _with_grad(_tokens), False, training=True,
             describe="token + position embeddings forward + backward"),
    Workload("avg_pool_train_step", avg_pool_loss, _with_grad(_nchw), False, training=True,
             describe="2x2 average pool forward + backward, NCHW"),
    Workload("cross_entropy_train_step", cross_entropy, _with_grad(_logits), False, training=True,
             describe="F.cross_entropy over rows of 50257, forward + backward"),
]
# half precision: computed in float32 and rounded where stored, by both backends
HALF_WORKLOADS = [
    Workload("gelu_cube_bf16", gelu_cube, _half(_odd_vectors(1), torch.bfloat16), True, describe="x ** 3 GELU, bf16"),
    Workload("softmax_fp16", softmax, _half(_matrix, torch.float16), True, describe="softmax over rows, fp16"),
    Workload("softmax_bf16", softmax, _half(_matrix, torch.bfloat16), True, describe="softmax over rows, bf16"),
    Workload("layer_norm_bf16", layer_norm, _half(_layer_norm_inputs, torch.bfloat16), True,
             describe="layer_norm over rows, bf16"),
    Workload("col_sum_fp16", col_sum, _half(_odd_matrix, torch.float16), True, describe="column sum, fp16"),
    Workload("silu_mul_bf16", silu_mul, _half(_odd_vectors(2), torch.bfloat16), True,
             describe="silu(x) * y (SwiGLU's gate), bf16, odd size"),
    Workload("cross_entropy_bf16", cross_entropy, _half(_logits, torch.bfloat16), True,
             describe="F.cross_entropy over rows of 50257, bf16"),
    Workload("linear_gelu_bf16", linear_gelu, _half(_linear_inputs, torch.bfloat16), False,
             describe="narrow F.linear then GELU, bf16"),
    Workload("linear_residual_bf16", linear_residual, _half(_residual_inputs, torch.bfloat16), False,
             describe="r + relu(F.linear(x)), bf16"),
]

COMPILE_WORKLOAD = Workload("ten_ops", ten_ops, _vectors(2), True, describe="10 pointwise ops")


def by_name(name: str) -> Workload:
    for w in (*WORKLOADS, *HALF_WORKLOADS, COMPILE_WORKLOAD):
        if w.name == name:
            return w
    raise KeyError(name)


def ideal_bytes(inputs: tuple, outputs: object) -> int:
    """Bytes an ideal kernel moves: every input read once, every output written once."""
    outs = outputs if isinstance(outputs, (tuple, list)) else (outputs,)
    tensors = [t for t in (*inputs, *outs) if isinstance(t, torch.Tensor)]
    return sum(t.numel() * t.element_size() for t in tensors)
