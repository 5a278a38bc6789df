"""Random small tensor programs for the differential fuzzer, and the check that runs one.

A program is Python source, built one line at a time, over a few inputs::

    def program(x0, x1):
        v2 = x0[:, 1::2]
        v3 = torch.maximum(v2, x1)
        v4 = v3.sum(dim=0, keepdim=True)
        x0.mul_(2)
        return (v4, v2)

Each line is drawn (by hypothesis) from a table of pointwise ops, reductions over a random axis,
views (slice, transpose, permute, expand, unsqueeze), in-place ops and casts, and applied at once to
example tensors in eager mode: a line that eager rejects (shapes that do not broadcast, ``amax`` of an
empty axis, an in-place op on an expanded input) is dropped, so every program drawn is valid eager code.

Inputs are described by ``InputSpec`` (shape, dtype, layout, seed): contiguous, transposed (strides not
in order), offset and strided (a slice of a larger buffer), or expanded (a stride of 0); sizes include 0
and 1. A program and its specs are plain data, so a counterexample prints as the source and the specs,
and ``tests/fuzz/test_regressions.py`` replays it with ``check_program`` unchanged.
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass

import torch
from hypothesis import strategies as st

import toycompiler
from toycompiler.testing import assert_same, device_for

DTYPES = {"float32": torch.float32, "float16": torch.float16, "int64": torch.int64, "bool": torch.bool}
# Float16 differs from eager by a few half-precision ulps per op (kernels keep float32 intermediates,
# eager rounds after every op); float32 by a few ulps per reduction (another summation order).
TOLERANCE = {"float16": dict(rtol=2e-2, atol=2e-2), "float32": dict(rtol=1e-4, atol=1e-4)}


@dataclass(frozen=True)
class InputSpec:
    shape: tuple[int, ...]
    dtype: str
    layout: str = "contiguous"  # contiguous | transposed | offset | expanded
    seed: int = 0

    def make(self, device: str = "cpu") -> torch.Tensor:
        """The input tensor: values from ``seed``, the strides and storage offset of ``layout``."""
        g = torch.Generator().manual_seed(self.seed)
        shape = self.shape
        if self.layout == "transposed" and shape:  # the same sizes with reversed strides
            return _values(shape[::-1], self.dtype, g).to(device).permute(*reversed(range(len(shape))))
        if self.layout == "offset":  # every dim strided by 2, starting one element in
            base = _values(tuple(2 * s + 1 for s in shape) or (3,), self.dtype, g).to(device)
            return base[tuple(slice(1, None, 2) for _ in shape)] if shape else base[1]
        if self.layout == "expanded" and shape:  # first dim broadcast from size 1: stride 0
            return _values((1, *shape[1:]), self.dtype, g).to(device).expand(shape)
        return _values(shape, self.dtype, g).to(device)


def _values(shape: tuple[int, ...], dtype: str, g: torch.Generator) -> torch.Tensor:
    if dtype == "bool":
        return torch.randint(0, 2, shape, generator=g).bool()
    if dtype == "int64":
        return torch.randint(-5, 6, shape, generator=g)  # small, so that products do not overflow
    return torch.randn(shape, generator=g).to(DTYPES[dtype])


# -- the op table: each entry turns the names of existing values into one expression ----------------

UNARY = ["-{a}", "{a}.abs()", "torch.sin({a})", "torch.exp({a})", "torch.relu({a})", "torch.sigmoid({a})",
         "torch.logical_not({a})", "{a} * 2", "{a} + 1", "({a} > 0)", "torch.sqrt({a}.abs())", "{a} // 2",
         "{a} % 3", "{a}.to(torch.float32)", "torch.where({a} > 0, {a}, 0)", "{a}.clone()"]
BINARY = ["{a} + {b}", "{a} - {b}", "{a} * {b}", "{a} / {b}", "torch.maximum({a}, {b})",
          "torch.minimum({a}, {b})", "({a} < {b})", "({a} == {b})", "torch.logical_and({a}, {b})",
          "torch.where({a} > 0, {a}, {b})", "{a} // {b}", "{a} % {b}", "torch.add({a}, {b}, alpha=2)"]
REDUCTIONS = ["{a}.sum(dim={d}, keepdim={k})", "{a}.amax(dim={d}, keepdim={k})", "{a}.amin(dim={d}, keepdim={k})",
              "{a}.mean(dim={d}, keepdim={k})", "{a}.sum()", "{a}.any(dim={d})", "{a}.prod(dim={d})"]
VIEWS = ["{a}.transpose({d}, {e})", "{a}.unsqueeze({d})", "{a}.unsqueeze(0).expand(2, *{a}.shape)",
         "{a}[{slice}]", "{a}.permute({perm})", "{a}.t()" , "{a}.reshape(-1)", "{a}.squeeze({d})"]
INPLACE = ["{a}.add_({b})", "{a}.mul_(2)", "{a}.neg_()", "{a}.clamp_(min=0)", "{a}.logical_not_()",
           "{a}.copy_({b})"]


@dataclass(frozen=True)
class Program:
    source: str
    specs: tuple[InputSpec, ...]

    def __str__(self) -> str:
        return f"{self.source}\nspecs = {self.specs!r}"


def _compile_source(source: str):
    namespace = {"torch": torch}
    exec(compile(source, "<fuzz program>", "exec"), namespace)
    return namespace["program"]


@st.composite
def input_specs(draw, dtypes: tuple[str, ...]) -> tuple[InputSpec, ...]:
    """1-3 inputs of one base shape, each possibly with size-1 (broadcast) dims or fewer leading dims."""
    ndim = draw(st.integers(0, 3))
    base = tuple(draw(st.sampled_from([0, 1, 2, 3, 5]) if draw(st.booleans()) and draw(st.booleans())
                      else st.sampled_from([1, 2, 3, 5])) for _ in range(ndim))
    specs = []
    for i in range(draw(st.integers(1, 3))):
        shape = tuple(1 if draw(st.integers(0, 4)) == 0 else s for s in base)[draw(st.integers(0, ndim)) if i else 0:]
        specs.append(InputSpec(shape, draw(st.sampled_from(dtypes)),
                               draw(st.sampled_from(["contiguous", "transposed", "offset", "expanded"])),
                               draw(st.integers(0, 1000))))
    return tuple(specs)


@st.composite
def programs(draw, dtypes: tuple[str, ...] = ("float32", "int64", "bool"), max_ops: int = 6) -> Program:
    """A valid program: each drawn line is kept only if eager runs it on the example inputs."""
    specs = draw(input_specs(dtypes))
    names = [f"x{i}" for i in range(len(specs))]
    env = {"torch": torch, **{n: s.make() for n, s in zip(names, specs)}}
    lines = []
    for i in range(draw(st.integers(1, max_ops))):
        kind = draw(st.sampled_from(["unary", "binary", "binary", "reduction", "view", "view", "inplace"]))
        template = draw(st.sampled_from({"unary": UNARY, "binary": BINARY, "reduction": REDUCTIONS, "view": VIEWS,
                                         "inplace": INPLACE}[kind]))
        a, b = draw(st.sampled_from(names)), draw(st.sampled_from(names))
        rank = env[a].dim()
        d, e = (draw(st.integers(-rank, rank - 1)) if rank else 0 for _ in range(2))
        perm = tuple(draw(st.permutations(range(rank))))
        slc = ", ".join([":"] * draw(st.integers(0, max(rank - 1, 0))) + [_slice(draw)]) if rank else "..."
        expr = template.format(a=a, b=b, d=d, e=e, k=draw(st.booleans()), perm=perm, slice=slc)
        target = a if kind == "inplace" else f"v{len(names)}"
        line = expr if kind == "inplace" else f"{target} = {expr}"
        try:  # eager must accept the line, on the current values (which it may change in place)
            exec(line, env)
        except (RuntimeError, IndexError, ValueError, TypeError, ZeroDivisionError):
            continue
        lines.append(line)
        if kind != "inplace":
            names.append(target)
    outputs = sorted({names[-1], *draw(st.lists(st.sampled_from(names), max_size=2))}, key=names.index)
    body = "\n".join(lines + [f"return ({', '.join(outputs)},)"])
    header = f"def program({', '.join(f'x{i}' for i in range(len(specs)))}):\n"
    return Program(header + textwrap.indent(body, "    ") + "\n", specs)


def _slice(draw) -> str:
    start, stop, step = draw(st.integers(0, 2)), draw(st.sampled_from(["", "1", "-1", "4"])), draw(st.integers(1, 2))
    return f"{start}:{stop}:{step}"


def check_program(program: Program, backend: str) -> None:
    """Compile the program on ``backend`` and compare with eager: outputs, inputs afterwards, no fallback."""
    toycompiler.reset()
    fn = _compile_source(program.source)
    args = tuple(s.make(device_for(backend)) for s in program.specs)
    tol = TOLERANCE["float16" if any(s.dtype == "float16" for s in program.specs) else "float32"]
    try:
        assert_same(fn, *args, backend=backend, **tol)
    except Exception as e:
        raise AssertionError(f"{type(e).__name__} on {backend}: {e}\n\nthe program:\n{program}") from None
