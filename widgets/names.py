"""Names a learner can follow: frames counted from ``[0/0]`` in each view, cell code as ``cell In[n], line k``.

The compiler labels frames across the whole session (``[7/0]`` is the eighth
frame it ever saw, first cache entry), which is right for its text report, as
tlparse keeps it. A view shows one function, so it counts its own frames
from zero. Code typed in a notebook lives in a file whose name means nothing
to the reader (``/tmp/ipykernel_17876/2679956406.py``); IPython knows which
cell it was, and the views say that instead.
"""

from __future__ import annotations

import dataclasses
import re

from toycompiler.artifacts import FrameCompilation, Report

_LABEL = re.compile(r"\[(\d+)/(\d+)\]")
_CELL = re.compile(r"<cell (In\[[^\]]*\](?:#\d+)?)>")


def local_labels(frames: tuple[FrameCompilation, ...]) -> dict[str, str]:
    """Session labels ``[7/0] [7/1] [9/0]`` -> this view's ``[0/0] [0/1] [1/0]`` (entry numbers kept)."""
    frame_ids: dict[str, int] = {}
    out = {}
    for f in frames:
        m = _LABEL.fullmatch(f.label)
        if m:
            out[f.label] = f"[{frame_ids.setdefault(m.group(1), len(frame_ids))}/{m.group(2)}]"
    return out


def renumber(report: Report) -> Report:
    """The same report, its frames labelled from ``[0/0]``."""
    labels = local_labels(report.frames)
    frames = tuple(dataclasses.replace(f, label=labels.get(f.label, f.label)) for f in report.frames)
    return dataclasses.replace(report, frames=frames)


def renumber_frame(frame: FrameCompilation) -> FrameCompilation:
    """A frame shown alone: ``[7/1]`` -> ``[0/1]``."""
    return dataclasses.replace(frame, label=local_labels((frame,)).get(frame.label, frame.label))


def cell_name(filename: str) -> str | None:
    """``In[5]`` for code typed in a notebook cell (ours or IPython's file for it), else None."""
    m = _CELL.fullmatch(filename)
    if m:
        return m.group(1)
    try:
        from IPython import get_ipython

        named = get_ipython().compile.format_code_name(filename)
    except Exception:  # no IPython, or not a cell's file
        return None
    return named[1] if named else None


def where(filename: str, line: int | None) -> str:
    """``cell In[5], line 3`` for notebook code; ``path/file.py:3`` for a file."""
    cell = cell_name(filename)
    if cell is not None:
        return f"cell {cell}, line {line}"
    return f"{filename}:{line}"
