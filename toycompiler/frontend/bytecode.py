"""Instructions, normalised across CPython versions.

CPython's bytecode changes in every release. The translator should not care,
so this module turns ``dis`` output into one stream of :class:`Inst` whose
opnames and arguments mean the same thing on 3.11, 3.12 and 3.13. Every
version difference the translator depends on lives in the tables below, and
nowhere else.

Mirrors: torch/_dynamo/bytecode_analysis.py and the version branches spread
through torch/_dynamo/symbolic_convert.py (which this keeps in one place).
"""

from __future__ import annotations

import dis
import sys
import types
from dataclasses import dataclass

from ..artifacts import BytecodeArtifact, InstructionRow

VERSION = sys.version_info[:2]

# -- the version table ----------------------------------------------------------
# Opnames that are only renamings of a common meaning. Jump targets are made
# absolute by ``dis`` (argval), so direction-specific jumps collapse to one name.
ALIASES: dict[str, str] = {
    # 3.11 splits conditional jumps by direction; 3.12 keeps only forward ones.
    "POP_JUMP_FORWARD_IF_TRUE": "POP_JUMP_IF_TRUE",
    "POP_JUMP_BACKWARD_IF_TRUE": "POP_JUMP_IF_TRUE",
    "POP_JUMP_FORWARD_IF_FALSE": "POP_JUMP_IF_FALSE",
    "POP_JUMP_BACKWARD_IF_FALSE": "POP_JUMP_IF_FALSE",
    "POP_JUMP_FORWARD_IF_NONE": "POP_JUMP_IF_NONE",
    "POP_JUMP_BACKWARD_IF_NONE": "POP_JUMP_IF_NONE",
    "POP_JUMP_FORWARD_IF_NOT_NONE": "POP_JUMP_IF_NOT_NONE",
    "POP_JUMP_BACKWARD_IF_NOT_NONE": "POP_JUMP_IF_NOT_NONE",
    "JUMP_BACKWARD_NO_INTERRUPT": "JUMP_BACKWARD",
    # 3.12 checks for unbound locals in a separate opcode; symbolically the same.
    "LOAD_FAST_CHECK": "LOAD_FAST",
    # 3.11 calls a method in two steps (PRECALL then CALL); PRECALL does nothing for us.
    "PRECALL": "NOP",
    # dis already folds EXTENDED_ARG into the next instruction's argument.
    "EXTENDED_ARG": "NOP",
}

# 3.12 moved rarely used operations into CALL_INTRINSIC_1; those we trace get
# their 3.11 opcode back (the argument names the intrinsic).
INTRINSICS: dict[str, str] = {
    "INTRINSIC_UNARY_POSITIVE": "UNARY_POSITIVE",
    "INTRINSIC_LIST_TO_TUPLE": "LIST_TO_TUPLE",
}

# 3.12's FOR_ITER jumps to an END_FOR when the iterator is exhausted, and CPython
# skips that END_FOR at run time; 3.11's jumps past the loop directly. Either way
# the translator sees one meaning: "pop the iterator and continue after the loop".
FOR_ITER_SKIPS_END_FOR = VERSION >= (3, 12)
# The same for ``yield from``: 3.12's SEND jumps to an END_SEND that CPython skips.
SEND_SKIPS_END_SEND = VERSION >= (3, 12)

# Flags packed into the low bit of an argument: (opname, versions) -> meaning.
# 3.11 and 3.12: LOAD_GLOBAL's low bit asks for a NULL before the global.
# 3.12: LOAD_ATTR's low bit means "method load" (3.11 had LOAD_METHOD).
LOW_BIT_MEANS_PUSH_NULL = {"LOAD_GLOBAL"} | ({"LOAD_ATTR"} if VERSION >= (3, 12) else set())
LOW_BIT_METHOD_OPNAME = {"LOAD_ATTR": "LOAD_METHOD"} if VERSION >= (3, 12) else {}
# 3.12: LOAD_SUPER_ATTR's low bit means "method load" too (pushes [NULL, bound method]).
LOW_BIT_MEANS_METHOD = {"LOAD_SUPER_ATTR"}

