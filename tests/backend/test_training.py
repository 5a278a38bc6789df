"""Training: inputs that require grad go through AOTAutograd; both graphs become kernels."""

import pytest
import torch

import toycompiler
from toycompiler.testing import assert_same, device_for


def sin_mul(x, y):
    return x.sin() * y


def chain(x, y):
    a = x * y + 1.5
    return torch.exp(-torch.relu(a - y)) * torch.tanh(a)


@pytest.mark.parametrize("backend", ["cpp", "triton"])
@pytest.mark.parametrize("fn", [sin_mul, chain], ids=lambda f: f.__name__)
def test_gradients_match_eager(backend, fn):
    device = device_for(backend)  # C++ kernels take CPU tensors, also on a machine with a GPU
    x = torch.randn(300, device=device, requires_grad=True)
    y = torch.randn(300, device=device, requires_grad=True)
    assert_same(fn, x, y, backend=backend, backward=True)  # output, gradients, and no graph ran eagerly


def test_forward_and_backward_graphs_are_both_compiled_and_reported():
    x, y = torch.randn(64, requires_grad=True), torch.randn(64)
    report = toycompiler.explain(sin_mul, backend="cpp")(x, y)
    forward = report.frames[0].backend
    assert forward.fallback_reason is None and forward.kernels
    backward = forward.backward
    assert backward is not None and backward.fallback_reason is None and backward.kernels
    assert "cos" in backward.kernels[0].source  # d/dx sin(x) * y = cos(x) * y
    assert set(report.kernels) == {*forward.kernels, *backward.kernels}
    assert "== backward graph (AOTAutograd)" in str(report)


def test_input_without_grad_gets_none_and_others_match():
    x, y = torch.randn(40, requires_grad=True), torch.randn(40)  # y needs no gradient
    assert_same(chain, x, y, backend="cpp", backward=True)
    assert x.grad is not None and y.grad is None


def test_no_grad_mode_compiles_inference_only():
    x, y = torch.randn(16, requires_grad=True), torch.randn(16)
    with torch.no_grad():
        report = toycompiler.explain(sin_mul, backend="cpp")(x, y)
    assert report.frames[0].backend.backward is None and not report.fallback_reasons


def mlp_step(x, w1, w2):
    return (torch.relu(x @ w1) @ w2).sum()


def test_training_step_of_an_mlp_matches_eager():
    torch.manual_seed(0)
    x = torch.randn(8, 16)
    w1, w2 = torch.randn(16, 32, requires_grad=True), torch.randn(32, 4, requires_grad=True)
    assert_same(mlp_step, x, w1, w2, backend="cpp", backward=True, rtol=1e-4, atol=1e-4)
    backend = toycompiler.explain(mlp_step, backend="cpp")(x, w1, w2).frames[0].backend
    assert backend.kernels and backend.backward.kernels


def test_training_with_a_dynamic_batch_falls_back_with_its_reason():
    """The guards of a ``mark_dynamic`` input admit any batch size, but AOTAutograd traced the example's:
    kernels fixed to batch 5 once crashed on batch 7 in the backward (a matmul of 16x5 and 7x8). The
    graph now runs eagerly, for every size, and says why."""
    from toycompiler.testing import fallback_reasons

    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.GELU(), torch.nn.Linear(16, 3))
    compiled = toycompiler.compile(model, backend="cpp")
    for n in (5, 7):
        x = torch.randn(n, 8)
        torch._dynamo.mark_dynamic(x, 0)
        compiled(x).sum().backward()
        got = [p.grad.clone() for p in model.parameters()]
        model.zero_grad()
        model(x).sum().backward()
        for g, p in zip(got, model.parameters()):
            torch.testing.assert_close(g, p.grad)
        model.zero_grad()
    assert any("training with symbolic sizes" in r for r in fallback_reasons(compiled)), fallback_reasons(compiled)


@pytest.mark.parametrize("backend, dtype", [("cpp", torch.float32), ("triton", torch.float32),
                                            ("triton", torch.bfloat16)])  # the C++ backend has no bfloat16
