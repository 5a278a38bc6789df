"""Graph-break cards (dedup, hints, resumes-at) and the recompile matrix."""

import dataclasses
import re
from html import escape

import torch
from toycompiler.widgets import Explorer, GuardsView, explore, recompile_matrix
from toycompiler.widgets.explorer import break_cards, hint_for

import toycompiler
from toycompiler.artifacts import GraphBreak, Report


def noisy(x):
    y = x.sin()
    print("noisy")
    return y * 2


def scaled(x):
    return torch.cos(x) * 3


def _break(kind, reason, line=3, source="s"):
    return GraphBreak(reason, "f.py", line, source, 10, "CALL", kind)


def test_duplicate_breaks_are_counted_not_repeated():
    report = toycompiler.explain(noisy, backend="cpp")(torch.randn(4))
    frame = report.frames[0]
    again = dataclasses.replace(frame, label="[0/1]")
    cards = break_cards(Report((frame, again)))
    assert len(cards) == 1 and cards[0].count == 2 and cards[0].frames == ("[0/0]", "[0/1]")
    text = Explorer(Report((frame, again))).text()
    assert "2x [print]" in text and text.count("hint:") == 1


def test_card_has_kind_span_resume_and_hint():
    ex = explore(noisy, torch.randn(4), backend="cpp")
    (card,) = ex.cards
    assert card.kind == "print" and card.source == 'print("noisy")'
    assert card.line == noisy.__code__.co_firstlineno + 2
    assert card.at.endswith(f"test_explorer_and_recompiles.py:{card.line}")
    (resume,) = card.resumes  # the code after the print runs in a resume function, compiled as its own frame
    assert resume.name == f"noisy.<resume at {resume.offset}>" and resume.line == card.line
    assert resume.frames and resume.graph_lines == (card.line + 1,)  # `return y * 2`
    assert resume.name in card.resumes_at and f"line {card.line}" in card.resumes_at
    assert "move it out" in card.hint.lower()
    assert "graph break (print)" in ex.html()


def test_hints_per_kind():
    assert "torch.where" in hint_for(_break("item", "x.item() used in a condition"))
    assert "torch.where" in hint_for(_break("data-dependent-branch", "branch on tensor value"))
    assert "Stay in tensors" in hint_for(_break("unsupported", "call to .tolist()"))
    assert "print" in hint_for(_break("print", "call to print"))
    assert hint_for(_break("something-new", "??"))  # unknown kinds still get a hint


def test_explorer_rerun_shows_the_new_graph_count():
    ex = explore(noisy, torch.randn(4), backend="cpp")
    assert ex.report.graph_break_count == 1
    fixed = ex.source_text().replace('    print("noisy")\n', "")
    again = ex.rerun(fixed)
    assert again.report.graph_break_count == 0 and again.report.graph_count == 1
    assert "graphs: 1 (1 with ops), graph breaks: 0" in again.summary()


def test_recompile_matrix_names_the_failing_guard_with_expected_and_actual():
    f = toycompiler.compile(scaled, backend="cpp")
    a, b, c = torch.randn(4), torch.randn(6), torch.randn(4, dtype=torch.float64)
    f(a)
    f(b)
    m = recompile_matrix(f, [(a,), (b,), (c,)])
    assert len(m.matrix.entries) == 2 and m.matrix.entries[1].endswith("/1]")
    row0, row1 = m.matrix.cells
    assert row0[0].passed and not row0[1].passed
    assert row0[1].failure.expr == "x.shape == (4,)" and row0[1].failure.actual == "(6,)"
    assert row1[1].passed and m.matrix.used == (row0[0].entry, row1[1].entry, None)
    assert all(str(cell) for row in m.matrix.cells for cell in row)  # never an empty reason
    assert "x.dtype == torch.float32" in str(row0[2]) and "float64" in str(row0[2])
    html = m.html()
    assert "expected (4,), got <b>(6,)</b>" in html and "<script" not in html


def test_guards_view_shows_each_entry_and_why_it_was_compiled():
    f = toycompiler.compile(scaled, backend="cpp")
    f(torch.randn(4))
    f(torch.randn(6))
    rep = Report(tuple(f.compiled_frames), (), tuple(f.cache.failures))
    text = GuardsView(rep).text()
    assert "def check(x):" in text
    label = f.compiled_frames[1].label
    assert f"{label} scaled" in text and "guard failed: x.shape == (4,)" in text


def test_recompile_matrix_reuses_the_dynamic_entry_for_a_new_size():
    f = toycompiler.compile(scaled, backend="cpp")
    f(torch.randn(4))
    f(torch.randn(6))  # a size change: the second entry is compiled with a symbolic size
    m = recompile_matrix(f, [(torch.randn(9),)])
    (a,), (b,) = m.matrix.cells
    assert not a.passed and a.failure.actual == "(9,)"
    assert b.passed and m.matrix.used == (b.entry,)


def two_graphs(x):
    a = torch.sin(x) * 2
    print("between")
    b = torch.cos(a)
    return b + 1


def test_explorer_shades_each_graph_and_shows_the_code_around_the_break():
    ex = explore(two_graphs, torch.randn(4), backend="cpp")
    first = two_graphs.__code__.co_firstlineno
    (before, after) = [f for f in ex.report.frames if f.graph is not None and f.graph.op_count]
    colours = ex.colours()
    assert colours[before.label] != colours[after.label]
    html = ex.html()
    for label, line in ((before.label, first + 1), (after.label, first + 3)):  # each graph's line, its colour
        row = f'class="tc-row tc-l{line} tc-shade" title="graph {label}" style="'
        assert re.search(re.escape(row) + r"[^\"]*;background:" + re.escape(colours[label]), html)
    (resume,) = ex.cards[0].resumes
    assert resume.frames == (after.label,) and resume.graph_lines == (first + 3, first + 4)
    name = escape(resume.name)
    assert f"transformed bytecode {before.label}" in html and f"resume function {name}" in html
    assert f"the compiled graph {before.label}" in html  # the call of the graph, annotated
    assert f"resume function {name} -&gt; {after.label}" in html  # the call of the resume function
    assert f"continues here: offset {resume.offset} of two_graphs" in html  # where the resume's jump lands
    assert "skipped: they ran before the break" in html
