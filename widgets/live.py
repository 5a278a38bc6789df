"""The live widget: a view's HTML inside an anywidget, with clicking added by static/view.js.

The JavaScript and CSS ship inside the package (``static/``): no CDN, no build
step. The same HTML as the static rendering is shown; the script adds
provenance selection on click, stage panes side by side, the stepper's
Previous/Next, and the explorer's re-run button (a message back to Python).
"""

from __future__ import annotations

import pathlib

import anywidget
import traitlets

STATIC = pathlib.Path(__file__).parent / "static"


class LiveView(anywidget.AnyWidget):
    _esm = STATIC / "view.js"
    _css = STATIC / "view.css"
    html = traitlets.Unicode("").tag(sync=True)
    kind = traitlets.Unicode("view").tag(sync=True)
    source = traitlets.Unicode("").tag(sync=True)  # the explorer's editable function
    status = traitlets.Unicode("").tag(sync=True)

    @classmethod
    def of(cls, view) -> LiveView:
        source = view.source_text() if hasattr(view, "source_text") else ""
        widget = cls(html=view.html(), kind=view.kind, source=source)
        widget._view = view
        widget.on_msg(widget._on_message)
        return widget

    def _on_message(self, _widget, content, _buffers) -> None:
        if not isinstance(content, dict) or content.get("type") != "rerun":
            return
        try:
            view = self._view.rerun(content.get("source", self.source))
        except Exception as e:  # the user's edit may not even parse: say so, keep the old view
            self.status = f"re-run failed: {type(e).__name__}: {e}"
            return
        self._view = view
        self.html = view.html()
        self.status = f"re-run: {view.summary()}"
