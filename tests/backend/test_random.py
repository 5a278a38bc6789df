"""Random ops: Dropout in training draws its mask with torch's generator, as eager does.

The compiled graph calls ``aten.bernoulli`` (an extern kernel) on a tensor shaped like the input, the
draws ATen's CPU dropout makes, so with the same seed the compiled run drops the same elements as eager.
On CUDA eager's fused dropout kernel draws in another order (the masks differ, as they do under real
torch.compile); only the fraction kept is checked there.
"""

import copy

import pytest
import torch
import torch.nn as nn

import toycompiler
from toycompiler.testing import device_for, fallback_reasons


@pytest.mark.parametrize("backend", ["cpp", "triton"])
@pytest.mark.parametrize("p", [0.2, 0.5, 1.0])
def test_dropout_in_training_draws_eagers_mask(backend, p):
    device = device_for(backend)
    torch.manual_seed(0)
    eager = nn.Sequential(nn.Linear(8, 33), nn.Dropout(p), nn.Linear(33, 3)).to(device).train()
    toy = copy.deepcopy(eager)
    x = torch.randn(7, 8, device=device)
    compiled = toycompiler.compile(toy, backend=backend)
    torch.manual_seed(5)
    out = compiled(x)
    out.square().sum().backward()
    torch.manual_seed(5)
    expected = eager(x)
    expected.square().sum().backward()
    assert not fallback_reasons(compiled), fallback_reasons(compiled)
    if device == "cuda":
        return
    torch.testing.assert_close(out, expected)
    for a, b in zip(toy.parameters(), eager.parameters()):
        torch.testing.assert_close(a.grad, b.grad)


def test_dropout_keeps_about_one_minus_p():
    torch.manual_seed(0)
    x = torch.ones(4000, device=device_for("triton"))
    compiled = toycompiler.compile(lambda t: nn.functional.dropout(t, 0.25, training=True), backend="triton")
    out = compiled(x).cpu()
    kept = (out != 0).float().mean().item()
    assert not fallback_reasons(compiled), fallback_reasons(compiled)
    assert 0.7 < kept < 0.8 and torch.allclose(out[out != 0], torch.tensor(1 / 0.75))
