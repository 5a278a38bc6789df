"""Where fusion is decided: group IR buffers into kernels, each decision with its reason.

A kernel iterates over ``x`` (the rows, or every element of a pointwise
kernel) and, for a reduction kernel, over ``r`` (the reduced elements of a
row). A node fits a kernel in one of three ways:

- *element*: it has one value per (x, r) element (``exp(x - max)`` in softmax),
- *row*: it has one value per x (``amax``, ``sum``, and pointwise work on them),
- a *reduction* over the kernel's r range.

An element node may have another shape with the same elements in the same
order (a reshape): a kernel's loops split until they walk every node's dims
(:func:`refine`; a reduction kernel's rows and reduced range apart), and each
dim reads as one loop or several. In a reduction kernel, an element node that
reads a row's value (a mean) takes its dims in the order it reads the rows, so a
normalised row read through a transpose is written by the kernel that normalises it.

The scheduler walks the buffers in order and, for each one, asks whether it
can join a kernel that already exists (its producer's: vertical fusion; or an
unrelated one over the same range: sibling fusion). Every answer, yes or no,
is stored as a :class:`~toycompiler.artifacts.FusionDecision`. Then it works
out which buffers must be written to memory, how many bytes each kernel
moves, and which dead buffers' memory later buffers can reuse.

Mirrors: torch/_inductor/scheduler.py (Scheduler.fuse_nodes, can_fuse,
WhyNoFuse) and torch/_inductor/memory.py / wrapper's buffer reuse.
Before fusing, long reductions with too few outputs to keep a GPU (or, in C++,
more than one thread) busy are split (``ir.split_reductions``); buffers nobody reads any more (their readers inlined
them) are dropped, each with its reason.

Leaves out: reordering kernels to create fusion opportunities (but for moving a kernel a node reads from before
another it could join: :func:`_hoist`), and a reduction joining pointwise work whose loops cross its rows (a sum
over [B*T, C] of a value computed over [B, T*C] is a kernel of its own; where one's loops refine the other's, as
a sum over [N, C] x [H*W] of a value over [N, C, H, W], they share one: :meth:`Kernel.add`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import sympy

from ..artifacts import FusionDecision, FusionGroup, ScheduleArtifact, StageResult
from ..config import Config
from .ir import ComputedBuffer, ExternKernel, GraphIR, index_vars, loads, reshape_runs, split_reductions, store_index

Node = ComputedBuffer | ExternKernel


def squeeze(size: tuple) -> tuple:
    """The sizes that are not 1: ``[N, 1, C]`` and ``[N, C]`` iterate alike."""
    return tuple(s for s in size if s != 1)


def refine(a: tuple, b: tuple) -> tuple | None:
    """The loops that walk both ``a`` and ``b`` in row-major order, if any: ``[B, T, 768]`` and ``[B, T, 12, 64]``
    (a tensor and its reshape) are both walked by ``[B, T, 12, 64]``, dim 768 being ``64*x2 + x3``; ``[4, 6]`` and
    ``[6, 4]`` have none (element 4 starts a row of the second, inside a row of the first). Inductor fuses
    nodes of equal element count and splits their loops alike (``SIMDKernel._split_iteration_ranges``)."""
    # each run of dims: one dim of one split into dims of the other, or else there is no such loop nest
    runs = reshape_runs(a, b)
    if sympy.Mul(*a) != sympy.Mul(*b) or any(len(ra) > 1 and len(rb) > 1 for ra, rb in runs):
        return None
    return tuple(s for ra, rb in runs for s in (a[ra.start:ra.stop] if len(ra) > 1 else b[rb.start:rb.stop]))


@dataclass
class Kernel:
    """A group of buffers computed in one loop nest (mutable while scheduling)."""

    nodes: list[Node] = field(default_factory=list)
    stores: list[str] = field(default_factory=list)  # buffers written to memory
    xranges: tuple = ()  # one program / outer iteration per element of these (1s squeezed out)
    rranges: tuple = ()  # the reduced range, empty for a pointwise kernel
    walk: dict[str, int] = field(default_factory=dict)  # buffer -> nodes codegen walks to write its value

    @property
    def kind(self) -> str:
        """``reduction`` if any node reduces, else its first node's kind: ``pointwise``, or ``extern`` (a library
        call, which is alone in its kernel)."""
        return "reduction" if any(n.kind == "reduction" for n in self.nodes) else self.nodes[0].kind

    def names(self) -> set[str]:
        return {n.name for n in self.nodes}

    def reads(self) -> set[str]:
        """Every buffer its nodes read; less ``names()``, the ones it reads from memory."""
        return set().union(*(n.reads for n in self.nodes))

    def add(self, node: Node) -> None:
        """Put ``node`` in the kernel. The first node sets the loops; a reduction joining pointwise work
        (a prologue) sets them to its own rows and reduced range, in the prologue's loops where those are finer."""
        loops = None
        if isinstance(node, ExternKernel):
            self.xranges = tuple(node.layout.size)
        elif not self.nodes or (node.reduction and self.kind == "pointwise"):
            prologue, self.xranges = self.xranges, squeeze(node.layout.size)
            self.rranges = squeeze(node.reduction.ranges) if node.reduction else ()
            # (the work it reduces may take finer loops: a group norm's gradient over [N, C, H, W], summed over
            # [N, C] x [H * W], is computed in loops over [N, C] x [H, W], as below)
            loops = self.nodes and refine(self.xranges + self.rranges, prologue)
        else:
            loops = element_order(node, self)[1]
        if loops:
            # a reshape of the kernel's elements: loops fine enough for both; in a reduction kernel, rows and
            # reduced range apart (loops finer than both never cross between them)
            k = next(k for k in range(len(loops) + 1) if sympy.Mul(*loops[:k]) == sympy.Mul(*self.xranges))
            self.xranges, self.rranges = loops[:k], loops[k:]
        if isinstance(node, ComputedBuffer):  # what codegen walks to write its value (a reduction's is kept)
            self.walk[node.name] = 1 if node.reduction else inline_walk(self, node)
        self.nodes.append(node)


