"""Indexing with loaded values (``x[i]``, ``gather``, embedding, upsampling) as loads through the index.

The kernel reads each index value, counts a negative one from the end of its dim and clamps it into the
dim (``ir.in_range``), then loads at the address it gives (``ir.Load.indirect``), fused with the work
around it. On the CPU the output code checks each index tensor first, as eager raises IndexError.
Both backends against eager; Triton through its CPU interpreter (small sizes).
"""

import os

import pytest
import torch
import torch.nn.functional as F
from test_vector_cpp import gcc_vectorises

import toycompiler
from toycompiler.testing import assert_same, device_for


def odd(*shape):
    """A non-contiguous float tensor of ``shape`` (every other column of a wider one)."""
    return torch.randn(*shape[:-1], shape[-1] * 2)[..., ::2]


def idx(low, high, *shape, dtype=torch.int64):
    return torch.randint(low, high, shape, dtype=dtype)


CASES = {
    "embedding_plus_position": (lambda w, i, p: F.embedding(i, w) + p,
                                lambda: (torch.randn(11, 6), idx(0, 11, 3, 5), torch.randn(5, 6))),
    "negative_int32_index": (lambda x, i: x[i] * 2, lambda: (odd(5, 7), idx(-5, 5, 4, 3, dtype=torch.int32))),
    "index_tensors_apart": (lambda x, i, j: x[i, :, j] + 1,
                            lambda: (torch.randn(4, 3, 6), idx(-4, 4, 5), idx(0, 6, 5))),
    "index_tensors_broadcast": (lambda x, i, j: x[i[:, None], j[None, :]],
                                lambda: (odd(6, 7), idx(0, 6, 4), idx(-7, 7, 3))),
    "index_select_of_a_view": (lambda x, i: x.t().index_select(1, i).sin(), lambda: (odd(5, 7), idx(0, 5, 8))),
    "gather_dim0_transposed": (lambda x, i: x.t().gather(0, i) - 1, lambda: (odd(5, 7), idx(0, 7, 3, 5))),
    "index_computed_in_graph": (lambda x, i: x[(i * 3 + 1) % 5, 1:], lambda: (odd(5, 7), idx(0, 9, 6))),
    "index_of_computed_values": (lambda x, i: (x.exp() + x)[i, 2], lambda: (odd(5, 7), idx(0, 5, 2, 3))),
    "embedding_then_layer_norm": (lambda w, i: F.layer_norm(F.embedding(i, w), (6,)),
                                  lambda: (torch.randn(11, 6), idx(0, 11, 2, 7))),
    "nearest_odd_size": (lambda x: F.interpolate(x, size=(9, 11), mode="nearest"), lambda: (torch.randn(2, 3, 5, 7),)),
    "bilinear_channels_last": (lambda x: F.interpolate(x, scale_factor=2, mode="bilinear", align_corners=False),
                               lambda: (torch.randn(2, 3, 5, 7).to(memory_format=torch.channels_last),)),
    "bilinear_align_corners": (lambda x: F.interpolate(x, size=(8, 6), mode="bilinear", align_corners=True) * 2,
                               lambda: (torch.randn(1, 2, 5, 7),)),
    "bool_mask": (lambda x: x[x > 0] * 2, lambda: (odd(5, 7),)),  # how many it keeps is data: torch's kernel
}


def _args(name, device):
    torch.manual_seed(0)
    return tuple(a.to(device) for a in CASES[name][1]())


@pytest.mark.parametrize("backend", ["cpp", "triton"])
@pytest.mark.parametrize("name", list(CASES))
def test_indexing_matches_eager(name, backend):
    fn, args = CASES[name][0], _args(name, device_for(backend))
    assert_same(fn, *args, backend=backend, rtol=1e-5, atol=1e-5)
    if name != "bool_mask":
        code = toycompiler.explain(fn, backend=backend)(*args).output_code
        assert "torch.ops.aten.index" not in code and "torch.ops.aten.gather" not in code, code


def test_half_precision_embedding_on_triton():
    dev = device_for("triton")
    w, i = torch.randn(11, 6, device=dev).to(torch.float16), idx(0, 11, 3, 5).to(dev)
    assert_same(lambda w, i: F.embedding(i, w) * 2, w, i, backend="triton", rtol=1e-2, atol=1e-2)
    assert_same(lambda w, i: w[i].float().sum(-1), w.bfloat16(), i, backend="triton", rtol=1e-2, atol=1e-2)


@pytest.mark.parametrize("fn, index, bad", [(lambda x, i: x[i] + 1, [0, 5], 5), (lambda x, i: x[:, i] + 1, [-8, 1], -8),
                                            (lambda x, i: x.gather(1, i[None, :].expand(5, 2)), [0, -1], -1),
                                            (lambda x, i: F.embedding(i, x) * 2, [0, -1], -1),
                                            (lambda x, i: torch.index_select(x, 1, i) + 1, [-2, 3], -2)])
