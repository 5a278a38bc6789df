"""The stage view: one compilation, from source to output code, each stage in its own pane.

Stages: source, bytecode, guards, FX graph (code and picture), lowered IR,
fusion groups (picture, decisions, memory plan), kernels, output code. In the
static HTML they sit in a grid; the live widget lets you put any two side by
side and click a line to see what came from it (see :mod:`.provenance`).
"""

from __future__ import annotations

import re

from toycompiler.artifacts import FrameCompilation, Report

from . import graphs
from ._render import (
    BAD,
    FG_DIM,
    WARN,
    code_block,
    code_row,
    esc,
    fold,
    fold_repeats,
    highlight_lines,
    hover_css,
    picture,
    pre,
    root,
    section,
    shape_of,
)
from .base import View, stable_paths
from .guards_view import guards_html
from .names import renumber, renumber_frame, where
from .provenance import Provenance

STAGES = (("source", "Source"), ("bytecode", "Bytecode"), ("guards", "Guards"), ("fx", "FX graph"),
          ("ir", "Lowered IR"), ("fusion", "Fusion groups"), ("kernels", "Kernels"), ("output", "Output code"))


class StageView(View):
    """Every stage of one compiled frame (a ``FrameCompilation``)."""

    kind = "stages"

    def __init__(self, frame: FrameCompilation):
        self.frame = frame
        self.prov = Provenance(frame)

    @classmethod
    def of(cls, report_or_frame: Report | FrameCompilation) -> StageView | ReportView:
        if isinstance(report_or_frame, Report):
            return ReportView(report_or_frame)
        return cls(renumber_frame(report_or_frame))

    # -- model ------------------------------------------------------------------------

    def available(self) -> tuple[str, ...]:
        """The stages this frame has (a frame that broke or fell back has no backend stages)."""
        be = self.frame.backend
        have = {"source", "bytecode", "guards"}
        if self.frame.graph is not None:
            have.add("fx")
        if be is not None and be.ir is not None:
            have |= {"ir", "fusion"} if be.schedule is not None else {"ir"}
        if be is not None and be.kernels:
            have.add("kernels")
        if be is not None and be.output_code is not None:
            have.add("output")
        return tuple(s for s, _ in STAGES if s in have)

    def stage_text(self, stage: str) -> str:
        f, be = self.frame, self.frame.backend
        texts = {
            "source": lambda: str(f.source),
            "bytecode": lambda: str(f.bytecode),
            "guards": lambda: str(f.guards),
            "fx": lambda: str(f.graph),
            "ir": lambda: str(be.ir),
            "fusion": lambda: str(be.schedule),
            "kernels": lambda: "\n\n".join(f"# {k.name} ({k.language})\n{k.source.rstrip()}" for k in be.kernels),
            "output": lambda: stable_paths(be.output_code.source.rstrip()),
        }
        return texts[stage]()

    def headline(self) -> str:
        f = self.frame
        parts = [f"{f.label} {f.source.name}"]
        if f.backend is not None:
            parts.append(f"backend {f.backend.backend}")
            if f.backend.kernels:
                parts.append(f"{len(f.backend.kernels)} kernel(s)")
        if f.recompile_reason is not None:
            parts.append(f"recompiled because {f.recompile_reason}")
        return ", ".join(parts)

    def notes(self) -> list[str]:
        f, out = self.frame, []
        brk = f.translation.graph_break
        resume = re.search(r"<resume at (\d+)>$", f.source.name)
        if resume:
            line = next((r.line for r in f.bytecode.instructions[1:2]), None)  # the prologue carries the line
            out.append(f"a resume function: runs the rest of the function from offset {resume.group(1)} "
                       f"(line {line}), after a graph break there")
        if brk is not None:
            out.append(f"graph break at {where(brk.filename, brk.line)}: {brk.reason}")
        if f.backend is not None and f.backend.fallback_reason:
            out.append(f"fell back to eager: {f.backend.fallback_reason}")
        return out

    # -- renderings -------------------------------------------------------------------

    def text(self) -> str:
        out = [f"StageView {self.headline()}"] + [f"  {n}" for n in self.notes()]
        for stage, title in STAGES:
            if stage in self.available():
                out += [f"== {title}", self.stage_text(stage)]
        return "\n".join(out)

    def html(self) -> str:
        return root(self.inner_html(), hover_css(self.prov.source_lines()))

    def inner_html(self) -> str:
        head = f'<div class="tc-head" style="font-weight:600">{esc(self.headline())}</div>'
        notes = "".join(f'<div class="tc-note" style="color:{WARN}">{esc(n)}</div>' for n in self.notes())
        hint = (f'<div class="tc-hint" style="color:{FG_DIM};font-size:11px">Point at a source line (or click it, '
                f"while the kernel runs) to light up everything compiled from it.</div>")
        panes = "".join(section(title, self.stage_html(s), s) for s, title in STAGES if s in self.available())
        grid = ('<div class="tc-grid" style="display:grid;grid-template-columns:repeat(auto-fit,minmax(380px,1fr));'
                f'gap:10px;align-items:start">{panes}</div>')
        return f'<div class="tc-stageview" data-tc-kind="stages">{head}{notes}{hint}{grid}</div>'

    def stage_html(self, stage: str) -> str:
        return getattr(self, f"_html_{stage}")()

    def _html_source(self) -> str:
        s = self.frame.source
        info = {s.firstlineno + i: ((s.firstlineno + i,), "") for i in range(len(s.lines))}
        return code_block("\n".join(s.lines), "python", info, first=s.firstlineno)

    def _html_bytecode(self) -> str:
        return bytecode_html(self.frame.bytecode)

    def _html_guards(self) -> str:
        return guards_html(self.frame.guards)

    def _html_fx(self) -> str:
        g = self.frame.graph
        info = {}
        for i, text in enumerate(g.code.splitlines(), 1):
            m = re.match(r"\s*(\w+)\s*=", text)
            lines = self.prov.lines_of_node(m.group(1)) if m else ()
            if lines:
                info[i] = (lines, "")
        pic = picture(graphs.fx_dot(self.frame, self.prov), str(graphs.drawn_graph(self.frame)))
        caption = (f'<div style="color:{FG_DIM};font-size:11px">After the passes; each node is coloured '
                   "by the kernel it ends up in.</div>")
        return folded_code(g.code, "python", info) + caption + pic

    def _html_ir(self) -> str:
        rows = []
        for b in self.frame.backend.ir.buffers:
            lines = self.prov.lines_of_buffer(b.name)
            head = f"{b.name}: {b.kind} {b.dtype}{b.size}" + (f"  # from {', '.join(b.origins)}" if b.origins else "")
            rows.append(code_row(esc(head), None, lines))
            rows += [code_row(esc("    " + ln), None, lines) for ln in b.body.splitlines()]
        rows.append(code_row(esc("outputs: " + ", ".join(self.frame.backend.ir.outputs)), None))
        return pre(fold_repeats(rows, [shape_of(re.sub("<[^>]*>", "", r)) for r in rows]))

    def _html_fusion(self) -> str:
        sched = self.frame.backend.schedule
        pic = picture(graphs.fusion_dot(self.frame, self.prov), str(sched))
        rows = []
        for g in sched.groups:
            moved = g.bytes_read + g.bytes_written
            text = f"{g.name} ({g.kind}, {g.ranges}): {', '.join(g.nodes)} -> stores {', '.join(g.stores) or '-'}; " \
                   f"{moved} bytes"
            rows.append(code_row(esc(text), None, self.prov.lines_of_group(g.name)))
        for d in sched.decisions:
            style = "" if d.fused else f' style="color:{BAD}"'
            rows.append(code_row(f"<span{style}>{esc(str(d))}</span>", None))
        rows += [code_row(esc(m), None) for m in sched.memory_plan]
        rows.append(code_row(esc(f"memory traffic: {sched.fused_bytes} bytes fused vs {sched.unfused_bytes} "
                                 "unfused"), None))
        return pic + pre(rows)

    def _kernel_html(self, k) -> str:
        owners = self.prov.kernel_line_buffers(k)
        info = {n: (self.prov.lines_of_buffer(b), f"computes {b}") for n, b in owners.items()}
        lang = "cpp" if k.language == "cpp" else "python"
        return (f'<div class="tc-kernel" data-tc-kernel="{esc(k.name)}">'
                f'<div style="color:{FG_DIM}">{esc(k.name)} ({esc(k.language)})</div>'
                f"{kernel_block(k.source, lang, info)}</div>")

    def _html_kernels(self) -> str:
        """Each kernel; kernels with the same code apart from the numbers in names (one per layer of a
        deep model) fold under the first of them."""
        alike: dict[str, list] = {}
        for k in self.frame.backend.kernels:
            alike.setdefault(shape_of(k.source), []).append(k)
        out = []
        for first, *rest in alike.values():
            out.append(self._kernel_html(first))
            if rest:
                names = ", ".join(k.name for k in rest)
                out.append(fold(f"{len(rest)} more kernel{'s' * (len(rest) != 1)} with the same code as "
                                f"{esc(first.name)} apart from names: {esc(names)}",
                                "".join(self._kernel_html(k) for k in rest), "tc-fold tc-alike"))
        return "".join(out)

    def _html_output(self) -> str:
        src = stable_paths(self.frame.backend.output_code.source)
        info = {n: (lines, "") for n, lines in self.prov.output_line_lines().items()}
        return folded_code(src, "python", info)