# -- where a node sits in a kernel's loops --------------------------------------------


def placement(node: ComputedBuffer, kernel: Kernel) -> str | None:
    """``element``, ``row`` or ``reduction`` if ``node`` fits the kernel's loops; None if it does not."""
    xr, rr = kernel.xranges, kernel.rranges
    rows = refine(squeeze(node.layout.size), xr) == xr  # one value per row (rows walked in finer loops too)
    if node.reduction:
        return "reduction" if rows and refine(squeeze(node.reduction.ranges), rr) == rr else None
    return "element" if element_order(node, kernel)[1] == xr + rr else "row" if rr and rows else None


def element_order(node: ComputedBuffer, kernel: Kernel) -> tuple[list[int], tuple | None]:
    """``node``'s dims in the order the kernel's loops take them, x's then r's, and the loops that walk both the
    kernel's loops and those dims (:func:`refine`; None if none, or for a reduction). Where they are the kernel's
    own loops, ``node`` has one value per (x, r) element of the kernel (``exp(x - max)`` in a softmax over rows).

    The order is its own where the kernel reduces the last dims, the kept dims first where it reduces others
    (``Reduction.dims``): a softmax over the channels of NCHW reduces dim 1, so its ``exp`` runs over n, h, w
    (x) and c (r). Where ``node`` reads a row's value the kernel computes (a mean), it is the order it reads
    the rows in: its dims by falling stride in that read, the reduced dims and those it does not read along last. A
    normalised row read through a transpose (``layer_norm(x).view(B, T, H, D).transpose(1, 2)``) is then
    written by the kernel that normalises it, its loops over ``[B, T]`` and ``[H, D]`` storing each element
    where the transpose puts it (Inductor reorders loops to fuse so: ``loop_ordering_after_fusion``).
    Any order is correct, as a node's loads and its store take the same one; ``can_fuse`` checks that it
    reads what other nodes of the kernel compute at their elements. Its dims may be coarser than the loops
    (see :func:`refine`): ``[B, T, 768]`` in loops over ``[B, T, 12, 64]``.

    The kept dims are those it reads a row's value along, not those in the reduced dims' places: a node stored
    channels-last (n, h, w, c) in a kernel that reduces dims (0, 2, 3) of NCHW keeps its last dim, c. Taken by
    place, the input gradient of a channels-last batch norm kept h, did not fuse, and two values went to
    memory row-major, written with a stride of h * w along the vector loop (its training step over [32, 64, 28,
    28] ran at 0.40x torch.compile, one thread; 1.54x now)."""
    size, dims = node.layout.size, index_vars(len(node.layout.size))
    r = next((m for m in kernel.nodes if isinstance(m, ComputedBuffer) and m.reduction), None)
    rdims = r.reduction.dims if r and len(size) == len(r.layout.size) + len(r.reduction.ranges) else ()
    rows = {m.name for m in kernel.nodes if sympy.Mul(*m.layout.size) == sympy.Mul(*kernel.xranges)} if r else ()
    read = next((ld.index for ld in loads(node.body) if ld.buf in rows and not ld.indirect
                 and ld.index.is_polynomial(*dims)), sympy.Integer(0))  # (no // or % of a dim)
    # (a size known only when running counts as a large one)
    stride = read.xreplace(dict.fromkeys(read.free_symbols - set(dims), sympy.Integer(2**20))).as_coefficients_dict()
    # (the dims the row value is read along are the kept ones: a node stored in another dim order than the
    # reduction's input, channels-last, has its kept dim last; reading none, it takes the order of an element node
    # of the kernel it reads at that node's own element, as along a chain of them over a channels-last tensor)
    kept = read.free_symbols & set(dims) if read != 0 else {dims[d] for d in range(len(size)) if d not in rdims}
    same = [m for m in kernel.nodes if read == 0 and m is not node and m.layout.size == size and not m.reduction
            and any(ld.buf == m.name and ld.index == store_index(size) for ld in loads(node.body))]
    order = element_order(same[0], kernel)[0] if same else \
        sorted(range(len(size)), key=lambda d: (dims[d] not in kept, -stride[dims[d]]))
    own = squeeze(tuple(size[d] for d in order))
    return order, None if node.reduction else refine(kernel.xranges + kernel.rranges, own)


