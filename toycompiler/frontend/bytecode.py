"""Instructions, normalised across CPython versions, and the analyses resume functions need.

CPython's bytecode changes in every release. The translator should not care,
so this module turns ``dis`` output into one stream of :class:`Inst` whose
opnames and arguments mean the same thing on 3.11, 3.12 and 3.13. Every
version difference the frontend depends on lives in the tables below, and
nowhere else: how instructions are *read* (``ALIASES`` and the flags) and how
the few instructions the transformed code emits are *spelled* (``EMIT``).

The end of the module answers questions about a code object that splitting it
at a graph break needs: which locals are live at an offset, where the
exception table covers, and which ``bytecode.Instr`` sits at a ``dis`` offset.

Mirrors: torch/_dynamo/bytecode_analysis.py, torch/_dynamo/bytecode_transformation.py
(the version-specific spellings) and the version branches spread through
torch/_dynamo/symbolic_convert.py (which this keeps in one place).
Leaves out: Python 3.13 (its CALL takes the callable below NULL), refused at
``import toycompiler``.
"""

from __future__ import annotations

import dis
import functools
import sys
import types
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import bytecode as pybc

from ..artifacts import BytecodeArtifact, InstructionRow

VERSION = sys.version_info[:2]

# -- the version table ----------------------------------------------------------
# Opnames that are only renamings of a common meaning. Jump targets are made
# absolute by ``dis`` (argval), so direction-specific jumps collapse to one name.
ALIASES: dict[str, str] = {
    # 3.11 splits conditional jumps by direction (POP_JUMP_FORWARD_IF_TRUE, POP_JUMP_BACKWARD_IF_NONE ...);
    # 3.12 keeps only forward ones, named without the direction.
    **{f"POP_JUMP_{way}_IF_{when}": f"POP_JUMP_IF_{when}"
       for way in ("FORWARD", "BACKWARD") for when in ("TRUE", "FALSE", "NONE", "NOT_NONE")},
    "JUMP_BACKWARD_NO_INTERRUPT": "JUMP_BACKWARD",
    # 3.12 checks for unbound locals in a separate opcode; symbolically the same.
    "LOAD_FAST_CHECK": "LOAD_FAST",
    # 3.11 calls a method in two steps (PRECALL then CALL); PRECALL does nothing for us.
    # dis already folds EXTENDED_ARG into the next instruction's argument.
    **dict.fromkeys(("PRECALL", "EXTENDED_ARG"), "NOP"),
}

# 3.12 moved rarely used operations into CALL_INTRINSIC_1; those we trace get
# their 3.11 opcode back (the argument names the intrinsic).
INTRINSICS: dict[str, str] = {"INTRINSIC_UNARY_POSITIVE": "UNARY_POSITIVE", "INTRINSIC_LIST_TO_TUPLE": "LIST_TO_TUPLE"}

# 3.12's FOR_ITER jumps to an END_FOR when the iterator is exhausted, and CPython
# skips that END_FOR at run time; 3.11's jumps past the loop directly. Either way
# the translator sees one meaning: "pop the iterator and continue after the loop".
# The same for ``yield from``: 3.12's SEND jumps to an END_SEND that CPython skips.
JUMPS_SKIP_THEIR_END = {"FOR_ITER", "SEND"} if VERSION >= (3, 12) else set()

# Flags packed into the low bit of an argument: the opnames that have one -> the opname when it is set.
# 3.11 and 3.12: LOAD_GLOBAL's low bit asks for a NULL before the global.
# 3.12: LOAD_ATTR's low bit means "method load" (3.11 had LOAD_METHOD); so does LOAD_SUPER_ATTR's
# (it pushes [NULL, bound method]). The translator sees the bit as ``Inst.flag``.
LOW_BIT_FLAG = {"LOAD_GLOBAL": "LOAD_GLOBAL", "LOAD_SUPER_ATTR": "LOAD_SUPER_ATTR",
                **({"LOAD_ATTR": "LOAD_METHOD"} if VERSION >= (3, 12) else {})}

# How the transformed code spells the few instructions it emits (the ``bytecode`` package names
# instructions as CPython does; only these differ). Other versions are refused at ``import toycompiler``.
EMIT: dict[str, Any] = {
    # 3.11 calls in two steps, and LOAD_ATTR's argument is the name (a branch re-emits the original's jump opcode,
    # which names its direction on 3.11: see resume._branch)
    (3, 11): {"call": ("PRECALL", "CALL"), "attr_arg": lambda name: name},
    (3, 12): {"call": ("CALL",), "attr_arg": lambda name: (False, name)},  # LOAD_ATTR's low bit: method load
}[VERSION]


# Opcode names in ``dis.opmap`` that never reach the translator: 3.12's
# pseudo-instructions (resolved by the compiler) and the INSTRUMENTED_* forms
# (``sys.monitoring``; ``dis`` shows the plain opcode).
PSEUDO_OPCODES = {"CACHE", "RESERVED", "JUMP_NO_INTERRUPT", "LOAD_SUPER_METHOD", "LOAD_ZERO_SUPER_ATTR",
                  "LOAD_ZERO_SUPER_METHOD", "POP_BLOCK", "SETUP_CLEANUP", "SETUP_FINALLY", "SETUP_WITH",
                  "STORE_FAST_MAYBE_NULL", *(("LOAD_METHOD", "JUMP") if VERSION >= (3, 12) else ())}


