"""Checkers for lessons 13 (a GPT, compiled) and 14 (debugging).

Lesson 13's checkers read the compiler's own artifacts for a model; lesson 14's
exercises are broken programs, and each checker runs the learner's fixed version
and checks the fix itself: no graph break, no recompile, the same answer as the
program meant. Hints come in tiers, as for the build-it exercises::

    hint(check_lesson14_recompiles, 1)   # a nudge
    hint(check_lesson14_recompiles, 3)   # the answer
"""

from __future__ import annotations

import copy
from typing import Any

import torch

from toycompiler import api

from . import Verdict, _call, _hinted, _missing, _ok, _quiet_explain, _same, _todo, _wrong_more

# -- lesson 13: a small GPT ------------------------------------------------------------------


def _layer_norm_matmul_refusal(schedule: Any) -> Any:
    """The refusal between the first LayerNorm kernel and the matmul that reads it (the real answer)."""
    groups = list(schedule.groups)
    first_norm = next(i for i, g in enumerate(groups) if g.kind == "reduction")
    norm, matmul = groups[first_norm], groups[first_norm + 1]
    return next(d for d in schedule.decisions
                if not d.fused and d.first == "+".join(norm.nodes) and d.second == matmul.nodes[0])


@_hinted(
    "Print the schedule's refusals: [d for d in schedule.decisions if not d.fused]. Which kernel holds "
    "the first LayerNorm (report.kernels names it), and which buffer does the next kernel compute?",
    "schedule.groups lists the kernels in order with their kind and nodes: the first 'reduction' group is "
    "ln_1 (with the embedding add before it); the group after it is an 'extern' group, the c_attn matmul. "
    "Find the decision whose first is the LayerNorm group's nodes joined by '+' and whose second is that "
    "extern buffer.",
    "norm = next(g for g in schedule.groups if g.kind == 'reduction')\n"
    "decision = next(d for d in schedule.decisions if not d.fused and d.first == '+'.join(norm.nodes))\n"
    "# its reason: extern kernels (library calls) are never fused",
)
def check_lesson13_norm_matmul(decision: Any, schedule: Any) -> Verdict:
    """``decision``: the fusion decision (from ``schedule.decisions``) that kept ln_1 and c_attn apart."""
    if _missing(decision):
        return _todo(check_lesson13_norm_matmul)
    if not hasattr(decision, "fused") or not hasattr(decision, "reason"):
        return _wrong_more(check_lesson13_norm_matmul, f"expected one entry of schedule.decisions, got a "
                           f"{type(decision).__name__}")
    if decision not in schedule.decisions:
        return _wrong_more(check_lesson13_norm_matmul, "that decision is not in this schedule's decisions")
    if decision.fused:
        return _wrong_more(check_lesson13_norm_matmul, f"'{decision}' is a fusion that happened; look for one "
                           "that was refused (fused is False)")
    expected = _layer_norm_matmul_refusal(schedule)
    if decision != expected:
        return _wrong_more(check_lesson13_norm_matmul, f"'{decision}' keeps two other kernels apart; the "
                           f"LayerNorm kernel holds {expected.first.split('+')[0]} onwards")
    return _ok(f"{decision}. The matmul is a library call (torch.mm/addmm), an extern kernel: its loops are "
               "not toycompiler's to merge, so LayerNorm's output is written to memory and the matmul reads it.")


def _gpt_losses(model_class: type, reference: torch.nn.Module, config: Any, scale: float, idx: torch.Tensor,
                targets: torch.Tensor) -> tuple[Any, Any, str | None]:
    """Loss of the learner's model (the reference's weights, embeddings scaled) and of the reference."""
    ref = copy.deepcopy(reference)
    with torch.no_grad():
        ref.wte.weight.mul_(scale)
        ref.wpe.weight.mul_(scale)
    try:
        model = model_class(config)
        model.load_state_dict(ref.state_dict())
    except Exception as e:  # the learner's class: report, don't raise
        return None, None, f"building it with the lesson's config and weights raised {type(e).__name__}: {e}"
    with torch.no_grad():
        got, err = _call(model, idx, targets)
        return got, ref(idx, targets), err


