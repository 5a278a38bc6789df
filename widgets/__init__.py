"""Views over toycompiler artifacts: notebook widgets that read the recorded stages.

Each view renders as stable text, as self-contained HTML (inline SVG, no
scripts) and, in a live kernel, as an anywidget (see :mod:`.base`). Importing
this package registers rich ``_repr_html_`` renderers for the artifacts.

    from toycompiler import widgets
    report = toycompiler.explain(f)(x, y)
    widgets.stage_view(report)          # every stage, with provenance links
    widgets.explore(f, x, y)            # the graph-break explorer
    widgets.save_html(report, "f.html") # one file, readable offline
"""

from __future__ import annotations

from toycompiler import artifacts as _artifacts

from .stages import ReportView, StageView
from .timing_view import TimingView


def stage_view(report_or_frame) -> StageView | ReportView:
    """The stage view of a report (every compilation) or of one ``FrameCompilation``."""
    return StageView.of(report_or_frame)


def _register() -> None:
    _artifacts.html_renderers[_artifacts.Report] = lambda r: ReportView(r).html()
    _artifacts.html_renderers[_artifacts.FrameCompilation] = lambda f: StageView(f).html()


_register()

__all__ = ["ReportView", "StageView", "TimingView", "stage_view"]
