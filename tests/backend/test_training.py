"""Training: inputs that require grad go through AOTAutograd; both graphs become kernels."""

import pytest
import torch

import toycompiler

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


def sin_mul(x, y):
    return x.sin() * y


def chain(x, y):
    a = x * y + 1.5
    return torch.exp(-torch.relu(a - y)) * torch.tanh(a)


def grads(fn, x, y, backend=None):
    """Output and gradients of ``fn``, eagerly or compiled, on fresh leaf copies of x and y."""
    x, y = x.detach().clone().requires_grad_(x.requires_grad), y.detach().clone().requires_grad_(y.requires_grad)
    f = toycompiler.compile(fn, backend=backend) if backend else fn
    out = f(x, y)
    out.backward(torch.ones_like(out))
    return out.detach(), x.grad, y.grad


@pytest.mark.parametrize("backend", ["cpp", "triton"])
@pytest.mark.parametrize("fn", [sin_mul, chain], ids=lambda f: f.__name__)
def test_gradients_match_eager(backend, fn):
    if backend == "cpp" and DEVICE == "cuda":
        pytest.skip("C++ kernels take CPU tensors")
    device = DEVICE if backend == "triton" else "cpu"
    x = torch.randn(300, device=device, requires_grad=True)
    y = torch.randn(300, device=device, requires_grad=True)
    for got, want in zip(grads(fn, x, y, backend), grads(fn, x, y)):
        torch.testing.assert_close(got, want)


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
    out, gx, gy = grads(chain, x, y, "cpp")
    want_out, want_gx, _ = grads(chain, x, y)
    assert gy is None
    torch.testing.assert_close(out, want_out)
    torch.testing.assert_close(gx, want_gx)


def test_no_grad_mode_compiles_inference_only():
    x, y = torch.randn(16, requires_grad=True), torch.randn(16)
    with torch.no_grad():
        report = toycompiler.explain(sin_mul, backend="cpp")(x, y)
    assert report.frames[0].backend.backward is None


def mlp_step(x, w1, w2):
    return (torch.relu(x @ w1) @ w2).sum()


def test_training_step_of_an_mlp_matches_eager_even_where_lowerings_are_missing():
    torch.manual_seed(0)
    x = torch.randn(8, 16)
    w1, w2 = torch.randn(16, 32, requires_grad=True), torch.randn(32, 4, requires_grad=True)
    f = toycompiler.compile(mlp_step, backend="cpp")
    with _any_warnings():  # fallbacks warn while lowerings are missing
        loss = f(x, w1, w2)
        loss.backward()
    gw1, gw2 = w1.grad.clone(), w2.grad.clone()
    w1.grad = w2.grad = None
    want = mlp_step(x, w1, w2)
    want.backward()
    torch.testing.assert_close(loss, want)
    torch.testing.assert_close(gw1, w1.grad)
    torch.testing.assert_close(gw2, w2.grad)
    backend = f.compiled_frames[0].backend
    for graph in (backend, backend.backward):  # each compiled, or fell back with its reason
        assert graph is not None and (graph.kernels or graph.fallback_reason)


def _any_warnings():
    import warnings

    return warnings.catch_warnings(record=True)
