"""The graph-break explorer: where the function was split, why, and how to avoid it.

Shows the source with each graph's lines shaded in its own colour and every
break marked; one card per distinct break (duplicates counted, not repeated):
kind, explanation, the exact source line, where execution resumes, and a hint
for that kind of break. Below: each graph, the transformed bytecode and the
resume functions. In the live widget, edit the function and re-run to see
the new graph count.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from toycompiler.artifacts import FrameCompilation, GraphBreak, Report

from ._render import BAD, BORDER, FG_DIM, code_block, colour, esc, hang, highlight_lines, pre, root, section
from .base import View
from .guards_view import guards_html
from .names import renumber, where
from .resume_code import resume_html, transformed_html

# One hint per kind of break (GraphBreak.kind); matched on the reason text for older kinds.
HINTS = {
    "item": "`.item()` turns a tensor into a Python number, which a graph cannot hold. In a condition, "
            "compute both branches and pick with `torch.where(cond, a, b)` (or use `torch.cond`); "
            "otherwise keep the value as a 0-d tensor.",
    "data-dependent-branch": "An `if` on a tensor's value depends on data the compiler cannot see. "
                             "Use `torch.where(cond, a, b)` for elementwise choices, or `torch.cond` for branches.",
    "print": "`print` is a side effect the graph cannot hold. Move it out of the compiled function, or "
             "return the value and print (or log) it after the call.",
    "tolist": "`.tolist()` leaves tensor land. Stay in tensors (index, sum, compare with torch ops) and "
              "convert only after the compiled call returns.",
    "numpy": "`.numpy()` leaves tensor land. Keep the work in torch ops and convert after the compiled call.",
    "explicit": "The code asked for a break (`torch._dynamo.graph_break()`). Remove it to get one graph.",
    "unsupported": "This operation is not traceable yet. Move it out of the hot function, or replace it "
                   "with torch ops that do the same thing.",
}
_KEYWORDS = (("item", ".item()"), ("tolist", ".tolist()"), ("numpy", ".numpy()"), ("print", "print"))


def kind_of(brk: GraphBreak) -> str:
    if brk.kind in HINTS and brk.kind != "unsupported":
        return brk.kind
    text = f"{brk.reason} {brk.source}"
    for kind, word in _KEYWORDS:
        if word in text:
            return kind
    return brk.kind or "unsupported"


def hint_for(brk: GraphBreak) -> str:
    return HINTS.get(kind_of(brk), HINTS["unsupported"])


@dataclass(frozen=True)
class ResumeTarget:
    """Where one resume function picks up after a break, and which cache entry it became."""

    name: str  # "f.<resume at 86>"
    offset: int  # the instruction of the original function it continues at
    line: int | None  # that instruction's source line
    opname: str
    frames: tuple[str, ...]  # cache entries compiled from it, "[1/0]"; () while it has never been called
    graph_lines: tuple[int, ...]  # source lines of the graph its first entry captured

    def __str__(self) -> str:
        at = f"line {self.line}, offset {self.offset}" + (f" ({self.opname})" if self.opname else "")
        if not self.frames:
            return f"{self.name}, at {at}; not called yet (that path has not run)"
        graph = (f"graph lines {', '.join(map(str, self.graph_lines))}" if self.graph_lines
                 else "no graph (nothing left to compile)")
        return f"{self.name}, at {at}; compiled as {', '.join(self.frames)}: {graph}"


@dataclass(frozen=True)
class BreakCard:
    """One distinct graph break, with how often it happened."""

    kind: str
    reason: str
    at: str  # "cell In[5], line 3" or "file.py:3"
    line: int
    source: str
    resumes_at: str
    hint: str
    count: int
    frames: tuple[str, ...]
    resumes: tuple[ResumeTarget, ...] = ()

    def __str__(self) -> str:
        times = f" (x{self.count})" if self.count > 1 else ""
        return (f"[{self.kind}]{times} {self.at}: {self.reason}\n"
                f"    {self.source}\n    resumes at: {self.resumes_at}\n    hint: {self.hint}")


_RESUME_NAME = re.compile(r"<resume at (\d+)>$")


def same_code(a: FrameCompilation, b: FrameCompilation) -> bool:
    """A function and its resume functions share a file and first line (and so one source listing)."""
    return (a.source.filename, a.source.firstlineno) == (b.source.filename, b.source.firstlineno)


def original_frame(report: Report, frame: FrameCompilation) -> FrameCompilation:
    """The user's function that ``frame`` (perhaps a resume function) was split from."""
    return next((f for f in report.frames if same_code(f, frame) and "<resume at" not in f.source.name), frame)


