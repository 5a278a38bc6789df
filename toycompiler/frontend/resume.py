"""The code that runs instead of the user's function once it is compiled.

For a function traced without a break, the transformed code is small: call the
compiled graph with the graph inputs, then rebuild the return value. With a
graph break it also runs the untraceable instruction as ordinary Python and
calls a *resume function* for the rest.

Mirrors: torch/_dynamo/resume_execution.py and the bytecode that
torch/_dynamo/output_graph.py (compile_and_call_fx_graph) emits.
"""

from __future__ import annotations

import types
from typing import Any, Callable

from ..artifacts import BytecodeArtifact
from .bytecode import disassemble


def build_transformed_function(
    fn: types.FunctionType,
    params: str,
    compiled_graph: Callable,
    input_sources: list[str],
    return_expr: str,
    constants: dict[str, Any],
) -> tuple[Callable, BytecodeArtifact]:
    """``def f(x, y): __out = __compiled_graph(x, y); return <return_expr>`` with ``fn``'s signature."""
    inputs = ", ".join(input_sources)
    src = (
        f"def {fn.__code__.co_name}({params}):\n"
        f"    __out = __compiled_graph({inputs})\n"
        f"    return {return_expr}\n"
    )
    namespace: dict[str, Any] = {"__compiled_graph": compiled_graph, "G": fn.__globals__, **constants}
    exec(compile(src, f"<toycompiler transformed {fn.__code__.co_qualname}>", "exec"), namespace)
    transformed = namespace[fn.__code__.co_name]
    transformed.__defaults__ = fn.__defaults__
    transformed.__kwdefaults__ = fn.__kwdefaults__
    return transformed, disassemble(transformed.__code__, f"{fn.__code__.co_qualname} (transformed)")
