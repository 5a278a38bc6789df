"""Opcode handlers: the stack, names (locals, globals, builtins), closure cells, attributes.

Part of :class:`~.translator.InstructionTranslator` (mixed in). Each handler's
docstring shows the bytecode it handles.

Mirrors: the LOAD_*/STORE_* methods of torch/_dynamo/symbolic_convert.py.
"""

from __future__ import annotations

from .variables import (
    CellVariable,
    NullVariable,
    ObjectVariable,
    RealCellVariable,
    SuperVariable,
    UnboundVariable,
    Unsupported,
    Variable,
    wrap_constant_result,
)


class NameHandlers:
    # -- stack and no-ops ---------------------------------------------------------

    def NOP(self, inst):
        """Does nothing (also PRECALL on 3.11)."""

    RESUME = NOP

    def POP_TOP(self, inst):
        self.pop()

    def PUSH_NULL(self, inst):
        """``PUSH_NULL`` -- marks a plain function call (no ``self``)."""
        self.push(NullVariable())

    def COPY(self, inst):
        self.push(self.state.stack[-inst.arg])

    def SWAP(self, inst):
        s = self.state.stack
        s[-1], s[-inst.arg] = s[-inst.arg], s[-1]

    # -- locals --------------------------------------------------------------------

    def LOAD_CONST(self, inst):
        """``LOAD_CONST 2`` -- a literal from co_consts."""
        self.push(wrap_constant_result(inst.argval))

    def load_local(self, name: str) -> Variable:
        if name not in self.state.locals:
            raise Unsupported(f"local variable {name!r} is used before it is assigned", "exception")
        return self.load_local_value(self.state.locals[name], name)

    def load_local_value(self, value, name: str) -> Variable:
        if not isinstance(
            value, Variable
        ):  # an argument read for the first time: wrap and guard it
            value = self.state.locals[name] = self.wrap(value.value, name)
        return value

    def LOAD_FAST(self, inst):
        """``LOAD_FAST x`` -- a local or an argument; an argument is wrapped on first read."""
        self.push(self.load_local(inst.argval))

    def STORE_FAST(self, inst):
        """``STORE_FAST y`` -- (also restores what 3.12's LOAD_FAST_AND_CLEAR saved)."""
        value = self.pop()
        if isinstance(value, UnboundVariable):
            self.state.locals.pop(inst.argval, None)
        else:
            self.state.locals[inst.argval] = value

    def DELETE_FAST(self, inst):
        self.state.locals.pop(inst.argval, None)

    def LOAD_FAST_AND_CLEAR(self, inst):
        """3.12 inlined comprehension: ``LOAD_FAST_AND_CLEAR a`` saves the outer ``a``."""
        value = self.state.locals.pop(inst.argval, None)
        self.push(UnboundVariable() if value is None else self.load_local_value(value, inst.argval))
        self.state.locals.pop(inst.argval, None)

    # -- globals and builtins ----------------------------------------------------

    def globals_source(self) -> str:
        """How compiled code reaches this frame's globals: ``G`` for the compiled function's own."""
        return (
            "G" if self.globals is self.guard_objects["G"] else self.register_object(self.globals)
        )

    def LOAD_GLOBAL(self, inst):
        """``LOAD_GLOBAL torch`` -- a global (or builtin), guarded by value or identity."""
        name = inst.argval
        if inst.flag:
            self.push(NullVariable())
        if name in self.globals:
            self.push(self.wrap(self.globals[name], f"{self.globals_source()}[{name!r}]"))
        elif name in self.builtins:
            self.push(ObjectVariable(self.builtins[name]))
        else:
            raise Unsupported(f"name {name!r} is not defined", "name-error")

    def IMPORT_NAME(self, inst):
        """``import math`` inside the function: the import happens now, at compile time."""
        fromlist, level = self.pop().as_python(), self.pop().as_python()
        module = __import__(inst.argval, self.globals, None, fromlist, level)
        self.push(ObjectVariable(module))

    def IMPORT_FROM(self, inst):
        self.push(self.state.stack[-1].getattr(self, inst.argval))

    # -- closure cells -------------------------------------------------------------

    def MAKE_CELL(self, inst):
        """``MAKE_CELL y`` -- ``y`` is captured by an inner function: its value moves to a cell."""
        name = inst.argval
        value = self.load_local(name) if name in self.state.locals else None
        self.state.locals.pop(name, None)
        self.state.cells[name] = CellVariable(value, name)

    def COPY_FREE_VARS(self, inst):
        """``COPY_FREE_VARS n`` -- the function's closure cells become its free variables."""
        for name, cell in zip(self.code.co_freevars, self.closure):
            self.state.cells[name] = cell

    def read_cell(self, cell: Variable) -> Variable:
        if isinstance(cell, RealCellVariable):
            if cell.contents is None:
                try:
                    value = cell.cell.cell_contents
                except ValueError:
                    raise Unsupported(
                        f"free variable {cell.name!r} is not bound yet", "exception"
                    ) from None
                cell.contents = self.wrap(value, cell.source)
            return cell.contents
        if cell.contents is None:
            raise Unsupported(
                f"free variable {cell.name!r} is used before it is assigned", "exception"
            )
        return cell.contents

    def LOAD_DEREF(self, inst):
        """``LOAD_DEREF y`` -- read a closure cell (``nonlocal`` / captured variable)."""
        self.push(self.read_cell(self.cell_named(inst.argval)))

    def cell_named(self, name: str) -> Variable:
        if name not in self.state.cells:
            raise Unsupported(f"closure variable {name!r} has no cell", "unsupported-opcode")
        return self.state.cells[name]

    def STORE_DEREF(self, inst):
        """``STORE_DEREF y`` -- assign a closure cell; a real outer function's cell: a break."""
        cell = self.cell_named(inst.argval)
        if isinstance(cell, RealCellVariable):
            raise Unsupported(
                f"assigning `nonlocal {inst.argval}` changes a variable of an enclosing function "
                "outside the compiled code",
                "mutation",
            )
        self.output.remember(cell, "contents")
        cell.contents = self.pop()

    def LOAD_CLOSURE(self, inst):
        """``LOAD_CLOSURE y`` -- push the cell itself, to build an inner function's closure."""
        self.push(self.cell_named(inst.argval))

    # -- attributes ---------------------------------------------------------------

    def LOAD_ATTR(self, inst):
        """``LOAD_ATTR shape`` -- attribute of the value on top of the stack."""
        obj = self.pop()
        if inst.flag:  # 3.12 folds PUSH_NULL into LOAD_ATTR for non-method loads
            self.push(NullVariable())
        self.push(obj.getattr(self, inst.argval))

    def LOAD_METHOD(self, inst):
        """``LOAD_METHOD sin`` -- pushes [NULL, bound callable]; CALL treats both layouts alike."""
        obj = self.pop()
        self.push(NullVariable())
        self.push(obj.getattr(self, inst.argval))

    def LOAD_SUPER_ATTR(self, inst):
        """3.12: ``LOAD_GLOBAL super; LOAD_DEREF __class__; LOAD_FAST self; LOAD_SUPER_ATTR f``."""
        self_var, cls, _super = self.pop(), self.pop(), self.pop()
        attr = SuperVariable(cls.as_python(), self_var).getattr(self, inst.argval)
        if inst.flag:
            self.push(NullVariable())
        self.push(attr)

    def STORE_ATTR(self, inst):
        """``STORE_ATTR name`` -- ``obj.name = v``: changes an object the caller can see."""
        obj, _value = self.pop(), self.pop()
        raise Unsupported(
            f"assigning {obj.describe()}.{inst.argval} changes an object outside the compiled "
            "code; not traced",
            "mutation",
        )
