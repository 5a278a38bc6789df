"""``compile(mode=..., options=...)``: checked at compile(), passed down without touching the global config."""

import pytest
import torch

import toycompiler


def chain(x):
    return torch.sin(x) * 2 + 1


def test_unknown_mode_is_refused_with_the_valid_modes():
    with pytest.raises(ValueError, match="unknown mode 'bogus'.*default, reduce-overhead, max-autotune"):
        toycompiler.compile(chain, mode="bogus")


def test_unknown_option_is_refused_with_the_valid_options():
    with pytest.raises(AttributeError, match="unknown option.*nosuch.*fusion"):
        toycompiler.compile(chain, options={"nosuch": 1})


def test_options_set_config_fields_for_that_compile_only():
    x = torch.randn(64)
    unfused = toycompiler.explain(chain, backend="cpp", options={"fusion": False})(x)
    fused = toycompiler.explain(chain, backend="cpp")(x)
    assert len(unfused.kernels) == 3 and len(fused.kernels) == 1
    assert "fusion is turned off" in str(unfused.frames[0].backend.schedule.decisions[0])
    assert toycompiler.config.fusion is True


def test_mode_reaches_the_backend_without_patching_the_global_config():
    seen = []

    def backend(gm, example_inputs):  # a custom backend can only read the global config
        seen.append(toycompiler.config.mode)
        return gm.forward

    toycompiler.compile(chain, backend=backend, mode="max-autotune")(torch.randn(8))
    report = toycompiler.explain(chain, backend="cpp", mode="max-autotune")(torch.randn(8))
    assert seen == ["default"]
    assert report.frames[0].backend.runtime.mode == "max-autotune"