@_hinted(
    "Run toycompiler.explain on BrokenGPT and print report.breaks: which line breaks, and why?",
    "An if on a tensor's value is a data-dependent branch. Compute the rescaling factor as a tensor "
    "and apply it unconditionally: when the maximum is at most the limit, the factor must be exactly 1 "
    "(torch.clamp(..., max=1.0) or torch.where).",
    "class FixedGPT(BrokenGPT):\n"
    "    def bound(self, x):\n"
    "        return x * torch.clamp(self.limit / x.abs().max(), max=1.0)",
)
def check_lesson13_no_break(model_class: Any, broken_class: type, config: Any, idx: torch.Tensor,
                            targets: torch.Tensor) -> Verdict:
    """``model_class(config)``: BrokenGPT's losses for the same weights, in one graph without a break."""
    if _missing(model_class):
        return _todo(check_lesson13_no_break)
    torch.manual_seed(0)
    reference = broken_class(config)
    for scale in (1.0, 200.0):  # small activations (branch not taken), then large ones (taken)
        got, expected, err = _gpt_losses(model_class, reference, config, scale, idx, targets)
        if err:
            return _wrong_more(check_lesson13_no_break, f"with embeddings x{scale:g}: {err}")
        diff = _same(got, expected)
        if diff:
            taken = "taken" if scale > 1 else "not taken"
            return _wrong_more(check_lesson13_no_break, f"with the rescaling {taken} (embeddings x{scale:g}) "
                               f"the loss differs from BrokenGPT's: {diff}")
    model = model_class(config)
    model.load_state_dict(reference.state_dict())
    with torch.no_grad():
        report = _quiet_explain(model, idx, targets, backend="cpp")
    if report.graph_break_count:
        return _wrong_more(check_lesson13_no_break, f"same loss, but still {report.graph_break_count} "
                           f"break(s): {report.breaks[0].reason}")
    if report.fallback_reasons:
        return _wrong_more(check_lesson13_no_break, f"no break, but the graph ran eagerly: "
                           f"{report.fallback_reasons[0].splitlines()[0]}")
    return _ok(f"one graph, no break, {len(report.kernels)} kernels, and the same loss whether or not the "
               "activations are rescaled.")


# -- lesson 14: debugging -----------------------------------------------------------------------


def _normalize(x: torch.Tensor) -> torch.Tensor:
    return x / x.abs().max()


@_hinted(
    "Print compiled.compiled_frames after the loop, or turn on toycompiler.set_logs(recompiles=True): "
    "which guard fails on the second batch?",
    "The guard is on x.shape[0]. Tell the compiler, before the first call, that dimension 0 varies: "
    "toycompiler.mark_dynamic(tensor, 0). Then one graph serves every length.",
    "def run_batches(compiled, batches):\n"
    "    toycompiler.mark_dynamic(batches[0], 0)\n"
    "    return [compiled(b) for b in batches]",
)
def check_lesson14_recompiles(run_batches: Any) -> Verdict:
    """``run_batches(compiled, batches)``: the outputs, with ``compiled`` compiling once for every length."""
    if _missing(run_batches):
        return _todo(check_lesson14_recompiles)
    compiled = api.compile(_normalize, backend="cpp")
    batches = [torch.randn(n) for n in (37, 50, 64, 81, 100)]
    got, err = _call(run_batches, compiled, [b.clone() for b in batches])
    if err:
        return _wrong_more(check_lesson14_recompiles, f"run_batches raised {err}")
    if not isinstance(got, list | tuple) or len(got) != len(batches):
        return _wrong_more(check_lesson14_recompiles, f"return one output per batch ({len(batches)}), "
                           f"got {type(got).__name__}")
    for b, out in zip(batches, got):
        diff = _same(out, _normalize(b))
        if diff:
            return _wrong_more(check_lesson14_recompiles, f"for a batch of {len(b)} the output differs: {diff}")
    n = len(compiled.compiled_frames)
    if n > 1:
        return _wrong_more(check_lesson14_recompiles, f"right values, but {n} compilations for "
                           f"{len(batches)} lengths; one should serve them all")
    if n == 0:
        return _wrong_more(check_lesson14_recompiles, "the compiled function was never called; call compiled(b)")
    return _ok("one compilation for five lengths: the graph takes the length as a symbol (s0).")


