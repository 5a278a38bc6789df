"""Guards: what a cache entry depends on, why a call missed every entry, and the recompile limit."""

import logging
import warnings

import pytest
import torch

import toycompiler
from toycompiler.frontend.guards import device_guard

SCALE = 2.0


def uses_global(x):
    return x * SCALE


def uses_flag(x, flag):
    if flag:
        return x + 1
    return x - 1


def add(x, y):
    return x + y


def test_guards_cover_tensor_properties_and_read_as_python():
    f = toycompiler.compile(add, backend="eager", dynamic=False)
    f(torch.randn(3, 4), torch.randn(3, 4))
    exprs = [g.expr for g in f.cache.entries[0].artifact.guards.guards]
    for expected in ("isinstance(x, Tensor)", "x.dtype == torch.float32", "x.is_cpu", "x.shape == (3, 4)",
                     "x.stride() == (4, 1)", "not x.requires_grad"):
        assert expected in exprs
    code = f.cache.entries[0].artifact.guards.code
    assert code.startswith("def check(x, y):") and code.count(" and ") == 1  # listed one by one, checked in C++:
    assert "and ___check_tensors(x, y)" in code and "x.shape" not in code
    assert device_guard("t", torch.device("cuda", 1)) == "t.get_device() == 1"


@pytest.mark.parametrize("change, expr, expected, actual", [
    (lambda x: x.double(), "x.dtype == torch.float32", "torch.float32", "torch.float64"),
    (lambda x: x.t().contiguous().t(), "x.stride() == (4, 1)", "(4, 1)", "(1, 3)"),
    (lambda x: x.requires_grad_(), "not x.requires_grad", "False", "True"),
    (lambda x: x[:2], "x.shape == (3, 4)", "(3, 4)", "(2, 4)"),
], ids=["dtype", "strides", "requires_grad", "shape"])
def test_miss_records_the_failing_guard_with_expected_and_actual(change, expr, expected, actual):
    f = toycompiler.compile(add, backend="eager", dynamic=False)
    x, y = torch.randn(3, 4), torch.randn(3, 4)
    f(x, y)
    x2 = change(torch.randn(3, 4))
    y2 = torch.randn(*x2.shape, dtype=x2.dtype)
    torch.testing.assert_close(f(x2, y2), add(x2, y2))
    (failure,) = f.cache.misses[0].failures
    assert (failure.entry, failure.expr, failure.expected, failure.actual) == ("[0/0]", expr, expected, actual)
    assert f.compiled_frames[1].recompile_reason == failure


def test_global_constant_and_flag_guards():
    global SCALE
    f = toycompiler.compile(uses_global, backend="eager")
    x = torch.randn(3)
    f(x)
    SCALE = 3.0
    try:
        torch.testing.assert_close(f(x), x * 3.0)
    finally:
        SCALE = 2.0
    failure = f.cache.misses[0].failures[0]
    assert failure.expr == "G['SCALE'] == 2.0" and failure.actual == "3.0"
    g = toycompiler.compile(uses_flag, backend="eager")
    torch.testing.assert_close(g(x, True), x + 1)
    torch.testing.assert_close(g(x, False), x - 1)
    assert g.cache.misses[0].failures[0].expr == "flag == True"


def test_recompile_matrix_has_a_reason_for_every_entry_on_every_miss():
    f = toycompiler.compile(add, backend="eager", dynamic=False)
    for dtype in (torch.float32, torch.float64, torch.int64):
        x = torch.ones(2, dtype=dtype)
        f(x, x)
    assert [len(m.failures) for m in f.cache.misses] == [1, 2]
    second = f.cache.misses[1]
    assert [fl.entry for fl in second.failures] == ["[0/0]", "[0/1]"]
    assert all(fl.expr and fl.expected and fl.actual for m in f.cache.misses for fl in m.failures)
    assert second.failures[1].expected == "torch.float64" and second.failures[1].actual == "torch.int64"
    assert second.outcome == "compiled [0/2]"
    report = toycompiler.explain(add, backend="eager")(torch.ones(2), torch.ones(2))
    assert report.misses == ()


