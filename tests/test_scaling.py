"""Cost at scale, asserted as structure, never as time: the guards of an L-layer stack grow
linearly with L, and checking them reaches each layer by a dict lookup, never through
``Sequential.__getitem__`` (which walks the module list: quadratic in the depth).
Times are the benchmark's job: ``python -m toycompiler.bench.scaling``."""

from unittest import mock

import torch
from torch import nn

import toycompiler


def _stack(layers: int) -> nn.Sequential:
    return nn.Sequential(*[nn.Linear(16, 16) for _ in range(layers)])


def _entry(model: nn.Module):
    compiled = toycompiler.compile(model, backend="eager")
    with torch.no_grad():
        compiled(torch.randn(4, 16))
    (entry,) = compiled._compiled_forward.cache.entries
    return compiled, entry


def test_guard_count_grows_linearly_with_depth():
    counts = {layers: len(_entry(_stack(layers))[1].artifact.guards.guards) for layers in (10, 20, 40)}
    per_layer = counts[20] - counts[10]
    assert counts[40] - counts[20] == 2 * per_layer  # the same few guards for each layer, whatever the depth
    assert counts[40] <= 2 * counts[20] + 10
    checks = _entry(_stack(40))[1].artifact.guards.code.count("\n        and ")
    assert checks <= 2 * 40 + 5  # evaluated: identity and training per layer; all tensors in one call


def test_guard_check_and_call_never_use_sequential_getitem():
    model = _stack(30)
    compiled, entry = _entry(model)
    x = torch.randn(4, 16)
    with mock.patch.object(nn.Sequential, "__getitem__", side_effect=AssertionError("walked the list")) as getitem, \
            torch.no_grad():
        assert entry.check(model, x)
        torch.testing.assert_close(compiled(x), model(x))
    assert getitem.call_count == 0
    assert "self._modules['29'] is ___obj_" in entry.artifact.guards.code
