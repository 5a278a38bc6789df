"""Cross entropy and gather, on both backends, against eager.

``gather`` with one index per row is a masked sum over the row and ``scatter`` of one value per row a
``where`` (``passes/decompose.py``): cross entropy's pick of each sample's class, and its gradient, fuse
into the log_softmax kernel instead of gathering from a written-out log_softmax. Over rows
longer than a kernel holds at once, the pick moves through the log_softmax's arithmetic instead
(``(x - max) - log(sum)`` picked is ``x`` picked, minus the row's values). Cross entropy with label
smoothing runs an in-place op below functionalization; a second trace makes it pure.
"""

import re

import pytest
import torch
import torch.nn.functional as F

import toycompiler
from toycompiler.testing import assert_same, device_for

BACKENDS = ["cpp", "triton"]


def _picked(report) -> list[str]:
    """The buffers a graph reads through an index (a gather lowered as indirect loads), from its IR."""
    ir = "\n".join(str(f.backend.ir) for f in report.frames)
    return sorted(set(re.findall(r"load\((\w+), [^,]*, i0 = load\(", ir)))


def _targets(n, classes, dev):
    t = torch.randint(0, classes, (n,), device=dev)
    t[1] = -100  # ignored
    return t


LOSSES = {
    "mean": lambda x, t: F.cross_entropy(x, t),
    "sum_weighted": lambda x, t: F.cross_entropy(x, t, weight=torch.linspace(0.5, 2, x.shape[1], device=x.device),
                                                 reduction="sum"),
    "none": lambda x, t: F.cross_entropy(x, t, reduction="none"),
    "label_smoothing": lambda x, t: F.cross_entropy(x, t, label_smoothing=0.1),
    "nll_of_log_softmax": lambda x, t: F.nll_loss(torch.log_softmax(x, -1), t.clamp(min=0)),
}


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("name", list(LOSSES))
def test_cross_entropy_is_fused_and_matches_eager(name, backend):
    dev = device_for(backend)
    x, t = torch.randn(9, 37, device=dev) * 3, _targets(9, 37, dev)
    fn = LOSSES[name]
    assert_same(fn, x, t, backend=backend, rtol=1e-5, atol=1e-5)
    report = toycompiler.explain(fn, backend=backend)(x, t)
    assert report.frames[0].backend.fallback_reason is None
    assert "torch.ops.aten" not in report.output_code  # no gather, no scatter: every op is a generated kernel


