"""toycompiler: a small, readable compiler that works like torch.compile.

    import torch, toycompiler

    @toycompiler.compile(backend="cpp")
    def f(x, y):
        return torch.sin(x) + torch.cos(y) * 2

    report = toycompiler.explain(f)(torch.randn(1000), torch.randn(1000))
    print(report)

The stages, in order, are listed in :mod:`toycompiler.pipeline`.
"""

import os as _os
import sys as _sys

# The Python versions the test suite runs on (3.11 here, 3.12 on the GPU machine). The frontend reads
# CPython bytecode, which changes with every minor version: on another one a wrong translation is worse
# than a refusal.
SUPPORTED_PYTHON = ((3, 11), (3, 12))


def check_python_version(version: tuple | None = None) -> None:
    """Raise ImportError on a Python that toycompiler is not tested on (default: the running one)."""
    major, minor = (version or _sys.version_info)[:2]
    if (major, minor) not in SUPPORTED_PYTHON:
        names = " and ".join(f"{a}.{b}" for a, b in SUPPORTED_PYTHON)
        raise ImportError(f"toycompiler runs on Python {names} only, not {major}.{minor}: its frontend reads "
                          f"each version's bytecode. Use one of those (make setup PYTHON=python3.11).")


check_python_version()

import torch as _torch  # noqa: E402

# Without a GPU, Triton kernels run in Triton's CPU interpreter. That must be
# chosen before triton is first imported (torch._dynamo imports it).
if not _torch.cuda.is_available() and "triton" not in _sys.modules:
    _os.environ.setdefault("TRITON_INTERPRET", "1")

from .api import CompileError, compile, explain, reset  # noqa: E402
from .backends import get_backend, list_backends, register_backend, register_with_torch  # noqa: E402
from .config import config  # noqa: E402
from .frontend.calls import graph_break  # noqa: E402
from .frontend.shapes import mark_dynamic  # noqa: E402
from .logs import set_logs  # noqa: E402

__version__ = "0.1.0"
__all__ = ["CompileError", "compile", "config", "explain", "get_backend", "graph_break", "list_backends",
           "mark_dynamic", "register_backend", "reset", "set_logs"]

register_with_torch()  # torch.compile(fn, backend="toycompiler") works too


def load_ipython_extension(ip):
    """``%load_ext toycompiler``: a short spelling of ``%load_ext toycompiler.widgets``.

    The compiler never imports the views. This hook, run by IPython and never
    while compiling, hands over to the views' own extension by name, the same
    way ``%load_ext toycompiler.widgets`` would; it is the one place the
    compiler package names them.
    """
    import importlib

    importlib.import_module("toycompiler.widgets").load_ipython_extension(ip)