def test_recompile_limit_then_eager_with_warning():
    f = toycompiler.compile(uses_flag, backend="eager")
    x = torch.randn(2)
    with toycompiler.config.patch(recompile_limit=3):
        for flag in range(3):
            f(x, flag)
        with pytest.warns(UserWarning, match="recompile_limit"):
            out = f(x, 7)
        torch.testing.assert_close(out, x + 1)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            torch.testing.assert_close(f(x, 0), x - 1)  # an existing entry still serves
            torch.testing.assert_close(f(x, 9), x + 1)  # new values run eagerly, no new warning
    assert len(f.cache.entries) == 3 and f.cache.gave_up
    assert "recompile limit (3)" in f.cache.misses[-1].outcome


class _Records(logging.Handler):
    """Collects log records (like pytest's caplog, which ``-p no:logging`` turns off)."""

    def __init__(self):
        super().__init__(logging.INFO)
        self.records = []

    def emit(self, record):
        self.records.append(record)


def test_logs_channels():
    caplog = _Records()
    logging.getLogger("toycompiler").addHandler(caplog)
    toycompiler.set_logs(graph_breaks=True, guards=True, recompiles=True, bytecode=True, graph_code=True)
    try:
        def breaks(x):
            y = x + 1
            toycompiler.graph_break()
            return y * 2

        f = toycompiler.compile(breaks, backend="eager", dynamic=False)
        f(torch.randn(2))
        f(torch.randn(2).double())
    finally:
        toycompiler.set_logs(all=False)
        logging.getLogger("toycompiler").removeHandler(caplog)
    by_channel = {}
    for rec in caplog.records:
        by_channel.setdefault(rec.name, []).append(rec.getMessage())
    assert set(by_channel) == {f"toycompiler.{c}" for c in
                               ("graph_breaks", "guards", "recompiles", "bytecode", "graph_code")}
    assert "<locals>.breaks: [0/0] " in by_channel["toycompiler.graph_breaks"][0]
    assert "graph_break()" in by_channel["toycompiler.graph_breaks"][0]
    assert "x.dtype == torch.float32" in by_channel["toycompiler.recompiles"][0]
    assert "__resume_at_" in by_channel["toycompiler.bytecode"][0]
    assert "def forward" in by_channel["toycompiler.graph_code"][0]
    with pytest.raises(ValueError, match="unknown log channel"):
        toycompiler.set_logs(graphs=True)


def test_logs_from_environment_string():
    from toycompiler import logs

    logs.set_logs_from_env("graph_breaks, +guards")
    try:
        assert logs.enabled["graph_breaks"] and logs.enabled["guards"] and not logs.enabled["bytecode"]
    finally:
        toycompiler.set_logs(all=False)


def test_recompile_matrix_in_explain_report():
    from toycompiler.artifacts import Report

    assert toycompiler.explain(add, backend="eager")(torch.ones(2), torch.ones(2)).recompile_matrix == ""
    f = toycompiler.compile(add, backend="eager", dynamic=False)
    for dtype in (torch.float32, torch.float64, torch.int32):
        f(torch.ones(2, dtype=dtype), torch.ones(2, dtype=dtype))
    matrix = Report(tuple(f.compiled_frames), misses=tuple(f.all_misses)).recompile_matrix.splitlines()
    assert len(matrix) == 2
    assert matrix[1].count("|") == 1 and "[0/1] x.dtype == torch.float64 (got torch.int32)" in matrix[1]
    assert matrix[1].endswith("=> compiled [0/2]")


