"""Guards and recompiles: each cache entry's guards as Python, and why calls missed.

:class:`GuardsView` shows, per cache entry (``[frame/entry]``), its guards as
the generated check function and, for a recompiled entry, the guard that
failed. :class:`RecompileMatrix` draws a :class:`.recompiles.GuardMatrix`:
cache entries x calls, each cell "ok" or the first failing guard with expected
vs actual.
"""

from __future__ import annotations

from toycompiler.artifacts import Report

from ._render import BAD, FG_DIM, code_block, esc, root, section, table
from .base import View
from .recompiles import GuardMatrix


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
            parts.append(section(f"{f.label} {f.source.name}", why + code_block(f.guards.code, "python")))
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
                    cells.append(f"<span style='color:#1a7f37'>{'runs (ok)' if used else 'ok'}</span>")
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
