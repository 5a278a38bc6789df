"""Small HTML building blocks shared by every view: escaping, code with line anchors, pictures.

Everything here returns self-contained HTML: inline styles (theme-aware through
JupyterLab's CSS variables, with fallbacks for anywhere else), inline SVG, and
no scripts, so nbconvert exports and GitHub show it without a kernel.
"""

from __future__ import annotations

import html
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterable

# Colours: JupyterLab variables first, fallbacks for nbconvert, GitHub, VS Code.
FG = "var(--jp-content-font-color1, #1f2328)"
FG_DIM = "var(--jp-content-font-color2, #59636e)"
BG = "var(--jp-layout-color1, #ffffff)"
BG_ALT = "var(--jp-layout-color2, #f6f8fa)"
BORDER = "var(--jp-border-color1, #d0d7de)"
MONO = "var(--jp-code-font-family, ui-monospace, SFMono-Regular, Menlo, Consolas, monospace)"

# One colour per kernel (and per graph in the explorer): light pastels (ColorBrewer Pastel2 and
# Pastel1), so the dark text inside them keeps >= 4.5:1 contrast in every theme.
PALETTE = ("#b3e2cd", "#fdcdac", "#cbd5e8", "#f4cae4", "#e6f5c9", "#fff2ae", "#f1e2cc", "#d9d9d9",
           "#c6dbef", "#fddaec", "#ccebc5", "#decbe4")

# Token colours as CSS variables with a light-theme fallback; THEME_CSS redefines them for dark themes.
TOKEN_COLOURS = {
    "Keyword": "var(--tc-kw, #8250df)",
    "Name.Builtin": "var(--tc-builtin, #0550ae)",
    "Name.Function": "var(--tc-fn, #6639ba)",
    "Name.Class": "var(--tc-fn, #6639ba)",
    "Literal.String": "var(--tc-str, #0a3069)",
    "Literal.Number": "var(--tc-num, #0550ae)",
    "Comment": "var(--tc-comment, #57606a)",
    "Operator": "var(--tc-op, #cf222e)",
    "Name.Decorator": "var(--tc-fn, #6639ba)",
    "Comment.Preproc": "var(--tc-kw, #8250df)",
    "Keyword.Type": "var(--tc-builtin, #0550ae)",
}


# Colours that carry meaning, light value as the fallback, dark value in _DARK. Every pair of
# text and background here has contrast >= 4.5:1 (WCAG AA); the browser test measures it.
BAD = "var(--tc-bad, #cf222e)"  # graph breaks, failures
GOOD = "var(--tc-good, #1a7f37)"  # a node added, a check that passed
WARN = "var(--tc-warn, #9a4d00)"  # notes: recompiles, fallbacks, resume functions
SELECT_BG = "var(--tc-sel-bg, #fff1a8)"  # what a clicked (or pointed-at) source line lights up
_ON_PASTEL = ("--tc-kw:#5a32a3;--tc-builtin:#0550ae;--tc-fn:#5a32a3;--tc-str:#0a3069;--tc-num:#0550ae;"
              "--tc-comment:#424a53;--tc-op:#a40e26;--tc-bad:#a40e26;--tc-good:#116329;--jp-content-font-color2:#424a53;"
              "--tc-sel-bg:#fff1a8")
_DARK = ("--tc-kw:#d2a8ff;--tc-builtin:#79c0ff;--tc-fn:#d2a8ff;--tc-str:#a5d6ff;--tc-num:#79c0ff;"
         "--tc-comment:#b1bac4;--tc-op:#ffa198;--tc-bad:#ffa198;--tc-good:#56d364;--tc-warn:#ffa657;--tc-sel-bg:#3d3200;"
         "--tc-break-bg:rgba(255,129,130,.16);--tc-target-bg:rgba(63,185,80,.18)")
# JupyterLab says which theme it shows on <body>, VS Code with a class. Graph regions are
# pastel in every theme, so inside them text keeps the light theme's dark colours.
THEME_CSS = ("body[data-jp-theme-light='false'] .tc-root,body.vscode-dark .tc-root,html[theme='dark'] .tc-root"
             f"{{{_DARK}}}.tc-root .tc-shade{{{_ON_PASTEL};color:#1f2328}}"
             ".tc-root .tc-svg svg{max-width:100%;height:auto}")  # pictures fit their pane
# A page of its own (save_html) has no JupyterLab variables: it follows the reader's system setting.
DOCUMENT_CSS = ("@media (prefers-color-scheme: dark){body{background:#0d1117!important}"
                ":root{--jp-layout-color0:#0d1117;--jp-layout-color1:#0d1117;--jp-layout-color2:#161b22;"
                "--jp-content-font-color1:#e6edf3;--jp-content-font-color2:#9ea7b3;--jp-border-color1:#30363d}"
                f".tc-root{{{_DARK}}}}}")


def esc(text: object) -> str:
    return html.escape(str(text), quote=True)


def colour(index: int) -> str:
    return PALETTE[index % len(PALETTE)]


