"""``%%compile``: run a cell with every function it defines compiled, then show what happened.

    %load_ext toycompiler.widgets

    %%compile --backend cpp
    def f(x, y):
        return torch.sin(x) + torch.cos(y) * 2
    f(torch.randn(1000), torch.randn(1000))

The cell's code is registered with :mod:`linecache` under a readable name
(``<cell In[7]>``, the number the cell shows), so ``inspect.getsource``,
graph-break reasons, provenance and tracebacks point at the cell's own lines.
Each top-level ``def`` is compiled as soon as it is defined, and so is each
``nn.Module`` the cell assigns to a name (``net = Net()``). Functions stay
compiled in the namespace afterwards; a module is the plain module again
(``net.fc`` reads as usual; ``toycompiler.compile(net)`` compiles it for good). Below the cell appears every
compilation it triggered (the stage view) with eager vs compiled timings, or
with ``--explain`` the graph-break explorer (no timing: the function runs only
as the cell calls it). A compile failure shows the compiler's message and the
function runs eagerly; a syntax error is one short message at the cell's line.
"""

from __future__ import annotations

import argparse
import ast
import linecache
import shlex
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import toycompiler
from toycompiler.artifacts import Report

from .progress import Progress

USAGE = """\
usage: %%compile [--backend NAME] [--mode MODE] [--fullgraph] [--no-timing] [--explain] [--torch] [--help]

Runs the cell with every function it defines compiled by toycompiler, then shows
each compilation (source -> bytecode -> guards -> FX graph -> IR -> fusion -> kernels).

options:
  --backend NAME  toycompiler backend: {backends} (default: auto)
  --mode MODE     compile mode passed to toycompiler.compile: {modes} (default: none)
  --fullgraph     a graph break is an error instead of a split
  --no-timing     skip the eager vs compiled timing
  --explain       show the graph-break explorer instead of the stage view (no timing)
  --torch         also time real torch.compile (slow: a cold compile takes seconds)
  --help          show this message and run nothing"""


# torch.compile's modes; toycompiler accepts the same names.
MODES = ("default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs")


