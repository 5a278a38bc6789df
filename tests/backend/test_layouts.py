"""Results keep eager's strides, and pointwise work on a channels-last tensor reads and writes in memory order.

A graph output whose eager layout is dense but permuted (channels-last, a transpose) is stored with its dims in
eager's order, and so are the pointwise nodes whose every reader is such a node (``GraphLowering.orders``):
the chain from a channels-last input to its output is one loop over memory. Other buffers stay row-major, so
an intermediate that eager leaves permuted still fuses with a consumer that indexes it in logical order.
"""

import re

import pytest
import torch

import toycompiler
from toycompiler.backend.codecache import python_module_at
from toycompiler.backend.codegen.cpp import VECTOR_BYTES
from toycompiler.testing import assert_same, device_for

BACKENDS = ["cpp", "triton"]


def computed(report) -> list:
    """The IR buffers the backend computes (inputs left out)."""
    return [row for row in report.frames[0].backend.ir.buffers if row.kind != "input"]


def conv_tolerance(device: str) -> dict:
    """cuDNN may run a convolution in TF32 (``torch.backends.cudnn.allow_tf32``, on by default), and picks its
    algorithm per call: the compiled and the eager convolution can differ by 1e-3. The wrong answers these tests
    guard against were off by order one."""
    return {"rtol": 1e-2, "atol": 1e-2} if device == "cuda" else {"rtol": 1e-4, "atol": 1e-4}


@pytest.mark.parametrize("backend", BACKENDS)
def test_channels_last_pointwise_is_one_loop_in_memory_order(backend):
    dev = device_for(backend)
    x = torch.randn(2, 5, 3, 7, device=dev).to(memory_format=torch.channels_last)  # C = 5: vector tails
    scale = torch.randn(5, device=dev)

    def fn(x, s):
        return torch.relu(x * 2) + s[None, :, None, None]
    out = assert_same(fn, x, scale, backend=backend)
    assert out.stride() == fn(x, scale).stride() == (105, 1, 35, 5)
    report = toycompiler.explain(fn, backend=backend)(x, scale)
    assert len(report.kernels) == 1
    bufs = computed(report)  # mul, relu, add: one loop, and only the last is written
    assert [b.size for b in bufs] == ["[2, 3, 7, 5]"] * 3, bufs  # N, H, W, C: the input's memory order
    assert "load(arg0, 105*d0 + 35*d1 + 5*d2 + d3)" in bufs[0].body, bufs[0].body  # read in order too


