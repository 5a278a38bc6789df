"""Automatic checks for the lessons' exercises.

Installed as ``toycompiler.checkers`` (this folder, ``lessons/checkers/``, is
mapped in pyproject.toml); a lesson imports what it needs::

    from toycompiler.checkers import check_lesson02_break_even

Each lesson ends with a few exercises. The learner writes something in a cell
(a function, a number, a pass) and calls the matching checker, e.g.
``check_lesson01_unfused_bytes(my_fn)``. A checker prints one verdict:

- ``✓ ...`` when the answer is right (and returns True);
- ``✗ ...`` saying what is wrong, with the expected and actual values where
  that helps (and returns False);
- ``✎ ...`` with a hint while the cell still holds its placeholder ``...``
  (and returns False), so the lessons as shipped still run top to bottom.

Checkers never raise for a wrong answer: a learner should read the verdict,
not a traceback. The solution notebooks write ``assert check_...(...)`` so a
wrong solution fails the tests.
"""

from __future__ import annotations

import contextlib
import copy
import io
import itertools
import warnings
from collections.abc import Callable
from typing import Any

import torch

from toycompiler import api
from toycompiler.testing import assert_close_tree

# -- verdicts ---------------------------------------------------------------------


class Verdict:
    """A checker's result: true when the answer is right. Shows nothing itself in a notebook
    (the checker has already printed its message), so a cell ends with the verdict alone."""

    def __init__(self, passed: bool, message: str):
        self.passed, self.message = passed, message

    def __bool__(self) -> bool:
        return self.passed

    def __repr__(self) -> str:
        return f"Verdict(passed={self.passed}, message={self.message!r})"

    def _ipython_display_(self) -> None:
        pass


def _ok(message: str) -> Verdict:
    print(f"✓ {message}")
    return Verdict(True, message)


def _wrong(message: str) -> Verdict:
    print(f"✗ {message}")
    return Verdict(False, message)


# -- hints, in tiers: a nudge, then the approach, then the answer ------------------------------

HINTS: dict[str, tuple[str, str, str]] = {}


def _hinted(*tiers: str) -> Callable:
    """Register a checker's three hint tiers (nudge, approach, answer)."""
    def wrap(checker: Callable) -> Callable:
        HINTS[checker.__name__] = tiers
        return checker
    return wrap


def hint(checker: Callable, level: int = 1) -> str:
    """Print (and return) hint ``level`` (1 a nudge, 2 the approach, 3 the answer) for a checker."""
    tiers = HINTS[checker.__name__]
    level = max(1, min(level, len(tiers)))
    text = f"Hint {level}/{len(tiers)}: {tiers[level - 1]}"
    print(text)
    return text


def _todo(checker: Callable) -> Verdict:
    """The verdict on a placeholder: the first hint tier only, and how to ask for the next."""
    message = (f"Not answered yet: replace the ... placeholder. Hint: {HINTS[checker.__name__][0]} "
               f"(more: hint({checker.__name__}, 2))")
    print(f"✎ {message}")
    return Verdict(False, message)


def _wrong_more(checker: Callable, message: str) -> Verdict:
    """A wrong answer's verdict, pointing at the next hint tier."""
    return _wrong(f"{message} (stuck? hint({checker.__name__}, 2))")


def _missing(answer: Any) -> Verdict:
    return answer is ... or answer is None


def _call(fn: Callable, *args: Any) -> tuple[Any, str | None]:
    """Call the learner's ``fn``; return (result, None) or (None, what went wrong)."""
    try:
        return fn(*args), None
    except Exception as e:  # the learner's code: report, don't raise
        return None, f"{type(e).__name__}: {e}"


def _kernel_device() -> str:
    """Where checkers put the tensors they hand to a learner's Triton kernel: the GPU when there is one
    (Triton compiles the kernel for it), else the CPU, where toycompiler has switched on Triton's
    interpreter. A CPU tensor given to a compiled GPU kernel fails with "cannot be accessed from Triton"."""
    return "cuda" if torch.cuda.is_available() else "cpu"


def _quiet_explain(fn: Callable, *args: Any, **options: Any):
    """``toycompiler.explain`` without the fallback warnings cluttering the verdict."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return api.explain(fn, **options)(*copy.deepcopy(args))


def _same(actual: Any, expected: Any) -> str | None:
    try:
        assert_close_tree(actual, expected)
        return None
    except AssertionError as e:
        return str(e).strip().splitlines()[0]


# -- lesson 1: why compile ----------------------------------------------------------


def _lesson01_g(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    return ((x * y + 1.5) * x - y) * 0.5


def _schedule_of(n: int):
    x, y = torch.randn(n), torch.randn(n)
    return _quiet_explain(_lesson01_g, x, y, backend="cpp").frames[0].backend.schedule


@_hinted(
    "Eager runs each operation of g as its own kernel. How many operations does ((x * y + 1.5) * x - y) * 0.5 "
    "have, and what does each read from memory and write back?",
    "Five kernels: x * y reads two tensors and writes one; + 1.5 reads one, writes one; * x reads two, writes one; "
    "- y reads two, writes one; * 0.5 reads one, writes one. Every tensor is n float32 elements of 4 bytes (the "
    "Python numbers are not in memory).",
    "def bytes_moved(n):\n"
    "    reads, writes = 2 + 1 + 2 + 2 + 1, 5\n"
    "    return (reads + writes) * 4 * n",
)
def check_lesson01_unfused_bytes(bytes_moved: Callable[[int], int] | Any) -> Verdict:
    """``bytes_moved(n)``: bytes eager reads and writes for lesson 1's ``g`` on n float32 elements."""
    if _missing(bytes_moved):
        return _todo(check_lesson01_unfused_bytes)
    for n in (1, 100, 4096):
        got, err = _call(bytes_moved, n)
        if err:
            return _wrong_more(check_lesson01_unfused_bytes, f"bytes_moved({n}) raised {err}")
        expected = _schedule_of(n).unfused_bytes
        if got != expected:
            return _wrong_more(check_lesson01_unfused_bytes,
                f"bytes_moved({n}) returned {got}; eager moves {expected} bytes. "
                "Count every kernel: what it reads plus what it writes.")
    return _ok("right: every eager op reads its inputs and writes its output, "
               "so intermediates cross memory twice.")


