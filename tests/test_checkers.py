"""The build-it checkers: a right answer passes, a typical wrong one gets a specific message, a placeholder
gets the first hint tier, and no checker raises. The right answers here are the ones in lessons/solutions/.
"""

import dis

import pytest
import torch
import torch.fx
from toycompiler.checkers import build

from toycompiler import checkers
from toycompiler.backend import ir as IR
from toycompiler.backend import lowering

# -- lesson 4: the toy translator as the lesson defines it, and the learner's additions ---------------


class ToyTranslator:
    def __init__(self, fn):
        self.fn = fn
        self.graph = torch.fx.Graph()
        self.stack = []
        self.locals = {name: self.graph.placeholder(name) for name in fn.__code__.co_varnames[:fn.__code__.co_argcount]}
        self.instructions = list(dis.get_instructions(fn))
        self.ip = 0
        self.graph_break = None

    def run(self):
        while self.ip < len(self.instructions):
            inst = self.instructions[self.ip]
            self.ip += 1
            handler = getattr(self, inst.opname, None)
            if handler is None:
                raise NotImplementedError(f"ToyTranslator has no handler for {inst.opname}")
            if handler(inst) == "return":
                break
        return torch.fx.GraphModule(torch.nn.Module(), self.graph)

    def jump_to(self, offset):
        self.ip = next(i for i, inst in enumerate(self.instructions) if inst.offset == offset)

    def break_graph(self, inst, value, reason):
        self.graph_break = (inst.offset, reason)
        self.graph.output(value)
        return "return"

    def RESUME(self, inst):
        pass

    def LOAD_FAST(self, inst):
        self.stack.append(self.locals[inst.argval])

    def STORE_FAST(self, inst):
        self.locals[inst.argval] = self.stack.pop()

    def BINARY_OP(self, inst):
        ops = {"*": torch.mul, "+": torch.add, "-": torch.sub, "/": torch.div}
        b, a = self.stack.pop(), self.stack.pop()
        self.stack.append(self.graph.call_function(ops[inst.argrepr], (a, b)))

    def COMPARE_OP(self, inst):
        ops = {">": torch.gt, "<": torch.lt, "==": torch.eq}
        b, a = self.stack.pop(), self.stack.pop()
        self.stack.append(self.graph.call_function(ops[inst.argrepr], (a, b)))

    def RETURN_VALUE(self, inst):
        self.graph.output(self.stack.pop())
        return "return"


class MyTranslator(ToyTranslator):
    def LOAD_CONST(self, inst):
        self.stack.append(inst.argval)


class CallTranslator(MyTranslator):
    def LOAD_GLOBAL(self, inst):
        if inst.argrepr.startswith("NULL"):
            self.stack.append(None)
        self.stack.append(self.fn.__globals__[inst.argval])

    def LOAD_ATTR(self, inst):
        obj = self.stack.pop()
        if inst.opname == "LOAD_METHOD" or inst.argrepr.startswith("NULL"):
            self.stack.append(None)
        self.stack.append(getattr(obj, inst.argval))

    LOAD_METHOD = LOAD_ATTR

    def PRECALL(self, inst):
        pass

    def CALL(self, inst):
        args = [self.stack.pop() for _ in range(inst.arg)][::-1]
        fn = self.stack.pop()
        self.stack.pop()
        if any(isinstance(a, torch.fx.Node) for a in args):
            self.stack.append(self.graph.call_function(fn, tuple(args)))
        else:
            self.stack.append(fn(*args))


class JumpTranslator(CallTranslator):
    def POP_JUMP_IF_FALSE(self, inst, jump_if=False):
        cond = self.stack.pop()
        if isinstance(cond, torch.fx.Node):
            return self.break_graph(inst, cond, "branch on a tensor value")
        if bool(cond) == jump_if:
            self.jump_to(inst.argval)

    def POP_JUMP_IF_TRUE(self, inst):
        return self.POP_JUMP_IF_FALSE(inst, jump_if=True)

    POP_JUMP_FORWARD_IF_FALSE = POP_JUMP_IF_FALSE
    POP_JUMP_FORWARD_IF_TRUE = POP_JUMP_IF_TRUE

    def JUMP_FORWARD(self, inst):
        self.jump_to(inst.argval)