@pytest.mark.parametrize("backend", BACKENDS)
def test_cross_entropy_gradient_matches_eager(backend):
    dev = device_for(backend)
    x, t = torch.randn(9, 37, device=dev), _targets(9, 37, dev)
    for fn in (LOSSES["mean"], LOSSES["label_smoothing"]):
        xs = [x.clone().requires_grad_() for _ in range(2)]
        toycompiler.compile(fn, backend=backend)(xs[0], t).backward()
        fn(xs[1], t).backward()
        torch.testing.assert_close(xs[0].grad, xs[1].grad, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("backend", BACKENDS)
def test_gather_one_per_row_along_any_dim_and_several_per_row(backend):
    """One index per row of a computed tensor, along dim 1 or dim 0, with NaN and inf elsewhere in the row
    (not picked, not spread): a masked sum in a generated kernel. Several indices per row, and a gather
    from a graph input or a view of one, which reads only the picked elements, are loads through the
    index (indirect loads) instead; none is torch's gather."""
    dev = device_for(backend)
    x = torch.randn(6, 10, device=dev)
    x[0, 3], x[2, 5] = float("nan"), float("inf")
    rows = torch.tensor([[0], [1], [9], [4], [4], [2]], device=dev)
    cols = torch.tensor([[5, 0, 1, 2, 3, 4, 5, 0, 1, 2]], device=dev)
    several = torch.randint(0, 10, (6, 3), device=dev)
    for fn, index, kernel in [(lambda x, i: (x * 2).gather(1, i), rows, False),
                              (lambda x, i: (x + 1).gather(0, i), cols, False),
                              (lambda x, i: (x * 2).gather(1, i), several, True),
                              (lambda x, i: x.gather(1, i) * 2, rows, True),
                              (lambda x, i: x.t().gather(1, i.t()) * 2, cols, True)]:
        assert_same(fn, x, index, backend=backend)
        report = toycompiler.explain(fn, backend=backend)(x, index)
        ir = "\n".join(str(f.backend.ir) for f in report.frames)
        assert "torch.ops.aten.gather" not in report.output_code and ("i0 = load(" in ir) == kernel


@pytest.mark.parametrize("backend", BACKENDS)
def test_gather_over_long_rows_moves_through_elementwise_work(backend):
    """Over rows longer than PICK_MIN_ROW, ``log_softmax(x * 2).gather(1, i)`` is ``x.gather(1, i) * 2`` minus
    the row's max and log-sum: the same arithmetic on the same values (rows with NaN, inf and -inf
    included), with no pass over the row for the pick. From a graph input the pick is a load through the
    index from the input itself; from logits computed in the graph (a matmul's) it is a masked sum that needs no row
    value, so it shares the max's loop. Two operands that vary along the row keep the masked sum."""
    dev = device_for(backend)
    x, w = torch.randn(6, 5000, device=dev) * 3, torch.randn(5000, 5000, device=dev) / 100
    i = torch.tensor([[0], [4999], [7], [3], [2500], [1]], device=dev)
    x[0, 3], x[2, 5], x[4] = float("nan"), float("inf"), float("-inf")
    for fn, picked in [(lambda x, w, i: torch.log_softmax(x * 2, -1).gather(1, i), ["arg0"]),
                       (lambda x, w, i: F.cross_entropy(x @ w, i[:, 0]), []),
                       (lambda x, w, i: (x * x.exp()).gather(1, i), [])]:
        assert_same(fn, x, w, i, backend=backend, rtol=1e-5, atol=1e-5)
        report = toycompiler.explain(fn, backend=backend)(x, w, i)
        assert _picked(report) == picked and "aten.gather" not in report.output_code, report.output_code


@pytest.mark.parametrize("rows, gathered", [(300, True), (100, False)])
def test_cross_entropy_over_a_large_cpu_input_picks_through_the_index(rows, gathered):
    """On a CPU the masked sum is one more pass over each row, which from 2^17 elements costs more than a
    gather: cross entropy over [300, 1037] loads each target's logit through the index and subtracts the row's
    max and log-sum from the picked logit; over [100, 1037] (103,700 elements) the pick stays a masked sum.
    NaN in a row, inf at a target and ignored targets included."""
    x, t = torch.randn(rows, 1037) * 3, _targets(rows, 1037, "cpu")
    x[0, 3], x[2, t[2]] = float("nan"), float("inf")
    for fn in (LOSSES["mean"], LOSSES["none"]):
        assert_same(fn, x, t, backend="cpp", rtol=1e-5, atol=1e-5)
        report = toycompiler.explain(fn, backend="cpp")(x, t)
        assert _picked(report) == (["arg0"] if gathered else []), report.output_code


def test_a_bfloat16_cross_entropy_picks_through_its_dtype_conversions():
    """A bfloat16 cross entropy on a CPU computes its log_softmax in float32 and converts it to bfloat16
    (``_to_copy``): the pick moves through both conversions too, so the target's logit is loaded through the
    index, and no pass over the row rounds every log-probability to bfloat16 only to keep one. Values
    rounded as eager rounds them (the picked log-probability in bfloat16), NaN and ignored targets included."""
    x, t = (torch.randn(300, 1037) * 3).bfloat16(), _targets(300, 1037, "cpu")
    x[0, 3] = float("nan")
    for fn in (LOSSES["mean"], LOSSES["none"]):
        assert_same(fn, x, t, backend="cpp", rtol=1e-2, atol=1e-2)
        report = toycompiler.explain(fn, backend="cpp")(x, t)
        assert _picked(report) == ["arg0"], report.output_code


def test_integers_become_half_precision_through_float32():
    """``int -> bfloat16`` rounds through float32, as torch's conversion does (c10's BFloat16 takes a float);
    Triton's CPU interpreter turned an int64 16 straight into bfloat16 0.0, which made the mean cross entropy
    of bfloat16 logits (its count of targets, cast to the logits' dtype) come out inf."""
    dev = device_for("triton")
    x, t = torch.randn(16, 37, device=dev, dtype=torch.bfloat16), torch.randint(0, 37, (16,), device=dev)
    # integers under 256, which bfloat16 holds exactly (the interpreter also rounds float32 differently)
    assert_same(lambda t: (t * 3 + 7).to(torch.bfloat16), t, backend="triton", rtol=0, atol=0)
    assert_same(lambda x, t: F.cross_entropy(x, t), x, t, backend="triton", rtol=2e-2, atol=2e-2)


def test_a_tile_has_as_many_warps_as_its_row_values_need():
    """A row kernel's warps come from the bytes of its rows: cross entropy's int64 targets, one a row, do not
    count (counted, 8 warps instead of 4 made it take 142 us instead of 101 over [65536, 1000] floats)."""
    dev = device_for("triton")
    x, t = torch.randn(8, 1000, device=dev), torch.randint(0, 1000, (8,), device=dev)
    warps = [re.findall(r"num_warps=(\d+)", toycompiler.explain(fn, backend="triton")(*args).output_code)[0]
             for fn, args in [(lambda x: torch.log_softmax(x, -1), (x,)), (lambda x, t: F.cross_entropy(x, t), (x, t))]]
    assert warps[0] == warps[1], warps
