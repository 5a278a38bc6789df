"""The timing view: eager vs compiled run time as a bar chart, compile time shown apart.

The numbers come from :mod:`.timing` (medians of repeated calls);
this module only draws them, with matplotlib, into an inline SVG.
"""

from __future__ import annotations

import io

from ._render import FG_DIM, esc, root
from .base import View
from .timing import Timing, _fmt


def chart_svg(t: Timing) -> str:
    """A horizontal bar chart (run time per call), as an inline ``<svg>`` with stable ids."""
    import matplotlib
    from matplotlib.figure import Figure

    labels, values, colours = ["eager", f"toycompiler ({t.backend})" if t.backend else "toycompiler"], \
        [t.eager_s, t.compiled_s], ["#8c8c8c", "#2a7ab0"]
    if t.torch_compile_s is not None:
        labels.append("torch.compile")
        values.append(t.torch_compile_s)
        colours.append("#e3692b")
    unit, scale = ("ms", 1e3) if max(values) >= 1e-3 else ("us", 1e6)
    with matplotlib.rc_context({"svg.hashsalt": "toycompiler", "svg.fonttype": "path", "font.size": 9}):
        fig = Figure(figsize=(5.2, 0.5 + 0.42 * len(values)))
        ax = fig.add_subplot()
        bars = ax.barh(labels[::-1], [v * scale for v in values[::-1]], color=colours[::-1])
        ax.bar_label(bars, labels=[f"{v * scale:.3g} {unit}" for v in values[::-1]], padding=3, fontsize=8)
        ax.set_xlabel(f"run time per call ({unit}, median of {t.repeat}); lower is better")
        ax.set_title(f"{t.name}: compile once {_fmt(t.compile_s)}, then {t.speedup:.2f}x eager", fontsize=9)
        ax.margins(x=0.25)
        for side in ("top", "right"):
            ax.spines[side].set_visible(False)
        fig.patch.set_alpha(0)
        fig.tight_layout()
        buf = io.StringIO()
        fig.savefig(buf, format="svg", metadata={"Date": None, "Creator": None})
    svg = buf.getvalue()
    return svg[svg.find("<svg"):]


class TimingView(View):
    kind = "timing"

    def __init__(self, timing: Timing):
        self.timing = timing

    def text(self) -> str:
        return str(self.timing)

    def inner_html(self) -> str:
        t = self.timing
        try:
            chart = f'<div class="tc-chart" style="background:#fff;border-radius:4px;display:inline-block">' \
                    f"{chart_svg(t)}</div>"
        except Exception as e:  # matplotlib missing or broken: say so, show the numbers
            chart = f'<div class="tc-note">No chart ({esc(type(e).__name__)}: {esc(e)}).</div>'
        extra = ""
        if t.torch_compile_compile_s is not None:
            extra = f"; torch.compile compile time {_fmt(t.torch_compile_compile_s)}"
        note = (f'<div style="color:{FG_DIM};font-size:11px">compile time (first call, once): '
                f"{_fmt(t.compile_s)}{esc(extra)}; run times are medians of {t.repeat} calls.</div>")
        return f'<div class="tc-timing" data-tc-kind="timing">{chart}{note}</div>'

    def html(self) -> str:
        return root(self.inner_html())