def _standardize(x: torch.Tensor) -> torch.Tensor:
    scale = float(x.std())
    return (x - x.mean()) / scale


@_hinted(
    "toycompiler.explain(standardize, backend='cpp')(x).breaks names the line and the reason.",
    "float(tensor) needs the tensor's value, which the tracer does not have. Keep the value a tensor: "
    "dividing by a 0-d tensor broadcasts.",
    "def standardize_fixed(x):\n"
    "    return (x - x.mean()) / x.std()",
)
def check_lesson14_graph_break(fn: Any) -> Verdict:
    """``fn(x)``: ``standardize``'s values, in one graph with no break."""
    if _missing(fn):
        return _todo(check_lesson14_graph_break)
    for shape in ((10,), (4, 7)):
        x = torch.randn(shape) * 3 + 1
        got, err = _call(fn, x.clone())
        if err:
            return _wrong_more(check_lesson14_graph_break, f"fn on a {list(shape)} tensor raised {err}")
        diff = _same(got, _standardize(x))
        if diff:
            return _wrong_more(check_lesson14_graph_break, f"on a {list(shape)} tensor the values differ "
                               f"from standardize's: {diff}")
    report = _quiet_explain(fn, torch.randn(10), backend="cpp")
    if report.graph_break_count:
        return _wrong_more(check_lesson14_graph_break, f"same values, but still a break: {report.breaks[0].reason}")
    if report.fallback_reasons:
        return _wrong_more(check_lesson14_graph_break, f"no break, but it ran eagerly: {report.fallback_reasons[0]}")
    return _ok(f"one graph, {len(report.kernels)} kernel(s), the same values.")


def _sharpen(x: torch.Tensor) -> torch.Tensor:
    return torch.softmax(x * 2.0, dim=-1)


@_hinted(
    "The comparison called the eager function and the compiled one on the same tensor. What does "
    "sharpen_ do to its argument? Print x before and after one call.",
    "sharpen_ doubles x in place (mul_), so the second call, the compiled one, starts from 2x and computes "
    "softmax(4x). The compiler is right; the program changes its input. Write a version that leaves x alone: "
    "an out-of-place multiplication.",
    "def sharpen_fixed(x):\n"
    "    return torch.softmax(x * 2.0, dim=-1)",
)
def check_lesson14_mutation(fn: Any) -> Verdict:
    """``fn(x)``: sharpen_'s softmax, the input left unchanged, eager and compiled agreeing when they share it."""
    if _missing(fn):
        return _todo(check_lesson14_mutation)
    x = torch.randn(4, 6) + 2
    before = x.clone()
    got, err = _call(fn, x)
    if err:
        return _wrong_more(check_lesson14_mutation, f"fn(x) raised {err}")
    diff = _same(got, _sharpen(before))
    if diff:
        return _wrong_more(check_lesson14_mutation, f"the values differ from sharpen_'s on a fresh input: {diff}")
    if not torch.equal(x, before):
        return _wrong_more(check_lesson14_mutation, "right values, but the input changed: the function still "
                           "mutates its argument")
    compiled_out, err = _call(api.compile(fn, backend="cpp"), x)
    if err:
        return _wrong_more(check_lesson14_mutation, f"compiled, it raised {err}")
    diff = _same(compiled_out, got)
    if diff:
        return _wrong_more(check_lesson14_mutation, f"eager and compiled, on the same tensor, differ: {diff}")
    return _ok("the input is left alone, so eager and compiled agree when they share it.")