# How CALL finds the callable: 3.11/3.12 put [NULL|callable, callable|self] below
# the arguments; 3.13 puts [callable, NULL|self].
CALL_LAYOUT = "null_or_callable_first" if VERSION < (3, 13) else "callable_first"

# Where keyword names for a call come from: 3.11/3.12 KW_NAMES before CALL; 3.13 CALL_KW.
KW_NAMES_OPCODE = VERSION < (3, 13)


# Opcode names in ``dis.opmap`` that never reach the translator: 3.12's
# pseudo-instructions (resolved by the compiler) and the INSTRUMENTED_* forms
# (``sys.monitoring``; ``dis`` shows the plain opcode).
PSEUDO_OPCODES = frozenset(
    {
        "CACHE",
        "RESERVED",
        "JUMP_NO_INTERRUPT",
        "LOAD_SUPER_METHOD",
        "LOAD_ZERO_SUPER_ATTR",
        "LOAD_ZERO_SUPER_METHOD",
        "POP_BLOCK",
        "SETUP_CLEANUP",
        "SETUP_FINALLY",
        "SETUP_WITH",
        "STORE_FAST_MAYBE_NULL",
    }
) | (frozenset({"LOAD_METHOD", "JUMP"}) if VERSION >= (3, 12) else frozenset())


def never_seen(opname: str) -> bool:
    return opname in PSEUDO_OPCODES or opname.startswith("INSTRUMENTED_")


@dataclass(frozen=True)
class Inst:
    """One normalised instruction."""

    offset: int
    opname: str
    arg: int | None
    argval: object
    argrepr: str
    line: int | None
    is_jump_target: bool
    flag: bool = False  # the low-bit flag (push NULL / method load), decoded

    @property
    def target(self) -> int:
        """Absolute offset a jump goes to."""
        assert isinstance(self.argval, int)
        return self.argval


def normalise(code: types.CodeType) -> list[Inst]:
    """``dis`` instructions of ``code`` with the version table applied and lines filled in."""
    out: list[Inst] = []
    line = code.co_firstlineno
    raw = [ins for ins in dis.get_instructions(code) if ins.opname != "CACHE"]
    next_offset = {a.offset: b.offset for a, b in zip(raw, raw[1:])}
    for ins in raw:
        if ins.positions is not None and ins.positions.lineno is not None:
            line = ins.positions.lineno
        opname, flag, argval = ALIASES.get(ins.opname, ins.opname), False, ins.argval
        if (
            ins.opname in LOW_BIT_MEANS_PUSH_NULL
            or ins.opname in LOW_BIT_METHOD_OPNAME
            or ins.opname in LOW_BIT_MEANS_METHOD
        ):
            flag = bool((ins.arg or 0) & 1)
            if flag and ins.opname in LOW_BIT_METHOD_OPNAME:
                opname, flag = LOW_BIT_METHOD_OPNAME[ins.opname], False
        if ins.opname == "CALL_INTRINSIC_1":
            opname = INTRINSICS.get(ins.argrepr, opname)
        if (ins.opname == "FOR_ITER" and FOR_ITER_SKIPS_END_FOR) or (
            ins.opname == "SEND" and SEND_SKIPS_END_SEND
        ):
            argval = next_offset.get(argval, argval)
        out.append(
            Inst(ins.offset, opname, ins.arg, argval, ins.argrepr, line, ins.is_jump_target, flag)
        )
    return out


def disassemble(code: types.CodeType, name: str | None = None) -> BytecodeArtifact:
    """The raw (un-normalised) instructions of ``code``, as an artifact."""
    rows = []
    line = None
    for ins in dis.get_instructions(code):
        if ins.opname == "CACHE":
            continue
        if ins.positions is not None and ins.positions.lineno is not None:
            line = ins.positions.lineno
        rows.append(
            InstructionRow(ins.offset, ins.opname, ins.arg, ins.argrepr, line, ins.is_jump_target)
        )
    return BytecodeArtifact(name or code.co_qualname, tuple(rows))
