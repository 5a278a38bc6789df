"""Guards and recompiles: each cache entry's guards as Python, and why calls missed.

:class:`GuardsView` shows, per cache entry (``[frame/entry]``), its guards as
the generated check function and, for a recompiled entry, the guard that
failed. :class:`RecompileMatrix` draws a :class:`.recompiles.GuardMatrix`:
cache entries x calls, each cell "ok" or the first failing guard with expected
vs actual.
"""

from __future__ import annotations

import re
from collections import Counter

from toycompiler.artifacts import Guard, GuardsArtifact, Report

from ._render import BAD, FG_DIM, GOOD, MONO, WRAP, code_block, esc, fold, root, section, table
from .base import View
from .recompiles import GuardMatrix

SHOWN_GUARDS = 3  # guards shown per input; the rest fold into "N more"
SHOWN_INPUTS = 6  # inputs shown; the rest fold into "N more inputs"
SHOWN_CODE = 12  # a longer check function folds
_PATH = re.compile(r"^(?:not\s+)?(?:\w+\()*([A-Za-z_]\w*)(?![\w(])((?:\[[^\]]*\]|\.\w+)*)")
_STEP = re.compile(r"\[[^\]]*\]|\.\w+")


def guarded_input(expr: str) -> str:
    """The input a guard checks: an argument (``x``, ``xs[0]``, ``d['a']``) or a submodule
    (``self._modules['0']``, whose parameters' guards go with it); properties (``.dtype``,
    ``.shape[0]``, ``.training``) are dropped. A guard over several inputs (aliasing) says so.
    """
    m = _PATH.match(expr)
    if m is None:
        return "several inputs"
    path = m.group(1)
    for step in _STEP.findall(m.group(2)):
        if step.startswith("[") or step == "._modules":
            path += step
        else:
            break
    return path


def group_guards(guards: tuple[Guard, ...]) -> dict[str, list[Guard]]:
    """Guards by the input they check: plain arguments first, then submodules, each in first-seen order."""
    groups: dict[str, list[Guard]] = {}
    for g in guards:
        groups.setdefault(guarded_input(g.expr), []).append(g)
    return dict(sorted(groups.items(), key=lambda kv: "._modules" in kv[0]))


def guard_rows(guards: list[Guard]) -> str:
    out = []
    for g in guards:
        attrs = f' class="tc-row tc-l{g.line}" data-tc-lines="{g.line}"' if g.line else ""
        out.append(f'<div{attrs} style="display:flex;gap:12px;padding:1px 0 1px 12px">'
                   f'<code style="font-family:{MONO};white-space:pre;flex:0 0 auto">{esc(g.expr)}</code>'
                   f'<span style="color:{FG_DIM};{WRAP};min-width:12em">{esc(g.kind)}: {esc(g.reason)}</span></div>')
    return "".join(out)


def input_html(name: str, guards: list[Guard]) -> str:
    kinds = ", ".join(f"{k} x{n}" if n > 1 else k for k, n in Counter(g.kind for g in guards).items())
    head = (f'<div style="margin-top:4px"><b><code style="font-family:{MONO}">{esc(name)}</code></b> '
            f'<span style="color:{FG_DIM}">{len(guards)} guard{"s" * (len(guards) != 1)}: {esc(kinds)}</span></div>')
    rest = guards[SHOWN_GUARDS:]
    more = fold(f"{len(rest)} more", guard_rows(rest)) if rest else ""
    shown = guard_rows(guards[:SHOWN_GUARDS])
    return f'<div class="tc-guard-input" data-tc-input="{esc(name)}">{head}{shown}{more}</div>'


def guards_html(artifact: GuardsArtifact) -> str:
    """Guards grouped by the input they check, a few shown per input, and the check function (folded if long)."""
    if not artifact.guards:
        return "<i>no guards</i>"
    groups = list(group_guards(artifact.guards).items())
    shown = "".join(input_html(n, gs) for n, gs in groups[:SHOWN_INPUTS])
    rest = groups[SHOWN_INPUTS:]
    if rest:
        count = sum(len(gs) for _, gs in rest)
        shown += fold(f"{len(rest)} more inputs ({count} guards)", "".join(input_html(n, gs) for n, gs in rest))
    head = (f'<div style="color:{FG_DIM}">{len(artifact.guards)} guards on {len(groups)} '
            f'input{"s" * (len(groups) != 1)}</div>')
    code = code_block(artifact.code, "python")
    lines = artifact.code.count("\n") + 1
    if lines > SHOWN_CODE:
        code = fold(f"the check function ({lines} lines)", code)
    return f'<div class="tc-guards" style="overflow-x:auto">{head}{shown}</div>{code}'


class GuardsView(View):
    kind = "guards"

    def __init__(self, report: Report):
        self.report = report

    def text(self) -> str:
        out = []
        for f in self.report.frames:
            out.append(f"{f.label} {f.source.name}: {len(f.guards.guards)} guard(s)")
            if f.recompile_reason is not None:
                out.append(f"  compiled because {f.recompile_reason}")
            out += ["  " + line for line in f.guards.code.rstrip().splitlines()]
        return "\n".join(out)

    def html(self) -> str:
        parts = []
        for f in self.report.frames:
            why = ""
            if f.recompile_reason is not None:
                r = f.recompile_reason
                why = (f'<div style="color:{BAD}">recompiled: {esc(r.entry)} failed <code>{esc(r.expr)}</code> '
                       f"(expected {esc(r.expected)}, got {esc(r.actual)})</div>")
            parts.append(section(f"{f.label} {f.source.name}", why + guards_html(f.guards)))
        return root("".join(parts))


class RecompileMatrix(View):
    kind = "recompiles"

    def __init__(self, matrix: GuardMatrix):
        self.matrix = matrix

    def text(self) -> str:
        return str(self.matrix)

    def html(self) -> str:
        m = self.matrix
        header = ["entry"] + [f"call {c}<br><span style='color:{FG_DIM}'>{esc(d)}</span>"
                              for c, d in enumerate(m.calls)]
        rows = []
        for row in m.cells:
            cells = [esc(row[0].entry) if row else ""]
            for cell in row:
                if cell.passed:
                    used = m.used[cell.call] == cell.entry
                    cells.append(f"<span style='color:{GOOD}'>{'runs (ok)' if used else 'ok'}</span>")
                else:
                    f = cell.failure
                    cells.append(f"<code>{esc(f.expr)}</code><br>expected {esc(f.expected)}, got "
                                 f"<b>{esc(f.actual)}</b>")
            rows.append(cells)
        misses = [c for c, u in enumerate(m.used) if u is None]
        note = (f"<div style='color:{FG_DIM}'>calls matching no entry (would compile anew): "
                f"{', '.join(map(str, misses)) or 'none'}</div>")
        title = f"Recompile matrix of {m.name}: {len(m.entries)} cache entries x {len(m.calls)} calls"
        return root(section(title, table(header, rows) + note))
