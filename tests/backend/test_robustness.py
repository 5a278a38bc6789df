"""Bad input to the backend gets a correct result: a corrupted on-disk cache, compiles from several threads."""

import sys
import threading

import pytest
import torch

import toycompiler
from toycompiler.testing import assert_same, fallback_reasons


def _forget_generated_modules():
    """As in a fresh process: the next cache hit must read the files on disk again."""
    for name in [m for m in sys.modules if m.startswith("toycompiler_generated_")]:
        del sys.modules[name]
    toycompiler.reset()


def _backend(f, *args):
    return toycompiler.explain(f, backend="cpp")(*args).frames[0].backend


def f(x):
    return torch.sin(x) * 2 + x.cos()


@pytest.mark.parametrize("damage", ["garbage", "truncate"])
def test_corrupted_cache_entry_is_discarded_and_compiled_again(tmp_cache, damage):
    x = torch.randn(7)
    _backend(f, x)
    entry = next((tmp_cache / "graphs").glob("*.pkl"))
    data = entry.read_bytes()
    entry.write_bytes(b"garbage\n" + data[8:] if damage == "garbage" else data[: len(data) // 2])
    _forget_generated_modules()
    again = _backend(f, x)
    assert again.fallback_reason is None
    assert "failed its checksum" in again.runtime.cache and "compiled again" in again.runtime.cache
    assert_same(f, x)
    _forget_generated_modules()
    assert _backend(f, x).runtime.cache.startswith("hit")  # the new entry is sound


def test_corrupted_output_code_is_detected_by_its_checksum(tmp_cache):
    """The report's case: ``garbage`` in the output code gave ``NameError`` and an eager fallback."""
    x = torch.randn(7)
    code = _backend(f, x).output_code.path
    with open(code, "a") as out:
        out.write("garbage\n")
    _forget_generated_modules()
    again = _backend(f, x)
    assert again.fallback_reason is None and "missing or changed" in again.runtime.cache
    assert "garbage" not in open(again.output_code.path).read()
    assert_same(f, x)


@pytest.mark.parametrize("same_function", [False, True], ids=["different", "same"])
def test_compiling_from_four_threads_at_once(tmp_cache, same_function):
    """FX's tracer is process-global (``CURRENT_PATCHER is None`` when two threads traced at once)."""
    results, errors = {}, []

    def work(i):
        k = 1 if same_function else i + 1

        def g(x):
            return (x * k).sin() + x.cos() * k
        try:
            compiled = toycompiler.compile(g, backend="cpp")
            x = torch.randn(9)
            results[i] = (torch.allclose(compiled(x), g(x), atol=1e-5), fallback_reasons(compiled))
        except Exception as e:  # noqa: BLE001 (reported below)
            errors.append(e)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and results == {i: (True, []) for i in range(4)}
