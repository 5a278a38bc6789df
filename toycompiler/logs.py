"""Logs: compile events printed as they happen, through Python ``logging``.

Like ``TORCH_LOGS``: set ``TOYCOMPILER_LOGS=graph_breaks,guards`` (or ``all``)
before starting Python, or call ``toycompiler.set_logs(graph_breaks=True)``.
Each channel is a logger named ``toycompiler.<channel>``:

- ``graph_breaks``: where tracing stopped, why, and where it resumes
- ``guards``: the guards of each new cache entry
- ``recompiles``: on a cache miss, which guard of each entry failed (expected vs actual)
- ``bytecode``: original, transformed and resume-function bytecode
- ``graph_code``: the captured FX graph as Python

The messages are rendered from the same artifacts ``explain()`` returns; the
logs only show them earlier.

Mirrors: torch/_logging/_internal.py (set_logs, TORCH_LOGS).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable

from . import artifacts as A

CHANNELS = ("graph_breaks", "guards", "recompiles", "bytecode", "graph_code")
enabled: dict[str, bool] = dict.fromkeys(CHANNELS, False)


def set_logs(**channels: bool) -> None:
    """Turn channels on or off: ``set_logs(graph_breaks=True, guards=True)``; ``set_logs(all=True)``.

    The first time a channel is on, the messages go to stderr, unless the application (or pytest)
    has already configured logging.
    """
    if "all" in channels:
        channels = dict.fromkeys(CHANNELS, channels.pop("all")) | channels
    if unknown := set(channels) - set(CHANNELS):
        raise ValueError(f"unknown log channel(s) {', '.join(sorted(unknown))}; choose from {', '.join(CHANNELS)}")
    for name, on in channels.items():
        enabled[name] = bool(on)
        logging.getLogger(f"toycompiler.{name}").setLevel(logging.INFO if on else logging.WARNING)
    # A handler already on the "toycompiler" logger (ours, from an earlier call) means it is not added again.
    if not logging.getLogger("toycompiler").handlers and any(enabled.values()) and not logging.getLogger().handlers:
        handler = logging.StreamHandler()  # to sys.stderr
        handler.setFormatter(logging.Formatter("[%(name)s] %(message)s"))
        logging.getLogger("toycompiler").addHandler(handler)


def set_logs_from_env(value: str | None = None) -> None:
    """Read ``TOYCOMPILER_LOGS`` ("graph_breaks,guards", "all")."""
    value = os.environ.get("TOYCOMPILER_LOGS", "") if value is None else value
    set_logs(**dict.fromkeys([n.strip().lstrip("+") for n in value.split(",") if n.strip()], True))


def log(channel: str, message: Callable[[], str]) -> None:
    """Emit on ``channel`` if it is on (the message is only rendered then)."""
    if enabled[channel]:
        logging.getLogger(f"toycompiler.{channel}").info(message())


def frame_compiled(art: A.FrameCompilation, miss: A.RecompileRecord | None) -> None:
    """Everything worth logging about one new cache entry."""
    name = art.source.name
    if (brk := art.translation.graph_break) is not None:
        log("graph_breaks", lambda: f"graph break in {name}: {brk}")
    if miss is not None:
        log("recompiles", lambda: f"{art.label} recompiling {name}\n{miss}")
    log("guards", lambda: f"{art.label} guards of {name}:\n{art.guards}")
    log("graph_code", lambda: f"{art.label} graph of {name}:\n{art.graph}" if art.graph else
        f"{art.label} {name}: no graph (no tensor operations)")

    codes = [art.bytecode, art.transformed_bytecode, *art.resume_functions]  # the frame's code, then the new code
    log("bytecode", lambda: f"{art.label} {name}:\n" + "\n".join(str(c) for c in codes if c is not None))


set_logs_from_env()
