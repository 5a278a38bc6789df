"""What each stage returns: plain, frozen data.

Every stage of the pipeline is a function from one artifact to the next. An
artifact holds no closures and no live compiler objects, only text, numbers
and tuples, so views (``toycompiler.widgets``), ``explain()`` and tests can
read it without knowing how the compiler works inside.

Each artifact prints as readable text (``str(artifact)``), in a notebook too.
The rich views live outside the compiler: ``toycompiler.widgets`` registers
them with IPython's display formatter when imported or loaded with
``%load_ext toycompiler.widgets``; nothing here knows about them.
"""

from __future__ import annotations

import html
from dataclasses import dataclass
from typing import Any, Generic, NamedTuple, TypeVar

T = TypeVar("T")


class Artifact:
    """Mixin: in a notebook an artifact shows as its text (the views register richer HTML)."""

    def _repr_html_(self) -> str:
        return f"<pre>{html.escape(str(self))}</pre>"


class StageResult(NamedTuple, Generic[T]):
    """What every backend stage returns: its output for the next stage, and its artifact for the views.

    ``value`` is live (an FX graph, the loop IR, the kernels, the loaded output code) and stays
    inside the compiler; ``artifact`` is plain data and is what reports, widgets and the cache keep.
    """

    value: T
    artifact: Any


def _sections(*sections: tuple[str, Any]) -> list[str]:
    """The lines of a report: ``== title``, then the value's text, for each value that is there (not None)."""
    return [line for title, value in sections if value is not None for line in (f"== {title}", str(value))]


# -- stage 0: the user's source -------------------------------------------------


@dataclass(frozen=True)
class SourceArtifact(Artifact):
    """The function as written: where it lives and its lines."""

    name: str
    filename: str
    firstlineno: int
    lines: tuple[str, ...]

    def line(self, lineno: int) -> str:
        i = lineno - self.firstlineno
        return self.lines[i].strip() if 0 <= i < len(self.lines) else ""

    def __str__(self) -> str:
        numbered = (f"{n:4d}  {line}" for n, line in enumerate(self.lines, self.firstlineno))
        return "\n".join([f"# {self.filename}:{self.firstlineno}", *numbered])


# -- stage 1: bytecode ----------------------------------------------------------


@dataclass(frozen=True)
class InstructionRow:
    """One bytecode instruction, like ``dis.Instruction`` but plain and normalised."""

    offset: int
    opname: str
    arg: int | None
    argrepr: str
    line: int | None
    is_jump_target: bool = False

    def __str__(self) -> str:
        target = ">>" if self.is_jump_target else "  "
        line = f"{self.line:4d}" if self.line is not None else "    "
        return f"{line} {target} {self.offset:4d} {self.opname:<24} {self.argrepr}".rstrip()


@dataclass(frozen=True)
class BytecodeArtifact(Artifact):
    """A code object's instructions, printable like ``dis.dis``."""

    name: str
    instructions: tuple[InstructionRow, ...]

    def __str__(self) -> str:
        return f"# bytecode of {self.name}\n" + "\n".join(map(str, self.instructions))


# -- stage 2: symbolic execution ------------------------------------------------


@dataclass(frozen=True)
class TranslationStep:
    """What the translator did at one instruction, with its symbolic state."""

    offset: int
    opname: str
    argrepr: str
    line: int | None
    stack_before: tuple[str, ...]
    stack_after: tuple[str, ...]
    locals_after: tuple[tuple[str, str], ...]
    events: tuple[str, ...]  # "node added: sin_1", "constant folded: 2 * 3 = 6", "guard added: ..."

    def __str__(self) -> str:
        events = "; ".join(self.events)
        return f"{self.offset:4d} {self.opname:<20} {self.argrepr:<18} [{', '.join(self.stack_after)}]  {events}"


