"""The graph the translator builds: nodes, fake tensors, inputs, and how the result is rebuilt.

One :class:`OutputGraph` is shared by the translator and every inlined call
it makes. Besides the ``torch.fx.Graph`` it keeps the graph inputs (with the
Python expression, the *source*, that reaches each one at run time), the
in-place nodes that must survive dead-code elimination, and a journal of
changes to symbolic values so a graph break in the middle of an instruction
can be undone.

Mirrors: torch/_dynamo/output_graph.py (OutputGraph) and
torch/_dynamo/codegen.py (rebuilding the return value).
Leaves out: side-effect replay for Python objects, graph-input deduplication by identity.
"""

from __future__ import annotations

from typing import Any

import torch
import torch.fx

from .. import provenance
from ..artifacts import SourceArtifact
from .containers import DictVariable, ListVariable, NamedTupleVariable, TupleVariable
from .shapes import ShapePolicy
from .variables import TensorVariable, Unsupported, Variable, wrap_constant_result


class OutputGraph:
    """The FX graph under construction, its fake tensors and inputs (shared by inlined calls)."""

    def __init__(self, source: SourceArtifact, shapes: ShapePolicy | None = None) -> None:
        self.filename, self.source_line = source.filename, source.line
        self.graph = torch.fx.Graph()
        self.shapes = shapes or ShapePolicy(dynamic=False)  # which sizes are symbolic: see shapes.py
        self.fake_mode = self.shapes.fake_mode
        self.example_inputs: list[torch.Tensor] = []
        self.input_sources: list[str] = []
        self.inputs_by_source: dict[str, TensorVariable] = {}
        self.side_effect_nodes: list[torch.fx.Node] = []  # in-place ops: kept even if unused
        self.submodules: dict[str, torch.nn.Module] = {}  # branch graphs of torch.cond
        self.instructions_run = 0  # by the translator and every inlined call
        self.journal: list[tuple[Any, str, Any]] = []  # (object, attribute, value before a change)
        self.caller_containers: dict[int, tuple[Any, str, Any]] = {}  # id -> (list or dict, source, variable)
        self.current_line: int | None = None
        self.current_offset: int | None = None
        self.events: list[str] = []

    def add_input(self, source: str, value: torch.Tensor) -> TensorVariable:
        if source in self.inputs_by_source:
            return self.inputs_by_source[source]
        name = "".join(c if c.isalnum() else "_" for c in source).strip("_")
        node = self.graph.placeholder(name)
        fake = self.shapes.fake(source, value)
        node.meta.update(example_value=fake, toy_source=source)
        self.example_inputs.append(value)
        self.input_sources.append(source)
        self.events.append(f"graph input {node.name}")
        var = self.inputs_by_source[source] = TensorVariable(node, fake, source)
        return var

    def create_node(
        self, op: str, target: Any, args: tuple, kwargs: dict, example: Any
    ) -> torch.fx.Node:
        node = self.graph.create_node(op, target, args, kwargs)
        node.meta["example_value"] = example
        provenance.tag(
            node,
            self.current_line,
            self.current_offset,
            self.filename,
            self.source_line(self.current_line),
        )
        self.events.append(f"node added: {node.name}")
        return node

    # -- undo, for a graph break in the middle of an instruction ------------------
    # A break inside an inlined call happens after the callee already recorded
    # nodes and changed variables. The caller's CALL will run again as ordinary
    # Python, so those changes are undone: the graph and the symbolic state at a
    # break are exactly what they were *before* the breaking instruction.

    def remember(self, obj: Any, attr: str) -> None:
        """Note ``obj.attr`` (a list's items, a tensor's node) before a change, for a break."""
        value = getattr(obj, attr)
        self.journal.append(
            (
                obj,
                attr,
                list(value)
                if isinstance(value, list)
                else dict(value)
                if isinstance(value, dict)
                else value,
            )
        )

    def checkpoint(self) -> tuple:
        nodes = list(self.graph.nodes)
        return (nodes[-1] if nodes else None, len(self.side_effect_nodes), len(self.journal))

    def rollback(self, mark: tuple) -> None:
        last, n_effects, n_journal = mark
        for obj, attr, value in reversed(self.journal[n_journal:]):
            setattr(obj, attr, value)
        del self.journal[n_journal:], self.side_effect_nodes[n_effects:]
        nodes = list(self.graph.nodes)
        for node in reversed(nodes[nodes.index(last) + 1 if last is not None else 0 :]):
            if node.op != "placeholder":  # inputs stay: harmless, and their guards were added
                self.graph.erase_node(node)

    def remove_dead_nodes(self) -> None:
        """Dead-code elimination that keeps in-place operations (their effect is the point)."""
        keep = set(self.side_effect_nodes)
        for node in reversed(list(self.graph.nodes)):
            if (
                node.op in ("call_function", "call_method", "get_attr")
                and not node.users
                and node not in keep
            ):
                self.graph.erase_node(node)