class GraphsConstantCalls(MyTranslator):
    """Wrong: puts every call in the graph, even math.sqrt(4.0)."""

    LOAD_GLOBAL, LOAD_METHOD, LOAD_ATTR, PRECALL = (CallTranslator.LOAD_GLOBAL, CallTranslator.LOAD_ATTR,
                                                    CallTranslator.LOAD_ATTR, CallTranslator.PRECALL)

    def CALL(self, inst):
        args = [self.stack.pop() for _ in range(inst.arg)][::-1]
        fn = self.stack.pop()
        self.stack.pop()
        self.stack.append(self.graph.call_function(fn, tuple(args)))


class NotebookGlobals(CallTranslator):
    """Wrong: looks globals up in this module, not in the traced function's."""

    def LOAD_GLOBAL(self, inst):
        if inst.argrepr.startswith("NULL"):
            self.stack.append(None)
        self.stack.append(globals()[inst.argval])


class FailsOnTensorBranch(JumpTranslator):
    """Wrong: follows one side of a branch on a tensor instead of recording a break."""

    def POP_JUMP_IF_FALSE(self, inst, jump_if=False):
        cond = self.stack.pop()
        if bool(cond) == jump_if:
            self.jump_to(inst.argval)

    POP_JUMP_FORWARD_IF_FALSE = POP_JUMP_IF_FALSE


# -- lesson 5 ---------------------------------------------------------------------------------


def build_guards(name, value):
    if isinstance(value, torch.Tensor):
        return [f"isinstance({name}, Tensor)", f"{name}.dtype == {value.dtype}", f"{name}.is_cpu",
                f"{name}.shape == {tuple(value.shape)}", f"{name}.stride() == {value.stride()}",
                f"not {name}.requires_grad"]
    return [f"{name} == {value!r}", f"type({name}) is {type(value).__name__}"]


def guards_without_type(name, value):
    return [g for g in build_guards(name, value) if not g.startswith("type(")]


def guards_without_dtype(name, value):
    return [g for g in build_guards(name, value) if ".dtype" not in g]


# -- lesson 7 ---------------------------------------------------------------------------------


def my_cse(gm):
    seen = {}
    for node in list(gm.graph.nodes):
        if node.op != "call_function" or "rand" in str(node.target):
            continue
        key = (node.target, repr(node.args), repr(sorted(node.kwargs.items())))
        if key in seen:
            node.replace_all_uses_with(seen[key])
            gm.graph.erase_node(node)
        else:
            seen[key] = node
    gm.recompile()


def cse_by_target(gm):
    """Wrong: merges nodes that call the same function, whatever their arguments."""
    seen = {}
    for node in list(gm.graph.nodes):
        if node.op != "call_function":
            continue
        if node.target in seen:
            node.replace_all_uses_with(seen[node.target])
            gm.graph.erase_node(node)
        else:
            seen[node.target] = node
    gm.recompile()


def cse_merging_random(gm):
    """Wrong: merges rand_like calls too."""
    seen = {}
    for node in list(gm.graph.nodes):
        if node.op != "call_function":
            continue
        key = (node.target, repr(node.args), repr(sorted(node.kwargs.items())))
        if key in seen:
            node.replace_all_uses_with(seen[key])
            gm.graph.erase_node(node)
        else:
            seen[key] = node
    gm.recompile()


# -- lesson 8 ---------------------------------------------------------------------------------


