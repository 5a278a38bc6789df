"""Compile and load generated code, cached on disk by a hash of what went in.

- C++: ``<cache>/cpp/<hash>.cpp`` is built with the system compiler into
  ``<hash>.so`` and loaded with ``ctypes``. The hash covers the source, the
  compiler and its flags, so changing any of them rebuilds.
- Python (Triton kernels, wrappers): ``<cache>/py/<hash>.py`` is imported as a
  real module, so tracebacks, ``inspect.getsource`` and Triton's JIT (which
  reads the source) all work.

The output code calls into this module: it loads its kernels here, and checks an index tensor before a
kernel reads through it (:func:`check_index`).

Mirrors: torch/_inductor/codecache.py (CppCodeCache, PyCodeCache).
Leaves out: compiling in worker processes, and file locks between processes
(writes go to a temporary file and are renamed into place instead).
"""

from __future__ import annotations

import ctypes
import functools
import hashlib
import importlib.metadata
import importlib.util
import operator
import os
import pickle
import subprocess
import sys
import threading
import types
from pathlib import Path
from typing import Any

import torch

from .. import provenance
from ..config import Config
from .launcher import TritonLauncher


class CppCompileError(RuntimeError):
    """The system compiler rejected a generated kernel; carries the source and its message."""


def _hash(*parts: str) -> str:
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()[:20]


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _tmp(path: str) -> str:
    """A private name to write ``path`` under before renaming it into place (per process and thread)."""
    return f"{path}.{os.getpid()}.{threading.get_ident()}.tmp"


def _cache_path(config: Config, folder: str, name: str) -> str:
    """``<cache_dir>/<folder>/<name>``, creating the folder if need be."""
    os.makedirs(os.path.join(config.cache_dir, folder), exist_ok=True)
    return os.path.join(config.cache_dir, folder, name)


def _write(path: str, data: bytes, once: bool = False) -> str:
    """Write ``path`` whole or not at all: to a private name first, then renamed into place. ``once``: unless it is
    there already (a name made from a hash of the content). Returns the path."""
    if not (once and os.path.exists(path)):
        Path(_tmp(path)).write_bytes(data)  # (a name of this process and thread's own)
        os.replace(_tmp(path), path)
    return path


def cpp_library(source: str, config: Config, link_torch: bool = False) -> tuple[str, bool]:
    """Build ``source`` into a shared library; return its path and whether it was already cached.

    ``link_torch``: link it with libtorch_cpu, whose SLEEF functions the kernels' vector math calls (as
    Inductor's C++ kernels are linked with it). That costs about 0.1 s a build, so only where needed."""
    link = [f"-L{torch.__path__[0]}/lib", "-ltorch_cpu", f"-Wl,-rpath,{torch.__path__[0]}/lib"] * link_torch
    key = _hash(source, config.cxx, *config.cxx_flags, *link)
    so = _cache_path(config, "cpp", f"{key}.so")
    if os.path.exists(so):
        return so, True
    cpp = _write(_cache_path(config, "cpp", f"{key}.cpp"), source.encode(), once=True)
    cmd = [config.cxx, *config.cxx_flags, cpp, "-o", _tmp(so), *link]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True)
    except FileNotFoundError as e:
        raise CppCompileError(f"C++ compiler {config.cxx!r} not found: {e}") from e
    if proc.returncode != 0:
        raise CppCompileError(f"{' '.join(cmd)} failed:\n{proc.stderr.strip()}\n--- kernel source ---\n{source}")
    os.replace(_tmp(so), so)
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
    return TritonLauncher(getattr(python_module_at(path), name), name)


def write_python(source: str, config: Config, prefix: str) -> str:
    """Write ``source`` to the cache (once per content); its path. Import it with :func:`python_module_at`."""
    return _write(_cache_path(config, "py", f"{prefix}_{_hash(source)}.py"), source.encode(), once=True)