@dataclass(frozen=True)
class GraphBreak:
    """Why tracing stopped, and where in the user's code."""

    reason: str
    filename: str
    line: int
    source: str  # the source text of that line
    offset: int  # instruction offset where the break happened
    opname: str
    kind: str = "unsupported"  # print, item, data-dependent-branch, unsupported, explicit ...
    frame: str = ""  # "[0/0]"-style label of the frame entry it happened in
    resumes_at: tuple[int, ...] = ()  # offsets the resume function(s) continue at (two for a branch)
    no_resume_reason: str | None = None  # set when the frame could not be split: it then ran eagerly

    def __str__(self) -> str:
        where = f"{self.frame} " if self.frame else ""
        then = (f"\n    (the whole frame ran eagerly: {self.no_resume_reason})" if self.no_resume_reason
                else f"\n    (resumes at offset {', '.join(map(str, self.resumes_at))})" if self.resumes_at else "")
        return f"{where}{self.filename}:{self.line}: {self.reason}\n    {self.source}{then}"


@dataclass(frozen=True)
class TranslationArtifact(Artifact):
    """The translator's log: every instruction it ran, and the break if it stopped early."""

    name: str
    steps: tuple[TranslationStep, ...]
    graph_break: GraphBreak | None = None

    def __str__(self) -> str:
        graph_break = [f"graph break: {self.graph_break}"] if self.graph_break else []
        return "\n".join([f"# symbolic execution of {self.name}", *map(str, self.steps), *graph_break])


# -- stage 3: guards ------------------------------------------------------------


@dataclass(frozen=True)
class Guard:
    """One runtime check, as a Python expression over the function's arguments."""

    expr: str
    kind: str  # TYPE_MATCH, TENSOR_MATCH, CONSTANT_MATCH, ID_MATCH, LENGTH_MATCH, ...
    reason: str  # why the trace depends on it
    line: int | None = None
    actual: str | None = None  # expression whose value is shown when the guard fails
    expected: str | None = None  # that value at compile time, as text

    def __str__(self) -> str:
        return f"{self.expr:<60}  # {self.reason}"


@dataclass(frozen=True)
class GuardsArtifact(Artifact):
    """All guards of one cache entry and the check function compiled from them."""

    guards: tuple[Guard, ...]
    code: str  # source of the generated check function

    def __str__(self) -> str:
        return "\n".join(str(g) for g in self.guards) or "(no guards)"


@dataclass(frozen=True)
class RecompileRecord:
    """One cache miss: why each existing entry was rejected, and what happened next."""

    frame: str  # the code object's name
    miss: int  # which cache miss of this frame (1-based): the rows of the recompile matrix
    failures: tuple[GuardFailure, ...]  # one per entry tried, in order
    outcome: str  # "compiled [0/2]" or "recompile limit (8) reached: ran eagerly"

    def __str__(self) -> str:
        return "\n".join([f"miss {self.miss} of {self.frame}: {self.outcome}", *(f"    {f}" for f in self.failures)])


@dataclass(frozen=True)
class GuardFailure:
    """Why a cache entry was not reused: the first guard that failed on a call."""

    entry: str  # "[0/1]"
    expr: str
    expected: str
    actual: str

    def __str__(self) -> str:
        return f"{self.entry} guard failed: {self.expr}  (expected {self.expected}, got {self.actual})"


# -- stage 4: the FX graph ------------------------------------------------------


@dataclass(frozen=True)
class NodeRow:
    """One FX node, with the source line and instruction it came from."""

    name: str
    op: str
    target: str
    args: str
    shape: str
    dtype: str
    line: int | None = None
    offset: int | None = None


@dataclass(frozen=True)
class GraphArtifact(Artifact):
    """An FX graph as readable Python plus a table of nodes."""

    name: str
    code: str
    nodes: tuple[NodeRow, ...]

    @property
    def op_count(self) -> int:
        return sum(n.op in ("call_function", "call_method", "call_module") for n in self.nodes)

    def __str__(self) -> str:
        return self.code.strip()


@dataclass(frozen=True)
class PassResult(Artifact):
    """One FX pass: what it changed, and the graph after it."""

    name: str
    changes: tuple[str, ...]
    graph: GraphArtifact

    def __str__(self) -> str:
        head = f"# pass {self.name}: " + (f"{len(self.changes)} change(s)" if self.changes else "no change")
        return "\n".join([head] + [f"#   {c}" for c in self.changes])


