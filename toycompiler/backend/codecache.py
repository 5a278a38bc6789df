"""Compile and load generated code, cached on disk by a hash of what went in.

- C++: ``<cache>/cpp/<hash>.cpp`` is built with the system compiler into
  ``<hash>.so`` and loaded with ``ctypes``. The hash covers the source, the
  compiler and its flags, so changing any of them rebuilds.
- Python (Triton kernels, wrappers): ``<cache>/py/<hash>.py`` is imported as a
  real module, so tracebacks, ``inspect.getsource`` and Triton's JIT (which
  reads the source) all work.

Mirrors: torch/_inductor/codecache.py (CppCodeCache, PyCodeCache).
Leaves out: compiling in worker processes, and file locks between processes
(writes go to a temporary file and are renamed into place instead).
"""

from __future__ import annotations

import ctypes
import hashlib
import importlib.util
import os
import subprocess
import sys
import types
from typing import Any

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


def load_cpp_kernel(path: str, name: str, nargs: int, nsizes: int = 0) -> ctypes._CFuncPtr:
    """A C function from a built library: ``nargs - nsizes`` pointers, then ``nsizes`` int64 sizes.

    Declaring ``argtypes`` once lets ctypes convert each Python int straight to
    a C pointer or int64 on every call, with no per-call type inspection.
    """
    fn = getattr(ctypes.CDLL(path), name)
    fn.restype = None
    fn.argtypes = [ctypes.c_void_p] * (nargs - nsizes) + [ctypes.c_int64] * nsizes
    return fn


def load_triton_kernel(path: str, name: str) -> TritonLauncher:
    """A ``@triton.jit`` kernel from a cached module, behind the low-overhead launcher."""
    from .launcher import TritonLauncher

    return TritonLauncher(getattr(python_module_at(path), name), name)


def write_python(source: str, config: Config, prefix: str) -> str:
    """Write ``source`` to the cache (once per content); its path. Import it with :func:`python_module_at`."""
    folder = os.path.join(config.cache_dir, "py")
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, f"{prefix}_{_hash(source)}.py")
    _write_once(path, source)
    return path


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


# -- the compiled-graph cache ---------------------------------------------------------
#
# A second process compiling the same graph for the same inputs should not run
# passes, lowering, scheduling, codegen and the C++ compiler again. The key is
# everything the generated code depends on; the entry is the pickled artifacts,
# which name the output code and kernels already on disk.
# Mirrors: torch/_inductor/codecache.py (FxGraphCache, FxGraphHashDetails).
# Leaves out: guards on symbolic sizes stored with the entry, and remote caches.

_CONSTANT_HASH_LIMIT = 1 << 20  # bytes of constant tensors hashed into the key; larger ones bypass


def graph_key(gm: Any, example_inputs: list, target: str, config: Config,
              source: Any = None) -> tuple[str | None, str]:
    """The cache key of compiling ``gm`` for these inputs, or None and why the cache is bypassed."""
    from .. import provenance

    parts = [gm.code, target, toycompiler_version()]
    parts += [f"{n.name}@{provenance.line_of(n)}" for n in gm.graph.nodes]  # kernel comments name lines
    if source is not None:
        parts += [source.filename, str(source.firstlineno), *source.lines]
    for t in example_inputs:
        parts.append(_input_metadata(t))
    settings = config.to_dict()
    for volatile in ("cache_dir", "verify_ir", "graph_cache"):  # don't change the generated code
        settings.pop(volatile, None)
    parts.append(repr(sorted(settings.items())))
    for name, value in _constants(gm):
        if value.numel() * value.element_size() > _CONSTANT_HASH_LIMIT:
            return None, f"constant {name} is larger than {_CONSTANT_HASH_LIMIT} bytes (not hashed)"
        parts += [name, _input_metadata(value), value.detach().cpu().numpy().tobytes().hex()]
    return _hash(*parts), ""


def _constants(gm: Any) -> list[tuple[str, Any]]:
    """Tensors the graph reads through ``get_attr`` (weights baked into the graph)."""
    import torch

    out = []
    for node in gm.graph.nodes:
        if node.op == "get_attr":
            value = gm
            for part in node.target.split("."):
                value = getattr(value, part)
            if isinstance(value, torch.Tensor):
                out.append((node.target, value))
    return out


def _input_metadata(t: Any) -> str:
    import torch

    if isinstance(t, torch.Tensor):
        return f"tensor{tuple(map(str, t.shape))}{tuple(map(str, t.stride()))}{t.dtype}{t.device}{t.requires_grad}"
    return f"{type(t).__name__}:{t!r}"


_VERSION: list[str] = []


def toycompiler_version() -> str:
    """toycompiler's own source (hashed, like Inductor's ``torch_key``), plus torch, triton and Python."""
    if not _VERSION:
        import torch

        root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        digest = hashlib.sha256()
        for folder, _, files in sorted(os.walk(root)):
            for name in sorted(f for f in files if f.endswith(".py")):
                with open(os.path.join(folder, name), "rb") as f:
                    digest.update(f.read())
        try:
            import triton
            triton_version = triton.__version__
        except ImportError:
            triton_version = "none"
        _VERSION.append(f"{digest.hexdigest()[:16]} torch {torch.__version__} triton {triton_version} "
                        f"python {sys.version.split()[0]}")
    return _VERSION[0]


def _graph_path(key: str, config: Config) -> str:
    return os.path.join(config.cache_dir, "graphs", f"{key}.pkl")


def save_graph(key: str, artifacts: Any, constants: list, config: Config) -> tuple[bool, str]:
    """Store a compiled graph's artifacts (which name its output code and kernels on disk) and constants."""
    import pickle

    size = sum(t.numel() * t.element_size() for t in constants)
    if size > _CONSTANT_HASH_LIMIT:
        return False, f"its constant tensors take {size} bytes (more than {_CONSTANT_HASH_LIMIT})"
    path = _graph_path(key, config)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = f"{path}.{os.getpid()}.tmp"
    with open(tmp, "wb") as f:
        pickle.dump((artifacts, [t.detach() for t in constants]), f)
    os.replace(tmp, path)
    return True, ""


def load_graph(key: str, config: Config) -> tuple[Any, list, types.ModuleType] | None:
    """The stored artifacts, constants and loaded output module; None when missing or unusable (compile again)."""
    import pickle

    path = _graph_path(key, config)
    try:
        with open(path, "rb") as f:
            artifacts, constants = pickle.load(f)
        files = [artifacts.output_code.path, *(k.path for k in artifacts.kernels)]
        if not all(os.path.exists(p) for p in files):
            return None  # someone cleaned part of the cache
        # Importing loads the kernels too: a broken entry fails here, and is compiled again, not at the call.
        return artifacts, constants, output_module(artifacts.output_code.path)
    except (OSError, EOFError, pickle.UnpicklingError, AttributeError, ImportError, ValueError, TypeError):
        return None


def output_module(path: str) -> types.ModuleType:
    """The output code at ``path``, imported once per process."""
    return python_module_at(path)