def python_module_at(path: str) -> types.ModuleType:
    """Import an already-written cached module by path (used by generated output code)."""
    name = "toycompiler_generated_" + os.path.splitext(os.path.basename(path))[0]
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return sys.modules.setdefault(name, module)  # registered once complete: another thread may import it too


# -- the compiled-graph cache ---------------------------------------------------------
#
# A second process compiling the same graph for the same inputs should not run
# passes, lowering, scheduling, codegen and the C++ compiler again. The key is
# everything the generated code depends on; the entry is the pickled artifacts,
# which name the output code and kernels already on disk.
# Mirrors: torch/_inductor/codecache.py (FxGraphCache, FxGraphHashDetails).
# Leaves out: guards on symbolic sizes stored with the entry, and remote caches.

_CONSTANT_HASH_LIMIT = 1 << 20  # bytes of constant tensors hashed into the key; larger ones bypass


def graph_key(gm: Any, example_inputs: list, target: str, config: Config, source: Any = None) -> tuple[str | None, str]:
    """The cache key of compiling ``gm`` for these inputs, or None and why the cache is bypassed."""
    # (C++ column reductions size their blocks by the thread count: CppRenderer.setup; Triton kernels do not)
    parts = [gm.code, target, toycompiler_version(), f"{torch.get_num_threads() if target == 'cpp' else '-'} threads"]
    parts += [f"{n.name}@{provenance.line_of(n)}" for n in gm.graph.nodes]  # kernel comments name lines
    parts += [source.filename, str(source.firstlineno), *source.lines] if source is not None else []
    # each input as the graph traced it: a size marked dynamic is a symbol there (s0), a number in the example
    inputs = zip(gm.graph.find_nodes(op="placeholder"), example_inputs)
    parts += [_input_metadata(n.meta.get("example_value", n.meta.get("val", t))) for n, t in inputs]
    volatile = ("cache_dir", "verify_ir", "graph_cache")  # settings that don't change the generated code
    parts.append(repr(sorted((k, v) for k, v in vars(config).items() if k not in volatile)))  # (its fields)
    for name, value in graph_constants(gm):
        if value.numel() * value.element_size() > _CONSTANT_HASH_LIMIT:
            return None, f"constant {name} is larger than {_CONSTANT_HASH_LIMIT} bytes (not hashed)"
        parts += [name, _input_metadata(value), value.detach().cpu().numpy().tobytes().hex()]
    return _hash(*parts), ""


def graph_constants(gm: Any) -> list[tuple[str, Any]]:
    """Tensors the graph reads through ``get_attr`` (weights baked into the graph; a target may be dotted), in
    graph order: the order of lowering's constant inputs (``GraphIR.constants``)."""
    attrs = [(n.target, operator.attrgetter(n.target)(gm)) for n in gm.graph.nodes if n.op == "get_attr"]
    return [(name, value) for name, value in attrs if isinstance(value, torch.Tensor)]


def _input_metadata(t: Any) -> str:
    if isinstance(t, torch.Tensor):
        return f"tensor{tuple(map(str, t.shape))}{tuple(map(str, t.stride()))}{t.dtype}{t.device}{t.requires_grad}"
    return f"{type(t).__name__}:{t!r}"


@functools.cache
def toycompiler_version() -> str:
    """toycompiler's own source (hashed, like Inductor's ``torch_key``), plus torch, triton and Python."""
    source = _digest(b"".join(p.read_bytes() for p in sorted(Path(__file__).resolve().parents[1].rglob("*.py"))))
    triton_version = next((d.version for d in importlib.metadata.distributions(name="triton")), "none")
    return f"{source[:16]} torch {torch.__version__} triton {triton_version} python {sys.version.split()[0]}"


