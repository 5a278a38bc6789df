"""Checkers for the build-it exercises: the learner writes a piece of the compiler.

Each checker runs the learner's piece against the real component on inputs the
learner has not seen, and says what is wrong. Hints come in tiers, so the answer
is never the first thing a learner reads::

    hint(check_lesson07_cse, 1)   # a nudge: what to look at
    hint(check_lesson07_cse, 2)   # the approach
    hint(check_lesson07_cse, 3)   # the answer, in words and code

A placeholder gets the first tier; a wrong answer says what failed and which
tier to ask for next.
"""

from __future__ import annotations

import dis
import math
import re
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
import torch.fx

from toycompiler import api

from . import Verdict, _call, _hinted, _kernel_device, _missing, _ok, _same, _todo, _wrong, _wrong_more

# -- lesson 4: growing the toy translator --------------------------------------------------

NULL = None  # what LOAD_GLOBAL / LOAD_ATTR push below a callable; the learner's class may use its own


def _gelu_global(x):
    return gelu(x) + torch.cos(x)


def _nested_calls(x, y):
    return torch.sin(torch.cos(x)) * y


def _constant_call(x):
    return torch.relu(x) * math.sqrt(4.0)


def _two_calls(x, y):
    return torch.relu(x - y) + torch.abs(y)


gelu = torch.nn.functional.gelu
USE_SIN = True
USE_COS = False


def _if_global(x):
    if USE_SIN:
        return torch.sin(x)
    return torch.cos(x)


def _if_not_global(x):
    if not USE_COS:
        y = torch.sin(x)
    else:
        y = torch.cos(x)
    return y * 2


def _else_taken(x):
    if USE_COS:
        y = torch.sin(x)
    else:
        y = torch.cos(x)
    return y + 1


def _tensor_branch(x):
    y = torch.sin(x)
    if torch.sum(y) > 0:
        return y
    return torch.cos(y)


def _translate(translator: Any, fn: Callable, *args: torch.Tensor) -> tuple[Any, Any, str | None]:
    """Run the learner's translator on ``fn``; return (translator, graph module, error)."""
    try:
        t = translator(fn)
        gm = t.run()
        return t, gm, None
    except Exception as e:  # the learner's code: report, don't raise
        return None, None, f"{type(e).__name__}: {e}"


def _compare_graph(checker: Callable, translator: Any, fn: Callable, n_args: int) -> Verdict | None:
    args = [torch.randn(6) for _ in range(n_args)]
    _, gm, err = _translate(translator, fn, *args)
    name = fn.__name__.lstrip("_")
    if err:
        return _wrong_more(checker, f"translating {name} raised {err}")
    got, err = _call(gm, *args)
    if err:
        return _wrong_more(checker, f"the graph of {name} raised {err} when run")
    diff = _same(got, fn(*args))
    if diff:
        return _wrong_more(checker, f"the graph of {name} differs from running it: {diff}")
    return None