def node_vars(node: ComputedBuffer, kernel: Kernel) -> dict[sympy.Symbol, sympy.Expr]:
    """Map the node's own indices (d0.., r0..) onto the kernel's loop variables (x0.., r0..).

    Size-1 dims read index 0; the first non-1 dims run over x, the rest (element
    nodes in a reduction kernel, in :func:`element_order`) over r; a reduction's r dims run over r.
    A dim the kernel walks in finer loops (see :func:`refine`) takes as many as make its size: ``64*x2 + x3``.
    """
    dims = list(zip(index_vars(len(node.layout.size)), node.layout.size))
    if node.reduction:  # a reduction's kept dims fill x exactly: its r dims come next
        dims += zip(index_vars(len(node.reduction.ranges), "r"), node.reduction.ranges)
    elif (walk := element_order(node, kernel))[1] == kernel.xranges + kernel.rranges:
        dims = [dims[d] for d in walk[0]]
    loops = (*kernel.xranges, *kernel.rranges)
    names = (*index_vars(len(kernel.xranges), "x"), *index_vars(len(kernel.rranges), "r"))
    runs = reshape_runs(loops, tuple(s for _, s in dims))  # the loops each dim takes, in order (a size-1 dim: none)
    # a run's loops index the dim row-major, as a contiguous buffer of their sizes is indexed
    return {d: store_index(loops[a.start:a.stop]).xreplace(dict(zip(index_vars(len(a)), names[a.start:a.stop])))
            for (d, _), (a, _) in zip(dims, runs)}


# -- fusion ---------------------------------------------------------------------------


