"""Views over toycompiler artifacts: notebook widgets that read the recorded stages.

Each view renders as stable text, as self-contained HTML (inline SVG, no
scripts) and, in a live kernel, as an anywidget (see :mod:`.base`).

    from toycompiler import widgets
    report = toycompiler.explain(f)(x, y)
    widgets.stage_view(report)          # every stage, with provenance links
    widgets.explore(f, x, y)            # the graph-break explorer
    widgets.stepper(report.frames[0])   # the translator, one instruction at a time
    widgets.save_html(report, "f.html") # one file, readable offline

    %load_ext toycompiler.widgets       # in a notebook: %%compile, and rich artifacts

The compiler never imports this package: its artifacts are plain data that
print as text. The rich HTML of a ``Report``, a ``FrameCompilation`` or a
``GuardsArtifact`` is registered here, with IPython's own display formatter
(``formatters["text/html"].for_type``), when this package is imported inside
IPython or loaded as an extension. (``%load_ext toycompiler`` also works: the
compiler's ``load_ipython_extension`` hands over to the one here by name.)
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
    from .recompiles import guard_matrix

    pairs = [c if (len(c) == 2 and isinstance(c[1], dict)) else (tuple(c), {}) for c in calls]
    return RecompileMatrix(guard_matrix(compiled, pairs))


def _guards_html(g) -> str:
    from ._render import root
    from .guards_view import guards_html

    return root(guards_html(g))


# artifact class -> its rich HTML; IPython prefers these to the artifact's own plain ``_repr_html_``
HTML_VIEWS = {
    _artifacts.Report: lambda rep: ReportView(rep).html(),
    _artifacts.FrameCompilation: lambda f: StageView(f).html(),
    _artifacts.GuardsArtifact: _guards_html,
}


def register_html(ip=None) -> None:
    """Show artifacts as rich views in IPython ``ip`` (default: the running one; none: do nothing)."""
    if ip is None:
        try:
            from IPython import get_ipython
        except ImportError:
            return
        ip = get_ipython()
    if ip is None:  # plain Python: artifacts print as text
        return
    html = ip.display_formatter.formatters["text/html"]
    for cls, render in HTML_VIEWS.items():
        html.for_type(cls, render)


def load_ipython_extension(ip) -> None:
    """``%load_ext toycompiler.widgets``: the ``%%compile`` cell magic and rich artifact views."""
    from .magic import load_ipython_extension as load

    load(ip)


register_html()

__all__ = ["Explorer", "GuardsView", "RecompileMatrix", "ReportView", "StageView", "Stepper", "TimingView",
           "explore", "load_ipython_extension", "recompile_matrix", "register_html", "save_html", "set_live",
           "stage_view", "stepper"]
