"""The graph the translator builds: nodes, fake tensors, inputs, and undo for breaks.

One :class:`OutputGraph` is shared by the translator and every inlined call
it makes. Besides the ``torch.fx.Graph`` it keeps the graph inputs (with the
Python expression, the *source*, that reaches each one at run time), the
in-place nodes that must survive dead-code elimination, and a journal of
changes to symbolic values so a graph break in the middle of an instruction
can be undone. :meth:`OutputGraph.record_call` is where a tensor operation
becomes a node: it runs the op on fake tensors to learn the result's shape.

Mirrors: torch/_dynamo/output_graph.py (OutputGraph) and
torch/_dynamo/variables/builder.py (wrap_fx_proxy: a node's result as a variable).
Leaves out: side-effect replay for Python objects, graph-input deduplication by identity.
"""

from __future__ import annotations

import operator
from typing import Any

import torch
from torch._dispatch.python import enable_python_dispatcher
from torch._subclasses.fake_tensor import DataDependentOutputException, DynamicOutputShapeException

from .. import provenance
from ..artifacts import SourceArtifact
from .containers import CONTAINERS, NamedTupleVariable, wrap_constant_result
from .shapes import ShapePolicy
from .variables import CONSTANT_TYPES, ConstantVariable, TensorVariable, Unsupported, Variable


