"""Pictures: the FX graph (nodes coloured by the kernel they end up in) and the fusion groups.

Both are graphviz ``dot`` sources built from artifacts only; :func:`_render.picture`
turns them into inline SVG. Hovering a node shows its provenance and, in the
fusion picture, the scheduler's decision about it (an SVG ``<title>`` from the
graphviz ``tooltip``).
"""

from __future__ import annotations

import re

from toycompiler.artifacts import FrameCompilation, GraphArtifact

from ._render import colour, dot_quote, line_classes
from .provenance import Provenance

_LOAD = re.compile(r"load\((\w+)")


def drawn_graph(frame: FrameCompilation) -> GraphArtifact | None:
    """The graph whose node names the IR's origins refer to: after the passes, else as captured."""
    be = frame.backend
    if be is not None and be.passes is not None and be.passes.passes:
        return be.passes.final
    return frame.graph


def kernel_of_buffer(frame: FrameCompilation) -> dict[str, tuple[int, str]]:
    """IR buffer -> (index, name) of the fusion group (kernel) that computes it."""
    be = frame.backend
    if be is None or be.schedule is None:
        return {}
    return {b: (i, g.name) for i, g in enumerate(be.schedule.groups) for b in g.nodes}


def kernel_of_node(frame: FrameCompilation) -> dict[str, tuple[int, str]]:
    """FX node -> the kernel its buffer ends up in."""
    be = frame.backend
    kob = kernel_of_buffer(frame)
    out = {}
    for b in be.ir.buffers if be is not None and be.ir is not None else ():
        for origin in b.origins:
            if b.name in kob:
                out.setdefault(origin, kob[b.name])
    return out


def fx_dot(frame: FrameCompilation, prov: Provenance) -> str:
    graph = drawn_graph(frame)
    if graph is None:
        return "digraph fx { }"
    kernels = kernel_of_node(frame)
    names = {n.name for n in graph.nodes}
    out = ['digraph fx {', 'bgcolor="transparent"; rankdir=TB;',
           'node [shape=box style="rounded,filled" fillcolor="#eeeeee" fontname="Helvetica" fontsize=11];',
           'edge [color="#888888"];']
    for n in graph.nodes:
        label = n.name if n.op in ("placeholder", "output") else f"{n.name}\\n{n.target}"
        attrs = {"label": label, "id": f"fx-{n.name}"}
        tip = [f"{n.op} {n.target}({n.args})", f"shape {n.shape} {n.dtype}".strip()]
        if n.line is not None:
            tip.append(f"line {n.line}: {frame.source.line(n.line)}")
        if n.name in kernels:
            i, kname = kernels[n.name]
            attrs["fillcolor"] = colour(i)
            tip.append(f"computed in {kname}")
        if n.op == "placeholder":
            attrs["shape"] = "ellipse"
        elif n.op == "output":
            attrs["shape"] = "ellipse"
        attrs["tooltip"] = "\n".join(tip)
        classes = line_classes(prov.lines_of_node(n.name))
        if classes:
            attrs["class"] = classes
        out.append(f"{dot_quote(n.name)} [{_attrs(attrs)}];")
        for arg in re.findall(r"[A-Za-z_]\w*", n.args):
            if arg in names and arg != n.name:
                out.append(f"{dot_quote(arg)} -> {dot_quote(n.name)};")
    out.append("}")
    return "\n".join(out)


def fusion_dot(frame: FrameCompilation, prov: Provenance) -> str:
    be = frame.backend
    if be is None or be.ir is None or be.schedule is None:
        return "digraph fusion { }"
    why = {}
    for d in be.schedule.decisions:
        why.setdefault(d.second, []).append(str(d))
    grouped = {b for g in be.schedule.groups for b in g.nodes}
    out = ['digraph fusion {', 'bgcolor="transparent"; rankdir=TB; compound=true;',
           'node [shape=box style="rounded,filled" fontname="Helvetica" fontsize=11];', 'edge [color="#888888"];']
    rows = {b.name: b for b in be.ir.buffers}
    for b in be.ir.buffers:
        if b.name not in grouped:
            out.append(f"{dot_quote(b.name)} [{_attrs(_buffer_attrs(b, None, why, prov, frame))}];")
    for i, g in enumerate(be.schedule.groups):
        moved = g.bytes_read + g.bytes_written
        label = f"{g.name} ({g.kind}, {g.ranges}): {moved} bytes"
        out.append(f"subgraph cluster_{i} {{ label={dot_quote(label)}; style=\"rounded,filled\"; "
                   f"fillcolor=\"{_tint(colour(i))}\"; color=\"{colour(i)}\"; fontname=\"Helvetica\"; fontsize=11;")
        out.append(f"tooltip={dot_quote(g.name + ' stores ' + (', '.join(g.stores) or 'nothing'))};")
        for b in g.nodes:
            if b in rows:
                out.append(f"  {dot_quote(b)} [{_attrs(_buffer_attrs(rows[b], i, why, prov, frame))}];")
        out.append("}")
    for b in be.ir.buffers:
        for src in dict.fromkeys(_LOAD.findall(b.body)):
            if src in rows:
                out.append(f"{dot_quote(src)} -> {dot_quote(b.name)};")
    out.append("}")
    return "\n".join(out)


def _buffer_attrs(b, group: int | None, why: dict, prov: Provenance, frame: FrameCompilation) -> dict:
    tip = [b.body] + why.get(b.name, [])
    if b.origins:
        tip.append("from FX node(s) " + ", ".join(b.origins))
    lines = prov.lines_of_buffer(b.name)
    tip += [f"line {ln}: {frame.source.line(ln)}" for ln in lines]
    attrs = {"label": f"{b.name}\\n{b.kind}", "id": f"ir-{b.name}", "tooltip": "\n".join(tip),
             "fillcolor": colour(group) if group is not None else "#eeeeee"}
    if b.kind == "input":
        attrs["shape"] = "ellipse"
    if lines:
        attrs["class"] = line_classes(lines)
    return attrs


def _tint(hex_colour: str, white: float = 0.7) -> str:
    """An opaque light tint: black labels stay readable on light and dark themes alike."""
    rgb = [int(hex_colour[i:i + 2], 16) for i in (1, 3, 5)]
    return "#" + "".join(f"{round(c + (255 - c) * white):02x}" for c in rgb)


def _attrs(attrs: dict) -> str:
    return " ".join(f"{k}={dot_quote(v) if k != 'label' else dot_quote(v).replace(chr(92) * 2 + 'n', chr(92) + 'n')}"
                    for k, v in attrs.items())
