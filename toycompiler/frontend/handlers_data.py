"""Opcode handlers: operators, subscripts and slices, building and unpacking containers, f-strings.

Part of :class:`~.translator.InstructionTranslator` (mixed in). On tensors
these record graph nodes; on constants they fold; on containers of variables
they rearrange variables without touching the graph.

Mirrors: BINARY_OP, COMPARE_OP, BUILD_*, UNPACK_*, FORMAT_VALUE in
torch/_dynamo/symbolic_convert.py.
"""

from __future__ import annotations

import operator

from .containers import DictVariable, ListVariable, SetVariable, TupleVariable
from .variables import ConstantVariable, TensorVariable, Unsupported, Variable

# BINARY_OP's argrepr -> the function it applies. In-place forms ("+=") are
# separate: on a tensor they change the caller's object.
BINARY_OPS = {
    "+": operator.add,
    "-": operator.sub,
    "*": operator.mul,
    "/": operator.truediv,
    "//": operator.floordiv,
    "%": operator.mod,
    "**": operator.pow,
    "@": operator.matmul,
    "&": operator.and_,
    "|": operator.or_,
    "^": operator.xor,
    "<<": operator.lshift,
    ">>": operator.rshift,
}
INPLACE_BINARY_OPS = {
    "+=": operator.iadd,
    "-=": operator.isub,
    "*=": operator.imul,
    "/=": operator.itruediv,
    "//=": operator.ifloordiv,
    "%=": operator.imod,
    "**=": operator.ipow,
    "@=": operator.imatmul,
    "&=": operator.iand,
    "|=": operator.ior,
    "^=": operator.ixor,
    "<<=": operator.ilshift,
    ">>=": operator.irshift,
}
COMPARE_OPS = {
    "<": operator.lt,
    "<=": operator.le,
    "==": operator.eq,
    "!=": operator.ne,
    ">": operator.gt,
    ">=": operator.ge,
}
FORMAT_CONVERSIONS = {0: None, 1: str, 2: repr, 3: ascii}


def _is_sequence(v: Variable) -> bool:
    return isinstance(v, TupleVariable) and not v.is_python_constant()


