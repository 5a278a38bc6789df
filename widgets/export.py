"""``save_html(report, path)``: one self-contained HTML file, readable offline.

Inline styles and inline SVG only: no scripts, no CDN, no external files.
"""

from __future__ import annotations

import html
import os

from toycompiler.artifacts import FrameCompilation, Report

from ._render import DOCUMENT_CSS
from .base import View


def as_view(obj: object) -> View:
    from .stages import ReportView, StageView

    if isinstance(obj, View):
        return obj
    if isinstance(obj, Report):
        return ReportView(obj)
    if isinstance(obj, FrameCompilation):
        return StageView(obj)
    raise TypeError(f"save_html needs a Report, a FrameCompilation or a view, got {type(obj).__name__}")


def document(obj: object, title: str = "toycompiler report") -> str:
    view = as_view(obj)
    return ("<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\">"
            f"<title>{html.escape(title)}</title><style>{DOCUMENT_CSS}</style></head>"
            '<body style="margin:16px;background:#fff">'
            f"{view.html()}</body></html>\n")


def save_html(obj: object, path: str | os.PathLike, title: str = "toycompiler report") -> str:
    """Write ``obj`` (a Report, a frame, or any view) as one HTML file; returns the path."""
    path = os.fspath(path)
    with open(path, "w", encoding="utf-8") as f:
        f.write(document(obj, title))
    return path
