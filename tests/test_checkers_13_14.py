"""Lessons 13 and 14's checkers: a right answer passes, a typical wrong one gets a specific message, a
placeholder gets the first hint tier, and no checker raises. The right answers are the ones in
lessons/solutions/13_capstone_gpt_solutions.ipynb and 14_debugging_solutions.ipynb.
"""

import warnings

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F
from toycompiler.checkers import debugging

import toycompiler
from toycompiler import checkers

# -- lesson 13: the lesson's GPT, smaller ------------------------------------------------------------


class Config:
    vocab_size, block_size, n_layer, n_head, n_embd = 16, 8, 2, 2, 16


class Block(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.ln_1, self.ln_2 = nn.LayerNorm(c.n_embd), nn.LayerNorm(c.n_embd)
        self.c_attn, self.c_proj = nn.Linear(c.n_embd, 3 * c.n_embd), nn.Linear(c.n_embd, c.n_embd)
        self.c_fc, self.mlp_proj = nn.Linear(c.n_embd, 4 * c.n_embd), nn.Linear(4 * c.n_embd, c.n_embd)
        self.n_head = c.n_head

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = (t.view(B, T, self.n_head, -1).transpose(1, 2) for t in self.c_attn(self.ln_1(x)).split(C, 2))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(1, 2).contiguous().view(B, T, C)
        x = x + self.c_proj(y)
        return x + self.mlp_proj(F.gelu(self.c_fc(self.ln_2(x))))


class GPT(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.wte, self.wpe = nn.Embedding(c.vocab_size, c.n_embd), nn.Embedding(c.block_size, c.n_embd)
        self.blocks = nn.ModuleList([Block(c) for _ in range(c.n_layer)])
        self.ln_f = nn.LayerNorm(c.n_embd)

    def forward(self, idx, targets):
        x = self.wte(idx) + self.wpe(torch.arange(idx.shape[1]))
        for block in self.blocks:
            x = self.bound(block(x))
        logits = self.ln_f(x) @ self.wte.weight.t()
        return F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))

    def bound(self, x):
        return x


class BrokenGPT(GPT):
    limit = 10.0

    def bound(self, x):
        if x.abs().max() > self.limit:
            x = x * (self.limit / x.abs().max())
        return x


class FixedGPT(BrokenGPT):
    def bound(self, x):
        return x * torch.clamp(self.limit / x.abs().max(), max=1.0)


class AlwaysScaledGPT(BrokenGPT):  # no break, but it rescales even small activations
    def bound(self, x):
        return x * (self.limit / x.abs().max())


@pytest.fixture(scope="module")
def gpt_inputs():
    torch.manual_seed(0)
    idx = torch.randint(0, Config.vocab_size, (2, Config.block_size))
    return idx, torch.randint(0, Config.vocab_size, (2, Config.block_size))


@pytest.fixture(scope="module")
def schedule(gpt_inputs):
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        report = toycompiler.explain(GPT(Config), backend="cpp")(*gpt_inputs)
    return report.frames[0].backend.schedule


def test_norm_matmul_right_decision_passes(schedule, capsys):
    norm = next(g for g in schedule.groups if g.kind == "reduction")
    decision = next(d for d in schedule.decisions if not d.fused and d.first == "+".join(norm.nodes))
    assert checkers.check_lesson13_norm_matmul(decision, schedule), capsys.readouterr().out
    assert "extern" in decision.reason


def test_norm_matmul_fused_decision_is_told_it_fused(schedule, capsys):
    fused = next(d for d in schedule.decisions if d.fused)
    assert not checkers.check_lesson13_norm_matmul(fused, schedule)
    assert "fusion that happened" in capsys.readouterr().out


def test_norm_matmul_other_refusal_names_the_norm_kernel(schedule, capsys):
    expected = debugging._layer_norm_matmul_refusal(schedule)
    other = next(d for d in schedule.decisions if not d.fused and d != expected)
    assert not checkers.check_lesson13_norm_matmul(other, schedule)
    assert "keeps two other kernels apart" in capsys.readouterr().out