@_hinted(
    "torch.sin(x) is three steps: LOAD_GLOBAL torch, an attribute load (LOAD_METHOD sin in 3.11, "
    "LOAD_ATTR in 3.12), and a call (PRECALL then CALL in 3.11, CALL in 3.12). dis.dis one of them.",
    "LOAD_GLOBAL looks the name up in self.fn.__globals__ (not the notebook's globals!) and pushes it, "
    "after a NULL when dis shows one (inst.argrepr starts with 'NULL'). LOAD_ATTR pops the object and pushes "
    "getattr(obj, inst.argval), after a NULL when the argrepr starts with 'NULL' (3.12) and always for "
    "LOAD_METHOD (3.11). CALL pops inst.arg arguments, then the callable, then the NULL; if an "
    "argument is an fx Node it pushes self.graph.call_function(fn, args), else it calls fn(*args) now "
    "(a constant, as Dynamo does). PRECALL does nothing.",
    "class CallTranslator(MyTranslator):\n"
    "    def LOAD_GLOBAL(self, inst):\n"
    "        if inst.argrepr.startswith('NULL'): self.stack.append(None)\n"
    "        self.stack.append(self.fn.__globals__[inst.argval])\n"
    "    def LOAD_ATTR(self, inst):\n"
    "        obj = self.stack.pop()\n"
    "        if inst.opname == 'LOAD_METHOD' or inst.argrepr.startswith('NULL'): self.stack.append(None)\n"
    "        self.stack.append(getattr(obj, inst.argval))\n"
    "    LOAD_METHOD = LOAD_ATTR\n"
    "    def PRECALL(self, inst): pass\n"
    "    def CALL(self, inst):\n"
    "        args = [self.stack.pop() for _ in range(inst.arg)][::-1]\n"
    "        fn = self.stack.pop(); self.stack.pop()\n"
    "        if any(isinstance(a, torch.fx.Node) for a in args):\n"
    "            self.stack.append(self.graph.call_function(fn, tuple(args)))\n"
    "        else:\n"
    "            self.stack.append(fn(*args))",
)
def check_lesson04_calls(translator: Any) -> Verdict:
    """``translator(fn).run()`` captures functions that call torch functions and globals."""
    if _missing(translator):
        return _todo(check_lesson04_calls)
    for fn, n_args in ((_two_calls, 2), (_nested_calls, 2), (_gelu_global, 1), (_constant_call, 1)):
        bad = _compare_graph(check_lesson04_calls, translator, fn, n_args)
        if bad is not None:
            return bad
    _, gm, _ = _translate(translator, _constant_call, torch.randn(6))
    if any(n.target is math.sqrt for n in gm.graph.nodes):
        return _wrong_more(check_lesson04_calls, "math.sqrt(4.0) became a graph node; a call whose arguments are "
                           "all constants should run while translating and push its result")
    return _ok("calls translate: torch functions and globals become graph nodes, constant calls are "
               "computed while tracing, and globals come from the function's own module.")


@_hinted(
    "An if statement is a conditional jump (POP_JUMP_IF_FALSE in 3.12; POP_JUMP_FORWARD_IF_FALSE / "
    "_IF_TRUE in 3.11) and, after the if-branch, a JUMP_FORWARD. dis.dis a function with an if/else.",
    "A jump pops the condition. If it is a plain Python value, decide now: jump with "
    "self.jump_to(inst.argval) or fall through (that is the constant guard Dynamo would add). If it is an "
    "fx Node, the branch depends on data: call self.break_graph(inst, cond, reason) and return what it "
    "returns. JUMP_FORWARD always jumps. Alias the version-specific names to one handler.",
    "class JumpTranslator(CallTranslator):\n"
    "    def POP_JUMP_IF_FALSE(self, inst, jump_if=False):\n"
    "        cond = self.stack.pop()\n"
    "        if isinstance(cond, torch.fx.Node):\n"
    "            return self.break_graph(inst, cond, 'branch on a tensor value')\n"
    "        if bool(cond) == jump_if:\n"
    "            self.jump_to(inst.argval)\n"
    "    def POP_JUMP_IF_TRUE(self, inst):\n"
    "        return self.POP_JUMP_IF_FALSE(inst, jump_if=True)\n"
    "    POP_JUMP_FORWARD_IF_FALSE = POP_JUMP_IF_FALSE\n"
    "    POP_JUMP_FORWARD_IF_TRUE = POP_JUMP_IF_TRUE\n"
    "    def JUMP_FORWARD(self, inst):\n"
    "        self.jump_to(inst.argval)",
)
def check_lesson04_jumps(translator: Any) -> Verdict:
    """Constant branches are decided while translating; a branch on a tensor is a recorded graph break."""
    if _missing(translator):
        return _todo(check_lesson04_jumps)
    for fn in (_if_global, _if_not_global, _else_taken):
        bad = _compare_graph(check_lesson04_jumps, translator, fn, 1)
        if bad is not None:
            return bad
    x = torch.randn(6)
    t, gm, err = _translate(translator, _tensor_branch, x)
    if err:
        return _wrong_more(check_lesson04_jumps, f"translating tensor_branch raised {err}; a branch on a tensor "
                           "should record a graph break, not fail")
    jump = next(i for i in dis.get_instructions(_tensor_branch) if "JUMP" in i.opname)
    recorded = getattr(t, "graph_break", None)
    if not recorded or recorded[0] != jump.offset:
        return _wrong_more(check_lesson04_jumps, f"tensor_branch: expected a graph break recorded at offset "
                           f"{jump.offset} ({jump.opname}); self.graph_break is {recorded!r}")
    got, err = _call(gm, x)
    if err or _same(got, torch.sum(torch.sin(x)) > 0):
        return _wrong_more(check_lesson04_jumps, "tensor_branch: the graph before the break should return the "
                           "branch condition, torch.sum(sin(x)) > 0 (pass the popped condition to break_graph)")
    return _ok("constant branches are decided while translating (one path, as a guard would pin), and a "
               "branch on a tensor ends the graph with a recorded break, as lesson 6 shows Dynamo doing.")


