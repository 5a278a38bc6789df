"""Dynamic shapes from toycompiler's own frontend reach the toy backends as size arguments."""

import pytest
import torch

import toycompiler
from toycompiler.testing import device_for


def softmax_plus_rowsum(x, y):
    return torch.softmax(x, -1) * 2 + y.sum(-1, keepdim=True)


@pytest.mark.parametrize("backend", ["cpp", "triton"])
def test_automatic_dynamic_serves_every_later_size_with_one_kernel_set(backend):
    f = toycompiler.compile(softmax_plus_rowsum, backend=backend)
    dev = device_for(backend)
    for n in (4, 5, 6, 7, 9):
        x, y = torch.randn(n, 6, device=dev), torch.randn(n, 3, device=dev)
        torch.testing.assert_close(f(x, y), softmax_plus_rowsum(x, y), rtol=1e-4, atol=1e-5)
    assert len(f.cache.entries) == 2  # static for 4, symbolic from 5 on
    dynamic = f.compiled_frames[1]
    assert dynamic.backend.fallback_reason is None
    assert "x.shape[0] >= 2" in [g.expr for g in dynamic.guards.guards]
    assert "s0" in dynamic.backend.output_code.source  # the size is read from the inputs at run time
