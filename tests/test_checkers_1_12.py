"""Lessons 1 to 12's question checkers (the build-it ones are in test_checkers.py): a right answer passes, a
typical wrong one gets a specific message and a pointer to the next hint tier, a placeholder gets the first
tier only, and no checker raises, whatever it is given. The right answers are the ones in lessons/solutions/.
"""

import inspect
import math
import warnings

import pytest
import torch
import triton  # after toycompiler (imported by conftest), which sets TRITON_INTERPRET on a machine without a GPU
import triton.language as tl
from functorch.compile import make_boxed_func
from test_checkers import MyTranslator, ToyTranslator
from torch._dynamo.backends.common import aot_autograd

import toycompiler
from toycompiler import checkers

aten = torch.ops.aten


def swish_plus(x, y):
    return x * torch.sigmoid(1.702 * x) + y


def fooled(x):
    if x.max() > 10:
        return x / 10
    return x


def refused(x):
    return x / float(x.abs().max())


def clip_or_shift(x):
    if x.max() > 1:
        return torch.clamp(x, -1, 1)
    return x + 0.5


def remove_mul_by_one(gm, every_mul=False):
    changes = []
    for node in list(gm.graph.nodes):
        if node.op == "call_function" and node.target == aten.mul.Tensor and (every_mul or node.args[1] == 1):
            node.replace_all_uses_with(node.args[0])
            gm.graph.erase_node(node)
            changes.append(f"{node.name}: a * 1 -> a")
    gm.recompile()
    return changes


def counting_backend(kinds=("forward", "backward")):
    """A training backend and the list it fills; with one kind, the forward compiler also compiles the backward."""
    seen = []

    def counting(kind):
        def compiler(gm, example_inputs):
            seen.append((kind, len([n for n in gm.graph.nodes if n.op == "call_function"])))
            return make_boxed_func(gm.forward)
        return compiler

    if len(kinds) == 1:
        return aot_autograd(fw_compiler=counting(kinds[0])), seen
    return aot_autograd(fw_compiler=counting(kinds[0]), bw_compiler=counting(kinds[1])), seen


def op_counter(node_ops=("call_function",)):
    seen = []

    def count_ops(gm, example_inputs):
        seen.append(len([n for n in gm.graph.nodes if n.op in node_ops]))
        return gm.forward
    return count_ops, seen


def sigmoid_step(report):
    return [(s.opname, s.offset) for s in report.frames[0].translation.steps if "node added: sigmoid" in s.events][0]


def swish_report():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return toycompiler.explain(swish_plus, backend="cpp")(torch.randn(100), torch.randn(100))


@triton.jit
def scale_shift_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) * 2 + 1, mask=mask)


@triton.jit
def scale_shift_unmasked_store(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=offsets < n, other=0.0) * 2 + 1)


KERNEL = r'''
#include <cstdint>
extern "C" void square_plus_one(const float* in_ptr0, float* out_ptr0, int64_t n) {
    for (int64_t i = 0; i < n; ++i) {
        out_ptr0[i] = in_ptr0[i] * in_ptr0[i]%s;
    }
}
'''