# -- lesson 5: a guard builder --------------------------------------------------------------


def _probe(x, v):
    return x * v


def _real_guards(value: Any) -> list[str]:
    """The guards toycompiler writes for argument ``v`` of ``_probe`` bound to ``value``."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fn = api.compile(_probe, backend="eager")
        fn(torch.ones(1), value)
    return [g.expr for g in fn.compiled_frames[0].guards.guards  # v's own guards, not x's or how they alias
            if re.search(r"\bv\b", g.expr) and not re.search(r"\bx\b", g.expr)]


def _passes(exprs: list[str], value: Any) -> bool | str:
    scope = {"v": value, "Tensor": torch.Tensor, "torch": torch}
    try:
        return all(eval(e, scope) for e in exprs)  # noqa: S307 (guard expressions, as the compiler evaluates them)
    except Exception as e:
        return f"{type(e).__name__}: {e}"


_GUARD_CASES = [  # (what, value, variants that may or may not still pass)
    ("a float32 tensor of shape (8,)", torch.randn(8), [
        ("float64", torch.randn(8, dtype=torch.float64)), ("shape (9,)", torch.randn(9)),
        ("same shape, other values", torch.randn(8)), ("requires_grad", torch.randn(8, requires_grad=True)),
        ("a list", [1.0] * 8)]),
    ("a (3, 4) tensor", torch.randn(3, 4), [
        ("its transpose's layout", torch.randn(4, 3).t()), ("shape (4, 3)", torch.randn(4, 3)),
        ("same shape", torch.randn(3, 4))]),
    ("the float 2.0", 2.0, [("3.0", 3.0), ("2.0 again", 2.0), ("the int 2", 2), ("a tensor", torch.tensor(2.0))]),
    ("the int 3", 3, [("4", 4), ("3 again", 3), ("True", True), ("3.0", 3.0)]),
]


@_hinted(
    "Print compiled.compiled_frames[0].guards above: a tensor gets six guards, a number two. Each is a "
    "Python expression over the argument's name.",
    "For a tensor: its type, dtype, device, exact shape, exact strides and requires_grad, each as a string "
    "like f\"{name}.shape == {tuple(value.shape)}\". For a number: its value, and its exact type (1 == 1.0 "
    "== True in Python, so the value alone is not enough).",
    "def build_guards(name, value):\n"
    "    if isinstance(value, torch.Tensor):\n"
    "        return [f'isinstance({name}, Tensor)', f'{name}.dtype == {value.dtype}',\n"
    "                f'{name}.is_cpu', f'{name}.shape == {tuple(value.shape)}',\n"
    "                f'{name}.stride() == {value.stride()}', f'not {name}.requires_grad']\n"
    "    return [f'{name} == {value!r}', f'type({name}) is {type(value).__name__}']",
)
def check_lesson05_guard_builder(build_guards: Any) -> Verdict:
    """``build_guards(name, value)`` -> guard expressions that accept exactly what the real guards accept."""
    if _missing(build_guards):
        return _todo(check_lesson05_guard_builder)
    for what, value, variants in _GUARD_CASES:
        mine, err = _call(build_guards, "v", value)
        if err:
            return _wrong_more(check_lesson05_guard_builder, f"build_guards('v', {what}) raised {err}")
        if not isinstance(mine, list | tuple) or not all(isinstance(e, str) for e in mine):
            return _wrong(f"build_guards should return a list of strings, got {mine!r}")
        real = _real_guards(value)
        ok = _passes(mine, value)
        if ok is not True:
            return _wrong_more(check_lesson05_guard_builder, f"for {what}, your guards reject the very value they "
                               f"were built from ({ok or 'a guard is False'}): {mine}")
        for label, variant in variants:
            expected, got = _passes(real, variant) is True, _passes(mine, variant) is True
            if expected != got:
                verb = "accept" if got else "reject"
                return _wrong_more(check_lesson05_guard_builder,
                                   f"built for {what}, your guards {verb} {label}, which the real guards "
                                   f"{'reject' if got else 'accept'}. Real guards: {real}")
    return _ok("your guards accept and reject exactly what toycompiler's do: the compiled entry would be "
               "reused when, and only when, it is valid.")


# -- lesson 7: common subexpression elimination ---------------------------------------------


def _cse_same_sin(x):
    return torch.sin(x) + torch.sin(x)


def _cse_different_args(x, y):
    return torch.mul(x, 2) + torch.mul(x, 3) + torch.mul(y, 2) + torch.mul(x, 2)


def _cse_chain(x):
    a = torch.cos(x) * 2
    b = torch.cos(x) * 2
    return a - b + torch.exp(x)


def _cse_kwargs(x):
    return torch.sum(x, dim=0) + torch.sum(x, dim=1) + torch.sum(x, dim=0)


def _cse_random(x):
    return torch.rand_like(x) - torch.rand_like(x)


def _count_ops(gm: torch.fx.GraphModule) -> int:
    return sum(n.op == "call_function" for n in gm.graph.nodes)


@_hinted(
    "Two nodes compute the same value when they call the same function with the same arguments. Walk "
    "gm.graph.nodes in order and remember what you have seen.",
    "Key each call_function node by (node.target, node.args, node.kwargs) made hashable (args hold other "
    "nodes, lists, numbers). The first node with a key stays; a later one is replaced "
    "(node.replace_all_uses_with(first)) and erased. Never merge random ops: rand_like twice is two "
    "different tensors.",
    "def my_cse(gm):\n"
    "    seen = {}\n"
    "    for node in list(gm.graph.nodes):\n"
    "        if node.op != 'call_function' or 'rand' in str(node.target):\n"
    "            continue\n"
    "        key = (node.target, repr(node.args), repr(sorted(node.kwargs.items())))\n"
    "        if key in seen:\n"
    "            node.replace_all_uses_with(seen[key]); gm.graph.erase_node(node)\n"
    "        else:\n"
    "            seen[key] = node\n"
    "    gm.recompile()",
)
def check_lesson07_cse(my_cse: Any) -> Verdict:
    """``my_cse(gm)`` merges repeated computations as toycompiler's ``cse`` pass does."""
    if _missing(my_cse):
        return _todo(check_lesson07_cse)
    from toycompiler.passes.cse import cse

    for fn, shape in ((_cse_same_sin, (5,)), (_cse_different_args, (5,)), (_cse_chain, (5,)),
                      (_cse_kwargs, (4, 4)), (_cse_random, (5,))):
        name = fn.__name__.lstrip("_")
        n_args = fn.__code__.co_argcount
        mine, real = torch.fx.symbolic_trace(fn), torch.fx.symbolic_trace(fn)
        cse(real)
        real.recompile()
        _, err = _call(my_cse, mine)
        if err:
            return _wrong_more(check_lesson07_cse, f"my_cse on {name} raised {err}")
        try:
            mine.graph.lint()
            mine.recompile()
        except Exception as e:
            return _wrong_more(check_lesson07_cse, f"after my_cse, {name}'s graph is broken: {type(e).__name__}: {e}")
        if fn is _cse_random:
            if _count_ops(mine) != _count_ops(real):
                return _wrong_more(check_lesson07_cse, "random_ops: you merged the two rand_like calls; two random "
                                   "tensors are not the same value, so rand_like - rand_like must not become 0")
            continue
        args = [torch.randn(shape) for _ in range(n_args)]
        got, err = _call(mine, *args)
        if err or _same(got, fn(*args)):
            return _wrong_more(check_lesson07_cse, f"after my_cse, {name} computes something else "
                               f"({err or _same(got, fn(*args))}): did you merge nodes whose arguments differ?")
        if _count_ops(mine) != _count_ops(real):
            return _wrong_more(check_lesson07_cse, f"{name}: your graph has {_count_ops(mine)} ops, toycompiler's cse "
                               f"leaves {_count_ops(real)}:\n{real.code.strip()}")
    return _ok("your pass merges exactly what toycompiler's cse merges, and keeps random ops apart.")