def can_fuse(kernel: Kernel, node: Node, config: Config) -> tuple[bool, str]:
    """Whether ``node`` can join ``kernel``, and why (the reason is shown to learners)."""
    if not config.fusion:
        return False, "fusion is turned off (config.fusion=False)"
    if isinstance(node, ExternKernel) or kernel.kind == "extern":
        return False, "extern kernels (library calls) are never fused"
    if node.store_into or any(n.store_into for n in kernel.nodes):
        return False, "a write into a graph input runs in its own kernel, after every read of the old value"
    probe = Kernel(list(kernel.nodes), xranges=kernel.xranges, rranges=kernel.rranges, walk=dict(kernel.walk))
    probe.add(node)  # the kernel with node in it: a reduction joining pointwise work sets its loops
    # (a reduction joining pointwise work: that work must fit the reduction's loops too)
    if (where := placement(node, probe)) is None \
            or node.reduction and kernel.kind == "pointwise" and any(placement(n, probe) is None for n in kernel.nodes):
        got = _space(squeeze(node.layout.size), squeeze(node.reduction.ranges) if node.reduction else ())
        return False, f"iteration spaces differ ({_space(kernel.xranges, kernel.rranges)} vs {got})"
    # (a column sum beside the row sums of a square matrix: the loops match in size only; fused, one of them would
    # read across memory, a row's stride an element. A layer norm and GELU training step over [1024, 1024] (weight
    # gradients: column sums; input gradient: row sums) took 30.9 ms so, torch.compile 2.4; one thread)
    if node.reduction and any(m.reduction.dims != node.reduction.dims for m in kernel.nodes if m.kind == "reduction"):
        return False, f"{node.name} reduces other dims of its input than the kernel's reductions (equal in size only)"
    if not config.sibling_fusion and not (kernel.names() & node.reads):
        return False, "they share no data, and sibling fusion is off (config.sibling_fusion=False)"
    if kernel.kind == "reduction" and not node.reduction and not config.epilogue_fusion:
        return False, "pointwise work after a reduction stays separate (config.epilogue_fusion=False)"
    if inline_walk(kernel, node) > MAX_INLINE_WALK:
        return False, (f"{node.name} would inline a chain of {inline_walk(kernel, node)} ops into one expression "
                       f"(more than {MAX_INLINE_WALK}): it starts a new kernel, its input stored")
    producers = {n.name: n for n in kernel.nodes}
    for ld in (ld for ld in loads(node.body) if ld.buf in producers):
        stored = store_index(producers[ld.buf].layout.size).xreplace(node_vars(producers[ld.buf], probe))
        if sympy.expand(ld.index.xreplace(node_vars(node, probe)) - stored) != 0:
            return False, f"{node.name} reads {ld.buf} at a different index ({ld.index}), so it needs other elements"
    return True, _why_fused(kernel, node, where, sorted(producers.keys() & node.reads))


# Codegen writes a fused value by walking the expressions it inlines, recursively (each value once: see
# KernelRenderer.expr). Past a chain this many ops deep a buffer is stored and a new kernel begins, so that the
# recursion stays bounded. Inductor realizes a buffer past ``realize_opcount_threshold``. (Counted as the size of
# the expression tree, a diamond counted twice, integer `//` and `%` (torch's floor division, then a remainder
# of a remainder: 17 ops reusing values) split a kernel in two, storing three values: 0.36x torch.compile on an
# H200 for ``(a * 3 + b) // 7 % 5`` over [8192, 4096] int64s.)
MAX_INLINE_WALK = 100


def inline_walk(kernel: Kernel, node: Node) -> int:
    """How deep a chain of ops codegen walks to write ``node`` inside ``kernel`` (a reduction's value is kept)."""
    return 1 + max((kernel.walk.get(ld.buf, 0) for ld in loads(node.body)), default=0)


def _why_fused(kernel: Kernel, node: Node, where: str, producers: list[str]) -> str:
    if where == "reduction":
        return f"{node.name} reduces what the kernel computes element by element (pointwise prologue)" \
            if kernel.kind == "pointwise" else f"{node.name} is another reduction over the same rows"
    if kernel.kind == "reduction" and producers:
        return f"{node.name} uses {', '.join(producers)} row by row ({where} epilogue of the reduction)"
    if producers:
        return f"{node.name} consumes {', '.join(producers)} element by element over the same range"
    return "independent work over the same range (sibling fusion shares the loop)"


def schedule(ir: GraphIR, config: Config, target: str = "cpp") -> StageResult[Schedule]:
    """Loop IR -> kernels in order (fused where :func:`can_fuse` allows), every decision in the artifact."""
    ir, splits = split_reductions(ir, target)  # (a long reduction with few outputs: see ir.split_reductions)
    decisions = [FusionDecision(name, partial, False, reason) for name, partial, reason in splits]
    kernels, home = [], {}  # the kernels in order; buffer -> index of its kernel (as _hoist returns them)
    live = ir.live_buffers()
    for node in ir.buffers:
        if node.name not in live:
            decisions.append(FusionDecision("-", node.name, False,
                                            "not computed: no one reads it (its readers inlined it)"))
            continue
        kernels, home = _hoist(node, kernels, home, config)
        for k in _candidates(node, kernels, home):
            ok, reason = can_fuse(kernels[k], node, config)
            decisions.append(FusionDecision("+".join(n.name for n in kernels[k].nodes), node.name, ok, reason))
            if ok:
                break
        else:  # no kernel took it: a new one
            k = len(kernels)
            kernels.append(Kernel())
        kernels[k].add(node)
        home[node.name] = k
        if node.store_into:  # later readers of that input must run after this write
            home[node.store_into] = k
    # to memory: outputs, library calls' results, what another kernel reads, what is written into an input
    for kernel in kernels:
        read_elsewhere = set().union(*(other.reads() for other in kernels if other is not kernel))
        kernel.stores += [n.name for n in kernel.nodes if n.name in ir.outputs or n.name in read_elsewhere
                          or isinstance(n, ExternKernel) or n.store_into]
    if config.verify_ir:
        verify(ir, kernels)
    reuses, plan = plan_memory(ir, kernels) if config.reuse_buffers else ({}, [])
    return StageResult(Schedule(ir, tuple(kernels), tuple(reuses.items())), _artifact(ir, kernels, decisions, plan))


