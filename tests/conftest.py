import os

import pytest

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


BACKENDS = ["cpp", "triton"]
os.environ.setdefault("TOYCOMPILER_TEST", "1")