@pytest.mark.parametrize("backend", BACKENDS)
def test_transposed_results_have_eager_strides(backend):
    x = torch.randn(6, 9, device=device_for(backend))
    for fn in (lambda x: x.t() * 2, lambda x: x.t().contiguous() * 2, lambda x: torch.sin(x.t()[1:, ::2])):
        out = assert_same(fn, x, backend=backend)
        assert out.stride() == fn(x).stride()


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("batch", [1, 2])
def test_a_library_call_reads_a_permuted_view_with_a_batch_of_one_as_eager_does(backend, batch):
    """ConvNeXt's downsampling: a layer norm over the channels of a permuted [N, H, W, C] view, permuted back,
    then a strided convolution. The convolution gets the normalised values as a channels-last [N, C, H, W]
    view, and torch picks its output's memory format from that view's strides. With a batch of one, the size-1
    batch dim had a stride of 0 and torch wrote NCHW where the kernels after it read channels-last: the whole
    model (torchvision's ``convnext_tiny`` on one image) was wrong by order one. A size-1 dim of a view now
    has the view's element count as its stride, as torch gives a size-1 dim outermost, so the view is
    channels-last as eager's is."""
    dev = device_for(backend)
    x, w, b = torch.randn(batch, 8, 6, 6, device=dev), torch.randn(8, device=dev), torch.randn(8, device=dev)
    conv = torch.randn(16, 8, 2, 2, device=dev)

    def fn(x):
        y = torch.nn.functional.layer_norm(x.permute(0, 2, 3, 1), (8,), w, b, 1e-6).permute(0, 3, 1, 2)
        return torch.nn.functional.conv2d(y, conv, None, 2) + 1, y.unsqueeze(0) * 2
    out = assert_same(fn, x, backend=backend, **conv_tolerance(dev))
    assert [o.stride() for o in out] == [o.stride() for o in fn(x)]


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_convolution_after_a_convolution_of_a_channels_last_input_gives_what_its_fake_tensor_promised(backend):
    """ConvNeXt's block after its downsampling, on a channels-last input: the first convolution's output is copied
    row-major for the residual add that also reads it, and the depthwise convolution then gets a row-major input
    where eager's is channels-last. torch picks a convolution's memory format from its input's strides, so it
    wrote NCHW where the kernels after it read channels-last (wrong by order one, also in a training step).
    ``codecache.conform`` now hands on every convolution's result in its fake tensor's strides."""
    dev = device_for(backend)
    x = torch.randn(2, 8, 8, 8, device=dev).to(memory_format=torch.channels_last)
    w, dw, lw = (torch.randn(s, device=dev) * 0.3 for s in ((16, 8, 2, 2), (16, 1, 7, 7), (16, 16)))

    def fn(x):
        y = torch.nn.functional.conv2d(x, w, None, 2)
        z = torch.nn.functional.conv2d(y, dw, None, 1, 3, 1, 16)
        return torch.nn.functional.linear(z.permute(0, 2, 3, 1), lw).permute(0, 3, 1, 2) + y
    out = assert_same(fn, x, backend=backend, **conv_tolerance(dev))
    assert out.stride() == fn(x).stride()


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_permuted_intermediate_still_fuses_with_its_row_major_reader(backend):
    """``q * scale`` on a transposed view is permuted in eager, its reader (a contiguous copy, as attention's
    ``.contiguous()`` or a matmul's operand) is not: the product stays row-major and the two fuse."""
    q = torch.randn(2, 8, 3, 4, device=device_for(backend))  # batch, tokens, heads, head dim

    def fn(q):
        return (q.transpose(1, 2) * 0.5).contiguous()
    out = assert_same(fn, q, backend=backend)
    assert out.is_contiguous()
    assert len(toycompiler.explain(fn, backend=backend)(q).kernels) == 1


def test_channels_last_gradients_match_eager():
    x = torch.randn(2, 4, 5, 3).to(memory_format=torch.channels_last).requires_grad_()
    assert_same(lambda x: torch.sigmoid(x) * x, x, backend="cpp", backward=True)


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_channels_last_batch_norm_backward_is_one_kernel_that_writes_its_gradient_in_memory_order(backend):
    """The backward of ``relu(batch_norm(x)).sum()`` over a channels-last x: the per-channel sums, then the input's
    gradient, an element epilogue of the same kernel. The gradient is stored channels-last (eager's strides), its
    dims n, h, w, c; the reduction's are n, c, h, w, reducing (0, 2, 3). Taken by position, the gradient's kept dim
    was h: it did not fuse, and two intermediates went to memory row-major, written with a stride of h * w along
    the vector loop (0.40x torch.compile over [32, 64, 28, 28], one thread). Now its kept dim is the one it reads
    the channel values along, and a node that reads none takes the order of the element node it reads."""
    fn = lambda x, w, b: torch.relu(torch.nn.functional.batch_norm(x, None, None, w, b, training=True)).sum()  # noqa
    device = device_for(backend)
    x = torch.randn(4, 16, 5, 6, device=device).to(memory_format=torch.channels_last).requires_grad_()
    w, b = torch.randn(16, device=device, requires_grad=True), torch.randn(16, device=device, requires_grad=True)
    assert_same(fn, x, w, b, backend=backend, backward=True, rtol=1e-4, atol=1e-4)
    backward = toycompiler.explain(fn, backend=backend)(x, w, b).frames[0].backend.backward
    assert len(backward.kernels) == 1
    if backend == "cpp":  # the gradient's store: along the channels, the vector loop
        assert re.search(r"out_ptr\d+\[\(480\*r0 \+ 16\*r1 \+ x0\)\] = ", backward.kernels[0].source)


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_kernel_writes_over_a_buffer_it_reads_only_with_its_last_store(backend):
    """A channels-last ResNet's head, trained: the backward of ``flatten`` zeroes a buffer and copies the
    gradient into it in one kernel. The zeroed buffer took the memory of the gradient it was about to copy
    (writing in place over a buffer the kernel reads last), and its zeros were stored before the copy read
    that element: every gradient before the head was 0. Only a kernel's last store now writes in place."""
    dev = device_for(backend)
    x = torch.randn(2, 64, 2, 2, device=dev).to(memory_format=torch.channels_last)
    w = (torch.randn(64, 64, 3, 3, device=dev) * 0.05).requires_grad_()
    fc = torch.randn(10, 64, device=dev).requires_grad_()

    def fn(x, w, fc):
        y = torch.nn.functional.adaptive_avg_pool2d(torch.nn.functional.conv2d(x, w, padding=1), 1)
        return torch.nn.functional.linear(torch.flatten(y, 1), fc)
    assert_same(fn, x, w, fc, backend=backend, backward=True, **conv_tolerance(dev))