def test_an_index_out_of_range_raises_eagers_error(fn, index, bad):
    """The kernel only clamps; the check in the output code raises eager's error, an IndexError and a
    RuntimeError at once (eager's type depends on the op, and on the dim for index_select): from indexing, where
    -1 is the last element, and from an embedding, an index_select or a gather, where it is out of range (the
    first two become indexing through torch's decompositions: an embedding's -1 read the table's last row)."""
    x, i = torch.randn(5, 7), torch.tensor(index)
    with pytest.raises((IndexError, RuntimeError)) as eager:
        fn(x, i)
    compiled = toycompiler.compile(fn, backend="cpp")
    with pytest.raises(eager.type, match=f"index {bad} is out of bounds for dimension"):
        compiled(x, i)
    good = torch.tensor([1, 4])
    torch.testing.assert_close(compiled(x, good), fn(x, good))  # the same compiled code, in range


def test_embedding_and_its_sum_are_one_vectorised_loop():
    """A token embedding plus a position embedding: one kernel reads each index once a row and the two
    tables' rows in order (GCC vectorises the loop along the embedding), with no torch kernel for the
    lookup; the index tensor is checked first."""
    fn, args = CASES["embedding_plus_position"][0], (torch.randn(100, 64), idx(0, 100, 4, 16), torch.randn(16, 64))
    assert_same(fn, *args, backend="cpp")
    backend = toycompiler.explain(fn, backend="cpp")(*args).frames[0].backend
    assert len(backend.kernels) == 1 and ", size=100, dim=0, negative=False)" in backend.output_code.source
    if "g++" in os.path.basename(toycompiler.config.cxx):
        assert gcc_vectorises(backend.kernels[0].source)


def test_a_gather_of_loaded_indices_along_the_vector_loop_is_not_forced_to_vectorise():
    """Forced by ``omp simd``, a gather of loaded indices ran slower than scalar code (GCC's cost model then
    decides); indices computed from the position (upsampling) and an embedding's row index, the same along
    the vector loop, keep the forced vector loop."""
    def source(fn, *args):
        assert_same(fn, *args, backend="cpp")
        source = toycompiler.explain(fn, backend="cpp")(*args).frames[0].backend.kernels[-1].source
        return source[source.index('extern "C" void'):]  # the kernel (the helpers before it are no loop of its)
    assert "simd" not in source(lambda x, i: x.gather(1, i) * 2, torch.randn(8, 40), idx(0, 40, 8, 30))
    assert "#pragma omp simd" in source(CASES["nearest_odd_size"][0], torch.randn(2, 3, 5, 7))
    assert "#pragma omp simd" in source(lambda w, i: F.embedding(i, w) * 2, torch.randn(11, 64), idx(0, 11, 3, 5))


def test_an_index_made_from_nan_raises_as_in_eager():
    """``int(max(nan, 0.0))`` is negative though its form says otherwise: the kernel clamps it at 0 anyway,
    and the check raises eager's IndexError."""
    fn = lambda x, y: x[(y.clamp(min=0) * 2).long()] * 2  # noqa: E731
    x, y = torch.randn(10, 4), torch.tensor([0.5, float("nan"), 3.0])
    with pytest.raises(IndexError, match="out of bounds for dimension 0 with size 10"):
        fn(x, y)
    with pytest.raises(IndexError, match="out of bounds for dimension 0 with size 10"):
        toycompiler.compile(fn, backend="cpp")(x, y)


def _lookup_then_write(w, i):
    e = w[i]
    w.add_(1)  # after the lookup: e holds the old rows
    return e


def _cat_then_write(x, y):
    a = x * 2  # read only by the cat, which comes after the write
    x.add_(1)
    return torch.cat([a, y])


def _lookup_then_write_index(w, i):
    e = w[i]
    i.add_(1)
    return e


@pytest.mark.parametrize("backend", ["cpp", "triton"])
@pytest.mark.parametrize("fn", [_lookup_then_write, _cat_then_write, _lookup_then_write_index])
def test_a_value_read_where_used_sees_the_input_before_a_later_write(fn, backend):
    """A lookup, or a value read only by a cat, is not stored: its readers load through it. Where the graph
    then writes into the input it reads, it is stored before the write (the lookup returned the new rows)."""
    dev = device_for(backend)
    args = (torch.randn(10, 4, device=dev), torch.tensor([1, 3], device=dev)) if fn is not _cat_then_write \
        else (torch.randn(4, device=dev), torch.randn(3, device=dev))
    assert_same(fn, *args, backend=backend)