@dataclass(frozen=True)
class Inst:
    """One normalised instruction."""

    offset: int
    opname: str
    arg: int | None
    argval: object
    argrepr: str
    line: int | None
    flag: bool = False  # the low-bit flag, decoded: push a NULL before the result (a method load does too)

    @property
    def target(self) -> int:
        """Absolute offset a jump goes to (``dis`` makes every jump's argval one)."""
        return self.argval


def normalise(code: types.CodeType) -> Iterator[Inst]:
    """``dis`` instructions of ``code`` with the version table applied and lines filled in."""
    raw = list(_with_lines(code, code.co_firstlineno))
    next_offset = {a.offset: b.offset for (a, _), (b, _) in zip(raw, raw[1:])}
    for ins, line in raw:
        low_bit = ins.opname in LOW_BIT_FLAG and bool(ins.arg & 1)
        opname = LOW_BIT_FLAG[ins.opname] if low_bit else ALIASES.get(ins.opname, ins.opname)
        opname = INTRINSICS.get(ins.argrepr, opname) if ins.opname == "CALL_INTRINSIC_1" else opname
        argval = next_offset.get(ins.argval, ins.argval) if ins.opname in JUMPS_SKIP_THEIR_END else ins.argval
        # the flag: the low bit was set, or a method load (which pushes NULL first)
        yield Inst(ins.offset, opname, ins.arg, argval, ins.argrepr, line, low_bit or opname == "LOAD_METHOD")


def _with_lines(code: types.CodeType, line: int | None) -> Iterator[tuple[dis.Instruction, int | None]]:
    """``dis`` instructions (``dis`` leaves out the CACHE entries), each with its line (carried over from the
    last known)."""
    for ins in dis.get_instructions(code):
        if ins.positions is not None and ins.positions.lineno is not None:
            line = ins.positions.lineno
        yield ins, line


def disassemble(code: types.CodeType, name: str | None = None) -> BytecodeArtifact:
    """The raw (un-normalised) instructions of ``code``, as an artifact."""
    rows = tuple(InstructionRow(ins.offset, ins.opname, ins.arg, ins.argrepr, line, ins.is_jump_target)
                 for ins, line in _with_lines(code, None))
    return BytecodeArtifact(name or code.co_qualname, rows)


@functools.lru_cache(maxsize=512)
def instructions_of(code: types.CodeType) -> tuple[list[Inst], dict[int, int]]:
    """The normalised instructions of ``code`` and, for each offset, its index (cached per code object)."""
    insts = list(normalise(code))
    return insts, {inst.offset: i for i, inst in enumerate(insts)}


# -- analysis for resume functions ---------------------------------------------------

# Instructions after which control never falls through to the next one (raw opnames).
NO_FALLTHROUGH = {"RETURN_VALUE", "RETURN_CONST", "JUMP_FORWARD", "JUMP_BACKWARD", "JUMP_BACKWARD_NO_INTERRUPT",
                  "RAISE_VARARGS", "RERAISE", "JUMP", "JUMP_NO_INTERRUPT"}


@functools.lru_cache(maxsize=256)
def liveness(code: types.CodeType) -> dict[int, frozenset[str]]:
    """Locals live at each offset: read on some path before being written (backward dataflow)."""
    insts = [i for i, _ in _with_lines(code, None)]
    handlers = exception_ranges(code)
    uses, defs, succ = {}, {}, {}  # offset -> names read, names written, successor offsets
    for k, ins in enumerate(insts):
        # (LOAD_FAST_AND_CLEAR's name too; 3.13's LOAD_FAST_LOAD_FAST, with a pair of names, is refused at import)
        uses[ins.offset] = {ins.argval} if ins.opname.startswith(("LOAD_FAST", "DELETE_FAST")) else set()
        defs[ins.offset] = {ins.argval} if ins.opname.startswith("STORE_FAST") else set()
        nxt = [insts[k + 1].offset] if ins.opname not in NO_FALLTHROUGH and k + 1 < len(insts) else []
        jump = [ins.argval] if ins.opcode in dis.hasjrel or ins.opcode in dis.hasjabs else []
        succ[ins.offset] = nxt + jump + [t for start, end, t in handlers if start <= ins.offset < end]
    live: dict[int, frozenset[str]] = {i.offset: frozenset() for i in insts}
    while True:  # until a pass changes nothing
        before = dict(live)
        for ins in reversed(insts):
            out = frozenset().union(*(live.get(s, frozenset()) for s in succ[ins.offset]))
            live[ins.offset] = (out - defs[ins.offset]) | uses[ins.offset]
        if live == before:
            return live


def exception_ranges(code: types.CodeType) -> list[tuple[int, int, int]]:
    """(start, end, handler) offsets of the code's exception table."""
    return [(e.start, e.end, e.target) for e in getattr(dis.Bytecode(code), "exception_entries", [])]


@functools.lru_cache(maxsize=256)
def index_by_offset(code: types.CodeType) -> tuple[pybc.Bytecode, dict[int, int]]:
    """The code as a ``bytecode.Bytecode`` list and, for each dis offset, the index of its Instr."""
    original = pybc.Bytecode.from_code(code)
    positions = [k for k, item in enumerate(original) if isinstance(item, pybc.Instr)]
    index, j = {}, 0  # dis offset -> position in ``original``; j counts the Instrs matched so far
    for ins, _ in _with_lines(code, None):
        index[ins.offset] = positions[j]
        if ins.opname != "EXTENDED_ARG":  # the bytecode package folds EXTENDED_ARG into the next Instr
            assert original[positions[j]].name == ins.opname, (original[positions[j]].name, ins.opname)
            j += 1
    return original, index


def instruction_at(code: types.CodeType, offset: int) -> pybc.Instr:
    original, index = index_by_offset(code)
    return original[index[offset]]