# -- lesson 8: lowering where -----------------------------------------------------------------


def _where_same(c, a, b):
    return torch.where(c > 0, a, b)


def _where_bcast(c, a, b):
    return torch.where(c[:, :1] > 0, a, b[0])


def _where_scalar(c, a, b):
    return torch.where(c > 0, a, 0.0) + b


def _where_dtypes(c, a, b):
    return torch.where(c > 0, a, (b * 10).to(torch.int32))


@_hinted(
    "A lowering returns a TensorValue whose loader says how to compute element idx. Look at how "
    "lowering.pointwise builds one, and at the real IR of torch.where printed above.",
    "The result's size is lowering.broadcast_shapes of the tensor operands; load each tensor operand with "
    "lowering.broadcast_loader(v, size) and cast it to the result dtype (node.meta['val'].dtype) with "
    "lowering.cast; a Python number becomes IR.Const(value, dtype). The body is "
    "IR.Op('where', (cond, a, b), dtype), with cond cast to torch.bool.",
    "def lower_where(node, cond, a, b):\n"
    "    out = node.meta['val'].dtype\n"
    "    size = lowering.broadcast_shapes(*(v.size for v in (cond, a, b) if isinstance(v, lowering.TensorValue)))\n"
    "    def operand(v, dtype):\n"
    "        if isinstance(v, lowering.TensorValue):\n"
    "            load = lowering.broadcast_loader(v, size)\n"
    "            return lambda idx: lowering.cast(load(idx), v.dtype, dtype)\n"
    "        return lambda idx: IR.Const(v, dtype)\n"
    "    c, x, y = operand(cond, torch.bool), operand(a, out), operand(b, out)\n"
    "    return lowering.TensorValue(size, out, str(node.meta['val'].device),\n"
    "                                lambda idx: IR.Op('where', (c(idx), x(idx), y(idx)), out))",
)
def check_lesson08_where(lower_where: Any) -> Verdict:
    """``lower_where(node, cond, a, b)`` in place of toycompiler's lowering of ``aten.where``."""
    if _missing(lower_where):
        return _todo(check_lesson08_where)
    from toycompiler.backend import lowering
    from toycompiler.config import config

    aten_where = torch.ops.aten.where
    keys = [k for k in lowering.LOWERINGS if k is aten_where or getattr(k, "overloadpacket", None) is aten_where]
    saved = {k: lowering.LOWERINGS[k] for k in keys}
    cases = (("same shapes", _where_same), ("broadcasting", _where_bcast), ("a Python number", _where_scalar),
             ("mixed dtypes", _where_dtypes))

    def installed(node, *args, **kwargs):  # the registry's shape: called with the node, no graph
        return lower_where(node, *args, **kwargs)
    installed.needs_graph = False

    try:
        for k in keys:
            lowering.LOWERINGS[k] = installed
        for what, fn in cases:
            args = (torch.randn(4, 6), torch.randn(4, 6), torch.randn(4, 6))
            with warnings.catch_warnings(), config.patch(graph_cache=False):
                warnings.simplefilter("ignore")
                report = api.explain(fn, backend="cpp")(*args)
                got, err = _call(api.compile(fn, backend="cpp"), *args)
            if report.fallback_reasons:
                return _wrong_more(check_lesson08_where, f"{what}: the backend could not use your lowering: "
                                   f"{report.fallback_reasons[0]}")
            diff = err or _same(got, fn(*args))
            if diff:
                return _wrong_more(check_lesson08_where, f"{what}: the kernel computes something else: {diff}")
    finally:
        lowering.LOWERINGS.update(saved)
    return _ok("your lowering of where compiles and matches eager with broadcasting, numbers and mixed dtypes.")