def resume_targets(report: Report, frame: FrameCompilation) -> tuple[ResumeTarget, ...]:
    """Each resume function ``frame``'s transformed code calls: where it continues, what it compiled to."""
    brk = frame.translation.graph_break
    rows = {r.offset: r for r in original_frame(report, frame).bytecode.instructions}
    out = []
    for k, code in enumerate(frame.resume_functions):
        m = _RESUME_NAME.search(code.name)
        offset = int(m.group(1)) if m else (brk.resumes_at[k] if brk and k < len(brk.resumes_at) else -1)
        row = rows.get(offset)
        line = row.line if row else next((r.line for r in code.instructions[1:2]), None)  # the prologue's line
        compiled = [f for f in report.frames if f.source.name == code.name and same_code(f, frame)]
        graph = compiled[0].graph if compiled else None
        lines = tuple(sorted({n.line for n in graph.nodes if n.line is not None})) if graph and graph.op_count else ()
        out.append(ResumeTarget(code.name, offset, line, row.opname if row else "",
                                tuple(f.label for f in compiled), lines))
    return tuple(out)


def resumes_at(report: Report, brk: GraphBreak) -> str:
    """Where execution continues after the break: resume functions, or eager Python."""
    frame = next((f for f in report.frames if f.translation.graph_break is brk), None)
    if frame is not None and frame.resume_functions:
        return "; ".join(map(str, resume_targets(report, frame)))
    if brk.no_resume_reason:
        return f"no resume function: the whole frame {brk.frame} ran as ordinary Python ({brk.no_resume_reason})"
    if frame is not None and frame.transformed_bytecode is None:
        return (f"no resume function was recorded: the whole frame {frame.label} runs as ordinary Python, "
                f"line {brk.line} included")
    return f"line {brk.line + 1} onwards runs as ordinary Python (no resume function recorded)"


def break_cards(report: Report) -> list[BreakCard]:
    """Distinct breaks in first-seen order; the same break again only bumps its count."""
    cards: dict[tuple, BreakCard] = {}
    for f in report.frames:
        brk = f.translation.graph_break
        if brk is None:
            continue
        key = (kind_of(brk), brk.filename, brk.line, brk.reason)
        if key in cards:
            c = cards[key]
            cards[key] = dataclasses.replace(c, count=c.count + 1, frames=c.frames + (f.label,))
        else:
            cards[key] = BreakCard(key[0], brk.reason, where(brk.filename, brk.line), brk.line, brk.source,
                                   resumes_at(report, brk),
                                   hint_for(brk), 1, (f.label,), resume_targets(report, f))
    return list(cards.values())


def graph_lines(report: Report) -> list[tuple[str, tuple[int, ...]]]:
    """(frame label, user lines its graph's nodes came from), for every non-empty graph."""
    out = []
    for f in report.frames:
        if f.graph is not None and f.graph.op_count:
            out.append((f.label, tuple(sorted({n.line for n in f.graph.nodes if n.line is not None}))))
    return out


def _span(lines: tuple[int, ...]) -> str:
    if not lines:
        return "no lines"
    if len(lines) == 1:
        return f"line {lines[0]}"
    if list(lines) == list(range(lines[0], lines[-1] + 1)):
        return f"lines {lines[0]}-{lines[-1]}"
    return "lines " + ", ".join(map(str, lines))


def _chip(background: str) -> str:
    return (f'<span style="display:inline-block;width:10px;height:10px;border-radius:2px;margin-right:4px;'
            f'background:{background};border:1px solid {BORDER};vertical-align:middle"></span>')