@_hinted(
    "In one fused kernel, which tensors must come from memory and which must go back to it? Where do the "
    "intermediates live?",
    "The intermediates stay in registers: the kernel reads x and y once and writes the result once, three tensors "
    "of n float32 elements.",
    "def bytes_moved(n):\n"
    "    return (2 + 1) * 4 * n",
)
def check_lesson01_fused_bytes(bytes_moved: Callable[[int], int] | Any) -> Verdict:
    """``bytes_moved(n)``: bytes one fused kernel moves for lesson 1's ``g``."""
    if _missing(bytes_moved):
        return _todo(check_lesson01_fused_bytes)
    for n in (1, 100, 4096):
        got, err = _call(bytes_moved, n)
        if err:
            return _wrong_more(check_lesson01_fused_bytes, f"bytes_moved({n}) raised {err}")
        expected = _schedule_of(n).fused_bytes
        if got != expected:
            return _wrong_more(check_lesson01_fused_bytes,
                f"bytes_moved({n}) returned {got}; the fused kernel moves {expected} bytes.")
    return _ok("right: the fused kernel touches memory only for its inputs and its output.")


# -- lesson 2: a first compile ----------------------------------------------------------


def _swish_plus(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    return x * torch.sigmoid(1.702 * x) + y


@_hinted(
    "toycompiler's entry point is named like torch.compile and takes the same kind of arguments; "
    "toycompiler.list_backends() names the backends.",
    "Compile swish_plus with the keyword argument backend= set to the C++ backend's name, and assign the compiled "
    "function itself (do not call it).",
    'compiled = toycompiler.compile(swish_plus, backend="cpp")',
)
def check_lesson02_compiled(compiled: Any) -> Verdict:
    """``compiled``: ``swish_plus`` compiled by toycompiler with the C++ backend."""
    if _missing(compiled):
        return _todo(check_lesson02_compiled)
    if not isinstance(compiled, api.CompiledFunction):
        kind = type(compiled).__name__
        return _wrong_more(check_lesson02_compiled, f"got a {kind}, not what toycompiler.compile returns. "
                           "Did you use torch.compile, or call the compiled function instead of assigning it?")
    if compiled.backend_name != "cpp":
        return _wrong_more(check_lesson02_compiled,
            f"it compiles with backend {compiled.backend_name!r}; pass backend=\"cpp\".")
    x, y = torch.randn(64), torch.randn(64)
    out, err = _call(compiled, x, y)
    if err:
        return _wrong_more(check_lesson02_compiled, f"calling it raised {err}")
    diff = _same(out, _swish_plus(x, y))
    if diff:
        return _wrong_more(check_lesson02_compiled, f"it does not compute swish_plus: {diff}")
    frame = compiled.compiled_frames[-1]
    if frame.backend is None or not frame.backend.kernels:
        return _wrong_more(check_lesson02_compiled,
            "it ran, but no kernel was generated (see the report's fallback reason).")
    return _ok(f"compiled with the cpp backend into {len(frame.backend.kernels)} kernel(s): "
               f"{', '.join(k.name for k in frame.backend.kernels)}.")


@_hinted(
    "Each call of the compiled function saves a little time over eager. How many of those savings add up to the "
    "time the compile took?",
    "saved = eager_s - compiled_s per call; calls = compile_s / saved, rounded up to a whole call (math.ceil). If "
    "nothing is saved (saved <= 0), it never pays: return math.inf.",
    "def break_even(compile_s, eager_s, compiled_s):\n"
    "    saved = eager_s - compiled_s\n"
    "    return math.ceil(compile_s / saved) if saved > 0 else math.inf",
)
def check_lesson02_break_even(break_even: Any) -> Verdict:
    """``break_even(compile_s, eager_s, compiled_s)``: calls until compiling has paid for itself."""
    import math

    if _missing(break_even):
        return _todo(check_lesson02_break_even)
    cases = [((1.0, 0.003, 0.001), 500), ((0.5, 2e-6, 1e-6), 500000), ((2.0, 0.1, 0.05), 40),
             ((1.0, 0.0025, 0.001), 667), ((1.0, 1e-5, 1e-5), math.inf), ((1.0, 1e-5, 2e-5), math.inf)]
    for args, expected in cases:
        got, err = _call(break_even, *args)
        if err:
            return _wrong_more(check_lesson02_break_even, f"break_even{args} raised {err}")
        if got != expected:
            why = " (not faster: never pays)" if expected == math.inf else " (round up to whole calls)"
            return _wrong_more(check_lesson02_break_even,
                f"break_even{args} returned {got!r}; expected {expected}{why}")
    return _ok("right: calls = ceil(compile time / time saved per call), and never when nothing is saved.")


@_hinted(
    "The report from toycompiler.explain has a field listing the guards; print it.",
    "report.guards is a tuple with one entry per guard; count its entries.",
    "n_guards = len(report.guards)",
)
def check_lesson02_guards(n_guards: Any) -> Verdict:
    """``n_guards``: how many guards ``swish_plus`` gets for two 1-D float32 tensors."""
    if _missing(n_guards):
        return _todo(check_lesson02_guards)
    x, y = torch.randn(10_000), torch.randn(10_000)
    expected = len(_quiet_explain(_swish_plus, x, y, backend="cpp").guards)
    if not isinstance(n_guards, int) or isinstance(n_guards, bool):
        return _wrong_more(check_lesson02_guards, f"expected a whole number, got {type(n_guards).__name__}.")
    if n_guards != expected:
        return _wrong_more(check_lesson02_guards,
            f"{n_guards} is too {'few' if n_guards < expected else 'many'}. Print report.guards to see each "
            "one and the reason it was added.")
    return _ok(f"{expected} guards: type, dtype, device, shape, strides and requires_grad of each tensor, "
               "plus what else the trace relied on (each guard's reason says what).")


# -- lesson 3: ways to capture a graph ---------------------------------------------------


@_hinted(
    "jit.trace runs the function once and records the tensor operations it saw. What in a Python function can "
    "depend on the input without being a tensor operation?",
    "Write fn with an `if` on x's values (x.max() > 10, say): the trace records only the branch the example took. "
    "Pick `example` for one branch and `other` for the other.",
    "def fn(x):\n"
    "    if x.max() > 10:\n"
    "        return x / 10\n"
    "    return x\n"
    "example, other = torch.ones(4), torch.full((4,), 20.0)",
)
def check_lesson03_trace_bakes(fn: Any, example: Any, other: Any) -> Verdict:
    """``torch.jit.trace(fn, (example,))`` runs without error but is wrong on ``other``."""
    if _missing(fn) or _missing(example) or _missing(other):
        return _todo(check_lesson03_trace_bakes)
    if not isinstance(example, torch.Tensor) or not isinstance(other, torch.Tensor):
        return _wrong_more(check_lesson03_trace_bakes, "example and other must be tensors.")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            traced = torch.jit.trace(fn, (example,), check_trace=False)
        except Exception as e:
            return _wrong_more(check_lesson03_trace_bakes,
                f"jit.trace refused the function ({type(e).__name__}: {str(e).splitlines()[0]}): "
                "it must capture something, silently.")
        expected, err = _call(fn, other)
        if err:
            return _wrong_more(check_lesson03_trace_bakes, f"fn(other) raised {err}")
        got, err = _call(traced, other)
    if err:
        return _wrong_more(check_lesson03_trace_bakes,
            f"the trace raised on other ({err}): that is a loud failure, not a silent one.")
    if _same(got, expected) is None:
        return _wrong_more(check_lesson03_trace_bakes,
            "the trace gives the right answer on other. Pick `other` so that the function "
            "takes a different path than it took for `example`.")
    return _ok("the trace recorded only the path taken for `example`, and is silently wrong on `other`.")


@_hinted(
    "fx.symbolic_trace runs the function on proxies: objects that record operations but hold no values. What does "
    "Python need a real value for?",
    "Turn part of x into a Python number (float(...) or int(...) of a tensor), or use it where Python needs a real "
    "int, as in range(...): a proxy cannot answer. toycompiler breaks the graph there and goes on.",
    "def fn(x):\n"
    "    scale = float(x.abs().max())\n"
    "    return x / scale\n"
    "x = torch.randn(5)",
)
def check_lesson03_fx_refuses(fn: Any, x: Any) -> Verdict:
    """``torch.fx.symbolic_trace(fn)`` raises, but toycompiler computes ``fn(x)`` correctly."""
    if _missing(fn) or _missing(x):
        return _todo(check_lesson03_fx_refuses)
    try:
        torch.fx.symbolic_trace(fn)
        return _wrong_more(check_lesson03_fx_refuses,
            "fx.symbolic_trace captured this function; find something a proxy cannot do.")
    except Exception as e:
        fx_error = f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
    expected, err = _call(fn, copy.deepcopy(x))
    if err:
        return _wrong_more(check_lesson03_fx_refuses,
            f"fn(x) raises in eager mode too ({err}): write a function that works in Python.")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got, err = _call(api.compile(fn, backend="eager"), copy.deepcopy(x))
    if err:
        return _wrong_more(check_lesson03_fx_refuses, f"toycompiler raised {err}")
    diff = _same(got, expected)
    if diff:
        return _wrong_more(check_lesson03_fx_refuses, f"toycompiler's answer differs from eager: {diff}")
    return _ok(f"fx refused ({fx_error[:80]}), and toycompiler still gave eager's answer.")


# -- lesson 4: bytecode and the translator ------------------------------------------------


def _lesson04_scale_shift(x, y):
    return x * 2 + y


def _lesson04_consts(x, y):
    return (x - 0.5) * y / 4.0


def _lesson04_one_arg(x):
    return 3 * x + 1


@_hinted(
    "dis.dis(scale_shift): which instruction puts the 2 on the stack, and what does inst.argval hold for it?",
    "LOAD_CONST pushes inst.argval, a plain Python number, onto self.stack; BINARY_OP already accepts a number as "
    "one of its operands.",
    "class MyTranslator(ToyTranslator):\n"
    "    def LOAD_CONST(self, inst):\n"
    "        self.stack.append(inst.argval)",
)
def check_lesson04_load_const(translator_class: Any) -> Verdict:
    """``translator_class(fn).run()`` returns a GraphModule computing ``fn`` for functions with constants."""
    if _missing(translator_class):
        return _todo(check_lesson04_load_const)
    for fn in (_lesson04_scale_shift, _lesson04_consts, _lesson04_one_arg):
        nargs = fn.__code__.co_argcount
        args = tuple(torch.randn(5) for _ in range(nargs))
        try:
            gm = translator_class(fn).run()
        except Exception as e:
            return _wrong_more(check_lesson04_load_const,
                f"translating {fn.__name__.removeprefix('_lesson04_')} raised {type(e).__name__}: {e}")
        if not isinstance(gm, torch.fx.GraphModule):
            return _wrong_more(check_lesson04_load_const,
                f"run() returned a {type(gm).__name__}, not a torch.fx.GraphModule.")
        got, err = _call(gm, *args)
        if err:
            return _wrong_more(check_lesson04_load_const, f"running the graph raised {err}")
        diff = _same(got, fn(*args))
        if diff:
            return _wrong_more(check_lesson04_load_const,
                f"the graph of `{_source_line(fn)}` computes something else: {diff}")
    return _ok("LOAD_CONST works: constants become literal arguments of the graph's nodes.")


def _source_line(fn: Callable) -> str:
    import inspect

    return inspect.getsource(fn).strip().splitlines()[-1].strip()


@_hinted(
    "Each entry of report.frames[0].translation.steps is one instruction the translator ran; print a few and look "
    "at their events.",
    "Find the step whose events include 'node added: sigmoid' and take its opname and offset; it is a call "
    "instruction, run after the function and its argument were pushed.",
    "origin = [(s.opname, s.offset) for s in steps if 'node added: sigmoid' in s.events][0]",
)
def check_lesson04_node_origin(origin: Any, report: Any) -> Verdict:
    """``origin``: ``(opname, offset)`` of the step that added the ``sigmoid`` node in ``report`` (swish_plus's)."""
    if _missing(origin):
        return _todo(check_lesson04_node_origin)
    steps = getattr(getattr(getattr(report, "frames", [None])[0], "translation", None), "steps", None)
    if steps is None:
        return _wrong_more(check_lesson04_node_origin,
            "the second argument should be the report of swish_plus, from toycompiler.explain.")
    expected = [(s.opname, s.offset) for s in steps if "node added: sigmoid" in s.events]
    if not expected:
        return _wrong_more(check_lesson04_node_origin,
            "no step of this report added a sigmoid node: pass the report of swish_plus.")
    if not (isinstance(origin, tuple) and len(origin) == 2):
        return _wrong_more(check_lesson04_node_origin, f"expected a pair (opname, offset), got {origin!r}.")
    if tuple(origin) != expected[0]:
        return _wrong_more(check_lesson04_node_origin,
            f"{origin!r} is not it. The step has the event 'node added: sigmoid' in s.events; "
            f"it is a call instruction, after the arguments have been pushed.")
    return _ok(f"{expected[0][0]} at offset {expected[0][1]}: calling torch.sigmoid on a symbolic tensor "
               "adds the node.")


# -- lesson 5: guards and recompilation -------------------------------------------------------


def _l05_f(x, scale):
    return x * scale + 1


@_hinted(
    "What differs between torch.randn(8) and torch.randn(8, dtype=torch.float64)?",
    "Print compiled.compiled_frames[0].guards: one of them is about that property. Write it as the same string, or "
    "read compiled.cache.failures after the second call.",
    'failed_guard = "x.dtype == torch.float32"',
)
def check_lesson05_failed_guard(expr: Any) -> Verdict:
    """``expr``: the guard that fails when f, compiled for float32, gets a float64 tensor."""
    if _missing(expr):
        return _todo(check_lesson05_failed_guard)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        compiled = api.compile(_l05_f, backend="cpp")
        compiled(torch.randn(8), 2.0)
        compiled(torch.randn(8, dtype=torch.float64), 2.0)
    expected = compiled.cache.failures[-1].expr
    if not isinstance(expr, str):
        return _wrong_more(check_lesson05_failed_guard,
            f"write the guard as a string, like {expected.split(' ==')[0]!r} ... ")
    if expr.replace(" ", "") != expected.replace(" ", ""):
        return _wrong_more(check_lesson05_failed_guard,
            f"{expr!r} is not the guard that failed. Look at the guards of the first entry and "
            "find the one about the property that changed.")
    return _ok(f"{expected} fails (got torch.float64): the kernel was generated for 32-bit floats.")


@_hinted(
    "A recompile happens when a call fails a guard of every entry so far. Which three properties of f's arguments "
    "are guarded?",
    "Start with (torch.randn(8), 2.0); then change one thing per call: the float, the tensor's dtype, the tensor's "
    "length. A recompile's cause is the newest entry's first failing guard, so keep what you already changed.",
    "calls = [(torch.randn(8), 2.0), (torch.randn(8), 3.0),\n"
    "         (torch.randn(8, dtype=torch.float64), 3.0), (torch.randn(16, dtype=torch.float64), 3.0)]",
)
def check_lesson05_three_failures(calls: Any) -> Verdict:
    """``calls``: argument tuples for f giving exactly three recompiles: constant, dtype, shape."""
    if _missing(calls):
        return _todo(check_lesson05_three_failures)
    if not isinstance(calls, list | tuple) or not all(isinstance(c, tuple) for c in calls):
        return _wrong_more(check_lesson05_three_failures,
            "calls must be a list of argument tuples, like [(torch.randn(8), 2.0), ...].")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        compiled = api.compile(_l05_f, backend="cpp")
        for args in calls:
            _, err = _call(compiled, *args)
            if err:
                return _wrong_more(check_lesson05_three_failures,
                    f"f{tuple(type(a).__name__ for a in args)} raised {err}")
    reasons = [fr.recompile_reason for fr in compiled.compiled_frames[1:]]
    kinds = []
    for fl in reasons:
        kind = "dtype" if ".dtype" in fl.expr else "shape" if ".shape" in fl.expr else \
            "constant" if fl.expr.startswith("scale") else fl.expr
        kinds.append(kind)
    if len(reasons) != 3:
        listing = "\n  ".join(str(fl) for fl in reasons) or "(none)"
        return _wrong_more(check_lesson05_three_failures, f"{len(reasons)} recompile(s), expected 3:\n  {listing}")
    if sorted(kinds) != ["constant", "dtype", "shape"]:
        return _wrong_more(check_lesson05_three_failures,
            f"the recompiles were caused by {kinds} (each judged against the newest entry); "
            "expected one constant, one dtype, one shape.")
    return _ok("three recompiles: " + "; ".join(str(fl) for fl in reasons))


# -- lesson 6: graph breaks ---------------------------------------------------------------------


def _l06_clip_or_shift(x):
    if x.max() > 1:
        return torch.clamp(x, -1, 1)
    return x + 0.5


@_hinted(
    "The break comes from Python's `if` asking a tensor for a True or False. Can the choice itself be a tensor "
    "operation?",
    "Compute both branches, and let a tensor operation pick between them elementwise from the 0-d condition "
    "x.max() > 1 (torch.where broadcasts it).",
    "def fn(x):\n"
    "    return torch.where(x.max() > 1, torch.clamp(x, -1, 1), x + 0.5)",
)
def check_lesson06_no_break(fn: Any) -> Verdict:
    """``fn(x)`` computes ``clip_or_shift(x)`` for any x, in one graph with no break."""
    if _missing(fn):
        return _todo(check_lesson06_no_break)
    inputs = [torch.randn(6) * 3, torch.rand(6) * 0.5, -torch.rand(6), torch.tensor([1.0, 1.5, -2.0])]
    for x in inputs:
        got, err = _call(fn, x.clone())
        if err:
            return _wrong_more(check_lesson06_no_break, f"fn raised {err}")
        diff = _same(got, _l06_clip_or_shift(x))
        if diff:
            return _wrong_more(check_lesson06_no_break,
                f"for x = {x.tolist()} the result differs from clip_or_shift: {diff}")
    for x in inputs:
        report = _quiet_explain(fn, x, backend="cpp")
        if report.graph_break_count:
            brk = report.breaks[0]
            return _wrong_more(check_lesson06_no_break, f"there is still a graph break: {brk.reason}\n    {brk.source}")
    compiled = api.compile(fn, backend="cpp")
    for x in inputs:
        diff = _same(compiled(x.clone()), _l06_clip_or_shift(x))
        if diff:
            return _wrong_more(check_lesson06_no_break,
                f"the compiled function differs from eager for x = {x.tolist()}: {diff}")
    return _ok("no graph break, and the same values as clip_or_shift for inputs taking either branch.")


def _l06_two_breaks(x):
    a = x + 1
    print("a is ready")
    b = a * 2
    n = b.sum().item()
    return b / n


@_hinted(
    "Which lines of two_breaks cannot become graph nodes?",
    "print(...) and .item() each break the graph. Each break ends a graph, and the code after it starts a new one "
    "(in a resume function): count the stretches of tensor code between the breaks.",
    "prediction = (3, 2)",
)
def check_lesson06_count(prediction: Any) -> Verdict:
    """``prediction``: ``(graphs, breaks)`` for two_breaks."""
    if _missing(prediction):
        return _todo(check_lesson06_count)
    with contextlib.redirect_stdout(io.StringIO()):
        report = _quiet_explain(_l06_two_breaks, torch.randn(5), backend="cpp")
    expected = (report.graph_count, report.graph_break_count)
    if not (isinstance(prediction, tuple) and len(prediction) == 2):
        return _wrong_more(check_lesson06_count, f"expected a pair (graphs, breaks), got {prediction!r}.")
    if tuple(prediction) != expected:
        return _wrong_more(check_lesson06_count,
            f"{prediction} is not what happens. Find each line that cannot be traced; count the "
            "stretches of tensor code between them.")
    reasons = "; ".join(f"line {b.line - report.frames[0].source.firstlineno + 1}: {b.reason}"
                        for b in report.breaks)
    return _ok(f"{expected[0]} graphs and {expected[1]} breaks ({reasons}).")


# -- lesson 7: FX graphs and passes ----------------------------------------------------------


def _aten_graph(fn: Callable, *args: Any) -> torch.fx.GraphModule:
    from toycompiler.passes.decompose import decompose

    gm, _ = decompose(torch.fx.symbolic_trace(fn), list(args))
    return gm


def _l07_a(x):
    return (x * 1 + 2) * 1


def _l07_b(x, y):
    return x * y * 1 - (y * 3)


def _l07_c(x):
    return torch.relu(x) * 2


@_hinted(
    "Print gm.graph: which nodes multiply by one, and what are their target and args?",
    "For each call_function node with target aten.mul.Tensor and args[1] == 1: make its users read node.args[0] "
    "instead (node.replace_all_uses_with), erase it, and note the change; recompile at the end.",
    "def remove_mul_by_one(gm):\n"
    "    changes = []\n"
    "    for node in list(gm.graph.nodes):\n"
    "        if node.op == 'call_function' and node.target == aten.mul.Tensor and node.args[1] == 1:\n"
    "            node.replace_all_uses_with(node.args[0])\n"
    "            gm.graph.erase_node(node)\n"
    "            changes.append(f'{node.name}: a * 1 -> a')\n"
    "    gm.recompile()\n"
    "    return changes",
)
def check_lesson07_pass(pass_fn: Any) -> Verdict:
    """``pass_fn(gm) -> list[str]`` removes every ``aten.mul.Tensor(a, 1)`` and keeps other multiplies."""
    if _missing(pass_fn):
        return _todo(check_lesson07_pass)
    aten = torch.ops.aten
    for fn, n_ones in ((_l07_a, 2), (_l07_b, 1), (_l07_c, 0)):
        args = tuple(torch.randn(6) for _ in range(fn.__code__.co_argcount))
        gm = _aten_graph(fn, *args)
        muls_before = sum(n.target == aten.mul.Tensor for n in gm.graph.nodes)
        changes, err = _call(pass_fn, gm)
        if err:
            return _wrong_more(check_lesson07_pass, f"your pass raised {err} on `{_source_line(fn)}`")
        if not isinstance(changes, list):
            return _wrong_more(check_lesson07_pass,
                f"a pass returns a list of change descriptions; got {type(changes).__name__}.")
        muls_after = sum(n.target == aten.mul.Tensor for n in gm.graph.nodes)
        ones_left = [n.name for n in gm.graph.nodes if n.target == aten.mul.Tensor and n.args[1] == 1]
        where = f"on `{_source_line(fn)}`"
        if ones_left:
            return _wrong_more(check_lesson07_pass, f"{where}: {', '.join(ones_left)} still multiply by 1.")
        if muls_before - muls_after != n_ones:
            return _wrong_more(check_lesson07_pass,
                f"{where}: {muls_before - muls_after} multiplies removed, expected {n_ones} "
                "(only the ones by 1).")
        if len(changes) != n_ones:
            return _wrong_more(check_lesson07_pass,
                f"{where}: the pass returned {len(changes)} change(s) for {n_ones} removal(s).")
        try:
            gm.graph.lint()
            got = gm(*args)
        except Exception as e:
            return _wrong_more(check_lesson07_pass,
                f"{where}: the graph is broken after your pass ({type(e).__name__}: {e}). "
                "Did you call gm.recompile()?")
        diff = _same(got, fn(*args))
        if diff:
            return _wrong_more(check_lesson07_pass, f"{where}: the result changed: {diff}")
    return _ok("the pass removes exactly the multiplications by one and the graph still computes the same.")


def _l07_target(x, y):
    return torch.sigmoid(x) * y + 1


@_hinted(
    "A backend is any callable taking (gm, example_inputs) and returning a callable that runs the graph.",
    "Count the nodes of gm.graph whose op is 'call_function', append the count to op_counts, and return gm.forward "
    "(the graph, run as it is).",
    "def count_ops(gm, example_inputs):\n"
    "    op_counts.append(len([n for n in gm.graph.nodes if n.op == 'call_function']))\n"
    "    return gm.forward",
)
def check_lesson07_backend(backend: Any, op_counts: Any) -> Verdict:
    """``backend(gm, example_inputs)`` appends the graph's call_function count to ``op_counts``."""
    if _missing(backend):
        return _todo(check_lesson07_backend)
    if not isinstance(op_counts, list):
        return _wrong_more(check_lesson07_backend, "op_counts must be the list your backend appends to.")
    before = len(op_counts)
    x, y = torch.randn(8), torch.randn(8)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        compiled = api.compile(_l07_target, backend=backend)
        got, err = _call(compiled, x, y)
    if err:
        return _wrong_more(check_lesson07_backend, f"compiling with your backend raised {err}")
    frame = compiled.compiled_frames[-1] if compiled.compiled_frames else None
    if frame is not None and frame.backend is not None and frame.backend.fallback_reason:
        return _wrong_more(check_lesson07_backend, f"toycompiler fell back to eager: {frame.backend.fallback_reason}")
    diff = _same(got, _l07_target(x, y))
    if diff:
        return _wrong_more(check_lesson07_backend,
            f"the callable your backend returned computes something else: {diff}")
    if len(op_counts) != before + 1:
        return _wrong_more(check_lesson07_backend,
            f"op_counts grew by {len(op_counts) - before} for one compile; expected one new entry.")
    if op_counts[-1] != 3:
        return _wrong_more(check_lesson07_backend,
            f"your backend recorded {op_counts[-1]}; `torch.sigmoid(x) * y + 1` has 3 call_function "
            "nodes.")
    return _ok("your backend saw 3 operations and returned a working callable; "
               "torch.compile(fn, backend=count_ops) would call it the same way.")


# -- lesson 8: lowering to loop IR --------------------------------------------------------------


@_hinted(
    "A transpose copies nothing: x.t()[i, j] is some element of x. Which one, and where is it stored?",
    "x.t()[i, j] is x[j, i]; in a contiguous rows x cols tensor, x[a, b] is stored at a * cols + b.",
    "def transposed_index(i, j, rows, cols):\n"
    "    return j * cols + i",
)
def check_lesson08_transpose(transposed_index: Any) -> Verdict:
    """``transposed_index(i, j, rows, cols)``: storage position of ``x.t()[i, j]`` for contiguous x."""
    if _missing(transposed_index):
        return _todo(check_lesson08_transpose)
    for rows, cols in ((3, 4), (2, 7), (5, 1)):
        x = torch.arange(rows * cols)
        view = x.reshape(rows, cols).t()
        for i in range(cols):
            for j in range(rows):
                got, err = _call(transposed_index, i, j, rows, cols)
                if err:
                    return _wrong_more(check_lesson08_transpose,
                        f"transposed_index({i}, {j}, {rows}, {cols}) raised {err}")
                if got != int(view[i, j]):
                    return _wrong_more(check_lesson08_transpose,
                        f"transposed_index({i}, {j}, rows={rows}, cols={cols}) returned {got}; "
                        f"x.t()[{i}, {j}] is stored at {int(view[i, j])}.")
    return _ok("right: the transpose reads x at j * cols + i, the strides swapped.")


@_hinted(
    "A view is an offset and one stride per dimension. What does a stride say?",
    "A step of 1 along dimension k moves strides[k] elements in storage; start at offset and add index[k] * "
    "strides[k] for every dimension.",
    "def view_index(index, strides, offset):\n"
    "    return offset + sum(i * s for i, s in zip(index, strides))",
)
def check_lesson08_view_index(view_index: Any) -> Verdict:
    """``view_index(index, strides, offset)``: storage position of an element of a strided view."""
    if _missing(view_index):
        return _todo(check_lesson08_view_index)
    base = torch.arange(60).reshape(3, 4, 5)
    views = {"t": base[0].t(), "slice": base[:, 1:, 2:], "step": base[::2, :, ::3],
             "expand": base[0, 0].expand(4, 5), "diagonal": base[1].diagonal(), "permute": base.permute(2, 0, 1)}
    for name, v in views.items():
        for idx in itertools.product(*(range(s) for s in v.shape)):
            got, err = _call(view_index, tuple(idx), tuple(v.stride()), v.storage_offset())
            if err:
                return _wrong_more(check_lesson08_view_index,
                    f"view_index({idx}, {tuple(v.stride())}, {v.storage_offset()}) raised {err}")
            if got != int(v[idx]):
                return _wrong_more(check_lesson08_view_index,
                    f"for the {name} view, view_index({idx}, strides={tuple(v.stride())}, "
                    f"offset={v.storage_offset()}) returned {got}; PyTorch reads {int(v[idx])}.")
    return _ok("right for every view tried: a view is nothing but an offset and strides.")


# -- lesson 9: scheduling and fusion -----------------------------------------------------------


@_hinted(
    "Fusion saves a write and a read of every intermediate it keeps in registers. What makes the saving large "
    "compared with the inputs and the output?",
    "Chain several pointwise operations on x and y (four or more, no reductions, no breaks): the unfused traffic "
    "grows with each one, the fused kernel still reads x and y and writes one result.",
    "def fn(x, y):\n"
    "    a = x * y\n"
    "    b = a + x\n"
    "    c = torch.sigmoid(b) * y\n"
    "    return c - a",
)
def check_lesson09_traffic(fn: Any) -> Verdict:
    """``fn(x, y)``: one kernel, at least three operations, fusion divides memory traffic by 4 or more."""
    if _missing(fn):
        return _todo(check_lesson09_traffic)
    x, y = torch.randn(1000), torch.randn(1000)
    expected, err = _call(fn, x.clone(), y.clone())
    if err:
        return _wrong_more(check_lesson09_traffic, f"fn(x, y) raised {err} in eager mode.")
    report = _quiet_explain(fn, x, y, backend="cpp")
    if report.fallback_reasons:
        return _wrong_more(check_lesson09_traffic, f"toycompiler could not compile it: {report.fallback_reasons[0]}")
    if report.graph_break_count:
        return _wrong_more(check_lesson09_traffic, f"it has a graph break: {report.breaks[0].reason}")
    ops = report.ops_per_graph[0] if report.ops_per_graph else 0
    if ops < 3:
        return _wrong_more(check_lesson09_traffic, f"the graph has {ops} operation(s); use at least three.")
    schedule = report.frames[0].backend.schedule
    if len(schedule.groups) != 1:
        return _wrong_more(check_lesson09_traffic,
            f"it compiles into {len(schedule.groups)} kernels; expected one. Decisions:\n  "
            + "\n  ".join(str(d) for d in schedule.decisions if not d.fused))
    ratio = schedule.unfused_bytes / max(schedule.fused_bytes, 1)
    if ratio < 4:
        return _wrong_more(check_lesson09_traffic,
            f"fusion divides traffic by {ratio:.2f} ({schedule.unfused_bytes} -> {schedule.fused_bytes} "
            "bytes); add operations so that more intermediates stay in registers.")
    return _ok(f"{ops} operations in one kernel: {schedule.unfused_bytes} bytes unfused, {schedule.fused_bytes} "
               f"fused, {ratio:.1f} times less traffic.")


def _l09_bcast(x, y):
    a = torch.sin(x) * 2
    return a + y


@_hinted(
    "Print the schedule of bcast: the sin is refused because its loops are not the add's. Can you give the sin the "
    "add's loops without copying x?",
    "Broadcast x to y's shape before the sin, with a view (expand, no copy): then sin, * 2 and + y all loop over "
    "[4, 8] and fuse, sin recomputed per row.",
    "def fn(x, y):\n"
    "    return torch.sin(x.expand_as(y)) * 2 + y",
)
def check_lesson09_one_kernel(fn: Any) -> Verdict:
    """``fn(x, y)`` computes ``sin(x) * 2 + y`` for x [8], y [4, 8] in exactly one kernel."""
    if _missing(fn):
        return _todo(check_lesson09_one_kernel)
    x, y = torch.randn(8), torch.randn(4, 8)
    got, err = _call(fn, x.clone(), y.clone())
    if err:
        return _wrong_more(check_lesson09_one_kernel, f"one_kernel(x, y) raised {err}")
    diff = _same(got, _l09_bcast(x, y))
    if diff:
        return _wrong_more(check_lesson09_one_kernel, f"one_kernel computes something else than bcast: {diff}")
    report = _quiet_explain(fn, x, y, backend="cpp")
    if report.fallback_reasons:
        return _wrong_more(check_lesson09_one_kernel, f"toycompiler could not compile it: {report.fallback_reasons[0]}")
    n = len(report.kernels)
    if n != 1:
        refused = [str(d) for d in report.frames[0].backend.schedule.decisions if not d.fused]
        return _wrong_more(check_lesson09_one_kernel,
            f"{n} kernels, expected 1. Refused fusions:\n  " + "\n  ".join(refused))
    return _ok("one kernel over [4, 8]: sin is recomputed per row instead of stored and read back.")


# -- lesson 10: Triton kernels ----------------------------------------------------------------


@_hinted(
    "Start from add_kernel above: which of its lines change when there is one input and the computation is x * 2 + "
    "1?",
    "Keep the offsets and the mask; one tl.load of x with the mask, compute x * 2 + 1, tl.store to out with the "
    "same mask.",
    "@triton.jit\n"
    "def scale_shift_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):\n"
    "    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)\n"
    "    mask = offsets < n\n"
    "    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) * 2 + 1, mask=mask)",
)
def check_lesson10_kernel(kernel: Any) -> Verdict:
    """``kernel[grid](x, out, n, BLOCK=...)`` computes ``out = x * 2 + 1`` for any n."""
    if _missing(kernel):
        return _todo(check_lesson10_kernel)
    import triton

    if not hasattr(kernel, "__getitem__"):
        return _wrong_more(check_lesson10_kernel,
            "launch it as kernel[grid](...): decorate the function with @triton.jit.")
    device = _kernel_device()
    for n, block in ((1, 4), (10, 4), (37, 16), (100, 32)):
        x = torch.randn(n, device=device)
        out = torch.full((n + block,), float("nan"), device=device)  # room past the end: a write there = no mask
        try:
            kernel[(triton.cdiv(n, block),)](x, out, n, BLOCK=block)
        except Exception as e:
            return _wrong_more(check_lesson10_kernel, f"launching with n={n}, BLOCK={block} raised {type(e).__name__}: "
                               f"{str(e).strip().splitlines()[-1] if str(e).strip() else ''}")
        diff = _same(out[:n], x * 2 + 1)
        if diff:
            return _wrong_more(check_lesson10_kernel,
                f"n={n}, BLOCK={block}: the result differs from x * 2 + 1: {diff}")
        if not torch.isnan(out[n:]).all():
            return _wrong_more(check_lesson10_kernel,
                f"n={n}, BLOCK={block}: the kernel wrote past the end of the tensor; mask the store.")
    return _ok("the kernel computes x * 2 + 1 and never writes past n.")


@_hinted(
    "Draw it for n = 10, block = 4, as the picture above does.",
    "programs = ceil(n / block) (triton.cdiv); together they cover programs * block lanes, of which n are real "
    "elements.",
    "def launch_shape(n, block):\n"
    "    programs = triton.cdiv(n, block)\n"
    "    return programs, programs * block - n",
)
def check_lesson10_grid(launch_shape: Any) -> Verdict:
    """``launch_shape(n, block)`` -> (programs, lanes of the last program switched off by the mask)."""
    if _missing(launch_shape):
        return _todo(check_lesson10_grid)
    for n, block in ((10, 4), (8, 4), (1, 128), (1000, 128), (4096, 1024), (4097, 1024)):
        programs = -(-n // block)
        expected = (programs, programs * block - n)
        got, err = _call(launch_shape, n, block)
        if err:
            return _wrong_more(check_lesson10_grid, f"launch_shape({n}, {block}) raised {err}")
        if (tuple(got) if isinstance(got, list | tuple) else got) != expected:
            return _wrong_more(check_lesson10_grid,
                f"launch_shape({n}, {block}) returned {got!r}; expected {expected}.")
    return _ok("right: triton.cdiv(n, block) programs, and the mask covers the rest of the last one.")


# -- lesson 11: C++ kernels -------------------------------------------------------------------


@_hinted(
    "HAND_WRITTEN above is a complete kernel: what must change for it to compute x * x + 1 under another name?",
    'Copy HAND_WRITTEN, rename the function to square_plus_one (keep extern "C" and the three parameters) and '
    'change the loop body.',
    "Copy HAND_WRITTEN, rename add_one to square_plus_one, and make the loop body\n"
    "    out_ptr0[i] = in_ptr0[i] * in_ptr0[i] + 1.0f;",
)
def check_lesson11_kernel(source: Any) -> Verdict:
    """``source``: C++ defining ``square_plus_one(const float*, float*, int64_t)``, out = in * in + 1."""
    if _missing(source):
        return _todo(check_lesson11_kernel)
    if not isinstance(source, str):
        return _wrong_more(check_lesson11_kernel,
            f"expected the kernel's source as a string, got {type(source).__name__}.")
    from toycompiler.backend import codecache
    from toycompiler.config import config

    try:
        path, _ = codecache.cpp_library(source, config)
        kernel = codecache.load_cpp_kernel(path, "square_plus_one", 3)
    except codecache.CppCompileError as e:
        message = str(e).split("--- kernel source ---")[0].strip().splitlines()
        return _wrong_more(check_lesson11_kernel, "the C++ compiler rejected it:\n  " + "\n  ".join(message[1:8]))
    except AttributeError:
        return _wrong_more(check_lesson11_kernel,
            'no function named square_plus_one was exported; did you write extern "C"?')
    for n in (1, 7, 1000):
        x = torch.randn(n)
        out = torch.full_like(x, float("nan"))
        kernel(x.data_ptr(), out.data_ptr(), n)
        diff = _same(out, x * x + 1)
        if diff:
            return _wrong_more(check_lesson11_kernel, f"for n={n} the output differs from x * x + 1: {diff}")
    return _ok("your kernel compiles, loads, and computes x * x + 1 for every size tried.")


@_hinted(
    "Print the output code for a (4, 6, 10) input and find the kernel call's last argument.",
    "A contiguous pointwise kernel loops over every element once, in one flat loop, whatever the shape.",
    "def xnumel_for(shape):\n"
    "    return math.prod(shape)",
)
def check_lesson11_xnumel(xnumel_for: Any) -> Verdict:
    """``xnumel_for(shape)``: the element count the output code passes to swish_plus's C++ kernel."""
    import re

    if _missing(xnumel_for):
        return _todo(check_lesson11_xnumel)
    for shape in ((4, 6, 10), (7,), (3, 5)):
        x, y = torch.randn(shape), torch.randn(shape)
        code = _quiet_explain(_swish_plus, x, y, backend="cpp").output_code
        found = re.findall(r"data_ptr\(\), (\d+)\)", code)
        if not found:
            return _wrong_more(check_lesson11_xnumel,
                "could not find the kernel call in the output code; please report this.")
        got, err = _call(xnumel_for, shape)
        if err:
            return _wrong_more(check_lesson11_xnumel, f"xnumel_for({shape}) raised {err}")
        if got != int(found[0]):
            return _wrong_more(check_lesson11_xnumel,
                f"xnumel_for({shape}) returned {got}; the output code passes {found[0]}.")
    return _ok("right: a contiguous tensor is one flat run of elements, so the kernel is a single loop.")


# -- lesson 12: training and the real thing ---------------------------------------------------


@_hinted(
    "The chain rule: what is d/dx of sin(x), and what multiplies it?",
    "d/dx (sin(x) * y + 1) = cos(x) * y; the backward multiplies it by the incoming gradient grad_out.",
    "def grad_x(x, y, grad_out):\n"
    "    return grad_out * y * torch.cos(x)",
)
def check_lesson12_backward(grad_x: Any) -> Verdict:
    """``grad_x(x, y, grad_out)``: d/dx of ``sin(x) * y + 1``, times ``grad_out``."""
    if _missing(grad_x):
        return _todo(check_lesson12_backward)
    for shape in ((5,), (3, 4)):
        x = torch.randn(shape, requires_grad=True)
        y, grad_out = torch.randn(shape), torch.randn(shape)
        (torch.sin(x) * y + 1).backward(grad_out)
        got, err = _call(grad_x, x.detach(), y, grad_out)
        if err:
            return _wrong_more(check_lesson12_backward, f"grad_x raised {err}")
        diff = _same(got, x.grad)
        if diff:
            return _wrong_more(check_lesson12_backward, f"your gradient differs from autograd's: {diff}. "
                               "Did you multiply by grad_out (the incoming gradient)?")
    return _ok("grad_out * y * cos(x): the same formula as the backward graph's mul and cos nodes.")


def _l12_fn(x, w):
    return torch.tanh(x * w).sum()


@_hinted(
    "aot_autograd(fw_compiler=..., bw_compiler=...) calls one compiler with the forward graph and the other with "
    "the backward graph; each is a backend like lesson 7's.",
    "Write a compiler for each kind that appends (kind, number of call_function nodes) to graphs_seen and returns "
    "make_boxed_func(gm.forward) (AOTAutograd calls compiled graphs with a list of inputs).",
    "def counting(kind):\n"
    "    def compiler(gm, example_inputs):\n"
    "        graphs_seen.append((kind, len([n for n in gm.graph.nodes if n.op == 'call_function'])))\n"
    "        return make_boxed_func(gm.forward)\n"
    "    return compiler\n"
    "counting_backend = aot_autograd(fw_compiler=counting('forward'), bw_compiler=counting('backward'))",
)
def check_lesson12_training_backend(backend: Any, graphs_seen: Any) -> Verdict:
    """``backend``: an ``aot_autograd`` backend whose compilers append ("forward"|"backward", n_ops)."""
    if _missing(backend):
        return _todo(check_lesson12_training_backend)
    if not isinstance(graphs_seen, list):
        return _wrong_more(check_lesson12_training_backend, "graphs_seen must be the list your compilers append to.")
    del graphs_seen[:]
    torch._dynamo.reset()
    x, w = torch.randn(6), torch.randn(6, requires_grad=True)
    w_eager = w.detach().clone().requires_grad_()
    try:
        torch.compile(_l12_fn, backend=backend)(x, w).backward()
    except Exception as e:
        torch._dynamo.reset()
        return _wrong_more(check_lesson12_training_backend, f"training through torch.compile with your backend raised "
                           f"{type(e).__name__}: {str(e).strip().splitlines()[0] if str(e).strip() else ''}")
    torch._dynamo.reset()
    _l12_fn(x, w_eager).backward()
    diff = _same(w.grad, w_eager.grad)
    if diff:
        return _wrong_more(check_lesson12_training_backend, f"the gradient differs from eager: {diff}")
    kinds = [entry[0] if isinstance(entry, tuple) and entry else entry for entry in graphs_seen]
    if sorted(kinds) != ["backward", "forward"]:
        return _wrong_more(check_lesson12_training_backend,
            f"graphs_seen holds {graphs_seen!r}; expected one ('forward', n) and one ('backward', n). "
            "Pass your compilers as fw_compiler and bw_compiler to aot_autograd.")
    counts = dict(graphs_seen)
    if not all(isinstance(n, int) and n > 0 for n in counts.values()):
        return _wrong_more(check_lesson12_training_backend, f"the node counts should be positive ints; got {counts}.")
    return _ok(f"one forward graph ({counts['forward']} ops) and one backward graph ({counts['backward']} ops), "
               "and the gradient matches eager.")


# -- build-it exercises (lessons 4, 5, 7, 8, 9, 10): the learner writes a piece of the compiler ----------

from .build import (  # noqa: E402, F401  (re-exported; they use the helpers above)
    BUILD_CHECKERS,
    Candidate,
    KernelSoFar,
    check_lesson04_calls,
    check_lesson04_jumps,
    check_lesson05_guard_builder,
    check_lesson07_cse,
    check_lesson08_where,
    check_lesson09_can_fuse,
    check_lesson10_copy,
    check_lesson10_matmul,
    check_lesson10_softmax,
)
from .debugging import (  # noqa: E402, F401  (lessons 13 and 14, re-exported)
    check_lesson13_no_break,
    check_lesson13_norm_matmul,
    check_lesson14_graph_break,
    check_lesson14_mutation,
    check_lesson14_recompiles,
)