_KERNEL_START = re.compile(r'^(extern "C" \w|@triton\.jit|def )')


def kernel_block(source: str, language: str, info: dict[int, tuple[tuple[int, ...], str]]) -> str:
    """A kernel listing whose long shared prelude (C++ vector-math declarations, helpers) is folded away.

    Line numbers stay those of the kernel source, so provenance (``line_map``) still lines up.
    """
    rows = []
    for n, body in enumerate(highlight_lines(source, language), 1):
        lines, title = info.get(n, ((), ""))
        rows.append(code_row(body, n, lines, title))
    start = next((i for i, text in enumerate(source.splitlines()) if _KERNEL_START.match(text)), 0)
    if start < 8:  # a few imports: show them
        return pre(rows)
    fold = (f'<details class="tc-prelude"><summary style="color:{FG_DIM};cursor:pointer">lines 1-{start}: '
            f"declarations and helpers shared by every kernel</summary>{''.join(rows[:start])}</details>")
    return pre([fold] + rows[start:])


def folded_code(code: str, language: str, info: dict[int, tuple[tuple[int, ...], str]]) -> str:
    """A numbered listing with repeated structure folded (see ``fold_repeats``)."""
    rows = [code_row(body, n, *info.get(n, ((), ""))) for n, body in enumerate(highlight_lines(code, language), 1)]
    return pre(fold_repeats(rows, [shape_of(line) for line in code.splitlines()]))