def test_norm_matmul_a_string_is_not_a_decision(schedule, capsys):
    assert not checkers.check_lesson13_norm_matmul("extern kernels (library calls) are never fused", schedule)
    assert "one entry of schedule.decisions" in capsys.readouterr().out


def test_no_break_right_class_passes(gpt_inputs, capsys):
    assert checkers.check_lesson13_no_break(FixedGPT, BrokenGPT, Config, *gpt_inputs), capsys.readouterr().out


def test_no_break_broken_class_still_breaks(gpt_inputs, capsys):
    assert not checkers.check_lesson13_no_break(BrokenGPT, BrokenGPT, Config, *gpt_inputs)
    assert "still 2 break(s)" in capsys.readouterr().out


def test_no_break_rescaling_always_changes_the_loss(gpt_inputs, capsys):
    assert not checkers.check_lesson13_no_break(AlwaysScaledGPT, BrokenGPT, Config, *gpt_inputs)
    assert "rescaling not taken" in capsys.readouterr().out


def test_no_break_a_class_that_cannot_be_built_is_reported(gpt_inputs, capsys):
    assert not checkers.check_lesson13_no_break(lambda config: 1 / 0, BrokenGPT, Config, *gpt_inputs)
    assert "ZeroDivisionError" in capsys.readouterr().out


# -- lesson 14: broken programs, fixed --------------------------------------------------------------


def run_batches_fixed(compiled, batches):
    toycompiler.mark_dynamic(batches[0], 0)
    return [compiled(b) for b in batches]


def run_batches_broken(compiled, batches):
    return [compiled(b) for b in batches]


def standardize_fixed(x):
    return (x - x.mean()) / x.std()


def standardize_broken(x):
    return (x - x.mean()) / float(x.std())


def sharpen_fixed(x):
    return torch.softmax(x * 2.0, dim=-1)


def sharpen_broken(x):
    x.mul_(2.0)
    return torch.softmax(x, dim=-1)


LESSON14 = [
    (checkers.check_lesson14_recompiles, run_batches_fixed, run_batches_broken, "compilations for 5 lengths"),
    (checkers.check_lesson14_graph_break, standardize_fixed, standardize_broken, "still a break"),
    (checkers.check_lesson14_mutation, sharpen_fixed, sharpen_broken, "the input changed"),
]
ALL = [checkers.check_lesson13_norm_matmul, checkers.check_lesson13_no_break] + [c for c, *_ in LESSON14]


@pytest.mark.parametrize("checker, right, wrong, expected", LESSON14)
def test_lesson14_right_answer_passes(checker, right, wrong, expected, capsys):
    assert checker(right), capsys.readouterr().out


@pytest.mark.parametrize("checker, right, wrong, expected", LESSON14)
def test_lesson14_typical_wrong_answer_gets_a_specific_message(checker, right, wrong, expected, capsys):
    assert not checker(wrong)
    out = capsys.readouterr().out
    assert out.startswith("✗") and expected in out, out


@pytest.mark.parametrize("checker, right, wrong, expected", LESSON14)
def test_lesson14_junk_is_reported_not_raised(checker, right, wrong, expected, capsys):
    assert not checker(lambda *args: 1 / 0)
    assert capsys.readouterr().out.startswith("✗")


def test_mutation_wrong_values_are_named(capsys):
    assert not checkers.check_lesson14_mutation(lambda x: torch.softmax(x, dim=-1))
    assert "values differ" in capsys.readouterr().out


@pytest.mark.parametrize("checker", ALL)
def test_placeholder_gets_the_first_hint_tier(checker, capsys):
    args = (None,) * (checker.__code__.co_argcount - 1)
    assert not checker(..., *args)
    out = capsys.readouterr().out
    assert out.startswith("✎") and checkers.HINTS[checker.__name__][0] in out


@pytest.mark.parametrize("checker", ALL)
def test_hints_go_from_nudge_to_answer(checker, capsys):
    tiers = [checkers.hint(checker, level) for level in (1, 2, 3)]
    assert [t.split(":")[0] for t in tiers] == ["Hint 1/3", "Hint 2/3", "Hint 3/3"]
    assert len(set(tiers)) == 3
