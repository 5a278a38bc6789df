"""Real models, compiled whole: torchvision's ResNet-18, MobileNetV3-small and a small ViT, and a GPT.

Each model runs in eval (``no_grad``) and in one training step (forward, loss, backward, SGD step),
on ``cpp`` and on ``triton`` (Triton's CPU interpreter here, real kernels on a GPU), and must:

- give eager's outputs, loss, gradients, updated parameters and updated buffers (BatchNorm's running
  statistics change in a training forward: an input mutation the compiled graph has to perform too);
- split into as many graphs, with as many graph breaks, as real ``torch.compile`` does on the same
  model, counted in the test with a backend that only counts (``torch._dynamo.testing.CompileCounter``);
- run nothing eagerly: no graph handed back to eager by a backend, no frame left uncompiled
  (``toycompiler.testing.fallback_reasons``, the check behind ``assert_same`` and ``explain()``).

The models are the ecosystem's own code (``torchvision.models``), not copies; the GPT is written here in
nanoGPT's shape. Inputs are tiny so that Triton's interpreter finishes in seconds.

Tolerances. Compiled kernels sum in another order than ATen (a reduction split over lanes or tiles,
BatchNorm's mean and variance in one pass or two), so each reduction differs from eager by a few float32
ulps (~1e-7 relative). Through tens of layers, and BatchNorm in training mode dividing by a standard
deviation taken over only a few values per channel, these differences grow to ~1e-5..1e-4 relative in
the logits and more in some gradients (a gradient that is a small difference of large terms). A real bug
(a wrong index, a missing term, a stale buffer) gives errors of order one, so ``2e-3`` relative and
absolute for outputs and ``5e-3`` for gradients separate the two with room on both sides.
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch._dynamo.testing import CompileCounter
from torch._dynamo.utils import counters

import toycompiler
from toycompiler.artifacts import Report
from toycompiler.testing import assert_close_tree, device_for, fallback_reasons

torchvision = pytest.importorskip("torchvision")

OUT_TOL = dict(rtol=2e-3, atol=2e-3)
GRAD_TOL = dict(rtol=5e-3, atol=5e-3)


# -- the GPT, in nanoGPT's shape -----------------------------------------------------------


@dataclass
class GPTConfig:
    block_size: int = 8  # longest sequence
    vocab_size: int = 32
    n_layer: int = 2
    n_head: int = 2
    n_embd: int = 16


class CausalSelfAttention(nn.Module):
    def __init__(self, config: GPTConfig):
        super().__init__()
        self.n_head, self.n_embd = config.n_head, config.n_embd
        self.c_attn = nn.Linear(config.n_embd, 3 * config.n_embd)
        self.c_proj = nn.Linear(config.n_embd, config.n_embd)

    def forward(self, x):
        B, T, C = x.size()  # batch, time, channels
        q, k, v = self.c_attn(x).split(self.n_embd, dim=2)
        q, k, v = (t.view(B, T, self.n_head, C // self.n_head).transpose(1, 2) for t in (q, k, v))  # B, nh, T, hs
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        y = y.transpose(1, 2).contiguous().view(B, T, C)
        return self.c_proj(y)


class MLP(nn.Module):
    def __init__(self, config: GPTConfig):
        super().__init__()
        self.c_fc = nn.Linear(config.n_embd, 4 * config.n_embd)
        self.gelu = nn.GELU()
        self.c_proj = nn.Linear(4 * config.n_embd, config.n_embd)

    def forward(self, x):
        return self.c_proj(self.gelu(self.c_fc(x)))


class Block(nn.Module):
    def __init__(self, config: GPTConfig):
        super().__init__()
        self.ln_1, self.attn = nn.LayerNorm(config.n_embd), CausalSelfAttention(config)
        self.ln_2, self.mlp = nn.LayerNorm(config.n_embd), MLP(config)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class GPT(nn.Module):
    def __init__(self, config: GPTConfig):
        super().__init__()
        self.config = config
        self.transformer = nn.ModuleDict(dict(
            wte=nn.Embedding(config.vocab_size, config.n_embd),
            wpe=nn.Embedding(config.block_size, config.n_embd),
            h=nn.ModuleList([Block(config) for _ in range(config.n_layer)]),
            ln_f=nn.LayerNorm(config.n_embd),
        ))
        self.lm_head = nn.Linear(config.n_embd, config.vocab_size, bias=False)
        self.transformer.wte.weight = self.lm_head.weight  # weight tying
        for name, p in self.named_parameters():
            if name.endswith("c_proj.weight"):  # nanoGPT's scaled init of the residual projections
                nn.init.normal_(p, mean=0.0, std=0.02 / math.sqrt(2 * config.n_layer))

    def forward(self, idx, targets=None):
        b, t = idx.size()
        pos = torch.arange(0, t, dtype=torch.long, device=idx.device)  # (t,)
        x = self.transformer.wte(idx) + self.transformer.wpe(pos)  # (b, t, n_embd)
        for block in self.transformer.h:
            x = block(x)
        logits = self.lm_head(self.transformer.ln_f(x))  # (b, t, vocab_size)
        if targets is None:
            return logits, None
        loss = F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1), ignore_index=-1)
        return logits, loss


# -- the models and their inputs -------------------------------------------------------------


def make_resnet18():
    return torchvision.models.resnet18(weights=None, num_classes=10)


def make_mobilenet_v3_small():
    return torchvision.models.mobilenet_v3_small(weights=None, num_classes=10)


def make_vit():
    from torchvision.models.vision_transformer import VisionTransformer

    return VisionTransformer(image_size=32, patch_size=16, num_layers=2, num_heads=2, hidden_dim=32,
                             mlp_dim=64, num_classes=10)


def make_gpt():
    return GPT(GPTConfig())


MODELS = {"resnet18": make_resnet18, "mobilenet_v3_small": make_mobilenet_v3_small, "vit": make_vit,
          "gpt": make_gpt}


def inputs_for(name: str, device: str) -> tuple[tuple, torch.Tensor]:
    """(model inputs, targets). A batch of 2: BatchNorm in training mode needs more than one value per
    channel, and ResNet-18 brings a 32x32 image down to 1x1 before its last BatchNorm."""
    g = torch.Generator().manual_seed(1)
    if name == "gpt":
        idx = torch.randint(0, GPTConfig.vocab_size, (2, GPTConfig.block_size), generator=g)
        targets = torch.randint(0, GPTConfig.vocab_size, (2, GPTConfig.block_size), generator=g)
        return (idx.to(device),), targets.to(device)
    return (torch.randn(2, 3, 32, 32, generator=g).to(device),), torch.tensor([3, 7], device=device)


def forward_loss(name: str, model, inputs, targets):
    """(output, loss): the GPT computes its loss inside forward (so it is compiled too); the vision
    models return logits and the loss is taken eagerly, as a training script does."""
    if name == "gpt":
        return model(*inputs, targets)
    logits = model(*inputs)
    return logits, None if targets is None else F.cross_entropy(logits, targets)


# -- the checks -------------------------------------------------------------------------------


def torch_compile_counts(name: str, model, inputs, targets, train: bool) -> tuple[int, int]:
    """(graphs, graph breaks) of real torch.compile on a copy of the model, with a counting backend."""
    torch._dynamo.reset()
    counters.clear()
    counter = CompileCounter()
    compiled = torch.compile(copy.deepcopy(model), backend=counter)
    if train:
        forward_loss(name, compiled, inputs, targets)
    else:
        with torch.no_grad():
            forward_loss(name, compiled, inputs, None)
    breaks = sum(counters["graph_break"].values())
    torch._dynamo.reset()
    return counter.frame_count, breaks


def check_model(name: str, backend: str, train: bool) -> None:
    torch.manual_seed(0)
    device = device_for(backend)
    eager = MODELS[name]().to(device).train(train)
    toy = copy.deepcopy(eager)
    inputs, targets = inputs_for(name, device)
    graphs, breaks = torch_compile_counts(name, eager, inputs, targets, train)

    compiled = toycompiler.compile(toy, backend=backend)
    if train:  # the same seed before each run: Dropout draws eager's mask (passes/decompose.py)
        torch.manual_seed(1)
        out, loss = forward_loss(name, compiled, inputs, targets)
        torch.manual_seed(1)
        expected_out, expected_loss = forward_loss(name, eager, inputs, targets)
    else:
        with torch.no_grad():
            out, loss = forward_loss(name, compiled, inputs, None)
            expected_out, expected_loss = forward_loss(name, eager, inputs, None)

    assert not fallback_reasons(compiled), f"ran eagerly: {fallback_reasons(compiled)}"
    report = Report(tuple(compiled._compiled_forward.compiled_frames))  # what explain() reports
    assert (report.graph_count, report.graph_break_count) == (graphs, breaks), \
        f"toycompiler: {report.graph_count} graphs, {report.graph_break_count} breaks " \
        f"{[str(b) for b in report.breaks]}; torch.compile: {graphs} graphs, {breaks} breaks"
    assert_close_tree(out, expected_out, **OUT_TOL)
    assert_close_tree(loss, expected_loss, **OUT_TOL)
    assert_close_tree(dict(toy.named_buffers()), dict(eager.named_buffers()), **OUT_TOL)  # BN running stats
    if not train:
        return
    for model, lossv in ((toy, loss), (eager, expected_loss)):
        lossv.backward()
    assert not fallback_reasons(compiled), f"backward ran eagerly: {fallback_reasons(compiled)}"
    grads = {n: p.grad for n, p in toy.named_parameters()}
    assert all(g is not None for g in grads.values()), [n for n, g in grads.items() if g is None]
    assert_close_tree(grads, {n: p.grad for n, p in eager.named_parameters()}, **GRAD_TOL)
    for model in (toy, eager):
        torch.optim.SGD(model.parameters(), lr=0.1).step()
    assert_close_tree(dict(toy.named_parameters()), dict(eager.named_parameters()), **GRAD_TOL)


# The C++ backend runs every model in both modes; Triton's interpreter is slow on CPU, so the largest
# models' training steps on Triton are marked slow (they still run in `make test`).
DROPOUT = pytest.mark.xfail(torch.cuda.is_available(), strict=True,
                            reason="Dropout(p=0.2) in training on CUDA: eager's fused dropout kernel draws its mask "
                                   "in its own order; the compiled graph draws ATen's CPU way (bernoulli), so the "
                                   "masks differ (on the CPU they are the same)")
ILL_CONDITIONED = pytest.mark.xfail(strict=True, reason="gradients beyond GRAD_TOL: training BatchNorm over 2 values "
                                    "at layer4's 1x1 spatial size amplifies rounding (eager float32 itself is 1.4 "
                                    "off float64 on conv1.weight's grad; compiled is 7.5 off eager)")
CASES = [(name, "cpp", "eval") for name in MODELS]
CASES += [pytest.param("resnet18", "cpp", "train", marks=ILL_CONDITIONED),
          pytest.param("mobilenet_v3_small", "cpp", "train", marks=DROPOUT), ("vit", "cpp", "train"),
          ("gpt", "cpp", "train")]
CASES += [(name, "triton", "eval") for name in MODELS]
CASES += [pytest.param("gpt", "triton", "train"), pytest.param("vit", "triton", "train"),
          pytest.param("resnet18", "triton", "train", marks=[pytest.mark.slow, ILL_CONDITIONED]),
          pytest.param("mobilenet_v3_small", "triton", "train", marks=[pytest.mark.slow, DROPOUT])]


@pytest.mark.parametrize("name,backend,mode", CASES)
def test_model_matches_eager_with_torch_compiles_graphs_and_no_fallback(name, backend, mode):
    check_model(name, backend, train=(mode == "train"))