@dataclass(frozen=True)
class PassesArtifact(Artifact):
    passes: tuple[PassResult, ...]

    @property
    def final(self) -> GraphArtifact:
        return self.passes[-1].graph

    def __str__(self) -> str:
        return "\n".join(str(p) for p in self.passes)


# -- stage 5: loop-level IR -----------------------------------------------------


@dataclass(frozen=True)
class BufferRow:
    """One IR buffer: its name, kind, iteration ranges and body as text."""

    name: str
    kind: str  # input, pointwise, reduction, extern, view
    size: str
    dtype: str
    body: str
    origins: tuple[str, ...]  # FX node names it was lowered from
    lines: tuple[int, ...] = ()  # user source lines


@dataclass(frozen=True)
class IRArtifact(Artifact):
    buffers: tuple[BufferRow, ...]
    outputs: tuple[str, ...]

    def __str__(self) -> str:
        rows = [f"{b.name}: {b.kind} {b.dtype}{b.size}  # from {', '.join(b.origins) or '-'}"
                + "".join("\n    " + line for line in b.body.splitlines()) for b in self.buffers]  # the body indented
        return "\n".join([*rows, f"outputs: {', '.join(self.outputs)}"])


# -- stage 6: scheduling and fusion --------------------------------------------


@dataclass(frozen=True)
class FusionDecision:
    """Whether two nodes share a kernel, and why."""

    first: str
    second: str
    fused: bool
    reason: str

    def __str__(self) -> str:
        return f"{'fused' if self.fused else 'cannot fuse'} {self.first} with {self.second}: {self.reason}"


@dataclass(frozen=True)
class FusionGroup:
    """The nodes that become one kernel."""

    name: str
    nodes: tuple[str, ...]
    ranges: str  # iteration space, e.g. "[s0] x [1024]"
    stores: tuple[str, ...]  # buffers the kernel writes to memory
    kind: str  # pointwise, reduction, extern
    bytes_read: int = 0
    bytes_written: int = 0


@dataclass(frozen=True)
class ScheduleArtifact(Artifact):
    groups: tuple[FusionGroup, ...]
    decisions: tuple[FusionDecision, ...]
    memory_plan: tuple[str, ...]  # "buf3 reuses buf1 (buf1 is dead after kernel1)"
    unfused_bytes: int = 0  # traffic if every node were its own kernel

    @property
    def fused_bytes(self) -> int:
        return sum(g.bytes_read + g.bytes_written for g in self.groups)

    def __str__(self) -> str:
        groups = [f"{g.name} ({g.kind}, {g.ranges}): {', '.join(g.nodes)} -> stores {', '.join(g.stores) or '-'}; "
                  f"{g.bytes_read + g.bytes_written} bytes" for g in self.groups]
        traffic = f"memory traffic: {self.fused_bytes} bytes fused vs {self.unfused_bytes} unfused"
        return "\n".join([*groups, *map(str, self.decisions), *self.memory_plan, traffic])


# -- stage 7: kernels and the wrapper -------------------------------------------


@dataclass(frozen=True)
class LineOrigin:
    """Where one line of a kernel came from, recorded by the renderer as it wrote the line."""

    line: int  # 1-based line of the kernel's source
    buffer: str  # the IR buffer that line computes (or stores, or reduces)
    fx_nodes: tuple[str, ...]  # the FX nodes that buffer was lowered from
    source_lines: tuple[int, ...]  # the user's source lines those nodes came from


@dataclass(frozen=True)
class KernelArtifact(Artifact):
    """One generated kernel's source and where it was written."""

    name: str
    language: str  # "triton" or "cpp"
    source: str
    path: str
    nodes: tuple[str, ...] = ()  # IR buffers it computes
    lines: tuple[int, ...] = ()  # user source lines it came from
    line_map: tuple[LineOrigin, ...] = ()  # one entry per kernel line that computes part of a buffer

    def __str__(self) -> str:
        return self.source


