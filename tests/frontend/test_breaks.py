"""Graph breaks: the graph so far is compiled, the untraceable instruction runs as Python, a resume
function continues. Every case is checked against eager: results, side effects and their order."""

import pytest
import torch

import toycompiler
from toycompiler.testing import assert_same


def line_of(fn, text):
    """Line number of the first source line of ``fn`` containing ``text``."""
    import inspect

    lines, first = inspect.getsourcelines(fn)
    return first + next(i for i, line in enumerate(lines) if text in line)


def run_both(fn, *args, backend="eager", allow_fallback=None):
    """Compile ``fn``, check it against eager with ``assert_same``; return the compiled function."""
    compiled = toycompiler.compile(fn, backend=backend)
    assert_same(fn, *args, compiled=compiled, allow_fallback=allow_fallback)
    return compiled


def interleaved(x, log):
    log.append("start")
    y = torch.sin(x) + 1
    log.append(("after sin", y.shape[0]))
    z = y * y
    print("z computed")
    log.append("end")
    return z.sum()


def test_side_effects_run_once_in_order(capsys):
    x = torch.randn(8)
    eager_log, compiled_log = [], []
    expected = interleaved(x, eager_log)
    eager_out = capsys.readouterr().out
    compiled = toycompiler.compile(interleaved, backend="eager")
    actual = compiled(x, compiled_log)
    torch.testing.assert_close(actual, expected)
    assert compiled_log == eager_log == ["start", ("after sin", 8), "end"]
    assert capsys.readouterr().out == eager_out == "z computed\n"
    compiled_log.clear()
    compiled(x, compiled_log)  # cached now: the same effects, once each
    assert compiled_log == eager_log
    assert capsys.readouterr().out == "z computed\n"
    report = toycompiler.explain(interleaved, backend="eager")(x, [])
    assert report.graph_break_count == 4
    assert report.graph_count == 3  # sin+add | mul | sum; frames with no tensor work have no graph
    assert [b.line for b in report.breaks] == [line_of(interleaved, t) for t in
                                               ('"start"', '"after sin"', "print(", '"end"')]


def item_then_scale(x):
    s = x.sum().item()
    return x * s + 1


def numpy_then_more(x):
    y = x * 2
    n = y.numpy()  # noqa: F841  (the break is the point)
    return y + 1


def tolist_len(x):
    vals = (x + 1).tolist()
    return x * len(vals)


@pytest.mark.parametrize("fn, kind, text", [
    (item_then_scale, "item", ".item()"),
    (numpy_then_more, "numpy", ".numpy()"),
    (tolist_len, "tolist", ".tolist()"),
], ids=lambda v: getattr(v, "__name__", str(v)))
def test_data_needing_calls_break_and_resume(fn, kind, text):
    x = torch.randn(5)
    run_both(fn, x)
    report = toycompiler.explain(fn, backend="eager")(x)
    brk = report.breaks[0]
    assert brk.kind == kind and brk.line == line_of(fn, text) and text in brk.source
    assert brk.filename == __file__ and brk.resumes_at and brk.no_resume_reason is None
    frame = report.frames[0]
    assert frame.transformed_bytecode is not None and len(frame.resume_functions) == 1
    assert "__resume_at_" in str(frame.transformed_bytecode)


def index_with_numpy(x, i):
    return x[i] * 2


def test_a_tensor_indexed_by_a_numpy_array_breaks_and_is_right():
    """A numpy array is no traced value: the index is a graph break, run by Python (the graph once ran with the
    array's repr in its code and raised ``NameError`` when called)."""
    import numpy as np

    x, i = torch.randn(5), np.array([0, 2, 2])
    torch.testing.assert_close(toycompiler.compile(index_with_numpy, backend="eager")(x, i), x[i] * 2)
    report = toycompiler.explain(index_with_numpy, backend="eager")(x, i)
    assert report.graph_break_count == 1 and "numpy array" in report.breaks[0].reason


def branch(x):
    y = x.cos()
    if y.sum() > 2.5:
        return y * 10
    return y - 10


def test_branch_on_tensor_makes_two_resume_functions():
    compiled = toycompiler.compile(branch, backend="eager")
    for x in (torch.zeros(4), torch.full((4,), 3.0)):  # sum(cos) = 4 then < 0
        assert_same(branch, x, compiled=compiled)
    report = toycompiler.explain(branch, backend="eager")(torch.zeros(4))
    brk = report.breaks[0]
    assert brk.kind == "data-dependent-branch" and brk.line == line_of(branch, "if y.sum()")
    assert len(brk.resumes_at) == 2 and len(report.frames[0].resume_functions) == 2
    assert report.graph_count == 2 and report.ops_per_graph == (3, 1)  # cos, sum, gt | mul


def explicit(x):
    a = x + 1
    toycompiler.graph_break()
    return a * 2