def line_classes(lines: Iterable[int]) -> str:
    """``tc-l3 tc-l4``: the classes that tie an element to user source lines."""
    return " ".join(f"tc-l{n}" for n in sorted(set(lines)))


# -- code with syntax highlighting ----------------------------------------------------


def _lexer(language: str):
    from pygments.lexers import CppLexer, PythonLexer, TextLexer

    return {"python": PythonLexer, "triton": PythonLexer, "cpp": CppLexer}.get(language, TextLexer)()


def _token_style(ttype) -> str:
    while ttype is not None:
        name = ".".join(ttype)
        if name in TOKEN_COLOURS:
            return TOKEN_COLOURS[name]
        ttype = ttype.parent
        if not ttype:
            return ""
    return ""


def highlight_lines(code: str, language: str) -> list[str]:
    """Pygments tokens as inline-styled ``<span class="tc-tok">`` HTML, one string per source line."""
    from pygments import lex

    lines: list[str] = [""]
    pending = ""  # whitespace-only text is glued to the next token: some sanitizers collapse it alone
    for ttype, value in lex(code, _lexer(language)):
        style = _token_style(ttype)
        for i, piece in enumerate(value.split("\n")):
            if i:
                lines[-1] += esc(pending)
                lines.append("")
                pending = ""
            if piece and not piece.strip():
                pending += piece
            elif piece:
                piece, pending = pending + piece, ""
                lines[-1] += f'<span class="tc-tok" style="color:{style}">{esc(piece)}</span>' if style else esc(piece)
    lines[-1] += esc(pending)
    if lines and lines[-1] == "" and code.endswith("\n"):
        lines.pop()
    return lines


def code_block(code: str, language: str, line_info: dict[int, tuple[tuple[int, ...], str]] | None = None,
               first: int = 1, number: bool = True) -> str:
    """A code listing; ``line_info[n] = (user lines, title)`` ties listing line ``n`` to source lines."""
    line_info = line_info or {}
    rows = []
    for i, body in enumerate(highlight_lines(code, language)):
        n = first + i
        lines, title = line_info.get(n, ((), ""))
        rows.append(code_row(body, n if number else None, lines, title))
    return pre(rows)


# Long lines wrap, never cut off: continuation lines hang under the code, past the line number.
WRAP = "white-space:pre-wrap;overflow-wrap:anywhere"


def hang(width: int) -> str:
    """The style of a wrapping row whose continuation lines are indented ``width`` characters."""
    return f"{WRAP};padding-left:{width}ch;text-indent:-{width}ch"


def code_row(body_html: str, number: int | None, lines: Iterable[int] = (), title: str = "") -> str:
    lines = tuple(lines)
    cls = "tc-row " + line_classes(lines) if lines else "tc-row"
    data = f' data-tc-lines="{" ".join(map(str, sorted(set(lines))))}"' if lines else ""
    tip = f' title="{esc(title)}"' if title else ""
    num = ""
    if number is not None:
        num = f'<span class="tc-num" style="color:{FG_DIM};user-select:none">{number:4d}  </span>'
    style = hang(6 if number is not None else 4)
    return f'<div class="{cls}"{data}{tip} style="{style};min-height:1.3em">{num}{body_html or " "}</div>'


def pre(rows: list[str]) -> str:
    return (f'<div class="tc-code" style="font-family:{MONO};font-size:12px;line-height:1.35;'
            f'background:{BG_ALT};color:{FG};padding:6px 8px;border-radius:4px;overflow:auto">'
            + "".join(rows) + "</div>")


# -- graphviz -----------------------------------------------------------------------


def find_dot() -> str | None:
    """The ``dot`` program: on PATH, else next to this Python (a kernel may lack .venv/bin on PATH)."""
    found = shutil.which("dot")
    if found:
        return found
    bindir = os.path.dirname(sys.executable)
    for candidate in (os.path.join(sys.prefix, "bin", "dot"), os.path.join(bindir, "dot"),
                      os.path.join(bindir, "graphviz-pure")):
        if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate
    return None


class RenderError(Exception):
    """A picture could not be drawn; the message says why in plain words."""


def dot_to_svg(dot_source: str, timeout: float = 30.0) -> str:
    """Run ``dot -Tsvg`` and return an inlineable ``<svg>`` (no XML prolog, no comments)."""
    dot = find_dot()
    if dot is None:
        raise RenderError("graphviz 'dot' was not found (install graphviz, or pip install graphviz-pure)")
    try:
        done = subprocess.run([dot, "-Tsvg"], input=dot_source, capture_output=True, text=True, timeout=timeout)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise RenderError(f"graphviz 'dot' ({dot}) could not run: {e}") from None
    if done.returncode != 0:
        raise RenderError(f"graphviz 'dot' failed: {done.stderr.strip()[:300]}")
    svg = done.stdout
    svg = svg[svg.find("<svg"):]
    return re.sub(r"<!--.*?-->\n?", "", svg, flags=re.S)


