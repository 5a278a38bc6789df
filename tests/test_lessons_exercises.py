"""The lessons' exercise checkers: a placeholder gets a hint, a wrong answer a verdict, never a traceback.

Right answers are checked by running lessons/solutions/*.ipynb (make test does, with nbval).
"""

import inspect

import pytest

from toycompiler import checkers

CHECKERS = [f for name, f in vars(checkers).items() if name.startswith("check_lesson") and callable(f)]


def test_every_lesson_has_checkers():
    lessons = {f.__name__.split("_")[1] for f in CHECKERS}
    assert lessons == {f"lesson{n:02d}" for n in range(1, 15)}


@pytest.mark.parametrize("checker", CHECKERS, ids=lambda f: f.__name__)
def test_placeholder_gets_a_hint(checker, capsys):
    n_params = len(inspect.signature(checker).parameters)
    verdict = checker(*([...] * n_params))
    out = capsys.readouterr().out
    assert not verdict
    assert out.startswith("✎ Not answered yet") and "Hint:" in out


@pytest.mark.parametrize("checker, answer, expected", [
    (checkers.check_lesson02_break_even, lambda c, e, k: c / (e - k), "returned"),
    (checkers.check_lesson08_view_index, lambda index, strides, offset: sum(index), "PyTorch reads"),
    (checkers.check_lesson10_grid, lambda n, block: (n // block, 0), "expected"),
    (checkers.check_lesson08_transpose, lambda i, j, rows, cols: i * cols + j, "is stored at"),
    (checkers.check_lesson12_backward, lambda x, y, g: y * g, "differs from autograd"),
    (checkers.check_lesson02_break_even, lambda c, e, k: 1 / 0, "raised ZeroDivisionError"),
])
def test_wrong_answer_gets_a_verdict_not_a_traceback(checker, answer, expected, capsys):
    verdict = checker(answer)
    out = capsys.readouterr().out
    assert not verdict
    assert out.startswith("✗") and expected in out


def test_wrong_kernel_source_reports_the_compiler_message(capsys):
    verdict = checkers.check_lesson11_kernel('extern "C" void square_plus_one(const float* a) { oops }')
    out = capsys.readouterr().out
    assert not verdict and out.startswith("✗ the C++ compiler rejected it")


def test_right_answer_passes_and_says_why(capsys):
    verdict = checkers.check_lesson10_grid(lambda n, block: (-(-n // block), -(-n // block) * block - n))
    assert verdict and capsys.readouterr().out.startswith("✓")
