"""At a graph break, the graph and frame state are those from before the breaking instruction."""

import torch

from toycompiler.config import config
from toycompiler.frontend.containers import ListVariable
from toycompiler.frontend.translator import InstructionTranslator
from toycompiler.pipeline import read_source


def mutate_then_print(xs, t):
    xs.append(t * 2)
    t.add_(1)
    print(t)
    return t


def caller(x):
    y = x * 3
    acc = [y]
    mutate_then_print(acc, x)
    return acc


def _translate(fn, *args):
    tracer = InstructionTranslator(fn, args, {}, read_source(fn), config)
    return tracer, tracer.run()


def test_break_inside_a_callee_undoes_its_nodes_and_changes():
    tracer, result = _translate(caller, torch.randn(3))
    brk = result.artifact.graph_break
    assert brk is not None and brk.kind == "print" and "mutate_then_print" in brk.reason
    assert brk.opname == "CALL"
    targets = [n.target for n in result.graph_module.graph.nodes if n.op == "call_method"]
    assert "add_" not in targets, "the callee's in-place op must not stay in the partial graph"
    acc = tracer.state.locals["acc"]
    assert isinstance(acc, ListVariable) and len(acc.items) == 1, (
        "the callee's append must be undone"
    )
    assert tracer.instructions[tracer.state.ip].offset == brk.offset
    # the stack holds what CALL would have consumed: the callable and its arguments
    assert [v.describe() for v in tracer.state.stack][-2:] == [
        acc.describe(),
        tracer.state.locals["x"].describe(),
    ]


def test_break_at_top_level_keeps_the_work_before_it():
    def f(x):
        x.mul_(2)
        y = x + 1
        print(y)
        return y

    tracer, result = _translate(f, torch.randn(3))
    nodes = [
        n.target
        for n in result.graph_module.graph.nodes
        if n.op != "placeholder" and n.op != "output"
    ]
    assert "mul_" in nodes  # kept: it ran before the break, and it changes the input
    assert tracer.state.locals["y"].describe().startswith("T[3]")


def test_a_translator_bug_is_a_graph_break_not_a_crash(monkeypatch):
    import toycompiler
    from toycompiler.frontend import translator

    def broken(self, inst):
        raise KeyError("oops")

    monkeypatch.setattr(translator.InstructionTranslator, "BINARY_OP", broken)

    def f(x):
        return x * 2

    x = torch.randn(3)
    torch.testing.assert_close(toycompiler.compile(f, backend="eager")(x), x * 2)
    (brk,) = toycompiler.explain(f, backend="eager")(x).breaks
    assert brk.kind == "internal-error" and "KeyError" in brk.reason


def test_unrolling_is_bounded(monkeypatch):
    import toycompiler
    from toycompiler.frontend import translator

    monkeypatch.setattr(translator, "MAX_INSTRUCTIONS", 200)

    def f(x):
        for i in range(1000):
            x = x + i
        return x

    x = torch.randn(3)
    torch.testing.assert_close(toycompiler.compile(f, backend="eager")(x), f(x))
    # the frame breaks once; the resume function that continues the loop is a frame of its own
    brk = toycompiler.explain(f, backend="eager")(x).breaks[0]
    assert "200 instructions" in brk.reason