def test_toycompiler_logs_environment_variable(monkeypatch):
    from toycompiler import logs

    caplog = _Records()
    logging.getLogger("toycompiler").addHandler(caplog)
    monkeypatch.setenv("TOYCOMPILER_LOGS", "graph_breaks")
    logs.set_logs_from_env()
    try:
        def f(x):
            y = x + 1
            print("side effect")
            return y

        toycompiler.compile(f, backend="eager")(torch.ones(2))
    finally:
        toycompiler.set_logs(all=False)
        logging.getLogger("toycompiler").removeHandler(caplog)
    (message,) = [r.getMessage() for r in caplog.records if r.name == "toycompiler.graph_breaks"]
    assert "f: [0/0]" in message and "call to print" in message and "print(\"side effect\")" in message


def test_a_deep_stack_sees_weights_changed_in_place_and_layers_or_parameters_replaced():
    """Weights are graph inputs, read from ``self._modules['3']._parameters['weight']`` on every call:
    changed in place, the new values are used with no guard involved; replaced by a parameter like the
    old one, the new one is read (no new code needed, as in torch.compile); replaced by one that differs,
    or a layer replaced, a guard fails and the stack is compiled again."""
    from torch import nn

    from toycompiler.testing import assert_same

    torch.manual_seed(0)
    model = nn.Sequential(*[nn.Linear(8, 8) for _ in range(6)])
    compiled = toycompiler.compile(model, backend="cpp")
    cache = compiled._compiled_forward.cache
    x = torch.randn(2, 8)
    with torch.no_grad():
        assert_same(model, x, compiled=compiled)
        model[3].weight.mul_(2)
        assert_same(model, x, compiled=compiled)
        model[3].weight = nn.Parameter(torch.randn(8, 8))
        assert_same(model, x, compiled=compiled)
        assert len(cache.entries) == 1 and not cache.misses
        model[3].weight = nn.Parameter(torch.randn(8, 8), requires_grad=False)
        assert_same(model, x, compiled=compiled)
        assert len(cache.entries) == 2
        assert cache.misses[-1].failures[0].expr == "self._modules['3']._parameters['weight'].requires_grad"
        model[3] = nn.Linear(8, 8)
        assert_same(model, x, compiled=compiled)
        assert len(cache.entries) == 3
        assert cache.misses[-1].failures[-1].expr.startswith("self._modules['3'] is ___obj_")
        for name, shape in (("weight", (4, 8)), ("bias", (4,))):  # same objects, other shapes: layer 3 now 8 -> 4
            getattr(model[3], name).data = torch.randn(shape)
        model[4].weight.data = torch.randn(8, 4)
        assert_same(model, x, compiled=compiled)
        assert len(cache.entries) == 4
        assert cache.misses[-1].failures[-1].expr == "self._modules['3']._parameters['weight'].shape == (8, 8)"


WEIGHTS = {"small": torch.ones(3), "other": torch.zeros(5, 5)}


def uses_one_item(x):
    return x * WEIGHTS["small"]


def test_only_the_tensors_the_graph_reads_are_its_inputs():
    """Reading one item of a dict makes every tensor in it an input while tracing; those the graph never reads
    are pruned, as Dynamo prunes them, so the backend sees only ``x`` and ``WEIGHTS['small']`` (an unread
    CPU tensor beside GPU ones made the Triton backend refuse the graph). The guards on the dict stay."""
    seen = []

    def backend(gm, example_inputs):
        seen.append([n.target for n in gm.graph.nodes if n.op == "placeholder"])
        return gm.forward

    compiled = toycompiler.compile(uses_one_item, backend=backend)
    x = torch.randn(3)
    torch.testing.assert_close(compiled(x), x)
    assert len(seen[0]) == 2 and "small" in seen[0][1] and not any("other" in name for name in seen[0]), seen
    WEIGHTS["small"] = torch.full((3,), 2.0)  # read from the dict again on every call
    torch.testing.assert_close(compiled(x), 2 * x)
    assert len(seen) == 1
