"""A handful of translator cases end to end on the C++ backend (the rest use backend="eager")."""

import pytest
import torch
import torch.nn as nn
from test_translate_containers_control import dict_build_get_items, for_range_accumulate
from test_translate_names_calls import call_nested_helpers, closure_tensor
from test_translate_torch import iadd_input, setitem_slice
from translate_harness import XY, Case, X, case_id, run_case

torch.manual_seed(0)
# Frozen: the case's third call (a new batch size) makes the batch dim symbolic, and a graph whose
# parameters need gradients with symbolic sizes runs eagerly (a known gap, tests/backend/test_training.py);
# this case is about translating the module call.
NET = nn.Sequential(nn.Linear(4, 8), nn.GELU(), nn.Linear(8, 4)).requires_grad_(False)


def module_call(x):
    return NET(x).softmax(-1)


def comprehension_sum(x, y):
    return sum(t.sin() * i for i, t in enumerate([x, y]))


CASES = [
    Case(call_nested_helpers, X, backend="cpp"),
    Case(closure_tensor, X, backend="cpp", name="closure_tensor"),
    Case(dict_build_get_items, X, backend="cpp"),
    Case(for_range_accumulate, X, backend="cpp"),
    Case(module_call, X, backend="cpp"),
    Case(comprehension_sum, XY, backend="cpp"),
    Case(iadd_input, X, backend="cpp"),
    Case(setitem_slice, X, backend="cpp"),
]


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_translate_cpp(case):
    run_case(case)
