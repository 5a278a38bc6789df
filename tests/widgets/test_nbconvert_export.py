"""A notebook run with live widgets off exports with nbconvert to HTML that shows the views with no kernel."""

import os

import nbformat
import pytest

pytestmark = pytest.mark.slow

CELLS = ["%load_ext toycompiler.widgets\nimport torch",
         "%%compile --backend cpp --no-timing\ndef f(x):\n    return torch.sin(x) * 2\nf(torch.randn(8))"]


def test_executed_notebook_exports_stage_view_as_static_html(tmp_path, monkeypatch):
    from nbclient import NotebookClient
    from nbconvert import HTMLExporter

    monkeypatch.setenv("TOYCOMPILER_STATIC", "1")  # the kernel inherits it: no widget view in the outputs
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in CELLS])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    NotebookClient(nb, timeout=120, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}},
                   env=dict(os.environ)).execute()
    data = nb.cells[1].outputs[-1]["data"]
    assert set(data) == {"text/plain", "text/html"}
    assert data["text/plain"].startswith("f: 1 compilation(s)")
    body, _ = HTMLExporter().from_notebook_node(nb)
    assert "tc-stageview" in body and body.count('<svg') >= 2 and "cpp_sin_mul_0" in body
