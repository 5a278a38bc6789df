"""Where fusion is decided: group IR buffers into kernels, each decision with its reason.

The scheduler walks the buffers in order and, for each one, asks whether it
can join the kernel being built. Every answer, yes or no, is stored as a
:class:`~toycompiler.artifacts.FusionDecision` so a learner can read why two
operations did or did not end up in one kernel. Then it works out which
buffers must be written to memory (read outside their kernel, or outputs) and
how many bytes each kernel moves.

Mirrors: torch/_inductor/scheduler.py (Scheduler.fuse_nodes, can_fuse,
WhyNoFuse, the memory planning in torch/_inductor/memory.py).
Leaves out: reordering to create fusion opportunities, and loop splitting.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import sympy

from ..artifacts import FusionDecision, FusionGroup, ScheduleArtifact
from ..config import Config
from .ir import ComputedBuffer, ExternKernel, GraphIR, loads, store_index


@dataclass
class Kernel:
    """A group of buffers computed in one loop nest (mutable while scheduling)."""

    nodes: list[ComputedBuffer | ExternKernel] = field(default_factory=list)
    stores: list[str] = field(default_factory=list)  # buffers written to memory

    @property
    def kind(self) -> str:
        return self.nodes[0].kind

    @property
    def ranges(self) -> tuple[sympy.Expr, ...]:
        return self.nodes[0].layout.size

    def names(self) -> set[str]:
        return {n.name for n in self.nodes}


@dataclass(frozen=True)
class Schedule:
    """The scheduler's result: kernels in order, plus the artifact describing them."""

    kernels: tuple[Kernel, ...]
    artifact: ScheduleArtifact


def can_fuse(kernel: Kernel, node: ComputedBuffer | ExternKernel, config: Config) -> tuple[bool, str]:
    """Whether ``node`` can join ``kernel``, and why (the reason is shown to learners)."""
    if not config.fusion:
        return False, "fusion is turned off (config.fusion=False)"
    if isinstance(node, ExternKernel) or kernel.kind == "extern":
        return False, "extern kernels (library calls) are never fused"
    if node.kind != "pointwise" or kernel.kind != "pointwise":
        return False, f"{kernel.kind} followed by {node.kind} is not fused yet"
    if node.layout.size != kernel.ranges:
        return False, f"iteration spaces differ ({_fmt(kernel.ranges)} vs {_fmt(node.layout.size)})"
    same_index = store_index(node.layout.size)
    for ld in loads(node.body):
        if ld.buf in kernel.names() and sympy.simplify(ld.index - same_index) != 0:
            return False, f"{node.name} reads {ld.buf} at a different index ({ld.index}), so it would need other elements"
    producers = sorted({ld.buf for ld in loads(node.body)} & kernel.names())
    if producers:
        return True, f"{node.name} consumes {', '.join(producers)} element by element over the same range"
    return True, "independent work over the same range (sibling fusion shares the loop)"


def schedule(ir: GraphIR, config: Config) -> Schedule:
    kernels: list[Kernel] = []
    decisions: list[FusionDecision] = []
    for node in ir.buffers:
        if kernels:
            ok, reason = can_fuse(kernels[-1], node, config)
            decisions.append(FusionDecision(_label(kernels[-1]), node.name, ok, reason))
            if ok:
                kernels[-1].nodes.append(node)
                continue
        kernels.append(Kernel([node]))
    _plan_stores(ir, kernels)
    return Schedule(tuple(kernels), _artifact(ir, kernels, decisions))


def _plan_stores(ir: GraphIR, kernels: list[Kernel]) -> None:
    """A buffer goes to memory if it is an output or read by another kernel."""
    for k in kernels:
        read_elsewhere = set().union(*(_reads(other) for other in kernels if other is not k))
        for n in k.nodes:
            if n.name in ir.outputs or n.name in read_elsewhere or isinstance(n, ExternKernel):
                k.stores.append(n.name)


def _reads(k: Kernel) -> set[str]:
    out: set[str] = set()
    for n in k.nodes:
        out |= set(n.inputs) if isinstance(n, ExternKernel) else {ld.buf for ld in loads(n.body)}
    return out


def _nbytes(ir: GraphIR, name: str) -> int:
    layout = ir.buffer(name).layout
    try:
        return int(layout.nbytes)
    except TypeError:  # symbolic size: count it as unknown
        return 0


def _artifact(ir: GraphIR, kernels: list[Kernel], decisions: list[FusionDecision]) -> ScheduleArtifact:
    groups = []
    for i, k in enumerate(kernels):
        external = _reads(k) - k.names()
        groups.append(FusionGroup(
            name=f"kernel{i}", nodes=tuple(n.name for n in k.nodes), ranges=_fmt(k.ranges),
            stores=tuple(k.stores), kind=k.kind,
            bytes_read=sum(_nbytes(ir, b) for b in external),
            bytes_written=sum(_nbytes(ir, b) for b in k.stores),
        ))
    unfused = 0
    for n in ir.buffers:
        reads = set(n.inputs) if isinstance(n, ExternKernel) else {ld.buf for ld in loads(n.body)}
        unfused += sum(_nbytes(ir, b) for b in reads) + _nbytes(ir, n.name)
    plan = tuple(f"{name}: never written to memory (lives in registers inside {g.name})"
                 for g in groups for name in g.nodes if name not in g.stores)
    return ScheduleArtifact(tuple(groups), tuple(decisions), plan, unfused)


def _label(k: Kernel) -> str:
    return "+".join(n.name for n in k.nodes)


def _fmt(ranges: tuple) -> str:
    return "[" + ", ".join(map(str, ranges)) + "]"
