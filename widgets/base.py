"""Every view renders three ways: stable text, self-contained HTML, and a live widget.

- ``text()``: what ``print``, ``repr`` and nbval see: deterministic, no
  addresses, no timings (unless the view is about timings, whose numbers the
  lessons' sanitizer replaces), no machine-specific paths.
- ``html()``: inline styles and inline SVG, no scripts; what nbconvert exports
  and GitHub show with no kernel.
- ``widget()``: the same HTML inside an anywidget whose JavaScript adds
  clicking (provenance selection, stage panes side by side, re-run).

``_repr_mimebundle_`` returns text/plain and text/html, plus the widget view
when a person runs the cell in a live frontend, which prefers it; exports and
viewers without a kernel use the text/html beside it (see ``in_live_kernel``).
"""

from __future__ import annotations

import re
from typing import Any

_CACHE_PATH = re.compile(r"(['\"])([^'\"]*?/)([^/'\"]+\.(?:so|py|cpp))\1")


def stable_paths(text: str) -> str:
    """Replace generated-code cache paths (differ per machine) with ``<cache>/file``."""
    def repl(m: re.Match) -> str:
        name = re.sub(r"[0-9a-f]{12,}", "HASH", m.group(3))
        return f"{m.group(1)}<cache>/{name}{m.group(1)}"

    return _CACHE_PATH.sub(repl, text)


_live: bool | None = None  # None: decide from the frontend


def set_live(flag: bool | None) -> None:
    """``set_live(False)``: static HTML only; ``set_live(True)``: always add the widget; ``None``: decide (default).

    The default suits both readers: a person at JupyterLab, Notebook or VS Code gets the live
    widget (and the same static HTML inside the output, for whoever reads the saved notebook);
    a headless run (``jupyter nbconvert --execute``, nbclient, papermill, nbval) gets the static
    HTML alone. No environment variable is needed for exports any more.
    """
    global _live
    _live = flag


def in_live_kernel() -> bool:
    """True inside a kernel whose frontend can draw widgets: the cell was run by a person.

    The signal is the running cell's ``allow_stdin``: interactive frontends can answer
    ``input()`` and say so; headless runners execute with ``allow_stdin=False``. It matters
    because those runners save the state of every widget with the notebook, and nbconvert
    then prefers the widget view to the HTML beside it and draws it only with JavaScript
    from a CDN: an exported page with blank outputs. Without a widget view the HTML is used.
    """
    if _live is not None:
        return _live
    try:
        from IPython import get_ipython
    except ImportError:
        return False
    ip = get_ipython()
    kernel = getattr(ip, "kernel", None) if ip is not None else None
    return kernel is not None and bool(getattr(kernel, "_allow_stdin", False))


class View:
    """Base class: subclasses implement ``text()`` and ``html()``."""

    kind = "view"

    def text(self) -> str:
        raise NotImplementedError

    def html(self) -> str:
        raise NotImplementedError

    def __repr__(self) -> str:
        return self.text()

    def __str__(self) -> str:
        return self.text()

    def _repr_pretty_(self, p: Any, cycle: bool) -> None:
        p.text(self.text())

    def _repr_html_(self) -> str:
        return self.html()

    def widget(self):
        from .live import LiveView

        return LiveView.of(self)

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict:
        bundle = {"text/plain": self.text(), "text/html": self.html()}
        if in_live_kernel():
            try:
                live = self.widget()._repr_mimebundle_()
                if isinstance(live, tuple):  # (data, metadata)
                    live = live[0]
                bundle.update({k: v for k, v in live.items() if k != "text/plain"})
            except Exception:  # no widget frontend: the HTML still shows
                pass
        return bundle

    def save_html(self, path: str) -> str:
        from .export import save_html

        return save_html(self, path)