# -- lesson 9: can_fuse -----------------------------------------------------------------------


@dataclass(frozen=True)
class KernelSoFar:
    """A kernel being built: its kind and its loops (size-1 dims dropped)."""

    kind: str  # "pointwise" or "reduction"
    xranges: tuple[int, ...]  # the outer loops (the output's elements, or rows)
    rranges: tuple[int, ...]  # the reduction loops; () for a pointwise kernel


@dataclass(frozen=True)
class Candidate:
    """The next buffer, asking to join: its kind, its loops, and how it reads the kernel's buffers."""

    kind: str  # "pointwise" or "reduction"
    size: tuple[int, ...]  # its output's shape, size-1 dims dropped
    reduction_ranges: tuple[int, ...]  # what it reduces over; () for pointwise
    same_index: bool  # it reads every buffer of the kernel at the index where the kernel computes it


def _fusion_fns() -> list[tuple[Callable, tuple]]:
    def chain(x, y):
        return torch.exp(torch.sin(x) * y) + 1

    def bcast(x, y):
        return (torch.sin(x) * 2) + y.view(4, 8)

    def softmax(x):
        return torch.softmax(x * 2, dim=-1)

    def row_norm(x):
        return x / x.sum(dim=-1, keepdim=True) + x.amax(dim=-1, keepdim=True)

    def transpose_add(x):
        a = torch.cos(x)
        return a + a.t()

    def total(x):
        return torch.sin(x).sum() + x.mean(dim=0).sum()

    return [(chain, (torch.randn(32), torch.randn(32))), (bcast, (torch.randn(8), torch.randn(32))),
            (softmax, (torch.randn(4, 8),)), (row_norm, (torch.randn(4, 8),)),
            (transpose_add, (torch.randn(6, 6),)), (total, (torch.randn(4, 8),))]