class DataHandlers:
    # -- operators ---------------------------------------------------------------

    def BINARY_OP(self, inst):
        """``BINARY_OP +`` -- tensors make a node; constants fold; tensor ``+=`` is in place."""
        b, a = self.pop(), self.pop()
        op = inst.argrepr
        if op in INPLACE_BINARY_OPS and isinstance(a, TensorVariable):
            self.push(self.record_inplace("call_function", INPLACE_BINARY_OPS[op], a, [a, b], {}))
        elif (_is_sequence(a) or _is_sequence(b)) and op.rstrip("=") in ("+", "*"):
            self.push(self.sequence_op(op, a, b))
        else:
            fn = INPLACE_BINARY_OPS.get(op) or BINARY_OPS[op]
            self.push(self.call_python(fn, [a, b], {}))

    def sequence_op(self, op: str, a: Variable, b: Variable) -> Variable:
        """``[x] + ys``, ``(x,) * 3``, ``xs += [y]`` on containers holding tensors."""
        if op.startswith("*"):
            seq, n = (a, b) if isinstance(a, TupleVariable) else (b, a)
            items = seq.items * n.as_python()
        else:
            if type(a) is not type(b) and not a.is_python_constant() and not b.is_python_constant():
                raise Unsupported(
                    f"can only concatenate {a.python_type().__name__} to the same type", "exception"
                )
            items = a.unpack(self) + b.unpack(self)
        if op == "+=" and isinstance(a, ListVariable):
            a.before_change(self, "list +=")
            a.items[:] = items
            return a
        return type(a if isinstance(a, TupleVariable) else b)(items)

    def COMPARE_OP(self, inst):
        """``COMPARE_OP <`` -- on tensors a node (a bool tensor); on constants folded."""
        b, a = self.pop(), self.pop()
        self.push(self.call_python(COMPARE_OPS[inst.argval], [a, b], {}))

    def IS_OP(self, inst):
        """``IS_OP 1`` -- ``a is not b``: known from what the variables are."""
        b, a = self.pop(), self.pop()
        if (
            a.is_python_constant()
            and b.is_python_constant()
            and not isinstance(a, TensorVariable | TupleVariable)
        ):
            same = a.as_python() is b.as_python()
        else:
            same = a is b
        self.push(ConstantVariable(same != bool(inst.arg)))

    def CONTAINS_OP(self, inst):
        """``CONTAINS_OP 0`` -- ``a in b`` (1: ``not in``)."""
        container, item = self.pop(), self.pop()
        found = self.call_python(operator.contains, [container, item], {}).as_python()
        self.push(ConstantVariable(bool(found) != bool(inst.arg)))

    def UNARY_NOT(self, inst):
        self.push(ConstantVariable(not self.pop().truth()))

    def UNARY_NEGATIVE(self, inst):
        self.push(self.call_python(operator.neg, [self.pop()], {}))

    def UNARY_POSITIVE(self, inst):
        """``+x`` (3.12: ``CALL_INTRINSIC_1 INTRINSIC_UNARY_POSITIVE``, renamed by the table)."""
        self.push(self.call_python(operator.pos, [self.pop()], {}))

    def UNARY_INVERT(self, inst):
        self.push(self.call_python(operator.invert, [self.pop()], {}))

    # -- subscripts and slices -----------------------------------------------------

    def BINARY_SUBSCR(self, inst):
        """``BINARY_SUBSCR`` -- ``a[b]``: a tensor records a node; a container gives an item."""
        index, obj = self.pop(), self.pop()
        self.push(obj.getitem(self, index))

    def BINARY_SLICE(self, inst):
        """3.12: ``a[lo:hi]`` -- [container, lo, hi] -> slice."""
        stop, start, obj = self.pop(), self.pop(), self.pop()
        self.push(obj.getitem(self, self.make_slice([start, stop])))

    def STORE_SUBSCR(self, inst):
        """``STORE_SUBSCR`` -- ``a[i] = v``: [v, a, i]. On a tensor, an in-place node that stays."""
        key, obj, value = self.pop(), self.pop(), self.pop()
        self.store_item(obj, key, value)

    def STORE_SLICE(self, inst):
        """3.12: ``a[lo:hi] = v`` -- [v, a, lo, hi]."""
        stop, start, obj, value = self.pop(), self.pop(), self.pop(), self.pop()
        self.store_item(obj, self.make_slice([start, stop]), value)

    def store_item(self, obj: Variable, key: Variable, value: Variable) -> None:
        if isinstance(obj, TensorVariable):
            self.record_setitem(obj, key, value)
        elif isinstance(obj, ListVariable | DictVariable):
            obj.setitem(self, key, value)
        else:
            raise Unsupported(
                f"item assignment on {obj.describe()} changes an object outside the compiled code",
                "mutation",
            )

    def record_setitem(self, obj: TensorVariable, key: Variable, value: Variable) -> None:
        """``out[idx] = v`` as an ``operator.setitem`` node that dead-code elimination keeps."""
        from .output_graph import as_fake, as_node_arg

        try:
            with self.output.fake_mode:
                operator.setitem(obj.example, as_fake(key), as_fake(value))
        except Exception as e:
            raise Unsupported(
                f"tensor item assignment failed on fake tensors: {type(e).__name__}: {e}",
                "fake-tensor",
            ) from e
        node = self.output.create_node(
            "call_function",
            operator.setitem,
            (obj.node, as_node_arg(key), as_node_arg(value)),
            {},
            None,
        )
        self.output.side_effect_nodes.append(node)

    def DELETE_SUBSCR(self, inst):
        key, obj = self.pop(), self.pop()
        if not isinstance(obj, ListVariable | DictVariable):
            raise Unsupported(f"del on {obj.describe()} is not traced", "mutation")
        obj.delitem(self, key)

    def make_slice(self, parts: list[Variable]) -> ConstantVariable:
        if not all(p.is_python_constant() for p in parts):
            raise Unsupported("a slice bound that is a tensor needs its value", "item")
        return ConstantVariable(slice(*(p.as_python() for p in parts)))

    def BUILD_SLICE(self, inst):
        self.push(self.make_slice(self.popn(inst.arg)))

    # -- building containers --------------------------------------------------------

    def BUILD_TUPLE(self, inst):
        self.push(TupleVariable(self.popn(inst.arg)))

    def BUILD_LIST(self, inst):
        self.push(ListVariable(self.popn(inst.arg)))

    def BUILD_SET(self, inst):
        self.push(SetVariable({self.identity_key(v): v for v in self.popn(inst.arg)}))

    def BUILD_MAP(self, inst):
        flat = self.popn(2 * inst.arg)
        self.push(DictVariable({flat[i].as_python(): flat[i + 1] for i in range(0, len(flat), 2)}))

    def BUILD_CONST_KEY_MAP(self, inst):
        """``{'a': x, 'b': y}`` -- [x, y, ('a', 'b')] -> dict."""
        keys = self.pop().as_python()
        self.push(DictVariable(dict(zip(keys, self.popn(inst.arg)))))

    def LIST_APPEND(self, inst):
        """In a list comprehension: append to the list ``arg`` slots down."""
        value = self.pop()
        self.state.stack[-inst.arg].items.append(value)

    def LIST_EXTEND(self, inst):
        """``[*a, *b]`` -- extend the list ``arg`` slots down."""
        seq = self.pop()
        self.state.stack[-inst.arg].items.extend(seq.unpack(self))

    def LIST_TO_TUPLE(self, inst):
        """``(*a,)`` (3.12: ``CALL_INTRINSIC_1 INTRINSIC_LIST_TO_TUPLE``, renamed by the table)."""
        self.push(TupleVariable(list(self.pop().items)))

    def SET_ADD(self, inst):
        value = self.pop()
        self.state.stack[-inst.arg].call_method(self, "add", [value], {})

    def SET_UPDATE(self, inst):
        values = self.pop()
        self.state.stack[-inst.arg].call_method(self, "update", [values], {})

    def MAP_ADD(self, inst):
        """In a dict comprehension: [dict ..., key, value]."""
        value, key = self.pop(), self.pop()
        self.state.stack[-inst.arg].items[key.as_python()] = value

    def DICT_UPDATE(self, inst):
        """``{**a, **b}`` -- update the dict ``arg`` slots down."""
        other = self.pop()
        self.state.stack[-inst.arg].update_from(self, other)

    DICT_MERGE = DICT_UPDATE  # ``f(**a, **b)``: the same, plus a duplicate-key error we don't model

    # -- unpacking ------------------------------------------------------------------

    def UNPACK_SEQUENCE(self, inst):
        """``a, b = t`` -- push the items, first on top."""
        items = self.pop().unpack(self)
        if len(items) != inst.arg:
            raise Unsupported(
                f"unpacking {len(items)} values into {inst.arg} names (ValueError)", "exception"
            )
        for item in reversed(items):
            self.push(item)

    def UNPACK_EX(self, inst):
        """``a, *rest, b = t`` -- arg = before | (after << 8)."""
        before, after = inst.arg & 0xFF, inst.arg >> 8
        items = self.pop().unpack(self)
        if len(items) < before + after:
            raise Unsupported("not enough values to unpack (ValueError)", "exception")
        middle = items[before : len(items) - after]
        for item in reversed(items[len(items) - after :]):
            self.push(item)
        self.push(ListVariable(middle))
        for item in reversed(items[:before]):
            self.push(item)

    # -- strings ----------------------------------------------------------------------

    def FORMAT_VALUE(self, inst):
        """``f"{x!r:>4}"`` -- arg & 3: conversion, arg & 4: a format spec is on the stack."""
        spec = self.pop().as_python() if inst.arg & 0x04 else ""
        value = self.pop()
        if isinstance(value, TensorVariable):
            raise Unsupported("formatting a tensor into a string needs its values", "print")
        python = value.as_python()
        convert = FORMAT_CONVERSIONS[inst.arg & 0x03]
        self.push(ConstantVariable(format(convert(python) if convert else python, spec)))

    def BUILD_STRING(self, inst):
        self.push(ConstantVariable("".join(p.as_python() for p in self.popn(inst.arg))))
