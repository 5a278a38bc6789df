"""Why each call did or did not reuse each cache entry: the recompile matrix, as data.

``guard_matrix(compiled, calls)`` evaluates every cache entry's guards against
every call's arguments and records, per (entry, call), either "passed" or the
first guard that failed with its expected and actual values. Views draw it as
a table; nothing here runs the compiled code.

Mirrors: what ``TORCH_LOGS=recompiles`` prints (torch/_dynamo/guards.py,
``get_guard_fail_reason``), kept as a table instead of log lines.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch

from toycompiler.artifacts import Artifact, GuardFailure
from toycompiler.frontend import guards as G


@dataclass(frozen=True)
class GuardCell:
    """One cache entry checked against one call."""

    entry: str  # "[0/1]"
    call: int  # 0-based call number
    passed: bool
    failure: GuardFailure | None = None  # the first failing guard, when not passed

    def __str__(self) -> str:
        if self.passed:
            return "ok"
        f = self.failure
        return f"{f.expr} (expected {f.expected}, got {f.actual})"


@dataclass(frozen=True)
class GuardMatrix(Artifact):
    """Cache entries x calls; ``used[c]`` is the entry call ``c`` would run (None: a recompile)."""

    name: str
    entries: tuple[str, ...]
    calls: tuple[str, ...]  # a short, stable description of each call's arguments
    cells: tuple[tuple[GuardCell, ...], ...]  # cells[entry][call]
    used: tuple[str | None, ...]

    def __str__(self) -> str:
        out = [f"guard matrix of {self.name}: {len(self.entries)} cache entries x {len(self.calls)} calls"]
        for c, desc in enumerate(self.calls):
            out.append(f"call {c} {desc}: runs {self.used[c] or '(no entry: compiles a new one)'}")
            for row in self.cells:
                out.append(f"    {row[c].entry} {row[c]}")
        return "\n".join(out)


def describe_args(args: tuple, kwargs: dict | None = None) -> str:
    """``(T[10] float32, 3)``: types and shapes, never addresses."""
    def one(v: Any) -> str:
        if isinstance(v, torch.Tensor):
            return f"T{list(v.shape)} {str(v.dtype).replace('torch.', '')}"
        text = repr(v)
        return text if len(text) <= 24 and " at 0x" not in text else type(v).__name__
    parts = [one(a) for a in args] + [f"{k}={one(v)}" for k, v in (kwargs or {}).items()]
    return "(" + ", ".join(parts) + ")"


def _check_passes(entry: Any, args: tuple, kwargs: dict) -> bool:
    """The entry's own check function decides, exactly as a call would (a raising guard is a miss)."""
    try:
        return bool(entry.check(*args, **kwargs))
    except Exception:
        return False


def guard_matrix(compiled: Any, calls: list[tuple[tuple, dict]]) -> GuardMatrix:
    """Check each of ``compiled``'s cache entries against each ``(args, kwargs)`` in ``calls``."""
    fn = compiled.fn
    params = G.signature_params(fn.__code__)
    entries = list(compiled.cache.entries)
    rows = []
    for e in entries:
        row = []
        for c, (args, kwargs) in enumerate(calls):
            if _check_passes(e, args, kwargs):
                row.append(GuardCell(e.artifact.label, c, True))
                continue
            # Only on a miss: ``first_failure`` re-evaluates guard by guard to name the one that failed.
            failure = G.first_failure(e.artifact.guards, e.guard_objects, params, fn, args, kwargs, e.artifact.label)
            row.append(GuardCell(e.artifact.label, c, False, failure))
        rows.append(tuple(row))
    used = tuple(next((r[c].entry for r in rows if r[c].passed), None) for c in range(len(calls)))
    return GuardMatrix(fn.__qualname__, tuple(e.artifact.label for e in entries),
                       tuple(describe_args(a, k) for a, k in calls), tuple(rows), used)
