"""Selecting a source line finds what came from it in every stage, and back."""

from toycompiler.widgets.provenance import Provenance


def test_source_line_maps_to_bytecode_offsets(frame, lines):
    LINE_A, LINE_B = lines  # a = sin(x) * 2 ; b = cos(y) + a
    prov = Provenance(frame)
    offsets = prov.links(LINE_A).offsets
    assert offsets and all(i.line == LINE_A for i in frame.bytecode.instructions if i.offset in offsets)
    assert set(offsets).isdisjoint(prov.links(LINE_B).offsets)


def test_source_line_maps_to_fx_nodes_buffers_group_and_kernel_lines(frame, lines):
    LINE_A, LINE_B = lines  # a = sin(x) * 2 ; b = cos(y) + a
    prov = Provenance(frame)
    a, b = prov.links(LINE_A), prov.links(LINE_B)
    assert set(a.fx_nodes) >= {"sin", "mul"} and set(b.fx_nodes) >= {"cos", "add"}
    assert a.buffers == ("buf0", "buf1") and b.buffers == ("buf2", "buf3")
    assert a.groups == ("kernel0",) == b.groups
    (kname, klines), = a.kernel_lines
    kernel = frame.backend.kernels[0]
    assert kname == kernel.name
    src = kernel.source.splitlines()
    texts = [src[n - 1] for n in klines]
    assert any("sin" in t for t in texts) and not any("cos" in t for t in texts)
    assert any("cos" in t for t in [src[n - 1] for n in b.kernel_lines[0][1]])


def test_kernel_line_maps_back_to_its_source_line(frame, lines):
    LINE_A, LINE_B = lines  # a = sin(x) * 2 ; b = cos(y) + a
    prov = Provenance(frame)
    kernel = frame.backend.kernels[0]
    src = kernel.source.splitlines()
    cos_line = next(i for i, t in enumerate(src, 1) if "cos" in t and "=" in t)
    assert prov.lines_of_kernel_line(kernel, cos_line) == (LINE_B,)
    assert prov.lines_of_offset(prov.links(LINE_A).offsets[0]) == (LINE_A,)


def test_output_code_kernel_call_maps_to_the_lines_it_computes(frame, lines):
    LINE_A, LINE_B = lines  # a = sin(x) * 2 ; b = cos(y) + a
    prov = Provenance(frame)
    out = prov.output_line_lines()
    call_lines = [n for n, t in enumerate(frame.backend.output_code.source.splitlines(), 1)
                  if frame.backend.kernels[0].name + "(" in t]
    assert call_lines and set(out[call_lines[0]]) == {LINE_A, LINE_B}


def test_reduction_accumulator_and_store_lines_belong_to_their_buffers():
    import torch

    import toycompiler

    def softmax_rows(x):
        return torch.softmax(x, dim=-1)

    frame = toycompiler.explain(softmax_rows, backend="cpp")(torch.randn(4, 40)).frames[0]
    (kernel,) = frame.backend.kernels
    owners = Provenance(frame).kernel_line_buffers(kernel)
    src = kernel.source.splitlines()
    update = next(i for i, t in enumerate(src, 1) if "std::max(acc" in t)  # the amax accumulator's update
    nan = next(i for i, t in enumerate(src, 1) if "_nan ? NAN" in t)  # and the row max made NaN if one element is
    # exp(x - max) is stored into the output on the summing pass and read back by the last one (exp once
    # per element); the last store is the softmax itself
    *kept, store = [i for i, t in enumerate(src, 1) if t.strip().startswith("out_ptr0[")]
    amax = next(b.name for b in frame.backend.ir.buffers if "amax" in b.origins)
    exp = next(b.name for b in frame.backend.ir.buffers if "exp" in b.origins)
    assert owners[update] == owners[nan] == amax and owners[store] == kernel.nodes[-1]
    assert all(owners[i] == exp for i in kept)