def verify(ir: GraphIR, kernels: list[Kernel]) -> None:
    """The schedule's invariants: each buffer in one kernel; every read sees a value already computed."""
    where = {b.name: -1 for b in ir.inputs}
    for i, k in enumerate(kernels):
        for n in k.nodes:
            assert n.name not in where, f"{n.name} is scheduled twice"
            for b in n.reads:
                assert b in where, f"{n.name} in kernel{i} reads {b} before it is computed"
                assert where[b] == i or where[b] == -1 or b in kernels[where[b]].stores, \
                    f"{n.name} in kernel{i} reads {b}, which kernel{where[b]} does not store"
            where[n.name] = i
    assert set(where) >= ir.live_buffers(), "some buffers are not scheduled"  # (outputs are live, inputs are in it)


def _candidates(node: Node, kernels: list[Kernel], home: dict[str, int]) -> list[int]:
    """Kernels ``node`` could join without running before its inputs: producers first, newest first."""
    # the newest producer (-1: none), as nothing earlier may run the node; then the kernels after it, newest first
    first = max((home[b] for b in node.reads if b in home), default=-1)
    return [k for k in (first, *range(len(kernels) - 1, first, -1)) if k >= 0][:4]


def _hoist(node: Node, kernels: list[Kernel], home: dict[str, int], config: Config) -> tuple[list[Kernel], dict]:
    """Kernels ``node`` reads from, moved before the oldest one it reads from where that lets it join that one:
    ``where(x > 0, x, y * 0.1)`` joins ``x > 0`` once ``y * 0.1`` (another range) runs first; left in program
    order, the three kernels took 1.13 ms over [2048, 1531], two 0.47-0.57 in three runs (torch.compile 0.40-0.53,
    its one kernel computing ``y * 0.1`` at every element; one thread); on an H200 over [8192, 4099], 121 us and
    71 (68), and ``x.relu() * w.sigmoid()`` (a gate from a parameter) 137 and 71. A kernel that reads what runs
    from the oldest one on, writes into an input or calls a library (random numbers are drawn in order) keeps its
    place. Inductor fuses any two nodes whose fusion makes no cycle of dependencies."""
    deps = sorted({home[b] for b in node.reads if b in home})
    # (can_fuse, the costly test, last: most nodes stop at the first)
    if len(deps) < 2 or any(kernels[j].kind == "extern" or any(n.store_into for n in kernels[j].nodes)
                            or any(deps[0] <= home.get(b, -1) != j for n in kernels[j].nodes for b in n.reads)
                            for j in deps[1:]) or not can_fuse(kernels[deps[0]], node, config)[0]:
        return kernels, home
    order = [*range(deps[0]), *deps[1:], *(i for i in range(deps[0], len(kernels)) if i not in deps[1:])]
    return [kernels[i] for i in order], {b: order.index(i) for b, i in home.items()}


@dataclass(frozen=True)
class Schedule:
    """What codegen reads: the IR, its kernels in order, and buffer reuse."""

    ir: GraphIR
    kernels: tuple[Kernel, ...]
    reuses: tuple[tuple[str, str], ...] = ()  # (new buffer, dead buffer whose memory it takes)


