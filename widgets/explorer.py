"""The graph-break explorer: where the function was split, why, and how to avoid it.

Shows the source with each graph's lines shaded in its own colour and every
break marked; one card per distinct break (duplicates counted, not repeated):
kind, explanation, the exact source line, where execution resumes, and a hint
for that kind of break. Below: each graph, the transformed bytecode and the
resume functions. In the live widget, edit the function and re-run to see
the new graph count.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from toycompiler.artifacts import GraphBreak, Report

from ._render import FG_DIM, code_block, colour, esc, highlight_lines, pre, root, section
from .base import View
from .stages import bytecode_html

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
class BreakCard:
    """One distinct graph break, with how often it happened."""

    kind: str
    reason: str
    filename: str
    line: int
    source: str
    resumes_at: str
    hint: str
    count: int
    frames: tuple[str, ...]

    def __str__(self) -> str:
        times = f" (x{self.count})" if self.count > 1 else ""
        return (f"[{self.kind}]{times} {self.filename}:{self.line}: {self.reason}\n"
                f"    {self.source}\n    resumes at: {self.resumes_at}\n    hint: {self.hint}")


def resumes_at(report: Report, brk: GraphBreak) -> str:
    """Where execution continues after the break: a resume function, or eager Python."""
    for f in report.frames:
        if f.translation.graph_break is brk and f.resume_functions:
            r = f.resume_functions[0]
            lines = [i.line for i in r.instructions if i.line is not None and i.line > brk.line]
            where = f"line {min(lines)}" if lines else f"after line {brk.line}"
            return f"{r.name} ({where})"
    frame = next((f for f in report.frames if f.translation.graph_break is brk), None)
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
            cards[key] = BreakCard(c.kind, c.reason, c.filename, c.line, c.source, c.resumes_at, c.hint,
                                   c.count + 1, c.frames + (f.label,))
        else:
            cards[key] = BreakCard(key[0], brk.reason, brk.filename, brk.line, brk.source, resumes_at(report, brk),
                                   hint_for(brk), 1, (f.label,))
    return list(cards.values())


def graph_lines(report: Report) -> list[tuple[str, tuple[int, ...]]]:
    """(frame label, user lines its graph's nodes came from), for every non-empty graph."""
    out = []
    for f in report.frames:
        if f.graph is not None and f.graph.op_count:
            out.append((f.label, tuple(sorted({n.line for n in f.graph.nodes if n.line is not None}))))
    return out


class Explorer(View):
    kind = "explorer"

    def __init__(self, report: Report, fn: Callable | None = None, args: tuple = (), kwargs: dict | None = None,
                 compile_options: dict | None = None):
        self.report, self.fn, self.args, self.kwargs = report, fn, args, kwargs or {}
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
            out += [f"  {c.count}x [{c.kind}] {c.filename}:{c.line}: {c.reason}" for c in self.cards]
        out += [str(c) for c in self.cards]
        for label, lines in graph_lines(self.report):
            out.append(f"graph {label}: lines {', '.join(map(str, lines)) or '-'}")
        return "\n".join(out)

    def source_html(self) -> str:
        if not self.report.frames:
            return "<i>nothing was compiled</i>"
        src = self.report.frames[0].source
        shade = {}
        for i, (label, lines) in enumerate(graph_lines(self.report)):
            for ln in lines:
                shade.setdefault(ln, (colour(i), label))
        marks = {c.line: c for c in self.cards}
        rows = []
        for i, body in enumerate(highlight_lines("\n".join(src.lines), "python")):
            n = src.firstlineno + i
            style, tip = "", ""
            if n in shade:
                style, tip = f"background:{shade[n][0]};color:#1f2328", f"graph {shade[n][1]}"
            mark = ""
            if n in marks:
                c = marks[n]
                mark = (f'<div class="tc-breakmark" style="color:#cf222e;font-weight:600;white-space:pre-wrap">'
                        f"      ^ graph break ({esc(c.kind)}): {esc(c.reason)}</div>")
            rows.append(f'<div class="tc-row tc-l{n}" title="{esc(tip)}" style="white-space:pre;{style}">'
                        f'<span style="color:{FG_DIM}">{n:4d}  </span>{body}</div>{mark}')
        return pre(rows)

    def cards_html(self) -> str:
        if not self.cards:
            return '<div class="tc-note">No graph breaks: the function compiled as one graph.</div>'
        dedup = "".join(f"<li><b>{c.count}x</b> [{esc(c.kind)}] {esc(c.filename)}:{c.line}: {esc(c.reason)}</li>"
                        for c in self.cards)
        out = [f'<ul class="tc-dedup" style="margin:2px 0 8px 0">{dedup}</ul>']
        for c in self.cards:
            out.append(
                f'<div class="tc-card" data-tc-line="{c.line}" style="border-left:4px solid #cf222e;'
                f'padding:4px 8px;margin:6px 0;background:var(--jp-layout-color2,#f6f8fa)">'
                f"<div><b>{esc(c.kind)}</b>{' x' + str(c.count) if c.count > 1 else ''} "
                f"in {esc(', '.join(c.frames))}</div>"
                f"<div>{esc(c.reason)}</div>"
                f'<div style="font-family:monospace">{esc(c.filename)}:{c.line}: <code>{esc(c.source)}</code></div>'
                f"<div>resumes at: {esc(c.resumes_at)}</div>"
                f'<div class="tc-hint">hint: {esc(c.hint)}</div></div>')
        return "".join(out)

    def frames_html(self) -> str:
        out = []
        for f in self.report.frames:
            parts = []
            if f.graph is not None:
                parts.append(section(f"graph {f.label} ({f.graph.op_count} ops)", code_block(f.graph.code, "python")))
            if f.transformed_bytecode is not None:
                parts.append(section(f"transformed bytecode {f.label}", bytecode_html(f.transformed_bytecode, False)))
            for r in f.resume_functions:
                parts.append(section(f"resume function {r.name}", bytecode_html(r, False)))
            out.append("".join(parts))
        return "".join(out)

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
