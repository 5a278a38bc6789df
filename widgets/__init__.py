"""Views over toycompiler artifacts: notebook widgets that read the recorded stages.

Each view renders as stable text, as self-contained HTML (inline SVG, no
scripts) and, in a live kernel, as an anywidget (see :mod:`.base`). Importing
this package registers rich ``_repr_html_`` renderers for the artifacts.

    from toycompiler import widgets
    report = toycompiler.explain(f)(x, y)
    widgets.stage_view(report)          # every stage, with provenance links
    widgets.explore(f, x, y)            # the graph-break explorer
    widgets.stepper(report.frames[0])   # the translator, one instruction at a time
    widgets.save_html(report, "f.html") # one file, readable offline

The compiler never imports this package (``%load_ext toycompiler`` and
``Report.save_html`` load it lazily).
"""

from __future__ import annotations

from toycompiler import artifacts as _artifacts

from .base import set_live
from .bytecode_stepper import Stepper
from .explorer import Explorer, explore
from .export import save_html
from .guards_view import GuardsView, RecompileMatrix
from .stages import ReportView, StageView
from .timing_view import TimingView


def stage_view(report_or_frame) -> StageView | ReportView:
    """The stage view of a report (every compilation) or of one ``FrameCompilation``."""
    return StageView.of(report_or_frame)


def stepper(frame_or_report) -> Stepper:
    """The bytecode stepper of a frame (a report's first frame if given a report)."""
    frame = frame_or_report.frames[0] if isinstance(frame_or_report, _artifacts.Report) else frame_or_report
    return Stepper(frame)


def recompile_matrix(compiled, calls) -> RecompileMatrix:
    """``calls``: a list of argument tuples (or ``(args, kwargs)`` pairs) to check every cache entry against."""
    from toycompiler.recompiles import guard_matrix

    pairs = [c if (len(c) == 2 and isinstance(c[1], dict)) else (tuple(c), {}) for c in calls]
    return RecompileMatrix(guard_matrix(compiled, pairs))


def _register() -> None:
    """Fill the artifacts' renderer registry so their ``_repr_html_`` shows rich views."""
    r = _artifacts.html_renderers
    r[_artifacts.Report] = lambda rep: ReportView(rep).html()
    r[_artifacts.FrameCompilation] = lambda f: StageView(f).html()
    r[_artifacts.GuardsArtifact] = lambda g: _guards_html(g)


def _guards_html(g) -> str:
    from ._render import code_block, root

    return root(code_block(g.code, "python"))


_register()

__all__ = ["Explorer", "GuardsView", "RecompileMatrix", "ReportView", "StageView", "Stepper", "TimingView",
           "explore", "recompile_matrix", "save_html", "set_live", "stage_view", "stepper"]