_FUSION_CASES: list[tuple[str, KernelSoFar, Candidate, bool, str]] = []


def _fusion_cases() -> list[tuple[str, KernelSoFar, Candidate, bool, str]]:
    """Every question the real scheduler asks on a few functions, with its answer and reason."""
    if _FUSION_CASES:
        return _FUSION_CASES
    from toycompiler.backend import ir as IR
    from toycompiler.backend import scheduler
    from toycompiler.backend.lowering import lower
    from toycompiler.config import config
    from toycompiler.passes import run_passes

    real = scheduler.can_fuse

    def recording(kernel, node, cfg):
        ok, reason = real(kernel, node, cfg)
        if kernel.kind in ("pointwise", "reduction") and not isinstance(node, IR.ExternKernel):
            rr = scheduler.squeeze(node.reduction.ranges) if node.reduction else ()
            size = scheduler.squeeze(node.layout.size)
            same = ok or "different index" not in reason  # (the index is checked once the loops fit)
            k = KernelSoFar(kernel.kind, tuple(int(s) for s in kernel.xranges), tuple(int(s) for s in kernel.rranges))
            c = Candidate("reduction" if node.reduction else "pointwise", tuple(int(s) for s in size),
                          tuple(int(s) for s in rr), same)
            _FUSION_CASES.append((f"{fn.__name__}: {node.name} into {'+'.join(n.name for n in kernel.nodes)}",
                                  k, c, ok, reason))
        return ok, reason

    for fn, args in _fusion_fns():
        graphs = []
        api.compile(fn, backend=lambda gm, inputs: graphs.append((gm, inputs)) or gm.forward)(*args)
        gm, inputs = graphs[-1]
        aten_gm, _ = run_passes(gm, inputs, config)
        graph_ir = lower(aten_gm, config).value
        scheduler.can_fuse = recording
        try:
            scheduler.schedule(graph_ir, config)
        finally:
            scheduler.can_fuse = real
    return _FUSION_CASES


@_hinted(
    "Fusing means running the candidate inside the kernel's loops. Which loops can it run in? Print the "
    "schedules above: every refusal says why.",
    "Three questions. Loops: a reduction fits a reduction kernel only with the same size and reduction "
    "ranges; a reduction may take over a pointwise kernel whose xranges are its size + reduction_ranges "
    "(or its size); a pointwise candidate fits with size == xranges + rranges (element by element) or, in "
    "a reduction kernel, size == xranges (once per row). Indices: the candidate must have same_index. "
    "Otherwise it may join.",
    "def can_fuse(kernel, node):\n"
    "    if node.kind == 'reduction':\n"
    "        if kernel.kind == 'reduction':\n"
    "            fits = (node.size, node.reduction_ranges) == (kernel.xranges, kernel.rranges)\n"
    "        else:\n"
    "            fits = kernel.xranges in (node.size + node.reduction_ranges, node.size)\n"
    "    else:\n"
    "        fits = (node.size == kernel.xranges + kernel.rranges\n"
    "                or bool(kernel.rranges) and node.size == kernel.xranges)\n"
    "    if not fits:\n"
    "        return False, 'iteration spaces differ'\n"
    "    if not node.same_index:\n"
    "        return False, 'reads a buffer at a different index'\n"
    "    return True, 'same loops, same index'",
)
def check_lesson09_can_fuse(can_fuse: Any) -> Verdict:
    """``can_fuse(kernel, node) -> (bool, reason)`` decides as toycompiler's scheduler does."""
    if _missing(can_fuse):
        return _todo(check_lesson09_can_fuse)
    cases = _fusion_cases()
    for label, kernel, node, expected, reason in cases:
        got, err = _call(can_fuse, kernel, node)
        if err:
            return _wrong_more(check_lesson09_can_fuse, f"can_fuse({kernel}, {node}) raised {err}")
        decision = got[0] if isinstance(got, tuple | list) else got
        if bool(decision) != expected:
            return _wrong_more(check_lesson09_can_fuse,
                               f"{label}: you said {'fuse' if decision else 'do not fuse'}; the scheduler says "
                               f"{'fuse' if expected else 'no'}: {reason}.\n  kernel={kernel}\n  node={node}")
    return _ok(f"your can_fuse agrees with the scheduler on all {len(cases)} decisions it took on six functions.")


