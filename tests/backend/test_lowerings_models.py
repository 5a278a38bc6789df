"""The ops real models bring (issue 14), on both backends, against eager; no graph may fall back.

Each op is reached the way a model reaches it: the captured graph holds the ATen op, the decompose pass
turns it into primitives (torch's tables, or a few decompositions of our own), and lowering turns those
into loops (indexing by loaded values too: loads through the index) or, for writes through loaded indices,
scans and sorting, into a call of torch's own kernel
(``FALLBACKS`` in :mod:`toycompiler.backend.lowering`, each with its reason).
Inputs: odd sizes, non-contiguous views, int64 and bool. Triton runs in its CPU interpreter: tiny sizes.
"""

import re

import pytest
import torch
import torch.nn.functional as F
from _util import check

aten = torch.ops.aten


def odd(*shape):
    """A non-contiguous float tensor of ``shape`` (every other column of a wider one)."""
    return torch.randn(*shape[:-1], shape[-1] * 2)[..., ::2]


def idx(high, *shape):
    return torch.randint(0, high, shape)


OPS = {
    # indexing: loads through the index; scatter and index_put: torch's kernel
    "gather": (lambda x, i: x.gather(1, i) * 2, lambda: (odd(5, 7), idx(7, 5, 3))),
    "index": (lambda x, i: x[i] + 1, lambda: (odd(5, 7), idx(5, 4))),
    "index_2d": (lambda x, i, j: x[i, j], lambda: (odd(5, 7), idx(5, 3), idx(7, 3))),
    "index_select": (lambda x, i: x.index_select(1, i).sin(), lambda: (odd(5, 7), idx(7, 4))),
    "embedding": (lambda w, i: F.embedding(i, w) * 3, lambda: (torch.randn(9, 5), idx(9, 2, 3))),
    "scatter": (lambda x, i: x.scatter(1, i, 0.5), lambda: (odd(5, 7), idx(7, 5, 2))),
    "scatter_add": (lambda x, i, s: x.scatter_add(0, i, s),
                    lambda: (torch.randn(5, 3), idx(5, 4, 3), torch.randn(4, 3))),
    "index_put": (lambda x, i, v: x.index_put((i,), v),
                  lambda: (torch.randn(5, 3), torch.tensor([4, 0, 2]), torch.randn(3, 3))),
    "masked_fill": (lambda x: x.masked_fill(x > 0, -1.0), lambda: (odd(5, 7),)),
    "where_scalars": (lambda x: torch.where(x > 0, 2.0, -3), lambda: (odd(5, 7),)),
    # shape ops: views and index arithmetic
    "repeat": (lambda x: x.repeat(2, 1, 3), lambda: (odd(3, 5),)),
    "cat_stack": (lambda x: (torch.cat([x, x.t().t() * 2], 0), torch.stack([x, -x], 1)), lambda: (odd(3, 5),)),
    "expand": (lambda x: x[:, :1].expand(3, 5) + x, lambda: (odd(3, 5),)),
    "pad": (lambda x: (F.pad(x, (1, 2)), F.pad(x, (0, 0, 2, 1), value=0.5), F.pad(x, (-1, 1))),
            lambda: (odd(3, 5),)),
    "slice_scatter": (lambda x, y: aten.slice_scatter(x, y, 1, 1, 7, 2), lambda: (odd(3, 7), torch.randn(3, 3))),
    "setitem": (lambda x, y: _setitem(x, y), lambda: (odd(3, 5), torch.randn(3, 4))),
    # arithmetic
    "floordiv_mod": (lambda x: (x * 7 // 2, (x * 7) % 2, x // -0.75, torch.div(x, 0.3, rounding_mode="trunc")),
                     lambda: (odd(5, 7),)),
    "int_floordiv_mod": (lambda a, b: (a // b, a % b, a // 3, a % -3, torch.div(a, b, rounding_mode="trunc")),
                         lambda: (torch.randint(-20, 20, (5, 7)),
                                  torch.randint(1, 6, (5, 7)) * (1 - 2 * idx(2, 5, 7)))),
    "add_alpha": (lambda x, y: (torch.add(x, y, alpha=2), torch.sub(x, y, alpha=0.5)),
                  lambda: (odd(5, 7), torch.randn(7))),
    # reductions and scans
    "any_all": (lambda b: (b.any(), b.any(1), b.all(0), (~b).all()), lambda: (torch.rand(5, 7) > 0.7,)),
    "argmax_argmin": (lambda x: (x.argmax(), x.argmax(1, keepdim=True), x.argmin(0)), lambda: (odd(5, 7),)),
    "cumsum": (lambda x: (x.cumsum(1), x.cumsum(0)), lambda: (odd(5, 7),)),
    "int_cumsum_topk": (lambda a: (a.cumsum(0), a.float().topk(2, 1).values),
                        lambda: (torch.randint(-5, 5, (5, 7)),)),
    # normalization, forward (backward: test_backward_of_normalizations)
    "batch_norm_train": (lambda x, w, b: F.batch_norm(x, None, None, w, b, training=True),
                         lambda: (odd(4, 3, 5), torch.randn(3), torch.randn(3))),
    "group_norm": (lambda x, w, b: F.group_norm(x, 2, w, b), lambda: (odd(2, 4, 3), torch.randn(4), torch.randn(4))),
    "layer_norm": (lambda x, w, b: F.layer_norm(x, (5,), w, b), lambda: (odd(3, 5), torch.randn(5), torch.randn(5))),
    "sdpa": (lambda q, k, v: F.scaled_dot_product_attention(q, k, v), lambda: (torch.randn(1, 2, 5, 4),) * 3),
    "sdpa_mask_causal": (lambda q, m: (F.scaled_dot_product_attention(q, q, q, attn_mask=m),
                                       F.scaled_dot_product_attention(q, q, q, is_causal=True)),
                         lambda: (torch.randn(1, 2, 5, 4), torch.rand(5, 5) > 0.3)),
}


def _setitem(x, y):
    z = x.clone()
    z[:, 1:] = y
    return z


def _args(name):
    torch.manual_seed(0)
    return OPS[name][1]()


@pytest.mark.parametrize("target", ["cpp", "triton"])
@pytest.mark.parametrize("name", list(OPS))
def test_op_matches_eager(name, target):
    check(OPS[name][0], *_args(name), target=target, rtol=1e-4, atol=1e-4)


def test_writes_through_loaded_indices_call_torch_kernel_with_its_reason():
    arts = check(OPS["scatter_add"][0], *_args("scatter_add"))
    assert "torch.ops.aten.scatter_add.default(self=" in arts.output_code.source
    assert "writes through loaded indices" in str(arts.ir)


def test_cumsum_is_one_linear_call_not_a_quadratic_kernel():
    arts = check(lambda x: x.cumsum(1), torch.randn(3, 300))
    assert "torch.ops.aten.cumsum.default(" in arts.output_code.source and not arts.kernels


def test_sdpa_is_two_matmuls_around_a_fused_softmax():
    arts = check(*[OPS["sdpa"][0]], *_args("sdpa"), rtol=1e-4)
    assert arts.output_code.source.count("torch.bmm(") == 2


def test_library_call_outputs_nobody_reads_are_not_called():
    """Max pooling's ATen op returns values and indices; a forward that reads only the values makes one call
    (two before: one per output). With the indices returned, both outputs come from their calls. (A 7x7
    window: a smaller one is a generated kernel.)"""
    x = torch.randn(2, 3, 8, 8)
    for fn, calls in [(lambda x: F.max_pool2d(x, 7) + 1, 1), (lambda x: F.max_pool2d(x, 7, return_indices=True), 2)]:
        code = check(fn, x).output_code.source
        assert code.count("torch.ops.aten.max_pool2d_with_indices.default(") == calls, code


@pytest.mark.skipif(not torch.cuda.is_available(), reason="torch's fused attention kernels run on a GPU")
@pytest.mark.parametrize("case", ["bf16", "causal", "mask", "fp32"])
def test_sdpa_on_a_gpu_is_torchs_fused_kernel(case):
    """On a GPU attention stays torch's fused kernel (flash or memory-efficient): one library call, not two
    matmuls around a softmax, and its statistics for a backward (outputs a forward never reads) not called
    for; the work after it (``* 2``) is a kernel of its own."""
    dtype = torch.float32 if case == "fp32" else torch.bfloat16
    q, k, v = (torch.randn(2, 3, 100, 64, device="cuda", dtype=dtype) for _ in range(3))
    mask = torch.rand(100, 100, device="cuda") > 0.3
    kwargs = {"causal": {"is_causal": True}, "mask": {"attn_mask": mask}}.get(case, {})
    arts = check(lambda q, k, v: F.scaled_dot_product_attention(q, k, v, **kwargs) * 2, q, k, v, target="triton",
                 rtol=2e-2, atol=2e-2)
    code = arts.output_code.source
    calls = re.findall(r"torch\.ops\.aten\.(_scaled_dot_product_\w+_attention)\.default\(", code)
    assert "torch.bmm(" not in code and len(calls) == 1, code


@pytest.mark.parametrize("target", ["cpp", "triton"])
def test_bool_and_int_inputs(target):
    check(lambda b, i: (torch.where(b, i, -i).cumsum(0), F.pad(b, (1, 1)), b.repeat(2, 1), i.gather(0, i.abs() % 4)),
          torch.rand(4, 3) > 0.5, torch.randint(-3, 3, (4, 3)), target=target)


def test_backward_of_normalizations_and_conv():
    """BatchNorm (training), GroupNorm, LayerNorm and convolution: forward and backward graphs both compile."""
    from toycompiler.testing import assert_same

    def f(x, w, g, b):
        y = F.conv2d(x, w, padding=1)
        y = F.batch_norm(y, None, None, g, b, training=True)
        y = F.group_norm(y, 2, g, b) + F.layer_norm(y, y.shape[-1:])
        return y.relu().sum()

    args = (torch.randn(2, 3, 5, 5, requires_grad=True), torch.randn(4, 3, 3, 3, requires_grad=True),
            torch.randn(4, requires_grad=True), torch.randn(4, requires_grad=True))
    assert_same(f, *args, backward=True, rtol=1e-3, atol=1e-3)


def test_a_slice_starting_before_the_first_element_is_clamped_as_in_python():
    """``z[-100:] = y`` of 10 rows writes every row (``slice_scatter`` took the start as -90, and wrote the
    wrong rows); a view ``x[-100:2]`` and a negative range within the dim as before."""
    def assign(x, y):
        z = x.clone()
        z[-100:] = y
        z[:, -12:-2] = 0
        return z, x[-100:2] * 2
    check(assign, torch.randn(10, 11), torch.randn(10, 11))
