"""What appears below a ``%%compile`` cell: every compilation the cell triggered.

Per function: the stage view of each cache entry (or, with ``--explain``, the
graph-break explorer), the recompile matrix when there was more than one
entry, the timing chart, and any compile failure (the function then ran
eagerly).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from toycompiler.artifacts import Report

from ._render import BAD, esc, hover_css, root
from .base import View
from .explorer import Explorer
from .guards_view import RecompileMatrix
from .names import renumber
from .progress import Progress
from .recompiles import GuardMatrix, guard_matrix
from .stages import StageView
from .timing import Timing, measure
from .timing_view import TimingView


@dataclass(frozen=True)
class FunctionResult:
    name: str
    report: Report | None
    timing: Timing | None = None
    matrix: GuardMatrix | None = None
    failure: str | None = None
    explorer: Explorer | None = None  # with --explain: can re-run the function after an edit


NOTHING = ("%%compile: nothing to compile: the cell defines no function and assigns no nn.Module to a name. "
           "Define one (def f(x): ...), or create the module with a name (net = Net()) and call it, "
           "or compile it yourself: net = toycompiler.compile(net).")


class CellView(View):
    kind = "cell"

    def __init__(self, results: list[FunctionResult], explain: bool = False):
        self.results, self.explain = results, explain

    @classmethod
    def build(cls, session) -> CellView:
        results = []
        with Progress() as progress:
            for name, rec in session.recorders.items():
                report = renumber(rec.report) if rec.compiled is not None else None
                timing = matrix = None
                if rec.failure is None and rec.calls and report is not None and report.frames:
                    if len(rec.target.cache.entries) > 1:
                        calls = rec.calls if rec.target is rec.compiled else [((rec.fn, *a), k) for a, k in rec.calls]
                        matrix = guard_matrix(rec.target, calls)  # a module's forward takes the module first
                    if session.options.timing:
                        progress.update(f"toycompiler: timing {name} (eager vs compiled)...")
                        args, kwargs = rec.calls[-1]
                        timing = measure(rec.fn, rec.compiled, *args, name=name, compile_s=rec.first_call_s,
                                         torch_compile=session.options.torch,
                                         backend=report.frames[-1].backend.backend if report.frames[-1].backend
                                         else session.options.backend, **kwargs)
                explorer = None
                if session.options.explain and report is not None and report.frames and rec.calls:
                    options = {"backend": session.options.backend, "mode": session.options.mode}
                    fn = rec.fn if rec.target is rec.compiled else None  # a module re-runs from its class cell
                    explorer = Explorer(report, fn, *rec.calls[0], compile_options=options)
                results.append(FunctionResult(name, report, timing, matrix, rec.failure, explorer))
        return cls(results, session.options.explain)

    # -- the explorer's re-run button (live widget), for the cell's first explained function --

    def _explorer(self) -> Explorer | None:
        for r in self.results:
            if self.explain and r.report is not None and r.report.frames:
                return r.explorer or Explorer(r.report)
        return None

    def source_text(self) -> str:
        ex = self._explorer()
        return ex.source_text() if ex is not None and ex.fn is not None else ""

    def rerun(self, source: str) -> CellView:
        ex = self._explorer()
        new = ex.rerun(source)
        results = [dataclasses.replace(r, report=new.report, explorer=new, timing=None, matrix=None)
                   if r.explorer is ex else r for r in self.results]
        return CellView(results, self.explain)

    def summary(self) -> str:
        ex = self._explorer()
        return ex.summary() if ex is not None else ""

    def _views(self, r: FunctionResult) -> list[View]:
        views: list[View] = []
        if r.report is not None and r.report.frames:
            if self.explain:
                views.append(r.explorer or Explorer(r.report))
            else:
                views += [StageView(f) for f in r.report.frames]
        if r.matrix is not None:
            views.append(RecompileMatrix(r.matrix))
        if r.timing is not None:
            views.append(TimingView(r.timing))
        return views

    def headline(self, r: FunctionResult) -> str:
        if r.failure is not None:
            return f"{r.name}: compile failed, ran eagerly: {r.failure}"
        if r.report is None or not r.report.frames:
            return f"{r.name}: not called in this cell, so not compiled yet"
        rep = r.report
        ran = "".join(f"; ran eagerly: {reason}" for reason in rep.fallback_reasons)  # a backward's, a frame's too
        return (f"{r.name}: {len(rep.frames)} compilation(s), graphs: {rep.graph_count}, "
                f"graph breaks: {rep.graph_break_count}{ran}")

    def text(self) -> str:
        if not self.results:
            return NOTHING
        out = []
        for r in self.results:
            out.append(self.headline(r))
            out += [v.text() for v in self._views(r)]
        return "\n".join(out)

    def html(self) -> str:
        if not self.results:
            return root(f"<i>{esc(NOTHING)}</i>")
        body, lines = [], set()
        for r in self.results:
            colour = BAD if r.failure else "inherit"
            body.append(f'<div class="tc-head" style="font-weight:600;color:{colour};margin-top:4px">'
                        f"{esc(self.headline(r))}</div>")
            for v in self._views(r):
                body.append(v.inner_html() if hasattr(v, "inner_html") else v.html())
                if isinstance(v, StageView):
                    lines |= set(v.prov.source_lines())
        return root("".join(body), hover_css(lines))
