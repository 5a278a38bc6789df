"""A notebook executed headless (as nbconvert --execute does) exports to HTML that shows the views with no kernel.

No environment variable: a headless run executes cells with ``allow_stdin=False``,
so the views leave out the widget view, whose saved state would make nbconvert
draw a script (blank offline) instead of the static HTML beside it.
"""

import os
import re

import nbformat
import pytest

pytestmark = pytest.mark.slow

CELLS = ["%load_ext toycompiler.widgets\nimport torch",
         "%%compile --backend cpp --no-timing\ndef f(x):\n    return torch.sin(x) * 2\nf(torch.randn(8))"]


def test_executed_notebook_exports_stage_view_as_static_html(tmp_path, monkeypatch):
    from nbclient import NotebookClient
    from nbconvert import HTMLExporter

    monkeypatch.delenv("TOYCOMPILER_STATIC", raising=False)
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in CELLS])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    NotebookClient(nb, timeout=120, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}},
                   env=dict(os.environ)).execute()
    data = nb.cells[1].outputs[-1]["data"]
    assert set(data) == {"text/plain", "text/html"}
    assert data["text/plain"].startswith("f: 1 compilation")
    body, _ = HTMLExporter().from_notebook_node(nb)
    assert "widget-view+json" not in body
    # the view is real markup in the page, not JSON inside a script
    assert re.search(r'<div class="tc-stageview', body) and body.count("<svg") >= 2 and "cpp_sin_mul_0" in body


def test_live_widget_bundle_also_carries_static_html(monkeypatch):
    from toycompiler import widgets

    class Kernel:
        _allow_stdin = True  # a person ran the cell

    class Shell:
        kernel = Kernel()

    monkeypatch.setattr("IPython.get_ipython", lambda: Shell())
    view = widgets.TimingView.__new__(widgets.TimingView)
    monkeypatch.setattr(type(view), "text", lambda self: "t")
    monkeypatch.setattr(type(view), "html", lambda self: '<div class="tc-root">static</div>')
    monkeypatch.setattr(type(view), "widget", lambda self: type("W", (), {"_repr_mimebundle_": lambda s: (
        {"text/plain": "w", "application/vnd.jupyter.widget-view+json": {"model_id": "m"}}, {})})())
    bundle = view._repr_mimebundle_()
    assert bundle["text/html"] == '<div class="tc-root">static</div>'
    assert "application/vnd.jupyter.widget-view+json" in bundle
    Kernel._allow_stdin = False  # a headless runner: no widget view at all
    assert "application/vnd.jupyter.widget-view+json" not in view._repr_mimebundle_()