def dot_quote(text: object) -> str:
    return '"' + str(text).replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def picture(dot_source: str, text_fallback: str) -> str:
    """The SVG, or a plain note and the text form when graphviz is missing."""
    try:
        return (f'<div class="tc-svg" style="overflow:auto;max-width:100%;background:#ffffff;color-scheme:light;'
                f'border-radius:4px">{dot_to_svg(dot_source)}</div>')
    except RenderError as e:
        return (f'<div class="tc-note" style="color:{FG_DIM}">No picture: {esc(e)}. Text form:</div>'
                + pre([code_row(esc(line), None) for line in text_fallback.splitlines()]))


# -- boxes -----------------------------------------------------------------------------


def section(title: str, body: str, stage: str = "") -> str:
    attr = f' data-tc-stage="{esc(stage)}"' if stage else ""
    return (f'<div class="tc-section"{attr} style="margin:4px 0 10px 0;min-width:0">'
            f'<div class="tc-title" style="font-weight:600;margin:2px 0 4px 0;color:{FG}">{esc(title)}</div>'
            f"{body}</div>")


def root(body: str, extra_css: str = "") -> str:
    """The outer box of every view; ``extra_css`` is a scriptless ``<style>`` for hover highlighting."""
    style = f"<style>{THEME_CSS}{extra_css}</style>"
    return (f'<div class="tc-root" style="font-family:var(--jp-ui-font-family, system-ui, sans-serif);'
            f'font-size:13px;color:{FG};background:{BG};border:1px solid {BORDER};border-radius:6px;'
            f'padding:8px 10px;max-width:100%;overflow:auto">{style}{body}</div>')


def hover_css(lines: Iterable[int]) -> str:
    """Highlight everything from one source line while any of it is hovered, without scripts."""
    rules = []
    for n in sorted(set(lines)):
        c = f".tc-l{n}"
        rules.append(f".tc-root:has({c}:hover) div{c}{{background:{SELECT_BG}!important}}"
                     f".tc-root:has({c}:hover) g{c} polygon,.tc-root:has({c}:hover) g{c} ellipse,"
                     f".tc-root:has({c}:hover) g{c} path"
                     f"{{stroke:#e36209;stroke-width:3px}}")
    return "".join(rules)


def table(header: list[str], rows: list[list[str]], row_attrs: list[str] | None = None) -> str:
    """Rows hold HTML already escaped by the caller."""
    th = "".join(f'<th style="text-align:left;padding:2px 8px;border-bottom:1px solid {BORDER}">{h}</th>'
                 for h in header)
    body = []
    for i, row in enumerate(rows):
        attrs = row_attrs[i] if row_attrs else ""
        cell = f"text-align:left;padding:2px 8px;vertical-align:top;font-family:{MONO};font-size:12px"
        tds = "".join(f'<td style="{cell}">{c}</td>' for c in row)
        body.append(f"<tr {attrs}>{tds}</tr>")
    return (f'<div style="overflow-x:auto"><table class="tc-table" style="border-collapse:collapse">'
            f'<tr>{th}</tr>{"".join(body)}</table></div>')


def fold(summary: str, body: str, cls: str = "tc-fold") -> str:
    """A closed ``<details>``: ``summary`` (escaped HTML) shows, ``body`` opens on a click."""
    return (f'<details class="{cls}"><summary style="color:{FG_DIM};cursor:pointer">{summary}</summary>'
            f"{body}</details>")


def shape_of(text: str) -> str:
    """A line with its numbers blanked and counters dropped from names (``relu``, ``relu_1``, ``relu_2``,
    as FX counts a name's uses): ``relu_3 = relu(linear_3)`` and ``relu = relu(linear)`` agree."""
    return re.sub(r"\d+", "#", re.sub(r"_\d+\b", "", text))


def fold_repeats(rows: list[str], keys: list[str], least: int = 3, longest: int = 8) -> list[str]:
    """Fold repeated structure: a run of ``least`` or more copies of the same block of rows (same
    ``keys``, e.g. :func:`shape_of` each line) keeps its first copy; the others fold into one line.

    A 12-layer ``nn.Sequential`` of Linear and ReLU becomes the first layers and "10 more repeats".
    """
    out, i = [], 0
    while i < len(rows):
        best = (1, 1)  # (copies, period)
        for period in range(1, longest + 1):
            block, copies = keys[i:i + period], 1
            while len(block) == period and keys[i + copies * period:i + (copies + 1) * period] == block:
                copies += 1
            worth = copies >= least and (copies - 1) * period >= 4 and any(k.strip() for k in block)
            if worth and copies * period > best[0] * best[1]:
                best = (copies, period)
        copies, period = best
        if copies == 1:
            out.append(rows[i])
            i += 1
            continue
        out += rows[i:i + period]
        rest = rows[i + period:i + copies * period]
        what = "line" if period == 1 else f"{period} lines"
        out.append(fold(f"... {copies - 1} more repeats of the {what} above ({len(rest)} lines)", "".join(rest)))
        i += copies * period
    return out