# -- C++: a read along the second-last loop runs in tiles --------------------------------------------------

def sources(compiled) -> str:
    return "\n".join(k.source for f in compiled.compiled_frames for k in f.backend.kernels)


TRANSPOSED = {  # one read walks memory along the other loop than the rest; sizes leave partial tiles
    "t_plus_itself": (lambda x: x.t() + x, lambda: (torch.randn(37, 37),)),
    "t_times_other": (lambda x, y: x.t() * y + 1, lambda: (torch.randn(50, 19), torch.randn(19, 50))),
    "permute_3d": (lambda x, y: x.permute(0, 2, 1) - y, lambda: (torch.randn(3, 20, 33), torch.randn(3, 33, 20))),
    "nhwc_to_nchw": (lambda x: x.permute(0, 3, 1, 2).contiguous() * 2, lambda: (torch.randn(2, 17, 18, 16),)),
    "two_transposed_and_a_row": (lambda x, y, b: b + torch.sigmoid(x.t()) * y.t(),
                                 lambda: (torch.randn(40, 24), torch.randn(40, 24), torch.randn(24, 40))),
    "double": (lambda x, y: torch.sin(x.t()) + y, lambda: (torch.randn(18, 21).double(), torch.randn(21, 18).double())),
    "int64": (lambda x, y: x.t() * 3 - y, lambda: (torch.randint(-9, 9, (17, 31)), torch.randint(-9, 9, (31, 17)))),
    "bool_and_uint8": (lambda m, u: (m.t() & (u > 3)).to(torch.uint8) + u,
                       lambda: (torch.rand(26, 19) > 0.5, torch.randint(0, 9, (19, 26), dtype=torch.uint8))),
    "written_into_the_input": (lambda x: x.copy_((x * 2).t()), lambda: (torch.randn(21, 21),)),
}


@pytest.mark.parametrize("name", list(TRANSPOSED))
def test_cpp_transposed_reads_run_in_tiles_and_match_eager(name):
    """Each tile copies what the transposed read needs in memory order and transposes it (``toy_tile``);
    the last tile of a row or column overlaps the one before it, so odd sizes test the overlap."""
    fn, make = TRANSPOSED[name]
    args = make()
    out = assert_same(fn, *args, backend="cpp")
    assert out.stride() == fn(*args).stride()
    compiled = toycompiler.compile(fn, backend="cpp")
    compiled(*args)
    assert "const auto tile0 = toy_tile" in sources(compiled)
    if name == "two_transposed_and_a_row":
        assert "const auto tile1 = toy_tile" in sources(compiled)