class MagicUsageError(ValueError):
    """A bad ``%%compile`` option line; the message says which option and why."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # never exit the kernel: raise instead
        raise MagicUsageError(message)


@dataclass(frozen=True)
class MagicOptions:
    backend: str = "auto"
    mode: str | None = None
    fullgraph: bool = False
    timing: bool = True
    explain: bool = False
    torch: bool = False
    help: bool = False


def usage() -> str:
    return USAGE.format(backends=", ".join(sorted(toycompiler.list_backends())), modes=", ".join(MODES))


def parse_options(line: str) -> MagicOptions:
    """``--backend cpp --no-timing`` -> :class:`MagicOptions`; raises :class:`MagicUsageError`."""
    parser = _Parser(prog="%%compile", add_help=False, allow_abbrev=False)
    parser.add_argument("--backend", default="auto")
    parser.add_argument("--mode", default=None, choices=MODES)
    parser.add_argument("--fullgraph", action="store_true")
    parser.add_argument("--no-timing", dest="timing", action="store_false")
    parser.add_argument("--explain", action="store_true")
    parser.add_argument("--torch", action="store_true")
    parser.add_argument("--help", "-h", action="store_true")
    try:
        words = shlex.split(line)
    except ValueError as e:
        raise MagicUsageError(f"cannot read the options: {e}") from None
    ns = parser.parse_args(words)
    if ns.backend not in toycompiler.list_backends():
        raise MagicUsageError(f"unknown backend {ns.backend!r}; choose one of "
                              f"{', '.join(sorted(toycompiler.list_backends()))}")
    timing = ns.timing and not ns.explain  # explaining calls the function only as the cell does
    return MagicOptions(ns.backend, ns.mode, ns.fullgraph, timing, ns.explain, ns.torch, ns.help)


# -- the cell's source, findable by inspect and tracebacks ----------------------------------


def cell_number(shell: Any) -> int | None:
    """The running cell's ``In[n]``: the number IPython gave the code it compiled last, this cell.

    (``shell.execution_count`` is already the next cell's number while a cell runs.)
    """
    numbers = getattr(getattr(shell, "compile", None), "_filename_map", None)
    if numbers:
        return list(numbers.values())[-1]
    return getattr(shell, "execution_count", None)


class CellSyntaxError(Exception):
    """A syntax error in a ``%%compile`` cell, shown as IPython shows one in any cell: no traceback.

    Not a ``SyntaxError`` subclass: IPython would print those with the frames of this module.
    """

    def __init__(self, e: SyntaxError):
        super().__init__(f"{e.msg} ({e.filename}, line {e.lineno})")
        self.error = e

    def _render_traceback_(self) -> list[str]:  # IPython prints these lines instead of a traceback
        e = self.error
        caret = " " * (4 + max(0, (e.offset or 1) - 1)) + "^"
        where = f"  Cell {e.filename.strip('<>').removeprefix('cell ')}, line {e.lineno}"
        return [where, "    " + (e.text or "").rstrip(), caret, f"SyntaxError: {e.msg}"]


def parse_cell(cell: str, filename: str) -> ast.Module:
    try:
        return ast.parse(cell, filename)
    except SyntaxError as e:
        raise CellSyntaxError(e) from None


def register_cell(source: str, execution_count: int | None) -> str:
    """Put the cell's text in ``linecache`` under ``<cell In[n]>`` and return that name."""
    base = f"<cell In[{execution_count if execution_count is not None else '?'}]>"
    name, k = base, 1
    while name in linecache.cache and linecache.cache[name][2] != source.splitlines(True):
        k += 1
        name = f"{base[:-1]}#{k}>"
    text = source if source.endswith("\n") else source + "\n"
    linecache.cache[name] = (len(text), None, text.splitlines(True), name)
    return name


def defined_functions(tree: ast.Module) -> list[str]:
    return [n.name for n in tree.body if isinstance(n, ast.FunctionDef)]


def instrument(tree: ast.Module, hook: str) -> ast.Module:
    """After each top-level ``def name``, add ``name = <hook>.wrap("name", name)``;
    after each ``name = ...``, ``name = <hook>.wrap_value("name", name)`` (compiles it if it is a module)."""
    body: list[ast.stmt] = []
    for stmt in tree.body:
        body.append(stmt)
        if isinstance(stmt, ast.FunctionDef):
            wrap = ast.parse(f"{stmt.name} = {hook}.wrap({stmt.name!r}, {stmt.name})").body[0]
            body.append(ast.copy_location(wrap, stmt))
        elif isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
            name = stmt.targets[0].id
            wrap = ast.parse(f"{name} = {hook}.wrap_value({name!r}, {name})").body[0]
            body.append(ast.copy_location(wrap, stmt))
    tree.body = body
    return ast.fix_missing_locations(tree)


# -- running the cell -------------------------------------------------------------------------


@dataclass
class Recorder:
    """Stands in for a function while its cell runs: calls the compiled version, records the calls."""

    name: str
    fn: Callable
    compiled: Any
    cell_file: str
    calls: list[tuple[tuple, dict]] = field(default_factory=list)
    first_call_s: float | None = None
    failure: str | None = None

    def __getattr__(self, name: str) -> Any:  # net.fc1, net.parameters(): the module's own attributes
        if name == "fn":
            raise AttributeError(name)
        return getattr(self.fn, name)

    @property
    def target(self) -> Any:
        """The compiled function (for a module: its compiled ``forward``)."""
        return getattr(self.compiled, "_compiled_forward", self.compiled)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        __tracebackhide__ = True  # IPython leaves this frame out of the user's traceback
        import time

        if len(self.calls) < 8:
            self.calls.append((args, kwargs))
        if self.failure is not None:
            return self.fn(*args, **kwargs)
        start = time.perf_counter()
        progress = Progress()
        if not self.target.cache.entries:
            progress.update(f"toycompiler: compiling {self.name}...")
        try:
            out = self.compiled(*args, **kwargs)
        except Exception as e:
            if not _compiler_failure(e, self.cell_file):
                raise
            self.failure = _message(e)
            return self.fn(*args, **kwargs)
        finally:
            progress.done()
        if self.first_call_s is None:
            self.first_call_s = time.perf_counter() - start
        return out

    @property
    def report(self) -> Report:
        # every reason anything ran eagerly, as explain()'s report: a backward graph's too
        return Report(tuple(self.target.compiled_frames), tuple(self.target.fallback_reasons()),
                      tuple(self.target.cache.failures))


def _compiler_failure(e: Exception, cell_file: str) -> bool:
    """True if ``e`` came from compiling, not from the user's own code running."""
    if isinstance(e, toycompiler.CompileError):
        return True
    return not any(fr.filename == cell_file for fr in traceback.extract_tb(e.__traceback__)[1:])


def _message(e: Exception) -> str:
    return str(e) if isinstance(e, toycompiler.CompileError) else f"{type(e).__name__}: {e}"


@dataclass
class CellSession:
    options: MagicOptions
    cell_file: str
    recorders: dict[str, Recorder] = field(default_factory=dict)

    def wrap(self, name: str, fn: Callable) -> Any:
        try:
            compiled = toycompiler.compile(fn, backend=self.options.backend, mode=self.options.mode,
                                           fullgraph=self.options.fullgraph)
        except Exception as e:  # not compilable at all: run it eagerly, say why below the cell
            rec = Recorder(name, fn, None, self.cell_file, failure=_message(e))
        else:
            rec = Recorder(name, fn, compiled, self.cell_file)
        self.recorders[name] = rec
        return rec

    def wrap_value(self, name: str, value: Any) -> Any:
        """``net = Net()``: a module the cell creates is compiled like a function (its ``forward``)."""
        import torch

        if isinstance(value, torch.nn.Module) and not hasattr(value, "_orig_mod"):
            return self.wrap(name, value)
        return value


def run_cell(line: str, cell: str, shell: Any) -> Any:
    """The ``%%compile`` cell magic."""
    __tracebackhide__ = True
    from IPython.display import display

    try:
        options = parse_options(line)
    except MagicUsageError as e:
        print(f"%%compile: {e}\n\n{usage()}")
        return None
    if options.help:
        print(usage())
        return None
    filename = register_cell(cell, cell_number(shell))
    tree = instrument(parse_cell(cell, filename), "__toycompiler_cell__")
    last = tree.body.pop() if tree.body and isinstance(tree.body[-1], ast.Expr) else None
    session = CellSession(options, filename)
    ns = shell.user_ns
    ns["__toycompiler_cell__"] = session
    value = None
    try:
        exec(compile(tree, filename, "exec"), ns)
        if last is not None:
            value = eval(compile(ast.Expression(last.value), filename, "eval"), ns)
    finally:
        ns.pop("__toycompiler_cell__", None)
        for name, rec in session.recorders.items():
            if ns.get(name) is rec:  # a function stays compiled; a module is itself again (net.fc reads)
                keep = rec.failure is None and rec.compiled is not None and rec.target is rec.compiled
                ns[name] = rec.compiled if keep else rec.fn
    if value is not None and not semicolon_at_end(cell):
        display(value)
    display(cell_view(session))
    return None


def semicolon_at_end(cell: str) -> bool:
    """A trailing ``;`` hides the cell's value, as in any cell."""
    from IPython.core.displayhook import DisplayHook

    return bool(DisplayHook.semicolon_at_end_of_expression(cell))


def magic_alone(lines: list[str]) -> list[str]:
    """``%%compile --help`` with no body: IPython refuses an empty cell magic, so run it as ``%compile --help``."""
    if lines and lines[0].startswith("%%compile") and not "".join(lines[1:]).strip():
        return [lines[0][1:]]
    return lines


def line_magic(line: str) -> None:
    """``%compile``: only ``--help`` means something without a cell body."""
    try:
        options = parse_options(line)
    except MagicUsageError as e:
        options = None
        print(f"%%compile: {e}\n")
    if options is None or not options.help:
        print("%%compile needs the code to compile below its options line, in the same cell.\n")
    print(usage())


def cell_view(session: CellSession):
    from .cell_view import CellView

    return CellView.build(session)


def load_ipython_extension(ip: Any) -> None:
    """``%load_ext toycompiler.widgets``: register ``%%compile`` and the rich artifact views."""
    from . import register_html

    register_html(ip)
    def compile(line: str, cell: str) -> None:
        __tracebackhide__ = True
        return run_cell(line, cell, ip)

    compile.__doc__ = line_magic.__doc__ = usage()
    ip.register_magic_function(compile, magic_kind="cell", magic_name="compile")
    ip.register_magic_function(line_magic, magic_kind="line", magic_name="compile")
    cleanup = ip.input_transformer_manager.cleanup_transforms
    if magic_alone not in cleanup:
        cleanup.append(magic_alone)
