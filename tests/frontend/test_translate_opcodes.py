"""Opcode coverage comes from introspection; the version table leaves no opcode unexplained."""

import dis
import sys
import types

import pytest
import test_translate_comprehensions_strings
import test_translate_containers_control
import test_translate_modules
import test_translate_names_calls
import test_translate_ops_cond_breaks
import test_translate_torch

from toycompiler.frontend import bytecode as bc
from toycompiler.frontend.translator import UNSUPPORTED, InstructionTranslator

TABLES = [
    test_translate_names_calls,
    test_translate_torch,
    test_translate_modules,
    test_translate_containers_control,
    test_translate_comprehensions_strings,
    test_translate_ops_cond_breaks,
]


def supported_opcodes() -> list[str]:
    """Every opcode the translator has a handler for (after normalisation), by introspection."""
    return sorted(n for n in dir(InstructionTranslator) if n.isupper() and callable(getattr(InstructionTranslator, n)))


def _codes(code: types.CodeType):
    yield code
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            yield from _codes(const)


def _functions():
    for module in TABLES:
        for value in vars(module).values():
            if isinstance(value, types.FunctionType) and value.__module__ == module.__name__:
                yield value
            elif isinstance(value, type):
                for attr in vars(value).values():
                    fn = getattr(attr, "__func__", attr)
                    if isinstance(fn, types.FunctionType):
                        yield fn


def test_supported_opcodes_are_handler_names():
    ops = supported_opcodes()
    assert {
        "LOAD_FAST",
        "CALL",
        "BINARY_OP",
        "FOR_ITER",
        "MAKE_FUNCTION",
        "LOAD_DEREF",
        "CALL_FUNCTION_EX",
        "UNPACK_EX",
        "FORMAT_VALUE",
        "STORE_SUBSCR",
        "LIST_APPEND",
        "YIELD_VALUE",
    } <= set(ops)
    assert all(callable(getattr(InstructionTranslator, op)) for op in ops)
    assert not set(ops) & set(UNSUPPORTED), "an opcode can't be both supported and unsupported"


def test_every_opcode_in_the_test_functions_is_handled_or_explained():
    """On this Python version, each normalised opcode has a handler or a reason in UNSUPPORTED."""
    seen = set()
    for fn in _functions():
        for code in _codes(fn.__code__):
            seen |= {inst.opname for inst in bc.normalise(code)}
    unknown = seen - set(supported_opcodes()) - set(UNSUPPORTED)
    assert not unknown, f"opcodes with neither a handler nor a reason: {sorted(unknown)}"


def test_every_opcode_of_this_python_is_handled_aliased_or_explained():
    explained = set(supported_opcodes()) | set(UNSUPPORTED) | set(bc.ALIASES) | {"CALL_INTRINSIC_1"}
    missing = [op for op in dis.opmap if op not in explained | bc.PSEUDO_OPCODES and not op.startswith("INSTRUMENTED_")]
    assert not missing, f"opcodes with neither a handler, an alias nor a reason: {missing}"


def test_version_aliases_map_to_handlers():
    for raw, normal in bc.ALIASES.items():
        if raw in dis.opmap:
            assert normal in supported_opcodes(), f"{raw} -> {normal} has no handler"
    for normal in bc.INTRINSICS.values():
        assert normal in supported_opcodes()


@pytest.mark.skipif(sys.version_info < (3, 12), reason="3.12 loop layout")
def test_for_iter_skips_end_for_on_312():
    def loop(xs):
        for x in xs:
            pass

    insts = bc.normalise(loop.__code__)
    for_iter = next(i for i in insts if i.opname == "FOR_ITER")
    target = next(i for i in insts if i.offset == for_iter.target)
    assert target.opname != "END_FOR"
