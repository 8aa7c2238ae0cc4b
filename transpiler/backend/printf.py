"""Device `printf`: the IR's `printf` lowered to a `vprintf` call, as nvcc lowers CUDA's printf.

    st.local.s32 [printf_args], %r1;             // the arguments, packed as C varargs
    st.local.f64 [printf_args+8], %fd1;
    mov.u64 %rd1, $str0;                         // the format string: a .global constant
    cvta.global.u64 %rd2, %rd1;
    mov.u64 %rd3, printf_args;
    cvta.local.u64 %rd4, %rd3;
    {
    .param .b64 param0;
    st.param.b64 [param0], %rd2;
    .param .b64 param1;
    st.param.b64 [param1], %rd4;
    .param .b32 retval0;
    call.uni (retval0), vprintf, (param0, param1);
    }

Arguments arrive promoted by the SSA builder as C promotes varargs (floats to f64, smaller
integers and bool to 32 bits); any other is promoted here. Each lies at an offset aligned to its
size in the per-thread `.local` buffer `printf_args`, which is as large as the largest call
needs. Every distinct format string is one `$strN` constant, its text in a comment above it.
"""
from __future__ import annotations

from ptxpy.types import Scalar, f64, i32, u32

from .. import ir
from . import convert
from .machine import Addr, Imm, MInstr, Sym, VReg, ascii_text

ARGS_BUFFER = "printf_args"
ARGS_ALIGN = 8
VPRINTF_DECL = """.extern .func (.param .b32 func_retval0) vprintf
(
    .param .b64 vprintf_param_0,
    .param .b64 vprintf_param_1
)
;"""


def lower_printf(sel, instr: ir.Instr) -> None:
    """Emit through `sel` (an isel.ISel) the vprintf call of one IR `printf`."""
    args = [_promoted(sel, value) for value in instr.args]
    offsets, size = pack_layout([t for t, _ in args])
    for (t, operand), offset in zip(args, offsets):
        sel.emit(f"st.local.{_store_type(t)}", [], [Addr(Sym(ARGS_BUFFER), offset), operand])
    sel.printf_buffer = max(sel.printf_buffer, size)
    fmt = _generic_address(sel, sel.strings.name_of(instr.attrs["fmt"]), "global")
    buffer = _generic_address(sel, ARGS_BUFFER, "local") if args else _zero(sel)
    _call_vprintf(sel, fmt, buffer)


def pack_layout(types: list[Scalar]) -> tuple[list[int], int]:
    """Offsets of the arguments in the varargs buffer (each aligned to its size), and its size."""
    offsets, end = [], 0
    for t in types:
        size = t.bits // 8
        offset = -(-end // size) * size
        offsets.append(offset)
        end = offset + size
    return offsets, -(-end // ARGS_ALIGN) * ARGS_ALIGN


class StringTable:
    """The module's format strings: one `.global` constant per distinct text."""

    def __init__(self):
        self.names: dict[str, str] = {}

    def name_of(self, text: str) -> str:
        if text not in self.names:
            self.names[text] = f"$str{len(self.names)}"
        return self.names[text]

    def declarations(self) -> list[str]:
        lines = []
        for text, name in self.names.items():
            data = text.encode("utf-8") + b"\0"
            lines.append(f"// {name} = {c_literal(text)}")
            lines.append(f".global .align 1 .b8 {name}[{len(data)}] = {{{', '.join(map(str, data))}}};")
        return lines


def module_declarations(strings: StringTable) -> list[str]:
    """What a module whose kernel prints declares before its `.entry`."""
    if strings is None or not strings.names:
        return []
    return [VPRINTF_DECL, *strings.declarations(), ""]


def c_literal(text: str) -> str:
    """`text` as a C string literal in ASCII, for the comment beside its constant."""
    escapes = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\t": "\\t", "\r": "\\r"}
    return '"' + ascii_text("".join(escapes.get(char, char) for char in text)) + '"'


def _promoted(sel, value: ir.Value) -> tuple[Scalar, object]:
    """(type, operand) of one argument after C's default argument promotions."""
    t = value.type
    if t.is_float and t.bits < 64:
        wide = f64
    elif t.is_bool or t.bits < 32:
        wide = u32 if t.kind == "uint" else i32
    else:
        return t, sel.src(value)
    if isinstance(value, ir.Const):
        number = float(value.value) if wide.is_float else int(value.value)
        return wide, sel.src(ir.Const(wide, number))
    dst = sel.new(wide)
    convert.convert(sel, dst, sel.src(value, imm=False), t, wide, None)
    return wide, dst


def _store_type(t: Scalar) -> str:
    return "f64" if t.is_float else f"{'s' if t.is_signed else 'u'}{t.bits}"


def _generic_address(sel, symbol: str, space: str) -> VReg:
    window, generic = sel.new("rd"), sel.new("rd")
    sel.emit("mov.u64", [window], [Sym(symbol)])
    sel.emit(f"cvta.{space}.u64", [generic], [window])
    return generic


def _zero(sel) -> VReg:
    null = sel.new("rd")
    sel.emit("mov.u64", [null], [Imm("0")])
    return null


def _call_vprintf(sel, fmt: VReg, buffer: VReg) -> None:
    """The call sequence in its own `{ }` scope, which declares the call's parameters."""
    code = [_raw(sel, "{")]
    for k, pointer in enumerate((fmt, buffer)):
        code.append(_raw(sel, f".param .b64 param{k};"))
        code.append(MInstr("st.param.b64", [], [Addr(Sym(f"param{k}")), pointer], sel.loc))
    code += [_raw(sel, ".param .b32 retval0;"),
             _raw(sel, "call.uni (retval0), vprintf, (param0, param1);"), _raw(sel, "}")]
    sel.block.instrs.extend(code)


def _raw(sel, text: str) -> MInstr:
    return MInstr(text, [], [], sel.loc, raw=True)
