"""Every view renders three ways: stable text, self-contained HTML, and a live widget.

- ``text()``: what ``print``, ``repr`` and nbval see: deterministic, no
  addresses, no timings (unless the view is about timings, whose numbers the
  lessons' sanitizer replaces), no machine-specific paths.
- ``html()``: inline styles and inline SVG, no scripts; what nbconvert exports
  and GitHub show with no kernel.
- ``widget()``: the same HTML inside an anywidget whose JavaScript adds
  clicking (provenance selection, stage panes side by side, re-run).

``_repr_mimebundle_`` returns text/plain and text/html, plus the widget view
when running inside a live kernel, where frontends prefer it.
"""

from __future__ import annotations

import os
import re
from typing import Any

_CACHE_PATH = re.compile(r"(['\"])([^'\"]*?/)([^/'\"]+\.(?:so|py|cpp))\1")


def stable_paths(text: str) -> str:
    """Replace generated-code cache paths (differ per machine) with ``<cache>/file``."""
    def repl(m: re.Match) -> str:
        name = re.sub(r"[0-9a-f]{12,}", "HASH", m.group(3))
        return f"{m.group(1)}<cache>/{name}{m.group(1)}"

    return _CACHE_PATH.sub(repl, text)


_live: bool | None = None  # None: decide from the environment


def set_live(flag: bool | None) -> None:
    """``set_live(False)``: static HTML only, e.g. for notebooks exported with nbconvert or shown on GitHub.

    nbconvert prefers a widget view over HTML and can only draw it from saved widget state (and a CDN),
    so a notebook meant to be read without a kernel is best run with live widgets off. The
    environment variable ``TOYCOMPILER_STATIC=1`` does the same. ``None`` restores the default.
    """
    global _live
    _live = flag


def in_live_kernel() -> bool:
    """True inside a Jupyter kernel that can talk to widgets (not plain IPython, not CI)."""
    if _live is not None:
        return _live
    try:
        from IPython import get_ipython
    except ImportError:
        return False
    ip = get_ipython()
    return ip is not None and getattr(ip, "kernel", None) is not None and not os.environ.get("TOYCOMPILER_STATIC")


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