def plan_memory(ir: GraphIR, kernels: list[Kernel]) -> tuple[dict[str, str], list[str]]:
    """Give a new buffer the memory of a dead one of the same dtype and element count.

    A pointwise kernel may also write over a buffer it is the last to read (in place, Inductor's
    ``in_out_ptr``): the bias and GELU after a matmul overwrite its output, whose lines are still in L2,
    where a fresh buffer would make the cache write both back. Only the buffer the kernel stores last does: the
    kernel writes its buffers in order, each element's after reading what it needs, and a later buffer's reads of
    the old value would come after an earlier buffer's write."""
    written = {name: j for j, k in enumerate(kernels) for name in k.stores}  # stored buffer -> its kernel, in order
    # the last kernel reading each buffer (never read: dead right after the kernel writing it)
    last_use = written | {b: i for i, k in enumerate(kernels) for b in k.reads()}
    keep = set(ir.outputs) | {b.name for b in ir.inputs} | {b.name for b in ir.buffers if b.store_into}
    pool: list[str] = []  # dead buffers whose memory is free
    reuses, plan = {}, []  # what it returns: new buffer -> dead buffer whose memory it takes; the plan's lines
    for i, k in enumerate(kernels):
        in_place = [b for b in sorted(k.reads() - k.names(), key=lambda name: (len(name), name))  # buf3 before buf10
                    if last_use[b] == i and b not in keep and _in_place(ir, k, b)]
        for name in k.stores:
            node = ir.buffer(name)
            if node.store_into or (isinstance(node, ExternKernel) and ("out", name) not in node.kwargs):
                continue  # it lives in an input, or torch allocates it
            # in place: only the kernel's last store, which every read of the element comes before. An earlier one
            # wrote over an element a later node still read (a flatten's backward zeroed a gradient it then copied:
            # every gradient of a channels-last ResNet-18 before its last layer was 0)
            for dead in pool + (in_place if name == k.stores[-1] else []):
                if (d := ir.buffer(dead).layout).dtype == node.layout.dtype and d.device == node.layout.device \
                        and d.is_contiguous and sympy.expand(d.numel - node.layout.numel) == 0:
                    (pool if dead in pool else in_place).remove(dead)
                    reuses[name] = dead
                    keep.add(dead)  # its memory is name's now
                    how = ("is dead after", "") if last_use[dead] < i else ("is read last by", ", by element: in place")
                    plan.append(f"{name} reuses {dead} ({dead} {how[0]} kernel{last_use[dead]}{how[1]})")
                    break
        # the buffers dead after this kernel, in the order they were written (none of no memory: a check's result)
        pool += [name for name in written if last_use[name] == i and name not in keep and ir.buffer(name).layout.numel]
    return reuses, plan


def _in_place(ir: GraphIR, k: Kernel, dead: str) -> bool:
    """Whether kernel ``k`` may write over ``dead`` as it runs: it is pointwise and reads ``dead``, and each value
    it computes, only at the element being written, so each element is read before it is overwritten."""
    inside = k.names() | {dead}
    return k.kind == "pointwise" and all(
        ld.index == store_index(n.layout.size) for n in k.nodes for ld in loads(n.body) if ld.buf in inside)


def _nbytes(ir: GraphIR, name: str) -> int:
    layout = ir.buffer(name).layout
    return int(n) if (n := layout.numel * layout.dtype.itemsize).is_Integer else 0  # a symbolic size counts as unknown


def _artifact(ir: GraphIR, kernels: list[Kernel], decisions: list[FusionDecision],
              reuse: list[str]) -> ScheduleArtifact:
    groups = [FusionGroup(f"kernel{i}", tuple(n.name for n in k.nodes), _space(k.xranges, k.rranges), tuple(k.stores),
                          k.kind, bytes_read=sum(_nbytes(ir, b) for b in k.reads() - k.names()),
                          bytes_written=sum(_nbytes(ir, b) for b in k.stores))
              for i, k in enumerate(kernels)]
    unfused = sum(sum(_nbytes(ir, b) for b in n.reads) + _nbytes(ir, n.name) for n in ir.buffers)  # one kernel each
    plan = tuple(f"{name}: never written to memory (lives in registers inside {g.name})"
                 for g in groups for name in g.nodes if name not in g.stores)
    return ScheduleArtifact(tuple(groups), tuple(decisions), plan + tuple(reuse), unfused)


def _space(xr: tuple, rr: tuple) -> str:
    """A kernel's iteration space: ``[64]`` (pointwise), ``[64] x [1024]`` (rows x reduced elements)."""
    return f"{list(xr)} x {list(rr)}" if rr else str(list(xr))  # sympy sizes print alike in a list
