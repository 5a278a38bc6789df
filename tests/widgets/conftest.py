import pytest


@pytest.fixture(scope="module")
def frame(report):
    return report.frames[0]


@pytest.fixture(scope="module")
def lines(frame):
    """(line of ``a = ...``, line of ``b = ...``) in two_lines (tests/conftest.py)."""
    first = frame.source.firstlineno
    return first + 1, first + 2