def test_explicit_graph_break():
    run_both(explicit, torch.randn(3))
    report = toycompiler.explain(explicit, backend="eager")(torch.randn(3))
    assert report.graph_count == 2 and report.graph_break_count == 1
    brk = report.breaks[0]
    assert brk.kind == "explicit" and brk.line == line_of(explicit, "graph_break()")
    assert brk.frame == "[0/0]" and report.frames[1].label.endswith("/0]")


def test_fullgraph_names_reason_and_line():
    compiled = toycompiler.compile(item_then_scale, backend="eager", fullgraph=True)
    with pytest.raises(toycompiler.CompileError) as info:
        compiled(torch.randn(3))
    msg = str(info.value)
    assert f"{__file__}:{line_of(item_then_scale, '.item()')}" in msg and "s = x.sum().item()" in msg
    assert "Tensor.item()" in msg


def float_inside_call(x):
    return torch.add(x * 2, float(x.sum()))  # the stack below the break holds NULL, torch.add, x * 2


def print_with_keywords(x):
    y = x.relu()
    print("y:", y.sum(), sep="|", end="!\n")
    return y


def breaks_twice(x, log):
    a = x + 1
    log.append(a.sum().item())
    b = a * a
    log.append(b.sum().item())
    return b - a


def helper_prints(t):
    print("helper sees", t.shape[0])
    return t * 3


def calls_helper(x):
    y = x.exp()
    z = helper_prints(y)
    return z + y


def test_stack_below_the_break_and_keyword_calls(capsys):
    x = torch.randn(6)
    run_both(float_inside_call, x)
    run_both(print_with_keywords, x)
    out = capsys.readouterr().out
    assert out.count("y:|") == 2 and out.count("!\n") == 2


def test_resume_function_breaks_again_and_is_cached():
    x = torch.randn(4)
    eager_log, log, log2 = [], [], []
    expected = breaks_twice(x, eager_log)
    compiled = toycompiler.compile(breaks_twice, backend="eager")
    torch.testing.assert_close(compiled(x, log), expected)
    assert log == eager_log
    torch.testing.assert_close(compiled(x, log), expected)  # log is longer now: no guard read its length
    # .item() and log.append each break: f and four resume functions, each compiled once
    assert [f.label for f in compiled.compiled_frames] == [f"[{i}/0]" for i in range(5)]
    assert not compiled.all_misses
    torch.testing.assert_close(compiled(x, log2), expected)  # a fresh list (log2.append is guarded by identity)
    assert log2 == eager_log
    labels = [f.label for f in compiled.compiled_frames]
    assert labels[:5] == [f"[{i}/0]" for i in range(5)] and len(labels) == len(set(labels))
    report = toycompiler.explain(breaks_twice, backend="eager")(x, [])
    assert report.graph_break_count == 4 and report.graph_count == 3
    assert [b.kind for b in report.breaks] == ["item", "unsupported-call"] * 2


def test_break_inside_called_function_breaks_at_the_call_site(capsys):
    x = torch.randn(3)
    run_both(calls_helper, x)
    assert capsys.readouterr().out == "helper sees 3\nhelper sees 3\n"
    report = toycompiler.explain(calls_helper, backend="eager")(x)
    assert report.breaks[0].line == line_of(calls_helper, "helper_prints(y)")


def in_try(x):
    try:
        print("inside try")
        y = x + 1
    except RuntimeError:
        y = x
    return y


def test_break_in_try_block_runs_the_frame_eagerly_with_a_reason(capsys):
    run_both(in_try, torch.randn(2), allow_fallback="a break inside a try block: the frame runs eagerly")
    report = toycompiler.explain(in_try, backend="eager")(torch.randn(2))
    assert "try/with" in report.breaks[0].no_resume_reason
    assert any("ran eagerly" in r for r in report.fallback_reasons)


def sin_print_add(x):
    y = torch.sin(x) * 2
    print("between graphs")
    return y + x


def test_break_with_cpp_backend():
    x = torch.randn(16)
    run_both(sin_print_add, x, backend="cpp")
    report = toycompiler.explain(sin_print_add, backend="cpp")(x)
    assert report.graph_count == 2 and all(f.backend.kernels for f in report.frames if f.backend)


def test_graph_nodes_carry_provenance():
    report = toycompiler.explain(branch, backend="eager")(torch.zeros(4))
    nodes = [n for n in report.graphs[0].nodes if n.op == "call_function" or n.op == "call_method"]
    assert nodes and all(n.line is not None and n.offset is not None for n in nodes)


class Box:
    pass


def store_attr(x, box):
    y = x * 2
    box.value = y  # STORE_ATTR: not traced, so it runs as Python between two graphs
    return y + box.value


def test_break_at_an_untraced_opcode_runs_that_instruction_for_real():
    box, eager_box = Box(), Box()
    x = torch.randn(3)
    expected = store_attr(x, eager_box)
    compiled = toycompiler.compile(store_attr, backend="eager")
    torch.testing.assert_close(compiled(x, box), expected)
    torch.testing.assert_close(box.value, eager_box.value)
    report = toycompiler.explain(store_attr, backend="eager")(x, Box())
    assert report.breaks[0].opname == "STORE_ATTR" and report.breaks[0].no_resume_reason is None


