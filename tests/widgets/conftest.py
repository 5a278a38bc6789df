import pytest
import torch

import toycompiler


def two_lines(x, y):
    a = torch.sin(x) * 2
    b = torch.cos(y) + a
    return b


@pytest.fixture(scope="module")
def report():
    toycompiler.reset()
    return toycompiler.explain(two_lines, backend="cpp")(torch.randn(16), torch.randn(16))


@pytest.fixture(scope="module")
def frame(report):
    return report.frames[0]


@pytest.fixture(scope="module")
def lines():
    """(line of ``a = ...``, line of ``b = ...``) in two_lines."""
    import inspect

    first = inspect.getsourcelines(two_lines)[1]
    return first + 1, first + 2