# checker, the right answer's arguments, a typical wrong answer's, words the wrong answer's message must contain;
# the arguments come from a function so that each call gets fresh lists to fill
CASES = [
    (checkers.check_lesson01_unfused_bytes, lambda: ((lambda n: (8 + 5) * 4 * n),), lambda: ((lambda n: 5 * 4 * n),),
     "eager moves"),
    (checkers.check_lesson01_fused_bytes, lambda: ((lambda n: 3 * 4 * n),), lambda: ((lambda n: 4 * n),),
     "the fused kernel moves"),
    (checkers.check_lesson02_compiled, lambda: (toycompiler.compile(swish_plus, backend="cpp"),),
     lambda: (torch.compile(swish_plus),), "not what toycompiler.compile returns"),
    (checkers.check_lesson02_break_even,
     lambda: ((lambda c, e, k: math.ceil(c / (e - k)) if e > k else math.inf),),
     lambda: ((lambda c, e, k: c / (e - k) if e > k else math.inf),), "round up to whole calls"),
    (checkers.check_lesson02_guards, lambda: (len(swish_report().guards),), lambda: (6,), "6 is too few"),
    (checkers.check_lesson03_trace_bakes, lambda: (fooled, torch.ones(4), torch.full((4,), 20.0)),
     lambda: ((lambda x: x * 2), torch.ones(4), torch.full((4,), 20.0)), "gives the right answer on other"),
    (checkers.check_lesson03_fx_refuses, lambda: (refused, torch.randn(5)), lambda: ((lambda x: x * 2), torch.randn(5)),
     "captured this function"),
    (checkers.check_lesson04_load_const, lambda: (MyTranslator,), lambda: (ToyTranslator,),
     "NotImplementedError: ToyTranslator has no handler for LOAD_CONST"),
    (checkers.check_lesson04_node_origin, lambda: (sigmoid_step(r := swish_report()), r),
     lambda: (("LOAD_GLOBAL", 0), swish_report()), "is not it"),
    (checkers.check_lesson05_failed_guard, lambda: ("x.dtype == torch.float32",), lambda: ("x.shape == (8,)",),
     "is not the guard that failed"),
    (checkers.check_lesson05_three_failures,
     lambda: ([(torch.randn(8), 2.0), (torch.randn(8), 3.0), (torch.randn(8, dtype=torch.float64), 3.0),
               (torch.randn(16, dtype=torch.float64), 3.0)],),
     lambda: ([(torch.randn(8), 2.0), (torch.randn(8), 3.0)],), "1 recompile(s), expected 3"),
    (checkers.check_lesson06_no_break,
     lambda: ((lambda x: torch.where(x.max() > 1, torch.clamp(x, -1, 1), x + 0.5)),),
     lambda: (clip_or_shift,), "there is still a graph break"),
    (checkers.check_lesson06_count, lambda: ((3, 2),), lambda: ((2, 2),), "is not what happens"),
    (checkers.check_lesson07_pass, lambda: (remove_mul_by_one,),
     lambda: ((lambda gm: remove_mul_by_one(gm, every_mul=True)),), "only the ones by 1"),
    (checkers.check_lesson07_backend, lambda: op_counter(), lambda: op_counter(("call_function", "placeholder")),
     "has 3 call_function nodes"),
    (checkers.check_lesson08_transpose, lambda: ((lambda i, j, rows, cols: j * cols + i),),
     lambda: ((lambda i, j, rows, cols: i * cols + j),), "is stored at"),
    (checkers.check_lesson08_view_index, lambda: ((lambda idx, st, off: off + sum(i * s for i, s in zip(idx, st))),),
     lambda: ((lambda idx, st, off: sum(i * s for i, s in zip(idx, st))),), "PyTorch reads"),
    (checkers.check_lesson09_traffic, lambda: ((lambda x, y: torch.sigmoid(x * y + x) * y - x * y),),
     lambda: ((lambda x, y: x + y),), "use at least three"),
    (checkers.check_lesson09_one_kernel, lambda: ((lambda x, y: torch.sin(x.expand_as(y)) * 2 + y),),
     lambda: ((lambda x, y: torch.sin(x) * 2 + y),), "kernels, expected 1"),
    (checkers.check_lesson10_kernel, lambda: (scale_shift_kernel,), lambda: (scale_shift_unmasked_store,),
     "wrote past the end"),
    (checkers.check_lesson10_grid, lambda: ((lambda n, b: (triton.cdiv(n, b), triton.cdiv(n, b) * b - n)),),
     lambda: ((lambda n, b: (n // b, 0)),), "expected"),
    (checkers.check_lesson11_kernel, lambda: (KERNEL % " + 1.0f",), lambda: (KERNEL % "",),
     "differs from x * x + 1"),
    (checkers.check_lesson11_xnumel, lambda: (math.prod,), lambda: ((lambda shape: shape[0]),),
     "the output code passes"),
    (checkers.check_lesson12_backward, lambda: ((lambda x, y, g: g * y * torch.cos(x)),),
     lambda: ((lambda x, y, g: y * torch.cos(x)),), "multiply by grad_out"),
    (checkers.check_lesson12_training_backend, lambda: counting_backend(), lambda: counting_backend(("forward",)),
     "expected one ('forward', n) and one ('backward', n)"),
]
IDS = [c.__name__ for c, *_ in CASES]
QUESTION_CHECKERS = [c for c, *_ in CASES]


def test_every_question_checker_is_tested():
    build = {c.__name__ for c in checkers.BUILD_CHECKERS}
    lessons_1_12 = {name for name in vars(checkers) if name.startswith("check_lesson")
                    and int(name[len("check_lesson"):][:2]) <= 12 and name not in build}
    assert lessons_1_12 == {c.__name__ for c in QUESTION_CHECKERS}


@pytest.mark.parametrize("checker, right, wrong, expected", CASES, ids=IDS)
def test_right_answer_passes(checker, right, wrong, expected, capsys):
    verdict = checker(*right())
    out = capsys.readouterr().out
    assert verdict, out
    assert out.startswith("✓")


@pytest.mark.parametrize("checker, right, wrong, expected", CASES, ids=IDS)
def test_typical_wrong_answer_gets_a_specific_message(checker, right, wrong, expected, capsys):
    verdict = checker(*wrong())
    out = capsys.readouterr().out
    assert not verdict
    assert out.startswith("✗") and expected in out, out
    assert f"hint({checker.__name__}, 2)" in out


def n_params(checker):
    return len(inspect.signature(checker).parameters)


@pytest.mark.parametrize("checker", QUESTION_CHECKERS, ids=IDS)
def test_placeholder_gets_the_first_hint_tier_only(checker, capsys):
    verdict = checker(*[...] * n_params(checker))
    out = capsys.readouterr().out
    nudge, approach, answer = checkers.HINTS[checker.__name__]
    assert not verdict
    assert out.startswith("✎ Not answered yet") and nudge in out and f"hint({checker.__name__}, 2)" in out
    assert approach not in out and answer not in out


@pytest.mark.parametrize("checker", QUESTION_CHECKERS, ids=IDS)
@pytest.mark.parametrize("junk", [42, "text", lambda *a: 1 / 0, type("Empty", (), {})],
                         ids=["int", "str", "raising-function", "empty-class"])
def test_no_checker_raises_on_junk(checker, junk, capsys):
    assert not checker(*[junk] * n_params(checker))
    assert capsys.readouterr().out[:1] in "✎✗"


@pytest.mark.parametrize("checker", QUESTION_CHECKERS, ids=IDS)
def test_hints_go_from_nudge_to_answer(checker, capsys):
    tiers = [checkers.hint(checker, level) for level in (1, 2, 3)]
    assert [t.split(":")[0] for t in tiers] == ["Hint 1/3", "Hint 2/3", "Hint 3/3"]
    nudge, approach, answer = checkers.HINTS[checker.__name__]
    assert len({nudge, approach, answer}) == 3
    assert answer not in nudge and "def " not in nudge and answer not in approach
