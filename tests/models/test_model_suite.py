"""Real models, compiled whole: torchvision's ResNet-18, MobileNetV3-small and a small ViT, and a GPT.

Each model runs in eval (``no_grad``) and in one training step (forward, loss, backward, SGD step),
on ``cpp`` and on ``triton`` (Triton's CPU interpreter here, real kernels on a GPU), and must:

- give eager's outputs, loss, gradients, updated parameters and updated buffers (BatchNorm's running
  statistics change in a training forward: an input mutation the compiled graph has to perform too);
- split into as many graphs, with as many graph breaks, as real ``torch.compile`` does on the same
  model, counted in the test with a backend that only counts (``torch._dynamo.testing.CompileCounter``);
- run nothing eagerly: no graph handed back to eager by a backend, no frame left uncompiled
  (``toycompiler.testing.fallback_reasons``, the check behind ``assert_same`` and ``explain()``).

The models are the ecosystem's own code (``torchvision.models``), not copies; the GPT is written in
nanoGPT's shape in ``toycompiler.bench.models``, which times the same models. Inputs are tiny so that
Triton's interpreter finishes in seconds.

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

import pytest
import torch
from torch._dynamo.testing import CompileCounter
from torch._dynamo.utils import counters

import toycompiler
from toycompiler.artifacts import Report
from toycompiler.testing import assert_close_tree, device_for, fallback_reasons

torchvision = pytest.importorskip("torchvision")
from toycompiler.bench.models import MODEL_NAMES, forward_loss, inputs_for, make_model  # noqa: E402

OUT_TOL = dict(rtol=2e-3, atol=2e-3)
GRAD_TOL = dict(rtol=5e-3, atol=5e-3)


# The models, their inputs and the loss are toycompiler.bench.models's (the model benchmark times the
# same models); here they run at the tests' tiny size.
MODELS = {name: (lambda name=name: make_model(name, "test")) for name in MODEL_NAMES}


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


def check_model(name: str, backend: str, train: bool, batch: int | None = None) -> None:
    # cuDNN convolves in TF32 by default on a GPU (10 mantissa bits): its rounding differs with the algorithm
    # it picks for each call, and BatchNorm over a few values per channel magnifies that far past the
    # tolerances. Both sides call the same extern convolution, so full float32 tests the compiler, not cuDNN.
    with torch.backends.cudnn.flags(enabled=True, allow_tf32=False):
        _check_model(name, backend, train, batch)


def _check_model(name: str, backend: str, train: bool, batch: int | None) -> None:
    torch.manual_seed(0)
    device = device_for(backend)
    eager = MODELS[name]().to(device).train(train)
    toy = copy.deepcopy(eager)
    inputs, targets = inputs_for(name, device)
    batch = batch or (None if train else 2)  # eval: 2 samples are enough, and the interpreter is slow
    if batch is not None:
        inputs, targets = tuple(t[:batch] for t in inputs), targets[:batch]
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
CASES = [(name, "cpp", "eval") for name in MODELS]
CASES += [("resnet18", "cpp", "train"),
          ("mobilenet_v3_small", "cpp", "train"), ("vit", "cpp", "train"),
          ("gpt", "cpp", "train")]
CASES += [(name, "triton", "eval") for name in MODELS]
CASES += [pytest.param("gpt", "triton", "train"), pytest.param("vit", "triton", "train"),
          pytest.param("resnet18", "triton", "train", marks=pytest.mark.slow),
          pytest.param("mobilenet_v3_small", "triton", "train", marks=pytest.mark.slow)]


@pytest.mark.parametrize("name,backend,mode", CASES)
def test_model_matches_eager_with_torch_compiles_graphs_and_no_fallback(name, backend, mode):
    check_model(name, backend, train=(mode == "train"))


@pytest.mark.parametrize("backend", ["cpp", "triton"])
def test_gpt_training_step_with_a_batch_of_one(backend):
    """With one sequence, eager's attention reads k and v as views of the qkv projection (a size-1 batch
    lets the reshape be a view) where the compiled forward computes them into buffers of their own; the
    backward was traced for the views' strides and read the saved buffers out of bounds."""
    check_model("gpt", backend, train=True, batch=1)
