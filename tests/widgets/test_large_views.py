"""Views of big compilations stay readable: guards grouped by input and folded, repeated structure folded."""

import re

import pytest
import torch
from toycompiler.widgets import explore, stage_view
from toycompiler.widgets._render import fold_repeats, shape_of
from toycompiler.widgets.guards_view import SHOWN_INPUTS, group_guards, guarded_input, guards_html

import toycompiler


def deep_model(layers: int = 12) -> torch.nn.Sequential:
    torch.manual_seed(0)
    layers = [m for _ in range(layers) for m in (torch.nn.Linear(16, 16), torch.nn.ReLU())]
    # for inference: in training the last ReLU also stores its mask for the backward, so its kernel differs
    return torch.nn.Sequential(*layers).requires_grad_(False)


@pytest.fixture(scope="module")
def deep_report():
    toycompiler.reset()
    return toycompiler.explain(deep_model(), backend="cpp")(torch.randn(4, 16))


def add_scaled(x, y):
    return x * 2 + y


def test_a_guard_belongs_to_the_argument_or_submodule_it_checks():
    assert guarded_input("x.dtype == torch.float32") == "x"
    assert guarded_input("not xs[0].requires_grad") == "xs[0]"
    assert guarded_input("xs[0].shape[0] >= 2") == "xs[0]"
    assert guarded_input("list(d.keys()) == ['a']") == "d"
    assert guarded_input("self.training is True") == "self"
    assert guarded_input("self._modules['3']._parameters['weight'].is_cpu") == "self._modules['3']"
    assert guarded_input("len({id(t) for t in (x, y)}) == 2") == "several inputs"


def test_guards_are_grouped_by_input_arguments_before_submodules(deep_report):
    report = toycompiler.explain(add_scaled, backend="cpp")(torch.randn(8), torch.randn(8))
    groups = group_guards(report.frames[0].guards.guards)
    assert list(groups)[:2] == ["x", "y"]
    assert all(g.expr.startswith(("isinstance(x", "x.", "not x.")) for g in groups["x"])
    deep = group_guards(deep_report.frames[0].guards.guards)
    assert list(deep)[:2] == ["self", "input"]  # the arguments, then one group per layer
    layer0 = [g.expr for g in deep["self._modules['0']"]]
    assert any("_parameters['weight']" in e for e in layer0) and any("_parameters['bias']" in e for e in layer0)
    assert sum(map(len, deep.values())) == len(deep_report.frames[0].guards.guards)  # none lost


def test_guards_beyond_a_few_fold_into_n_more(deep_report):
    guards = deep_report.frames[0].guards
    html = guards_html(guards)
    outside = html
    while "<details" in outside:  # drop folded parts, innermost first: what shows before any click
        outside = re.sub(r"<details(?:(?!<details).)*?</details>", "", outside, flags=re.S)
    assert outside.count('class="tc-guard-input"') == SHOWN_INPUTS
    groups = group_guards(guards.guards)
    assert f"{len(groups) - SHOWN_INPUTS} more inputs" in html
    assert html.count('class="tc-guard-input"') == len(groups)  # every input is still there, folded
    assert re.search(r"the check function \(\d+ lines\)", html)  # the long check function folds too
    assert all(g.expr in html.replace("&#x27;", "'") for g in guards.guards)


def test_repeated_kernels_and_layers_fold_under_the_first(deep_report):
    view = stage_view(deep_report.frames[0])
    kernels = view.stage_html("kernels")
    names = [k.name for k in deep_report.frames[0].backend.kernels]
    assert len(names) == 12
    assert f"11 more kernels with the same code as {names[0]} apart from names" in kernels
    assert all(f'data-tc-kernel="{n}"' in kernels for n in names)  # folded, not dropped
    fx = view.stage_html("fx")
    assert re.search(r"\.\.\. (\d+) more repeats of the 2 lines above", fx)  # linear, relu; linear_1, relu_1 ...


def test_fold_repeats_keeps_the_first_copy_and_counts_the_rest():
    lines = ["input"] + [f"{op}_{i} = {op}(x_{i})" for i in range(1, 6) for op in ("linear", "relu")] + ["out"]
    rows = fold_repeats(lines, [shape_of(t) for t in lines])
    assert rows[:3] == ["input", "linear_1 = linear(x_1)", "relu_1 = relu(x_1)"]
    assert "4 more repeats of the 2 lines above (8 lines)" in rows[3] and "relu_5 = relu(x_5)" in rows[3]
    assert rows[4] == "out"
    few = ["a_1", "a_2"]
    assert fold_repeats(few, [shape_of(t) for t in few]) == few  # too little to fold


def noisy(x):
    y = torch.sin(x) * 2
    print("y is ready")
    return torch.cos(y) + 1


def test_explorer_shows_each_frames_guards_grouped():
    html = explore(noisy, torch.randn(8), backend="cpp").html()
    assert html.count("tc-guards") == 2  # [0/0] and the resume function's [1/0]
    assert 'data-tc-input="x"' in html
