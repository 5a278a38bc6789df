"""Graph-break cards (dedup, hints, resumes-at) and the recompile matrix."""

import dataclasses

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
    assert card.filename.endswith("test_explorer_and_recompiles.py") and card.line == noisy.__code__.co_firstlineno + 2
    assert "noisy.<resume at" in card.resumes_at and str(card.line) in card.resumes_at  # never empty
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
