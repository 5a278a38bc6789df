"""The code that runs around a graph break: transformed bytecode and resume functions, annotated.

A frame that broke runs its *transformed bytecode*: call the graph captured so
far, run the untraceable instruction as ordinary Python, then call a *resume
function*. A resume function is a copy of the original bytecode with a short
prologue that pushes the saved stack and jumps to the instruction after the
break; everything before that point is dead code. These listings say so row by
row: which call is the graph, which is the resume function (and which cache
entry it became), which rows are the break, and where the jump lands.

Reads BytecodeArtifact rows only (torch/_dynamo/resume_execution.py builds the
same shapes; ``depyf`` decompiles them back to Python).
"""

from __future__ import annotations

import re
from collections.abc import Callable

from toycompiler.artifacts import BytecodeArtifact, InstructionRow

from ._render import FG_DIM, esc, hang, pre

# Translucent, so text keeps its theme colour; _render._DARK sets the dark theme's values.
BREAK_BG = "var(--tc-break-bg, rgba(207,34,46,.14))"  # rows that run the untraceable instruction
TARGET_BG = "var(--tc-target-bg, rgba(31,136,61,.18))"  # where a resume function's jump lands
_RESUME_GLOBAL = re.compile(r"__resume_at_(\d+)_\d+")
_JUMP_TO = re.compile(r"to (\d+)")


def _text(r: InstructionRow, width: int) -> str:
    """Like ``dis`` (line, jump target, offset, opname, argument), the opname column only as wide as needed."""
    line = f"{r.line:4d}" if r.line is not None else "    "
    return f"{line} {'>>' if r.is_jump_target else '  '} {r.offset:4d} {r.opname:<{width}} {r.argrepr}".rstrip()


def _row(r: InstructionRow, note: str = "", background: str = "", width: int = 24) -> str:
    """One instruction; a note goes on its own line below, so narrow columns never cut it off."""
    style = f"{hang(13)};min-height:1.3em{';background:' + background if background else ''}"
    row = f'<div class="tc-row" style="{style}">{esc(_text(r, width))}</div>'
    if note:
        row += (f'<div class="tc-note" style="white-space:pre-wrap;padding-left:9ch;color:{FG_DIM};'
                f'font-style:italic{";background:" + background if background else ""}">^ {esc(note)}</div>')
    return row


def transformed_html(code: BytecodeArtifact, graph_label: str | None, break_line: int | None,
                     first_line: int, describe_resume: Callable[[int], str]) -> str:
    """The transformed bytecode; ``describe_resume(offset)`` names the resume function called for that offset."""
    rows = code.instructions
    width = max((len(r.opname) for r in rows), default=0)
    breaking = [k for k, r in enumerate(rows) if break_line is not None and r.line == break_line != first_line]
    out = []
    for k, r in enumerate(rows):
        note, background = "", ""
        resume = _RESUME_GLOBAL.search(r.argrepr)
        if "__compiled_graph" in r.argrepr:
            note = f"the compiled graph {graph_label}" if graph_label else "the compiled graph"
        elif resume:
            note = describe_resume(int(resume.group(1)))
        if k in breaking:
            background = BREAK_BG
            if k == breaking[-1]:
                note = note or f"line {break_line}, the break, runs as ordinary Python"
        out.append(_row(r, note, background, width))
    return pre(out)


def jump_target(code: BytecodeArtifact) -> tuple[int, int] | None:
    """(index of the prologue's jump, index of the row it lands on), or None for other code."""
    rows = code.instructions
    for k, r in enumerate(rows[:12]):  # the prologue: a few LOAD_FAST / PUSH_NULL, then one jump
        if r.opname.startswith("JUMP"):
            m = _JUMP_TO.search(r.argrepr)
            land = next((j for j in range(k + 1, len(rows))
                         if (m and rows[j].offset == int(m.group(1))) or (not m and rows[j].is_jump_target)), None)
            return (k, land) if land is not None else None
    return None


def resume_html(code: BytecodeArtifact, original_offset: int, original_name: str) -> str:
    """A resume function with its prologue marked, the dead copy folded, and the landing row lit."""
    rows = code.instructions
    w = max((len(r.opname) for r in rows), default=0)
    jump = jump_target(code)
    if jump is None:
        return pre([_row(r, width=w) for r in rows])
    k, land = jump
    out = [_row(r, width=w) for r in rows[:1]]
    out += [_row(r, "prologue: push the saved stack and locals" if i == 0 and k > 1 else "", width=w)
            for i, r in enumerate(rows[1:k])]
    out.append(_row(rows[k], "jump over the code that already ran", width=w))
    dead = rows[k + 1:land]
    if dead:
        lines = sorted({r.line for r in dead if r.line is not None})
        span = f"lines {lines[0]}-{lines[-1]}" if len(lines) > 1 else f"line {lines[0]}" if lines else ""
        out.append(f'<div class="tc-row tc-dead" style="white-space:pre-wrap;padding-left:9ch;color:{FG_DIM};'
                   f'font-style:italic">... {len(dead)} instructions ({esc(span)}) skipped: '
                   "they ran before the break ...</div>")
    out.append(_row(rows[land], f"continues here: offset {original_offset} of {original_name}", TARGET_BG, w))
    out += [_row(r, width=w) for r in rows[land + 1:]]
    return pre(out)