@dataclass(frozen=True)
class OutputCodeArtifact(Artifact):
    """The Python module that allocates buffers and calls the kernels, and the kernels it loads."""

    source: str
    path: str
    kernels: tuple[KernelArtifact, ...] = ()
    line_map: tuple[tuple[int, str], ...] = ()  # (1-based line of ``source``, fusion group it launches)

    def __str__(self) -> str:
        return self.source


@dataclass(frozen=True)
class StageTime:
    stage: str
    seconds: float


@dataclass(frozen=True)
class AutotuneChoice:
    """One kernel's autotuning: every candidate's time, and the fastest."""

    kernel: str
    chosen: str  # "XBLOCK=1024, num_warps=4"
    seconds: float
    timings: tuple[tuple[str, float], ...]  # (candidate, seconds per call)
    meta: dict  # the chosen meta-parameters, as passed to the kernel

    def __str__(self) -> str:
        rows = ", ".join(f"{c}: {t * 1e6:.1f} us" for c, t in self.timings)
        return f"{self.kernel}: chose {self.chosen} ({self.seconds * 1e6:.1f} us) among {rows}"


@dataclass(frozen=True)
class AutotuneArtifact(Artifact):
    """What ``mode="max-autotune"`` tried and chose, per kernel."""

    choices: tuple[AutotuneChoice, ...]
    note: str

    def __str__(self) -> str:
        return "\n".join([self.note, *map(str, self.choices)])


@dataclass(frozen=True)
class RuntimeArtifact(Artifact):
    """How the compiled graph runs on each call, with the reason for each choice."""

    mode: str  # "default", "max-autotune", "reduce-overhead"
    launch: str  # how kernels are launched, and why
    cudagraphs: str  # whether calls replay a CUDA graph, and why (not)
    cache: str  # "hit <key>" / "miss, stored as <key>" / "bypassed: <reason>"
    autotune: AutotuneArtifact | None = None

    def __str__(self) -> str:
        rows = [("mode", self.mode), ("launch", self.launch), ("CUDA graphs", self.cudagraphs),
                ("graph cache", self.cache), ("autotune", self.autotune)]
        return "\n".join(f"{title}: {value}" for title, value in rows if value is not None)


@dataclass(frozen=True)
class BackendArtifacts(Artifact):
    """Everything a toy backend produced for one FX graph."""

    backend: str
    graph: GraphArtifact
    passes: PassesArtifact | None = None
    ir: IRArtifact | None = None
    schedule: ScheduleArtifact | None = None
    output_code: OutputCodeArtifact | None = None  # and the kernels it loads
    times: tuple[StageTime, ...] = ()
    fallback_reason: str | None = None  # set when the backend failed and eager ran instead
    runtime: RuntimeArtifact | None = None  # launch path, CUDA graphs, graph cache, autotuning
    backward: BackendArtifacts | None = None  # training: the backward graph AOTAutograd made

    @property
    def kernels(self) -> tuple[KernelArtifact, ...]:
        return self.output_code.kernels if self.output_code else ()

    def __str__(self) -> str:
        fallback = [f"fell back to eager: {self.fallback_reason}"] if self.fallback_reason else []
        sections = [("passes", self.passes), ("lowered IR", self.ir), ("fusion groups", self.schedule)]
        sections += [(f"kernel {k.name} ({k.language})", k.source.rstrip()) for k in self.kernels]
        sections += [("output code", self.output_code and self.output_code.source.rstrip()),
                     ("runtime", self.runtime), ("backward graph (AOTAutograd)", self.backward)]
        return "\n".join([f"== backend: {self.backend}", *fallback, *_sections(*sections)])


# -- one compiled frame, and the whole report -----------------------------------