def save_graph(key: str, artifacts: Any, constants: list, config: Config) -> str:
    """Store a compiled graph's artifacts (which name its output code and kernels on disk) and constants;
    say what was done, for the report: ``stored as <key>``, or ``not stored: <why>``.

    The entry starts with a checksum of itself and records one of each file it names, so that a
    truncated or corrupted entry, or a file changed under it, is noticed at load time.
    """
    if (size := sum(t.numel() * t.element_size() for t in constants)) > _CONSTANT_HASH_LIMIT:
        return f"not stored: its constant tensors take {size} bytes (more than {_CONSTANT_HASH_LIMIT})"
    named = sorted({artifacts.output_code.path, *(k.path for k in artifacts.kernels)})  # the files it names
    files = {p: _digest(Path(p).read_bytes()) for p in named}
    payload = pickle.dumps((artifacts, [t.detach() for t in constants], files))
    _write(_cache_path(config, "graphs", f"{key}.pkl"), _digest(payload).encode() + b"\n" + payload)
    return f"stored as {key}"


def load_graph(key: str, config: Config) -> tuple[tuple[Any, list, types.ModuleType] | None, str]:
    """The stored artifacts, constants and loaded output module, or None (compile again) and a note.

    A missing entry gives no note. A corrupted one (its checksum, or a file it names, does not match)
    is deleted, with the files that no longer match, so the compile that follows writes them afresh;
    the note says what was found, for the report.
    """
    path = _cache_path(config, "graphs", f"{key}.pkl")
    try:
        digest, _, payload = Path(path).read_bytes().partition(b"\n")
    except OSError:
        return None, ""
    if _digest(payload).encode() != digest:
        return _discard([path], f"cache entry {key} failed its checksum (truncated or corrupted)")
    artifacts, constants, files = pickle.loads(payload)
    if changed := [p for p, d in files.items() if not os.path.exists(p) or _digest(Path(p).read_bytes()) != d]:
        return _discard([path, *changed], f"cache entry {key}: {', '.join(map(os.path.basename, changed))} "
                                          "missing or changed since it was stored")
    return (artifacts, constants, python_module_at(artifacts.output_code.path)), ""


def _discard(paths: list[str], why: str) -> tuple[None, str]:
    for p in paths:
        Path(p).unlink(missing_ok=True)
    return None, f"{why}: discarded and compiled again"


def conform(t: torch.Tensor, stride: tuple[int, ...]) -> torch.Tensor:
    """A library call's result (a fallback op's, a convolution's) in the strides its fake tensor gave, which the
    generated kernels read it with: itself when torch's kernel returned those (as it does wherever fake and real
    kernels agree), else a copy. A custom operator's fake kernel says what its author wrote; torch picks a
    convolution's memory format from its input's strides, and the output code may store that input in another
    order than eager's. A kernel reading with other strides would compute wrong values. (Inductor asserts the
    strides instead: ``assert_size_stride``.)"""
    # a dim of size 1: any stride; None: an index check's result
    same = t is None or all(a == b or n < 2 for a, b, n in zip(t.stride(), stride, t.shape))
    return t if same else t.new_empty_strided(t.shape, stride).copy_(t)


class IndexOutOfRange(IndexError, RuntimeError):
    """An index out of range: eager raises IndexError from ``x[i]``, ``F.embedding`` and ``index_select`` along
    dim 0, RuntimeError from ``gather`` and ``index_select`` along another dim. This is both, so that either
    ``except`` catches it."""


def check_index(index: torch.Tensor, size: int, dim: int, negative: bool = True) -> None:
    """Eager's error for an index out of range (a negative index counts from the end in ``x[i]``; an embedding's,
    an index_select's or a gather's is out of range). The kernel that reads through ``index`` clamped it, so it
    read nothing stray; its result is dropped with this error."""
    low, high = torch.aminmax(index) if index.numel() else (0, 0)  # one pass over the index
    if low < (-size if negative else 0) or high >= size:
        raise IndexOutOfRange(
            f"index {int(high if high >= size else low)} is out of bounds for dimension {dim} with size {size}")