@pytest.mark.parametrize("name", [n for n in TRANSPOSED if n != "written_into_the_input"])
def test_triton_transposed_reads_run_in_2d_blocks_and_match_eager(name):
    """YBLOCK rows by XBLOCK columns, launched on a grid of column blocks (axis 0, the fastest) by row
    blocks: each load is contiguous along one axis of the block (odd sizes: masked blocks at both edges)."""
    fn, make = TRANSPOSED[name]
    args = [a.to(device_for("triton")) for a in make()]
    out = assert_same(fn, *args, backend="triton")
    assert out.stride() == fn(*args).stride()
    compiled = toycompiler.compile(fn, backend="triton")
    compiled(*args)
    frame = compiled.compiled_frames[0].backend
    kernel = next(k for k in frame.kernels if "yindex" in k.source)
    launch = re.search(rf"{kernel.name}\[\((\d+), (\d+)\)\]\(.*R=(\d+), C=(\d+), YBLOCK=(\d+), XBLOCK=(\d+)",
                       frame.output_code.source)
    grid_cols, grid_rows, rows, cols, yblock, xblock = map(int, launch.groups())
    assert (grid_cols, grid_rows) == (-(-cols // xblock), -(-rows // yblock))
    assert rows * cols == out.numel()
    launcher = getattr(python_module_at(frame.output_code.path), kernel.name)  # launches that grid as it is
    args = [rows * cols if name == "xnumel" else None for name in launcher.arg_names]
    assert launcher.grid_for({"YBLOCK": yblock, "XBLOCK": xblock}, tuple(args), (grid_cols, grid_rows)) \
        == (grid_cols, grid_rows)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.int64, torch.int16, torch.uint8])
def test_cpp_a_tile_row_is_one_vector_of_the_widest_element(dtype):
    """Tiles of 8 floats on AVX2 (16 on AVX-512), 4 doubles, 16 int16 or uint8 (at most 16); odd sizes, so the
    last tile of each row and column overlaps the one before it; a double and a float read in one kernel take
    the double's tiles."""
    x, y = (torch.randn(37, 45).abs() * 50).to(dtype), (torch.randn(45, 37).abs() * 50).to(dtype)
    for fn, args, widest in ((lambda x, y: x.t() + y, (x, y), dtype), (lambda x, y: x.t() + y.double(), (x, y),
                                                                       torch.float64)):
        assert_same(fn, *args, backend="cpp")
        compiled = toycompiler.compile(fn, backend="cpp")
        compiled(*args)
        n = min(16, VECTOR_BYTES // widest.itemsize)
        assert f"toy_tile<{n}>(" in sources(compiled) and f"tiles of {n} x {n}" in sources(compiled)


def test_cpp_no_tiles_for_short_loops_or_symbolic_sizes():
    def narrow(x, y):
        return x.t() + y
    x, y = torch.randn(40, 3), torch.randn(3, 40)  # 3 columns: fewer than a tile's (8 floats, or 16)
    assert_same(narrow, x, y, backend="cpp")
    compiled = toycompiler.compile(narrow, backend="cpp")
    compiled(x, y)
    assert "toy_tile<" not in sources(compiled)
    compiled = toycompiler.compile(narrow, backend="cpp", dynamic=True)
    for n in (30, 47):
        x, y = torch.randn(n, 20), torch.randn(20, n)
        torch.testing.assert_close(compiled(x, y), narrow(x, y))
    assert "s0" in sources(compiled) and "toy_tile<" not in sources(compiled)


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_broadcast_along_the_second_last_loop_is_no_transposed_read(backend):
    """``x * s[None, :, None, None]`` over NCHW reads one ``s`` per channel: not a transposed read, so no tiles
    (C++) and no 2-D blocks (Triton). In Triton, ``x`` (and a slice of ``x`` that starts further on) is read
    at ``xindex`` itself, which Triton can prove contiguous where it cannot ``x2 = xindex % 81``: H100,
    bfloat16 ``x * s`` over [64, 96, 55, 55] took 34.6 us in 2-D blocks, 30.0 in 1-D ones, 24.0 reading
    ``xindex`` (torch.compile 23.7); a per-channel affine over [512, 512, 7, 7] floats 52.8 and 32.7 (33.2)."""
    dev = device_for(backend)
    x, s = torch.randn(3, 40, 9, 9, device=dev), torch.randn(40, device=dev)  # tiles in C++ if it were one
    for fn in (lambda x, s: x * s[None, :, None, None] + s[None, :, None, None],
               lambda x, s: x[1:] * s[None, :, None, None]):
        assert_same(fn, x, s, backend=backend)
        compiled = toycompiler.compile(fn, backend=backend)
        compiled(x, s)
        assert "toy_tile<" not in sources(compiled) and "yindex" not in sources(compiled)
        if backend == "triton":
            code = sources(compiled)
            assert re.search(r"tl\.load\(in_ptr0 \+ \((xindex|\(3240 \+ xindex\))\)", code), code