def test_embedding_gradient_adds_each_row_into_its_index(backend, dtype):
    """An embedding's weight gradient: repeated indices add up, the padding index gets none, and half
    precision sums in float32 as eager does. On a GPU it is one ``index_add`` library call, not torch's
    ``index_put`` with ``accumulate`` (which sorts the indices first); on a CPU, and with deterministic
    algorithms on, torch's own kernel."""
    device = device_for(backend)
    # quarters, whose products with the scale bfloat16 holds exactly (and float32 sums exactly): eager rounds each
    # product to bfloat16 before summing and the kernel does not, which put random values past the tolerance 1 run
    # in 20
    w = (torch.randint(-8, 8, (10, 6), device=device) / 4).to(dtype).requires_grad_()
    idx = torch.tensor([[1, 3, 3, 0], [9, 3, 1, 2]], device=device)  # 3 three times; 0 is the padding
    scale = torch.arange(6, device=device)
    fn = lambda w, i: (torch.nn.functional.embedding(i, w, padding_idx=0) * scale).sum()  # noqa: E731
    tol = 1e-2 if dtype == torch.bfloat16 else 1e-5
    assert_same(fn, w, idx, backend=backend, backward=True, rtol=tol, atol=tol)
    backward = toycompiler.explain(fn, backend=backend)(w, idx).frames[0].backend.backward
    op = "embedding_dense_backward" if device == "cpu" else "index_add"  # (on a CPU torch's own kernel)
    assert op in backward.output_code.source and "index_put" not in backward.output_code.source
    torch.use_deterministic_algorithms(True)
    try:
        backward = toycompiler.explain(fn, backend=backend)(w, idx).frames[0].backend.backward
        assert "index_add" not in backward.output_code.source
    finally:
        torch.use_deterministic_algorithms(False)


@pytest.mark.parametrize("backend", ["cpp", "triton"])
def test_a_cast_is_read_from_its_source_where_it_is_used(backend):
    """``w.double()`` is not stored: each reader loads ``w`` and converts it. Stored, it was a kernel of its own
    (a [40] vector, another iteration space than x's), and the product read it back."""
    dev = device_for(backend)
    dtype = torch.float64 if backend == "cpp" else torch.float32
    fn = lambda x, w: x.to(dtype) * w.to(dtype) + 1  # noqa: E731
    args = torch.randn(30, 40, device=dev).to(torch.float16 if backend == "triton" else torch.float32), \
        torch.randn(40, device=dev).to(torch.float16 if backend == "triton" else torch.float32)
    assert_same(fn, *args, backend=backend)
    assert len(toycompiler.explain(fn, backend=backend)(*args).frames[0].backend.kernels) == 1


def test_a_bfloat16_layer_norm_backward_is_a_row_and_a_column_kernel():
    """A bfloat16 layer norm's backward computes in float32: ``x``, ``w`` and the incoming gradient are cast up.
    The casts are recomputed where they are read, and the column sums of the weight and bias gradients take
    their order from ``g`` and ``x``, not from each row's mean and rstd (``ir.streamed``): one kernel for the
    input's gradient, row by row, one for the two column sums. Five kernels before, two of them storing a
    float32 copy of the gradient and of the normalised ``x``; 0.48x torch.compile on an H200, 0.85x after."""
    dev = device_for("triton")
    fn = lambda x, w, b: torch.nn.functional.layer_norm(x, (32,), w, b)  # noqa: E731
    args = [torch.randn(*s, device=dev, dtype=torch.bfloat16, requires_grad=True) for s in ((16, 32), (32,), (32,))]
    assert_same(fn, *args, backend="triton", rtol=2e-2, atol=5e-2, backward=True)  # sums of 16 rounded to bfloat16
    compiled = toycompiler.compile(fn, backend="triton")
    out = compiled(*args)
    out.backward(torch.ones_like(out))
    backward = compiled.compiled_frames[0].backend.backward
    assert len(backward.kernels) == 2, backward.output_code.source
    assert "torch.float32" not in backward.output_code.source  # no float32 copy of anything