# -- lesson 10: a Triton ladder ----------------------------------------------------------------


def _launch(kernel: Any, grid: tuple, *args: Any, **meta: Any) -> str | None:
    if not hasattr(kernel, "__getitem__"):
        return "launch it as kernel[grid](...): decorate the function with @triton.jit."
    try:
        kernel[grid](*args, **meta)
        return None
    except Exception as e:
        lines = str(e).strip().splitlines()
        return f"launching raised {type(e).__name__}: {lines[-1] if lines else ''}"


@_hinted(
    "Start from add_kernel: which program owns which offsets, and which of them exist?",
    "offsets = pid * BLOCK + tl.arange(0, BLOCK); mask = offsets < n; load x at offsets with the mask, "
    "store at out_ptr + offsets with the same mask.",
    "@triton.jit\n"
    "def copy_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):\n"
    "    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)\n"
    "    mask = offsets < n\n"
    "    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask), mask=mask)",
)
def check_lesson10_copy(kernel: Any) -> Verdict:
    """Rung 1: ``copy_kernel[grid](x, out, n, BLOCK=...)`` copies n elements and writes nothing past them."""
    if _missing(kernel):
        return _todo(check_lesson10_copy)
    import triton

    device = _kernel_device()
    for n, block in ((1, 4), (10, 4), (37, 16), (64, 16)):
        x = torch.randn(n, device=device)
        out = torch.full((n + block,), float("nan"), device=device)
        err = _launch(kernel, (triton.cdiv(n, block),), x, out, n, BLOCK=block)
        if err:
            return _wrong_more(check_lesson10_copy, f"n={n}, BLOCK={block}: {err}")
        if _same(out[:n], x):
            return _wrong_more(check_lesson10_copy, f"n={n}, BLOCK={block}: out[:n] is not x: {_same(out[:n], x)}")
        if not torch.isnan(out[n:]).all():
            return _wrong_more(check_lesson10_copy, f"n={n}, BLOCK={block}: the kernel wrote past n; mask the store")
    return _ok("rung 1: a masked copy, right for every n, including the ragged last block.")


@_hinted(
    "One program per row. What does a program need to find its row? (x.stride(0) elements between rows.)",
    "row = tl.program_id(0); cols = tl.arange(0, BLOCK); mask = cols < n_cols; load the row at "
    "x_ptr + row * stride + cols with other=-inf for the masked lanes; subtract tl.max(row, axis=0), "
    "tl.exp, divide by tl.sum(..., axis=0); store at out_ptr + row * n_cols + cols with the mask.",
    "@triton.jit\n"
    "def softmax_kernel(x_ptr, out_ptr, n_cols, stride, BLOCK: tl.constexpr):\n"
    "    row = tl.program_id(0)\n"
    "    cols = tl.arange(0, BLOCK)\n"
    "    mask = cols < n_cols\n"
    "    x = tl.load(x_ptr + row * stride + cols, mask=mask, other=-float('inf'))\n"
    "    e = tl.exp(x - tl.max(x, axis=0))\n"
    "    tl.store(out_ptr + row * n_cols + cols, e / tl.sum(e, axis=0), mask=mask)",
)
def check_lesson10_softmax(kernel: Any) -> Verdict:
    """Rung 2: ``softmax_kernel[(rows,)](x, out, n_cols, x.stride(0), BLOCK=...)``, one row per program."""
    if _missing(kernel):
        return _todo(check_lesson10_softmax)
    import triton

    device = _kernel_device()
    for rows, cols, stride_pad in ((2, 8, 0), (3, 5, 0), (4, 13, 3)):
        base = torch.randn(rows, cols + stride_pad, device=device) * 3
        x = base[:, :cols]  # a view: rows are stride(0) apart, more than n_cols when padded
        out = torch.full((rows, cols), float("nan"), device=device)
        block = triton.next_power_of_2(cols)
        err = _launch(kernel, (rows,), x, out, cols, x.stride(0), BLOCK=block)
        if err:
            return _wrong_more(check_lesson10_softmax, f"{rows}x{cols}: {err}")
        diff = _same(out, torch.softmax(x, dim=-1))
        if diff:
            hint_ = (" (a padded row: use the stride argument to find row starts)" if stride_pad else
                     " (masked lanes must not count: load them as -inf)" if cols != block else "")
            return _wrong_more(check_lesson10_softmax, f"{rows}x{cols}: differs from torch.softmax: {diff}{hint_}")
    return _ok("rung 2: a row softmax in one kernel: one read of each row, max, exp, sum and divide in registers.")


