"""Make ``import torchvision`` work beside a CPU build of torch (``import_torchvision`` says how and why)."""

from toycompiler.bench.models import import_torchvision

try:
    import_torchvision()
except ImportError:  # not installed: the model tests skip themselves (importorskip)
    pass
