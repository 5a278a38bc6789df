import os

import pytest
import torch

import toycompiler


@pytest.fixture(autouse=True)
def _fresh_compiler():
    """Each test starts with an empty compile cache and verified IR."""
    toycompiler.reset()
    with toycompiler.config.patch(verify_ir=True):
        yield
    toycompiler.reset()


@pytest.fixture
def tmp_cache(tmp_path):
    """A private on-disk code cache, for tests about caching."""
    with toycompiler.config.patch(cache_dir=str(tmp_path / "cache")):
        yield tmp_path / "cache"


def two_lines(x, y):
    a = torch.sin(x) * 2
    b = torch.cos(y) + a
    return b


@pytest.fixture(scope="module")
def report():
    """One compiled two-line function, shared by the view tests (widgets/ and the browser's plain page)."""
    toycompiler.reset()
    return toycompiler.explain(two_lines, backend="cpp")(torch.randn(16), torch.randn(16))


BACKENDS = ["cpp", "triton"]
os.environ.setdefault("TOYCOMPILER_TEST", "1")