def lower_where(node, cond, a, b):
    out = node.meta["val"].dtype
    size = lowering.broadcast_shapes(*(v.size for v in (cond, a, b) if isinstance(v, lowering.TensorValue)))

    def operand(v, dtype):
        if isinstance(v, lowering.TensorValue):
            load = lowering.broadcast_loader(v, size)
            return lambda idx: lowering.cast(load(idx), v.dtype, dtype)
        return lambda idx: IR.Const(v, dtype)

    c, x, y = operand(cond, torch.bool), operand(a, out), operand(b, out)
    return lowering.TensorValue(size, out, str(node.meta["val"].device),
                                lambda idx: IR.Op("where", (c(idx), x(idx), y(idx)), out))


def where_without_broadcast(node, cond, a, b):
    """Wrong: assumes every operand already has the result's shape."""
    out = node.meta["val"].dtype

    def operand(v, dtype):
        if isinstance(v, lowering.TensorValue):
            return lambda idx: lowering.cast(v.loader(idx), v.dtype, dtype)
        return lambda idx: IR.Const(v, dtype)

    c, x, y = operand(cond, torch.bool), operand(a, out), operand(b, out)
    return lowering.TensorValue(a.size, out, "cpu", lambda idx: IR.Op("where", (c(idx), x(idx), y(idx)), out))


# -- lesson 9 ---------------------------------------------------------------------------------


def can_fuse(kernel, node):
    if node.kind == "reduction":
        if kernel.kind == "reduction":
            fits = (node.size, node.reduction_ranges) == (kernel.xranges, kernel.rranges)
        else:
            fits = kernel.xranges in (node.size + node.reduction_ranges, node.size)
    else:
        fits = node.size == kernel.xranges + kernel.rranges or bool(kernel.rranges) and node.size == kernel.xranges
    if not fits:
        return False, "iteration spaces differ"
    if not node.same_index:
        return False, "reads a buffer at a different index"
    return True, "same loops, same index"


def can_fuse_same_size_only(kernel, node):
    """Wrong: compares sizes only, so nothing joins a reduction's rows."""
    return node.size == kernel.xranges + kernel.rranges and node.same_index, "same size"


# -- lesson 10 --------------------------------------------------------------------------------

import triton  # noqa: E402  (after toycompiler, which sets TRITON_INTERPRET on a machine without a GPU)
import triton.language as tl  # noqa: E402


@triton.jit
def copy_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask), mask=mask)


@triton.jit
def copy_unmasked_store(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=offsets < n, other=0.0))


@triton.jit
def softmax_kernel(x_ptr, out_ptr, n_cols, stride, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * stride + cols, mask=mask, other=-float("inf"))
    e = tl.exp(x - tl.max(x, axis=0))
    tl.store(out_ptr + row * n_cols + cols, e / tl.sum(e, axis=0), mask=mask)


@triton.jit
def softmax_masked_zero(x_ptr, out_ptr, n_cols, stride, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * stride + cols, mask=mask, other=0.0)
    e = tl.exp(x - tl.max(x, axis=0))
    tl.store(out_ptr + row * n_cols + cols, e / tl.sum(e, axis=0), mask=mask)


@triton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        a = tl.load(a_ptr + rm[:, None] * K + (k + rk)[None, :])
        b = tl.load(b_ptr + (k + rk)[:, None] * N + rn[None, :])
        acc += tl.dot(a, b)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc)


@triton.jit
def matmul_one_k_block(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    a = tl.load(a_ptr + rm[:, None] * K + rk[None, :])
    b = tl.load(b_ptr + rk[:, None] * N + rn[None, :])
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], tl.dot(a, b))


# -- the table: checker, right answer, typical wrong answer, words its message must contain ------------