def tensor_variables(vs: list[Variable]) -> list[TensorVariable]:
    out = []
    for v in vs:
        if isinstance(v, TensorVariable):
            out.append(v)
        elif isinstance(v, TupleVariable):
            out += tensor_variables(v.items)
        elif isinstance(v, DictVariable):
            out += tensor_variables(list(v.items.values()))
    return out


def as_node_arg(v: Variable) -> Any:
    if isinstance(v, TensorVariable):
        return v.node
    if isinstance(v, ListVariable):
        return [as_node_arg(i) for i in v.items]
    if isinstance(v, TupleVariable):
        return tuple(as_node_arg(i) for i in v.items)
    if isinstance(v, DictVariable):
        return {k: as_node_arg(i) for k, i in v.items.items()}
    return v.as_python()


def as_fake(v: Variable) -> Any:
    if isinstance(v, TensorVariable):
        return v.example
    if isinstance(v, ListVariable):
        return [as_fake(i) for i in v.items]
    if isinstance(v, TupleVariable):
        return tuple(as_fake(i) for i in v.items)
    if isinstance(v, DictVariable):
        return {k: as_fake(i) for k, i in v.items.items()}
    return v.as_python()


def rebuild_expr(v: Variable, outputs: list[torch.fx.Node], constants: dict[str, Any]) -> str:
    """Python source that rebuilds the returned value from the graph's outputs ``__out``."""
    if isinstance(v, TupleVariable | DictVariable) and v.source is not None:
        return v.source  # the caller's own (unchanged) container: the same object, as in eager
    if isinstance(v, TensorVariable):
        outputs.append(v.node)
        return f"__out[{len(outputs) - 1}]"
    if isinstance(v, ListVariable):
        return "[" + ", ".join(rebuild_expr(i, outputs, constants) for i in v.items) + "]"
    if isinstance(v, NamedTupleVariable):
        name = f"__const_{len(constants)}"
        constants[name] = type(v.example)
        return f"{name}(({', '.join(rebuild_expr(i, outputs, constants) for i in v.items)},))"
    if isinstance(v, TupleVariable):
        inner = ", ".join(rebuild_expr(i, outputs, constants) for i in v.items)
        return f"({inner},)" if len(v.items) == 1 else f"({inner})"
    if isinstance(v, DictVariable):
        inner = ", ".join(
            f"{rebuild_expr(wrap_constant_result(k), outputs, constants)}: "
            f"{rebuild_expr(i, outputs, constants)}"
            for k, i in v.items.items()
        )
        return "{" + inner + "}"
    try:
        value = v.as_python()
    except Unsupported:
        raise Unsupported(
            f"returning {v.describe()} is not supported: the compiled code can't rebuild it",
            "unsupported-return",
        ) from None
    if type(value) in (int, bool, str, type(None)) or (
        type(value) is float and value == value and value not in (float("inf"), float("-inf"))
    ):
        return repr(value)
    name = f"__const_{len(constants)}"
    constants[name] = value
    return name