def maybe_unbound(x, flag):
    if flag:
        y = x + 1
    print("between")
    if flag:
        return y
    return x * 3


def varargs(*args, scale=2):
    total = args[0] * scale
    print("n =", len(args))
    return total + args[1]


class Printing(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)

    def forward(self, x):
        h = torch.relu(x) + 1
        print("forward")
        return h * 2


def test_unbound_locals_varargs_and_modules():
    x = torch.randn(4)
    for flag in (True, False):
        torch.testing.assert_close(toycompiler.compile(maybe_unbound, backend="eager")(x, flag),
                                   maybe_unbound(x, flag))
    run_both(varargs, x, x + 1)
    m = Printing()
    torch.testing.assert_close(toycompiler.compile(m, backend="eager")(x), m(x))


def torch_graph_break(x):
    y = x.cos()
    torch._dynamo.graph_break()
    return y + 1


def test_explain_reports_counts_reasons_guards_and_stage_times():
    run_both(torch_graph_break, torch.randn(3))
    report = toycompiler.explain(torch_graph_break, backend="eager")(torch.randn(3))
    assert (report.graph_count, report.graph_break_count, report.ops_per_graph) == (2, 1, (1, 1))
    assert report.breaks[0].kind == "explicit"
    text = str(report)
    line = line_of(torch_graph_break, "torch._dynamo.graph_break()")
    assert f"break [0/0]: {__file__}:{line}: " in text and "torch._dynamo.graph_break()" in text
    assert "isinstance(x, Tensor)" in text and "== transformed bytecode" in text and "== resume function" in text
    assert {"translate", "guards", "resume"} <= set(report.stage_times)


class _Scaler:
    k = 3.0

    def scale(self, x):
        return x.sin() * self.k


def test_explain_of_a_compiled_method_calls_it_with_its_self():
    """``explain(compile(obj.method))`` compiles the method afresh, still bound: ``self`` is passed."""
    compiled = toycompiler.compile(_Scaler().scale, backend="eager")
    report = toycompiler.explain(compiled)(torch.ones(2))
    assert report.graph_count == 1 and "sin" in str(report.frames[0].graph)


def doubling_loop(x):
    n = 0
    while x.sum() < 10:
        x = x * 2
        n += 1
    return x, n


def test_loop_on_tensor_condition_reuses_one_cache_per_resume_function():
    compiled = toycompiler.compile(doubling_loop, backend="eager")
    for v in (1.0, 0.5, 3.0, 1.0):
        x = torch.full((3,), v)
        assert_same(doubling_loop, x, compiled=compiled)
    labels = [f.label for f in compiled.compiled_frames]
    assert len(labels) == len(set(labels))  # each resume function has one cache, entries [k/0], [k/1], ...
    two = [m for m in compiled.all_misses if len(m.failures) == 2]  # a resume function's third entry
    frame = two[0].failures[0].entry.split("/")[0]
    assert [f.entry for f in two[0].failures] == [f"{frame}/0]", f"{frame}/1]"]
    assert all(f.expr.startswith("n == ") for f in two[0].failures)  # the loop counter, specialised


def star_call(x):
    y = x.abs()
    parts = ("sum", y.sum())
    print(*parts)  # CALL_FUNCTION_EX
    return y / 2


def test_star_args_call_breaks_and_resumes(capsys):
    run_both(star_call, torch.ones(2))
    out = capsys.readouterr().out.splitlines()
    assert out[0] == out[1] == "sum tensor(2.)"
    report = toycompiler.explain(star_call, backend="eager")(torch.ones(2))
    assert report.breaks[0].line == line_of(star_call, "print(*parts)") and report.breaks[0].resumes_at


def raises_at_the_end(x):
    y = x + 1
    raise ValueError(f"bad {y.shape}")  # RAISE_VARARGS, the code's last instruction


def test_a_break_at_the_last_instruction_runs_the_rest_eagerly_with_its_reason(recwarn):
    """The graph before the ``raise`` is compiled; the code after it is only the ``raise``, run eagerly and
    said so (no resume function is compiled: it once failed with ``KeyError: None``, in a warning)."""
    compiled = toycompiler.compile(raises_at_the_end, backend="eager")
    with pytest.raises(ValueError, match=r"bad torch.Size\(\[2\]\)"):
        compiled(torch.ones(2))
    assert not [w for w in recwarn if "toycompiler" in str(w.message)]
    where = f"{__file__}:{line_of(raises_at_the_end, 'raise ValueError')}"
    assert compiled.fallback_reasons() == [f"[1/0] {where}: frame ran eagerly: no code follows the break at the last "
                                           "instruction (RAISE_VARARGS)"]