class Explorer(View):
    kind = "explorer"

    def __init__(self, report: Report, fn: Callable | None = None, args: tuple = (), kwargs: dict | None = None,
                 compile_options: dict | None = None):
        self.report, self.fn, self.args, self.kwargs = renumber(report), fn, args, kwargs or {}
        self.compile_options = compile_options or {}
        self.cards = break_cards(report)

    def summary(self) -> str:
        r = self.report
        return (f"graphs: {r.graph_count} ({len(graph_lines(r))} with ops), graph breaks: {r.graph_break_count} "
                f"({len(self.cards)} distinct), frames compiled: {len(r.frames)}")

    def text(self) -> str:
        out = [f"Graph-break explorer: {self.summary()}"]
        if self.cards:
            out.append("distinct breaks:")
            out += [f"  {c.count}x [{c.kind}] {c.at}: {c.reason}" for c in self.cards]
        out += [str(c) for c in self.cards]
        for label, lines in graph_lines(self.report):
            out.append(f"graph {label}: lines {', '.join(map(str, lines)) or '-'}")
        return "\n".join(out)

    def colours(self) -> dict[str, str]:
        """One colour per graph with ops, keyed by frame label: source shading, legend and frame boxes agree."""
        return {label: colour(i) for i, (label, _) in enumerate(graph_lines(self.report))}

    def source_html(self) -> str:
        if not self.report.frames:
            return "<i>nothing was compiled</i>"
        first = self.report.frames[0]
        src, colours = first.source, self.colours()
        shade, legend = {}, []
        for label, lines in graph_lines(self.report):
            frame = next(f for f in self.report.frames if f.label == label)
            if not same_code(frame, first):
                continue  # another function's graph: its lines are not in this listing
            owner = next((shade[ln][1] for ln in lines if ln in shade), None)
            again = f" (shaded as {esc(owner)}, which covers the same lines)" if owner else ""
            legend.append(f"{_chip(colours[label])}graph {esc(label)}: {esc(_span(lines))}{again}")
            for ln in lines:
                shade.setdefault(ln, (colours[label], label))
        marks = {c.line: c for c in self.cards}
        rows = []
        for i, body in enumerate(highlight_lines("\n".join(src.lines), "python")):
            n = src.firstlineno + i
            style, tip = "", ""
            if n in shade:
                style, tip = f"background:{shade[n][0]}", f"graph {shade[n][1]}"
            mark = ""
            if n in marks:
                c = marks[n]
                mark = (f'<div class="tc-breakmark" style="color:{BAD};font-weight:600;white-space:pre-wrap">'
                        f"      ^ graph break ({esc(c.kind)}): {esc(c.reason)}</div>")
            cls = " tc-shade" if n in shade else ""
            rows.append(f'<div class="tc-row tc-l{n}{cls}" title="{esc(tip)}" style="{hang(6)};{style}">'
                        f'<span style="color:{FG_DIM}">{n:4d}  </span>{body}</div>{mark}')
        key = f'<div class="tc-legend" style="margin-top:4px">{" &nbsp; ".join(legend)}</div>' if legend else ""
        return pre(rows) + key

    def _resume_html(self, targets: tuple[ResumeTarget, ...]) -> str:
        colours = self.colours()
        items = []
        for t in targets:
            chip = _chip(colours[t.frames[0]]) if t.frames and t.frames[0] in colours else ""
            items.append(f'<li class="tc-resume">{chip}<code>{esc(t.name)}</code>: continues at line {t.line}, '
                         f"offset {t.offset}{' (' + esc(t.opname) + ')' if t.opname else ''}; "
                         + (f"compiled as <b>{esc(', '.join(t.frames))}</b>, "
                            + (f"its graph: {esc(_span(t.graph_lines))}" if t.graph_lines else "no graph")
                            if t.frames else "not called yet (that path has not run)") + "</li>")
        return f'<ul style="margin:0;padding-left:18px">{"".join(items)}</ul>'

    def cards_html(self) -> str:
        if not self.cards:
            return '<div class="tc-note">No graph breaks: the function compiled as one graph.</div>'
        dedup = "".join(f"<li><b>{c.count}x</b> [{esc(c.kind)}] {esc(c.at)}: {esc(c.reason)}</li>"
                        for c in self.cards)
        out = [f'<ul class="tc-dedup" style="margin:2px 0 8px 0">{dedup}</ul>']
        for c in self.cards:
            resumes = (f"<div>resumes at:</div>{self._resume_html(c.resumes)}" if c.resumes
                       else f"<div>resumes at: {esc(c.resumes_at)}</div>")
            out.append(
                f'<div class="tc-card" data-tc-line="{c.line}" style="border-left:4px solid {BAD};'
                f'padding:4px 8px;margin:6px 0;background:var(--jp-layout-color2,#f6f8fa)">'
                f"<div><b>{esc(c.kind)}</b>{' x' + str(c.count) if c.count > 1 else ''} "
                f"in {esc(', '.join(c.frames))}</div>"
                f"<div>{esc(c.reason)}</div>"
                f'<div style="font-family:monospace">{esc(c.at)}: <code>{esc(c.source)}</code></div>'
                f"{resumes}"
                f'<div class="tc-hint">hint: {esc(c.hint)}</div></div>')
        return "".join(out)

    def frame_html(self, f: FrameCompilation) -> str:
        """One cache entry: its graph, and for a break its transformed bytecode and resume functions."""
        shade = self.colours().get(f.label, BORDER)
        brk = f.translation.graph_break
        targets = resume_targets(self.report, f)
        by_offset = {t.offset: t for t in targets}
        lines = tuple(sorted({n.line for n in f.graph.nodes if n.line is not None})) if f.graph else ()
        ops = f.graph.op_count if f.graph else 0
        head = f"frame {f.label} {f.source.name}: " + (
            f"graph of {ops} op{'s' * (ops != 1)} from {_span(lines)}" if ops else "no graph")
        if brk is not None:
            head += f"; graph break at line {brk.line} ({kind_of(brk)})"
            if targets:
                head += ", then " + " or ".join(t.name for t in targets)
        parts = []
        if f.graph is not None:
            ops = f"{f.graph.op_count} op" + ("" if f.graph.op_count == 1 else "s")
            parts.append(section(f"graph {f.label} ({ops})", code_block(f.graph.code, "python")))
        parts.append(section(f"guards {f.label}", guards_html(f.guards)))
        if f.transformed_bytecode is not None:

            def describe(offset: int) -> str:
                t = by_offset.get(offset)
                return f"resume function {t.name} -> {', '.join(t.frames) or 'not called yet'}" if t else "resume"

            code = transformed_html(f.transformed_bytecode, f.label if f.graph and f.graph.op_count else None,
                                    brk.line if brk else None, f.source.firstlineno, describe)
            parts.append(section(f"transformed bytecode {f.label}", code))
        original = original_frame(self.report, f).source.name
        for r, t in zip(f.resume_functions, targets):
            parts.append(section(f"resume function {r.name}", resume_html(r, t.offset, original)))
        grid = ('<div class="tc-grid" style="display:grid;grid-template-columns:repeat(auto-fit,minmax(360px,1fr));'
                f'gap:10px;align-items:start">{"".join(parts)}</div>')
        return (f'<div class="tc-frame" data-tc-frame="{esc(f.label)}" style="border-left:6px solid {shade};'
                f'padding:2px 0 2px 8px;margin:10px 0">'
                f'<div class="tc-title" style="font-weight:600;margin:2px 0 4px 0">{esc(head)}</div>{grid}</div>')

    def frames_html(self) -> str:
        return "".join(self.frame_html(f) for f in self.report.frames)

    def inner_html(self) -> str:
        head = f'<div class="tc-head" style="font-weight:600">Graph-break explorer: {esc(self.summary())}</div>'
        grid = ('<div class="tc-grid" style="display:grid;grid-template-columns:repeat(auto-fit,minmax(380px,1fr));'
                f'gap:10px;align-items:start">{section("Source (one colour per graph)", self.source_html(), "source")}'
                f'{section("Graph breaks", self.cards_html(), "breaks")}</div>')
        return f'<div class="tc-explorer" data-tc-kind="explorer">{head}{grid}{self.frames_html()}</div>'

    def html(self) -> str:
        return root(self.inner_html())

    def source_text(self) -> str:
        return "\n".join(self.report.frames[0].source.lines) if self.report.frames else ""

    def rerun(self, source: str) -> Explorer:
        """Define the edited function from ``source`` (in the original globals) and explain it again."""
        import linecache

        import toycompiler

        if self.fn is None:
            raise ValueError("this explorer was made from a report; use explore(fn, *args) to re-run")
        filename = f"<edited {self.fn.__name__}>"
        text = source if source.endswith("\n") else source + "\n"
        linecache.cache[filename] = (len(text), None, text.splitlines(True), filename)
        namespace: dict[str, Any] = dict(self.fn.__globals__)
        exec(compile(text, filename, "exec"), namespace)
        fn = namespace[self.fn.__name__]
        report = toycompiler.explain(fn, **self.compile_options)(*self.args, **self.kwargs)
        return Explorer(report, fn, self.args, self.kwargs, self.compile_options)


def explore(fn: Callable, *args: Any, **kwargs: Any) -> Explorer:
    """``explore(fn, *args)``: compile ``fn`` afresh, call it once, and open the graph-break explorer."""
    import toycompiler

    options = {k: kwargs.pop(k) for k in ("backend", "mode", "dynamic") if k in kwargs}
    report = toycompiler.explain(fn, **options)(*args, **kwargs)
    return Explorer(report, getattr(fn, "fn", fn), args, kwargs, options)