@_hinted(
    "Each program computes one BM x BN tile of C, stepping through K in blocks of BK. tl.dot multiplies two "
    "tiles (in the interpreter, tiles of at least 16 x 16).",
    "pid_m, pid_n = tl.program_id(0), tl.program_id(1); rm = pid_m * BM + tl.arange(0, BM); rn likewise; "
    "rk = tl.arange(0, BK). Loop k over range(0, K, BK): load a[rm, k + rk] as a_ptr + rm[:, None] * K + "
    "(k + rk)[None, :], b[k + rk, rn] likewise, acc += tl.dot(a, b). Store acc at c_ptr + rm[:, None] * N "
    "+ rn[None, :].",
    "@triton.jit\n"
    "def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):\n"
    "    rm = tl.program_id(0) * BM + tl.arange(0, BM)\n"
    "    rn = tl.program_id(1) * BN + tl.arange(0, BN)\n"
    "    rk = tl.arange(0, BK)\n"
    "    acc = tl.zeros((BM, BN), dtype=tl.float32)\n"
    "    for k in range(0, K, BK):\n"
    "        a = tl.load(a_ptr + rm[:, None] * K + (k + rk)[None, :])\n"
    "        b = tl.load(b_ptr + (k + rk)[:, None] * N + rn[None, :])\n"
    "        acc += tl.dot(a, b)\n"
    "    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc)",
)
def check_lesson10_matmul(kernel: Any) -> Verdict:
    """Rung 3: ``matmul_kernel[(M // BM, N // BN)](a, b, c, M, N, K, BM=16, BN=16, BK=16)``, sizes multiples of 16."""
    if _missing(kernel):
        return _todo(check_lesson10_matmul)
    device = _kernel_device()
    for m, n, k in ((16, 16, 16), (32, 16, 48), (16, 48, 32)):
        a, b = torch.randn(m, k, device=device), torch.randn(k, n, device=device)
        c = torch.full((m, n), float("nan"), device=device)
        err = _launch(kernel, (m // 16, n // 16), a, b, c, m, n, k, BM=16, BN=16, BK=16)
        if err:
            return _wrong_more(check_lesson10_matmul, f"{m}x{k} @ {k}x{n}: {err}")
        if torch.isnan(c).any():
            return _wrong_more(check_lesson10_matmul, f"{m}x{k} @ {k}x{n}: some tiles of c were never written "
                               "(does the grid cover M // BM x N // BN programs, each storing its tile?)")
        expected = a @ b
        if not torch.allclose(c, expected, atol=5e-2, rtol=1e-2):  # on a GPU, tl.dot rounds inputs to TF32
            more = " (only the first BK columns of a counted? loop over all of K)" if k > 16 else ""
            return _wrong_more(check_lesson10_matmul, f"{m}x{k} @ {k}x{n}: differs from a @ b by up to "
                               f"{(c - expected).abs().max():.3g}{more}")
    return _ok("rung 3: a tiled matmul: each program owns a tile of C and accumulates tl.dot over K.")


BUILD_CHECKERS = (check_lesson04_calls, check_lesson04_jumps, check_lesson05_guard_builder, check_lesson07_cse,
                  check_lesson08_where, check_lesson09_can_fuse, check_lesson10_copy, check_lesson10_softmax,
                  check_lesson10_matmul)