@dataclass(frozen=True)
class FrameCompilation(Artifact):
    """One cache entry: a frame (the user's function or a resume function) compiled once."""

    label: str  # "[frame/entry]", e.g. "[0/1]"
    source: SourceArtifact
    bytecode: BytecodeArtifact
    translation: TranslationArtifact
    guards: GuardsArtifact
    graph: GraphArtifact | None
    backend: BackendArtifacts | None
    transformed_bytecode: BytecodeArtifact | None = None
    resume_functions: tuple[BytecodeArtifact, ...] = ()
    times: tuple[StageTime, ...] = ()
    recompile_reason: GuardFailure | None = None
    symbolic_sizes: tuple[str, ...] = ()  # "x.shape[0]: automatic dynamic: size changed (4 -> 5)"

    def __str__(self) -> str:
        parts = [f"==== frame {self.label} {self.source.name}"]
        parts += [f"recompiled because {self.recompile_reason}"] if self.recompile_reason else []
        parts += [f"symbolic size {s}" for s in self.symbolic_sizes]
        parts += _sections(("source", self.source), ("bytecode", self.bytecode), ("guards", self.guards),
                           ("FX graph", self.graph), ("graph break", self.translation.graph_break))
        parts += [str(self.backend)] if self.backend is not None else []  # it has its own "== backend" title
        parts += _sections(("transformed bytecode", self.transformed_bytecode),
                           *((f"resume function {r.name}", r) for r in self.resume_functions))
        if self.times:
            parts.append("== compile time: " + ", ".join(f"{t.stage} {t.seconds * 1e3:.1f} ms" for t in self.times))
        return "\n".join(parts)


@dataclass(frozen=True)
class Report(Artifact):
    """What ``toycompiler.explain(fn)(*args)`` returns."""

    frames: tuple[FrameCompilation, ...]
    fallback_reasons: tuple[str, ...] = ()
    recompiles: tuple[GuardFailure, ...] = ()
    misses: tuple[RecompileRecord, ...] = ()  # the recompile matrix: every miss, every entry tried

    @property
    def graphs(self) -> tuple[GraphArtifact, ...]:
        return tuple(f.graph for f in self.frames if f.graph is not None)

    @property
    def graph_count(self) -> int:
        return len(self.graphs)

    @property
    def breaks(self) -> tuple[GraphBreak, ...]:
        return tuple(f.translation.graph_break for f in self.frames if f.translation.graph_break)

    @property
    def graph_break_count(self) -> int:
        return len(self.breaks)

    @property
    def ops_per_graph(self) -> tuple[int, ...]:
        return tuple(g.op_count for g in self.graphs)

    @property
    def guards(self) -> tuple[Guard, ...]:
        return tuple(g for f in self.frames for g in f.guards.guards)

    @property
    def recompile_matrix(self) -> str:
        """One row per cache miss, one column per entry tried: the guard that rejected it."""
        cells = [" | ".join(f"{f.entry} {f.expr} (got {f.actual})" for f in m.failures) for m in self.misses]
        return "\n".join(f"{m.frame} miss {m.miss}: {row}  => {m.outcome}" for m, row in zip(self.misses, cells))

    @property
    def stage_times(self) -> dict[str, float]:
        """Seconds spent per compile stage, summed over every frame compiled."""
        times = [t for f in self.frames for t in (*f.times, *(f.backend.times if f.backend else ()))]
        return {s: sum(t.seconds for t in times if t.stage == s) for s in dict.fromkeys(t.stage for t in times)}

    @property
    def kernels(self) -> tuple[KernelArtifact, ...]:
        backends = [b for f in self.frames for b in (f.backend, f.backend and f.backend.backward) if b]
        return tuple(k for b in backends for k in b.kernels)

    @property
    def output_code(self) -> str:
        return "\n\n".join(f.backend.output_code.source for f in self.frames if f.backend and f.backend.output_code)

    def __str__(self) -> str:
        head = [f"graphs: {self.graph_count}, graph breaks: {self.graph_break_count}, "
                f"ops per graph: {list(self.ops_per_graph)}"]
        head += [f"break {b.frame}: {b.filename}:{b.line}: {b.reason}  |  {b.source}" for b in self.breaks]
        head += [f"fallback: {r}" for r in self.fallback_reasons]
        if self.stage_times:
            head.append("compile time: " + ", ".join(f"{k} {v * 1e3:.1f} ms" for k, v in self.stage_times.items()))
        head += [f"recompile: {r}" for r in self.misses or self.recompiles]  # misses say more, when recorded
        return "\n".join(head + [str(f) for f in self.frames])