def bytecode_html(code, prov_lines: bool = True) -> str:
    rows = []
    for r in code.instructions:
        lines = (r.line,) if (r.line is not None and prov_lines) else ()
        rows.append(code_row(esc(str(r)), None, lines))
    return pre(rows)


class ReportView(View):
    """Every compilation in a report, each as a :class:`StageView`."""

    kind = "report"

    def __init__(self, report: Report, timings: tuple = ()):
        self.report = report = renumber(report)
        self.views = [StageView(f) for f in report.frames]
        self.timings = timings

    def summary(self) -> str:
        r = self.report
        return (f"{len(r.frames)} compilation(s), graphs: {r.graph_count}, graph breaks: {r.graph_break_count}, "
                f"ops per graph: {list(r.ops_per_graph)}")

    def text(self) -> str:
        out = [self.summary()] + [f"  recompile: {f}" for f in self.report.recompiles]
        out += [v.text() for v in self.views]
        out += [str(t) for t in self.timings]
        return "\n".join(out)

    def html(self) -> str:
        from .timing_view import TimingView

        lines = {ln for v in self.views for ln in v.prov.source_lines()}
        body = f'<div class="tc-head" style="font-weight:600">{esc(self.summary())}</div>'
        body += "".join(f'<div style="color:{WARN}">recompile: {esc(f)}</div>' for f in self.report.recompiles)
        body += "".join(v.inner_html() for v in self.views)
        body += "".join(TimingView(t).inner_html() for t in self.timings)
        return root(body, hover_css(lines))
