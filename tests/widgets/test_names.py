"""Names a learner can follow: each view counts frames from [0/0]; notebook code reads as `cell In[n], line k`."""

import torch
from IPython.core.interactiveshell import InteractiveShell
from toycompiler.widgets.names import where

import toycompiler
from toycompiler import widgets


def _first(x):
    return x.sin() + 1


def _second(x):
    return x.cos() * 2


def test_a_view_counts_its_frames_from_zero_while_the_report_keeps_session_ids():
    toycompiler.compile(_first, backend="cpp")(torch.randn(4))  # the session has seen other frames
    report = toycompiler.explain(_second, backend="cpp")(torch.randn(4))
    session_label = report.frames[0].label
    assert session_label != "[0/0]" and session_label in str(report)  # the text report: session-wide ids
    view = widgets.stage_view(report)
    assert "[0/0] _second" in view.text() and session_label not in view.text()
    assert "[0/0] _second" in widgets.stage_view(report.frames[0]).text()


def test_code_typed_in_a_cell_is_named_by_its_cell_number():
    ip = InteractiveShell.instance()
    temp_file = ip.compile.cache("y = 1\n", number=12)  # what IPython compiles a cell under
    assert where(temp_file, 3) == "cell In[12], line 3"
    assert where("<cell In[7]>", 2) == "cell In[7], line 2"
    assert where("/src/model.py", 5) == "/src/model.py:5"