class OutputGraph:
    """The FX graph under construction, its fake tensors and inputs (shared by inlined calls)."""

    def __init__(self, source: SourceArtifact, shapes: ShapePolicy | None = None) -> None:
        self.filename, self.source_line = source.filename, source.line
        self.graph = torch.fx.Graph()
        self.shapes = shapes or ShapePolicy(dynamic=False)  # which sizes are symbolic: see shapes.py
        self.inputs: dict[str, torch.Tensor] = {}  # the graph inputs, in placeholder order: source -> real tensor
        self.side_effect_nodes: list[torch.fx.Node] = []  # in-place ops: kept even if unused
        self.submodules: dict[str, torch.nn.Module] = {}  # branch graphs of torch.cond
        self.instructions_run = 0  # by the translator and every inlined call
        self.journal: list[tuple[Any, str, Any]] = []  # (object, attribute, value before a change)
        self.caller_containers: dict[int, tuple[Any, str, Any]] = {}  # id -> (list or dict, source, variable)
        self.current: Any = None  # the instruction being traced (a bytecode.Inst): nodes and guards record its line
        self.events: list[str] = []  # what the current instruction did, for the translation log
        self.initial_grad_mode = torch.is_grad_enabled()

    def add_input(self, source: str, value: torch.Tensor) -> TensorVariable:
        """A new graph input, read from ``source`` (``builder.wrap`` makes one per source and per tensor)."""
        node = self.graph.placeholder("".join(c if c.isalnum() else "_" for c in source).strip("_"))  # G['w'] -> G__w
        fake = self.shapes.fake(source, value)
        node.meta.update(example_value=fake, toy_source=source)
        self.inputs[source] = value
        self.events.append(f"graph input {node.name}")
        return TensorVariable(node, fake, source)

    def create_node(self, op: str, target: Any, args: tuple, kwargs: dict, example: Any) -> torch.fx.Node:
        node = self.graph.create_node(op, target, args, kwargs)
        node.meta["example_value"] = example
        provenance.tag(node, self.current.line, self.current.offset, self.filename, self.source_line(self.current.line))
        self.events.append(f"node added: {node.name}")
        return node

    # -- recording calls -----------------------------------------------------------

    def record_call(self, op: str, target: Any, args: list[Variable], kwargs: dict[str, Variable]) -> Variable:
        """Add a node and compute its fake result to learn the output's shape and dtype.

        In-place operations are recognised by the fake tensors' version counters, whatever
        their spelling (``x.add_(1)``, ``x += 1``, ``F.relu(x, inplace=True)``, ``out=``): the
        node is kept through dead-code elimination, and a tensor that the op returns
        (``self``) is pointed at the new node, so every alias reads the new value.
        """
        fake_args, fake_kwargs = tuple(a.fake() for a in args), {k: v.fake() for k, v in kwargs.items()}
        versions = [(t, t.example._version) for v in [*args, *kwargs.values()] for t in v.tensors()]  # before
        try:
            fn, fn_args = (getattr(fake_args[0], target), fake_args[1:]) if op == "call_method" else (target, fake_args)
            # Under torch's Python dispatcher, as Dynamo's get_fake_value: without it some C++ meta functions
            # (``F.pad``'s, ``F.interpolate``'s) read symbolic sizes as integers, specialising the graph to them.
            with self.shapes.fake_mode, enable_python_dispatcher():
                example = fn(*fn_args, **fake_kwargs)
        except (DynamicOutputShapeException, DataDependentOutputException) as e:
            raise Unsupported(f"the output shape of {_op_name(target)} depends on the tensor's values ({e}); "
                              "the graph needs static shapes", "data-dependent") from e
        except Exception as e:
            raise Unsupported(f"{_op_name(target)} failed on fake tensors: {type(e).__name__}: {e}",
                              "fake-tensor") from e
        node_args, node_kwargs = tuple(a.node_arg() for a in args), {k: v.node_arg() for k, v in kwargs.items()}
        result = self.wrap_result(op, target, node_args, node_kwargs, example)
        if mutated := [t for t, before in versions if t.example._version != before]:
            # its node (or its results' last getitem); ``iter``: the reversed nodes are an iterable in torch 2.11
            self.side_effect_nodes.append(next(iter(reversed(self.graph.nodes))))
            for t in mutated:
                if isinstance(result, TensorVariable) and result.example is t.example:
                    self.remember(t, "node")
                    t.node, result = result.node, t
                    self.events.append(f"in-place: {t.node.name} changes its input")
        return result

    def wrap_result(self, op: str, target: Any, node_args: tuple, node_kwargs: dict, example: Any) -> Variable:
        """The op's fake result as a variable: a tensor, a tuple of tensors (one getitem node each)..."""
        if isinstance(example, torch.Tensor):
            return TensorVariable(self.create_node(op, target, node_args, node_kwargs, example), example)
        if isinstance(example, tuple | list) and any(isinstance(t, torch.Tensor) for t in example) \
                and all(isinstance(t, torch.Tensor) or t is None for t in example):  # (out, None): no weights
            node = self.create_node(op, target, node_args, node_kwargs, example)
            items = [TensorVariable(self.create_node("call_function", operator.getitem, (node, i), {}, t), t)
                     if t is not None else ConstantVariable(None) for i, t in enumerate(example)]
            container = CONTAINERS.get(type(example))  # None: a structseq, torch.return_types.topk(values, indices)
            return container(items) if container else NamedTupleVariable(items, example=example)
        if example is None and op == "call_function":  # e.g. torch.add(a, b, out=c): a node, and None
            self.create_node(op, target, node_args, node_kwargs, None)
        if isinstance(example, CONSTANT_TYPES) or type(example) in (tuple, list):  # None is a constant too
            return wrap_constant_result(example)
        raise Unsupported(f"{target} returned {type(example).__name__}, which the translator can't track")

    def set_grad_mode(self, enabled: bool) -> None:
        """Record a grad-mode switch in the graph, and make it now for the fake tensors."""
        node = self.create_node("call_function", torch._C._set_grad_enabled, (enabled,), {}, None)
        self.side_effect_nodes.append(node)
        torch._C._set_grad_enabled(enabled)

    # -- undo, for a graph break in the middle of an instruction ------------------
    # A break inside an inlined call happens after the callee already recorded
    # nodes and changed variables. The caller's CALL will run again as ordinary
    # Python, so those changes are undone: the graph and the symbolic state at a
    # break are exactly what they were *before* the breaking instruction.

    def remember(self, obj: Any, attr: str) -> None:
        """Note ``obj.attr`` (a list's items, a tensor's node) before a change, for a break."""
        value = getattr(obj, attr)
        self.journal.append((obj, attr, value.copy() if isinstance(value, list | dict) else value))  # a copy of items

    def checkpoint(self) -> tuple:
        """A mark to roll back to: how many nodes, side effects and journal entries there are, the grad mode.

        (While tracing, nodes are only added at the end of the graph: those past the mark are the step's own.)"""
        return len(self.graph.nodes), len(self.side_effect_nodes), len(self.journal), torch.is_grad_enabled()

    def rollback(self, mark: tuple) -> None:
        n_nodes, n_effects, n_journal, grad_mode = mark
        torch._C._set_grad_enabled(grad_mode)
        for obj, attr, value in reversed(self.journal[n_journal:]):
            setattr(obj, attr, value)
        del self.journal[n_journal:], self.side_effect_nodes[n_effects:]
        # inputs stay: harmless, and their guards were added
        for node in [n for n in reversed(list(self.graph.nodes)[n_nodes:]) if n.op != "placeholder"]:
            self.graph.erase_node(node)

    def remove_dead_nodes(self) -> None:
        """Dead-code elimination that keeps in-place operations (their effect is the point): FX's, told which
        nodes are impure (inputs, the output, and those in-place nodes) rather than guessing by op.

        Then the inputs nothing reads go, as Dynamo prunes them: reading one item of a dict or list makes every
        tensor in it an input (``builder._read_container``), and the backend is given only what the graph uses
        (a weight kept on the CPU beside its GPU copy made the Triton backend refuse a GPU graph)."""
        keep = set(self.side_effect_nodes)
        removable = ("call_function", "call_method", "get_attr")
        self.graph.eliminate_dead_code(is_impure_node=lambda node: node.op not in removable or node in keep)
        for node in [n for n in self.graph.nodes if n.op == "placeholder" and not n.users]:
            del self.inputs[node.meta["toy_source"]]
            self.graph.erase_node(node)


def _op_name(target: Any) -> str:
    return target if isinstance(target, str) else getattr(target, "__name__", repr(target))
