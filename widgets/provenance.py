"""Which parts of every stage came from which line of the user's source (and back).

Built from the provenance the compiler records in its artifacts:

- bytecode rows carry ``line``;
- FX nodes (``NodeRow``) carry ``line`` and ``offset``;
- IR buffers (``BufferRow``) carry ``origins`` (FX node names) and ``lines``;
- fusion groups list their buffers;
- kernels carry ``nodes`` (IR buffers), ``lines``, and ``line_map``: for each kernel line, the
  buffer, FX nodes and source lines it came from, recorded by the renderer as it wrote the line;
- the output code's ``line_map`` says which lines launch (or describe) which fusion group.

Nothing here reads generated text back: every link is data the compiler recorded.

Like Compiler Explorer's line colouring, everything links through source
lines: selecting anything selects its lines, and every element of those lines
lights up.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from toycompiler.artifacts import FrameCompilation, KernelArtifact


@dataclass(frozen=True)
class LineLinks:
    """Everything that came from one user source line."""

    line: int
    offsets: tuple[int, ...] = ()  # bytecode instruction offsets
    fx_nodes: tuple[str, ...] = ()
    buffers: tuple[str, ...] = ()  # IR buffers
    groups: tuple[str, ...] = ()  # fusion groups (kernel0, ...)
    kernel_lines: tuple[tuple[str, tuple[int, ...]], ...] = ()  # (kernel name, its source lines)
    output_lines: tuple[int, ...] = ()  # lines of the output code


@dataclass
class Provenance:
    """Indexes one compiled frame in both directions (source line <-> stage elements)."""

    frame: FrameCompilation
    buffer_lines: dict[str, tuple[int, ...]] = field(default_factory=dict)
    node_lines: dict[str, tuple[int, ...]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for row in self._all_node_rows():
            if row.line is not None:
                self.node_lines[row.name] = tuple(sorted(set(self.node_lines.get(row.name, ())) | {row.line}))
        ir = self.frame.backend.ir if self.frame.backend else None
        for b in ir.buffers if ir else ():
            lines = set(b.lines) | {ln for o in b.origins for ln in self.node_lines.get(o, ())}
            self.buffer_lines[b.name] = tuple(sorted(lines))

    def _all_node_rows(self):
        rows = list(self.frame.graph.nodes) if self.frame.graph else []
        be = self.frame.backend
        if be is not None and be.passes is not None and be.passes.passes:
            rows += list(be.passes.final.nodes)
        return rows

    # -- stage element -> source lines ----------------------------------------------------

    def lines_of_offset(self, offset: int) -> tuple[int, ...]:
        rows = [r for r in self.frame.bytecode.instructions if r.offset == offset and r.line is not None]
        return tuple(r.line for r in rows)

    def lines_of_node(self, name: str) -> tuple[int, ...]:
        return self.node_lines.get(name, ())

    def lines_of_buffer(self, name: str) -> tuple[int, ...]:
        return self.buffer_lines.get(name, ())

    def lines_of_group(self, name: str) -> tuple[int, ...]:
        sched = self.frame.backend.schedule if self.frame.backend else None
        groups = [g for g in sched.groups if g.name == name] if sched else []
        return tuple(sorted({ln for g in groups for b in g.nodes for ln in self.lines_of_buffer(b)}))

    def kernel_line_buffers(self, kernel: KernelArtifact) -> dict[int, str]:
        """Kernel source line -> the IR buffer it computes (as the renderer recorded it)."""
        return {o.line: o.buffer for o in kernel.line_map}

    def lines_of_kernel_line(self, kernel: KernelArtifact, lineno: int) -> tuple[int, ...]:
        origin = next((o for o in kernel.line_map if o.line == lineno), None)
        return origin.source_lines if origin else ()

    def output_line_lines(self) -> dict[int, tuple[int, ...]]:
        """Output-code line -> user lines, for lines that call or describe a kernel."""
        be = self.frame.backend
        if be is None or be.output_code is None:
            return {}
        out = {line: self.lines_of_group(group) for line, group in be.output_code.line_map}
        return {line: lines for line, lines in out.items() if lines}

    # -- source line -> stage elements ----------------------------------------------------

    def links(self, line: int) -> LineLinks:
        f = self.frame
        offsets = tuple(r.offset for r in f.bytecode.instructions if r.line == line)
        fx = tuple(dict.fromkeys(n for n, lines in self.node_lines.items() if line in lines))
        bufs = tuple(b for b, lines in self.buffer_lines.items() if line in lines)
        be = f.backend
        groups = tuple(g.name for g in be.schedule.groups if set(g.nodes) & set(bufs)) if be and be.schedule else ()
        klines = []
        for k in be.kernels if be else ():
            mine = tuple(n for n, b in sorted(self.kernel_line_buffers(k).items()) if b in bufs)
            if mine:
                klines.append((k.name, mine))
        out = tuple(n for n, lines in self.output_line_lines().items() if line in lines)
        return LineLinks(line, offsets, fx, bufs, groups, tuple(klines), out)

    def source_lines(self) -> tuple[int, ...]:
        s = self.frame.source
        return tuple(range(s.firstlineno, s.firstlineno + len(s.lines)))
