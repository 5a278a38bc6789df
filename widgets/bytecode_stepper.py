"""The bytecode stepper: the translator's run, one instruction at a time.

Each step shows the instruction, the symbolic stack before and after, the
locals, and what the step did (node added, constant folded, guard added,
graph break). The static HTML lists every step; the live widget shows one at
a time with Previous/Next and lights up its source line.
"""

from __future__ import annotations

from toycompiler.artifacts import FrameCompilation, TranslationStep

from ._render import BAD, FG_DIM, GOOD, MONO, esc, hover_css, root
from .base import View


def step_events(step: TranslationStep) -> str:
    return "; ".join(step.events) or "-"


class Stepper(View):
    kind = "stepper"

    def __init__(self, frame: FrameCompilation):
        self.frame = frame
        self.steps = frame.translation.steps

    def text(self) -> str:
        out = [f"Bytecode stepper {self.frame.label} {self.frame.source.name}: {len(self.steps)} step(s)"]
        for i, s in enumerate(self.steps):
            out.append(f"step {i}: line {s.line} {s.offset} {s.opname} {s.argrepr}".rstrip())
            out.append(f"    stack  {list(s.stack_before)} -> {list(s.stack_after)}")
            out.append(f"    locals {dict(s.locals_after)}")
            out.append(f"    did    {step_events(s)}")
        brk = self.frame.translation.graph_break
        if brk is not None:
            out.append(f"graph break: {brk.filename}:{brk.line}: {brk.reason}")
        return "\n".join(out)

    def step_html(self, i: int, s: TranslationStep) -> str:
        src = self.frame.source.line(s.line) if s.line is not None else ""
        cls = f"tc-step tc-row tc-l{s.line}" if s.line is not None else "tc-step tc-row"
        data = f' data-tc-lines="{s.line}"' if s.line is not None else ""
        stack = " | ".join(s.stack_after) or "(empty)"
        locs = ", ".join(f"{k}={v}" for k, v in s.locals_after) or "(none)"
        did = step_events(s)
        colour = BAD if "break" in did else (GOOD if "node added" in did else FG_DIM)
        return (f'<div class="{cls}"{data} data-tc-step="{i}" '
                f'style="border-bottom:1px solid var(--jp-border-color2,#eee);padding:3px 0;font-family:{MONO};'
                f'font-size:12px">'
                f"<b>step {i}</b> line {s.line} <code>{s.offset} {esc(s.opname)} {esc(s.argrepr)}</code> "
                f'<span style="color:{FG_DIM}">{esc(src)}</span><br>'
                f"stack: [{esc(stack)}]<br>locals: {esc(locs)}<br>"
                f'<span style="color:{colour}">did: {esc(did)}</span></div>')

    def html(self) -> str:
        head = (f'<div class="tc-head" style="font-weight:600">Bytecode stepper {esc(self.frame.label)} '
                f"{esc(self.frame.source.name)}: {len(self.steps)} step(s)</div>")
        body = "".join(self.step_html(i, s) for i, s in enumerate(self.steps))
        lines = {s.line for s in self.steps if s.line is not None}
        return root(f'<div class="tc-stepper" data-tc-kind="stepper">{head}{body}</div>', hover_css(lines))
