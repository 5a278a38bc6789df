"""Compile and load generated code, cached on disk by a hash of what went in.

- C++: ``<cache>/cpp/<hash>.cpp`` is built with the system compiler into
  ``<hash>.so`` and loaded with ``ctypes``. The hash covers the source, the
  compiler and its flags, so changing any of them rebuilds.
- Python (Triton kernels, wrappers): ``<cache>/py/<hash>.py`` is imported as a
  real module, so tracebacks, ``inspect.getsource`` and Triton's JIT (which
  reads the source) all work.

Mirrors: torch/_inductor/codecache.py (CppCodeCache, PyCodeCache).
"""

from __future__ import annotations

import ctypes
import hashlib
import importlib.util
import os
import subprocess
import sys
import types

from ..config import Config


class CppCompileError(RuntimeError):
    """The system compiler rejected a generated kernel; carries the source and its message."""


def _hash(*parts: str) -> str:
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()[:20]


def _write_once(path: str, text: str) -> None:
    if not os.path.exists(path):
        tmp = f"{path}.{os.getpid()}.tmp"
        with open(tmp, "w") as f:
            f.write(text)
        os.replace(tmp, path)


def cpp_library(source: str, config: Config) -> tuple[str, bool]:
    """Build ``source`` into a shared library; return its path and whether it was already cached."""
    flags = list(config.cxx_flags)
    key = _hash(source, config.cxx, *flags)
    folder = os.path.join(config.cache_dir, "cpp")
    os.makedirs(folder, exist_ok=True)
    so = os.path.join(folder, f"{key}.so")
    if os.path.exists(so):
        return so, True
    cpp = os.path.join(folder, f"{key}.cpp")
    _write_once(cpp, source)
    tmp = f"{so}.{os.getpid()}.tmp"
    cmd = [config.cxx, *flags, cpp, "-o", tmp]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True)
    except FileNotFoundError as e:
        raise CppCompileError(f"C++ compiler {config.cxx!r} not found: {e}") from e
    if proc.returncode != 0:
        raise CppCompileError(f"{' '.join(cmd)} failed:\n{proc.stderr.strip()}\n--- kernel source ---\n{source}")
    os.replace(tmp, so)
    return so, False


def load_cpp_kernel(path: str, name: str, nargs: int) -> ctypes._CFuncPtr:
    """A C function from a built library; all arguments are pointers or int64 sizes."""
    fn = getattr(ctypes.CDLL(path), name)
    fn.restype = None
    fn.argtypes = [ctypes.c_void_p] * nargs
    return fn


def python_module(source: str, config: Config, prefix: str) -> tuple[types.ModuleType, str]:
    """Write ``source`` to the cache and import it as a module."""
    key = _hash(source)
    folder = os.path.join(config.cache_dir, "py")
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, f"{prefix}_{key}.py")
    _write_once(path, source)
    return python_module_at(path), path


def python_module_at(path: str) -> types.ModuleType:
    """Import an already-written cached module by path (used by generated output code)."""
    name = "toycompiler_generated_" + os.path.splitext(os.path.basename(path))[0]
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module