CASES = [
    (checkers.check_lesson04_calls, CallTranslator, GraphsConstantCalls, "math.sqrt(4.0) became a graph node"),
    (checkers.check_lesson04_calls, CallTranslator, NotebookGlobals, "translating gelu_global raised KeyError"),
    (checkers.check_lesson04_jumps, JumpTranslator, FailsOnTensorBranch, "expected a graph break recorded at offset"),
    (checkers.check_lesson05_guard_builder, build_guards, guards_without_type, "the int 2"),
    (checkers.check_lesson05_guard_builder, build_guards, guards_without_dtype, "accept float64"),
    (checkers.check_lesson07_cse, my_cse, cse_by_target, "computes something else"),
    (checkers.check_lesson07_cse, my_cse, cse_merging_random, "merged the two rand_like calls"),
    (checkers.check_lesson08_where, lower_where, where_without_broadcast, "broadcasting"),
    (checkers.check_lesson09_can_fuse, can_fuse, can_fuse_same_size_only, "pointwise prologue"),
    (checkers.check_lesson10_copy, copy_kernel, copy_unmasked_store, "wrote past n"),
    (checkers.check_lesson10_softmax, softmax_kernel, softmax_masked_zero, "load them as -inf"),
    (checkers.check_lesson10_matmul, matmul_kernel, matmul_one_k_block, "loop over all of K"),
]
IDS = [f"{c.__name__}-{wrong.__name__}" for c, _, wrong, _ in CASES]


@pytest.mark.parametrize("checker, right, wrong, expected", CASES, ids=IDS)
def test_right_answer_passes(checker, right, wrong, expected, capsys):
    verdict = checker(right)
    out = capsys.readouterr().out
    assert verdict, out
    assert out.startswith("✓")


@pytest.mark.parametrize("checker, right, wrong, expected", CASES, ids=IDS)
def test_typical_wrong_answer_gets_a_specific_message(checker, right, wrong, expected, capsys):
    verdict = checker(wrong)
    out = capsys.readouterr().out
    assert not verdict
    assert out.startswith("✗") and expected in out, out
    assert f"hint({checker.__name__}, 2)" in out


@pytest.mark.parametrize("checker", build.BUILD_CHECKERS, ids=lambda c: c.__name__)
def test_placeholder_gets_the_first_hint_tier(checker, capsys):
    verdict = checker(...)
    out = capsys.readouterr().out
    assert not verdict
    assert out.startswith("✎ Not answered yet") and checkers.HINTS[checker.__name__][0] in out
    assert f"hint({checker.__name__}, 2)" in out


@pytest.mark.parametrize("checker", build.BUILD_CHECKERS, ids=lambda c: c.__name__)
@pytest.mark.parametrize("junk", [None, 42, "text", lambda *a: 1 / 0, type("Empty", (), {})],
                         ids=["None", "42", "text", "raising-function", "empty-class"])
def test_no_checker_raises_on_junk(checker, junk, capsys):
    assert not checker(junk)
    assert capsys.readouterr().out[:1] in "✎✗"


@pytest.mark.parametrize("checker", build.BUILD_CHECKERS, ids=lambda c: c.__name__)
def test_hints_go_from_nudge_to_answer(checker, capsys):
    tiers = [checkers.hint(checker, level) for level in (1, 2, 3)]
    assert [t.split(":")[0] for t in tiers] == ["Hint 1/3", "Hint 2/3", "Hint 3/3"]
    assert len(set(tiers)) == 3
    assert "def " in tiers[2] and "def " not in tiers[0]


def test_the_can_fuse_cases_cover_every_kind_of_decision():
    cases = build._fusion_cases()
    reasons = " | ".join(reason for *_, reason in cases)
    assert any(ok for *_, ok, _ in cases) and not all(ok for *_, ok, _ in cases)
    for kind in ("element by element", "row by row", "iteration spaces differ", "pointwise prologue"):
        assert kind in reasons


def test_the_jump_checker_knows_this_pythons_jump_names():
    names = {i.opname for fn in (build._if_global, build._if_not_global, build._tensor_branch)
             for i in dis.get_instructions(fn) if "JUMP" in i.opname}
    assert names and all(hasattr(JumpTranslator, n) for n in names)
