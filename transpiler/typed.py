"""The typed tree: the frontend's output, the SSA builder's input.

Every expression carries its final `Scalar` type (or `TupleType` for a `@ptxpy.func` returning a
tuple) and every node its source location. The frontend has already done all the typing work:
implicit conversions are explicit `Cast` nodes, operands of a `Binary`/`Compare` have one type,
`Const` parameters and module constants are `Constant`s, `static_range` bounds are Python ints,
augmented assignments are desugared. The SSA builder never looks at Python types or names.

Printed by `format_kernel` (`ptxpy transpile --emit typed`).
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ptxpy.types import ArrayType, Scalar, TupleType

from .launch_shape import describe

Loc = tuple  # (line, col)

#: the (x, y, z) special registers `ptxpy.NAME.x`: threads, blocks, thread-block clusters
DIM3_NAMES = ("thread_idx", "block_idx", "block_dim", "grid_dim", "cluster_idx", "cluster_dim",
              "cluster_block_idx")


#: statements typed or built, counting every unrolled and inlined copy: past this a kernel is
#: an error (compiling 16384 takes about 3 s; nested static_range loops, or calls that double at
#: each level, would otherwise compile for minutes)
MAX_STATEMENTS = 65536


@dataclass(eq=False)
class Node:
    loc: Loc


# --- expressions -----------------------------------------------------------------------------
@dataclass(eq=False)
class Expr(Node):
    type: Scalar | TupleType


@dataclass(eq=False)
class Constant(Expr):
    value: object            # int, float or bool, already of `type` (ints in range)


@dataclass(eq=False)
class Var(Expr):
    name: str                # a local variable or a scalar parameter


@dataclass(eq=False)
class Load(Expr):
    array: str               # name of an array: parameter, shared_array or local_array
    indices: list            # one i32/i64/unsigned Expr per dimension


@dataclass(eq=False)
class TableLoad(Expr):
    """`TABLE[i]` of a module tuple constant with a run-time index: an element of the table kept
    in `.const` memory, the numbers `values` converted to `type` (docs/language.md)."""
    table: str               # the constant's name
    values: tuple            # its numbers, converted to `type` as a cast converts constants
    index: Expr              # an integer of any type


@dataclass(eq=False)
class Shape(Expr):
    array: str
    dim: int                 # type i32; `len(a)` is Shape(a, 0); `a.size` is a product of Shapes


@dataclass(eq=False)
class Unary(Expr):
    op: str                  # 'neg' | 'invert' (bitwise ~ on ints) | 'not' (bool)
    operand: Expr


@dataclass(eq=False)
class Binary(Expr):
    # 'add' 'sub' 'mul' 'truediv' (floats only: ints were cast) 'floordiv' 'mod' (Python floor
    # semantics, ints and floats) 'and' 'or' 'xor' 'shl' 'shr' (ints; bool for and/or/xor)
    # 'min' 'max' ; both operands of `type` except shifts (right operand any int type)
    op: str
    left: Expr
    right: Expr


@dataclass(eq=False)
class Pow(Expr):
    base: Expr
    exponent: int            # compile-time integer; negative only for float bases


@dataclass(eq=False)
class Compare(Expr):
    """A (possibly chained) comparison `a < b <= c`: operands[k] op[k] operands[k+1] ...

    `operand_types[k]` is the type both sides of comparison k were promoted to; the operand
    expressions are NOT cast (each is evaluated once even when shared by two comparisons).
    Result type bool; evaluated lazily left to right as Python does.
    """
    ops: list                # 'eq' 'ne' 'lt' 'le' 'gt' 'ge'
    operands: list
    operand_types: list


@dataclass(eq=False)
class BoolOp(Expr):
    op: str                  # 'and' | 'or', short-circuit; values are bool
    values: list


@dataclass(eq=False)
class IfExp(Expr):
    cond: Expr               # bool; only the chosen branch is evaluated
    then: Expr
    orelse: Expr


@dataclass(eq=False)
class Cast(Expr):
    operand: Expr            # converted to `type` as `ir` cvt does (int(x) truncates)


@dataclass(eq=False)
class Intrinsic(Expr):
    """A call the SSA builder lowers directly.

    names: 'abs' 'sqrt' 'rsqrt' 'exp' 'exp2' 'log' 'log2' 'log10' 'sin' 'cos' 'tan' 'tanh'
    'erf' 'floor' 'ceil' 'fabs' 'copysign' 'pow' 'fmod' 'isnan' 'isinf' 'isfinite' 'fma'
    'fast_exp' 'fast_log' 'fast_sin' 'fast_cos' 'ldexp' (args: [x, i32 n]) 'frexp_mantissa' 'frexp_exponent'
    'thread_idx.x' ... 'grid_dim.z' (i32), 'lane_id', 'warp_id', 'global_id' (args: [axis const])
    'program_id' 'num_programs' (args: [axis const]), 'syncthreads' (type None)
    atomics 'atomic_add' ... (args: Load-like target given as `array` + `indices` in extra;
    `sem`, `scope` there where the call names them)
    'load_acquire' 'load_relaxed' (no args), 'store_release' 'store_relaxed' (args: [value]):
    the target as for atomics, `sem` and `scope` in extra
    'shfl_sync' 'shfl_up_sync' 'shfl_down_sync' 'shfl_xor_sync' 'ballot_sync' 'any_sync'
    'all_sync' 'warp_sum' 'warp_max' 'warp_min'
    Arguments are already cast to the types the intrinsic computes in.
    """
    name: str
    args: list
    extra: dict = field(default_factory=dict)


@dataclass(eq=False)
class Call(Expr):
    """A call to a `@ptxpy.func`: the SSA builder inlines `func` (a typed FuncDef)."""
    func: str
    args: list               # already cast to the parameter types


@dataclass(eq=False)
class ArrayArg(Expr):
    """An array passed whole to a `@ptxpy.func` parameter annotated `Array[T, R]` (type ArrayType)."""
    array: str


@dataclass(eq=False)
class TupleItem(Expr):
    """Element `index` of a tuple-valued expression (only `Call` results are tuples)."""
    value: Expr
    index: int


@dataclass(eq=False)
class Once(Expr):
    """An operand that the items of a TupleExpr share (`divmod(a, b)`'s `a` and `b`): evaluated
    once, by the first item that reads it, as Python evaluates a call's argument once."""
    value: Expr


def once(e: Expr) -> Expr:
    """`e` to be shared by the items of one TupleExpr (constants and variables as they are)."""
    return e if isinstance(e, (Constant, Var)) else Once(e.loc, e.type, e)


@dataclass(eq=False)
class TupleExpr(Expr):
    """The value of `return a, b` in a `@ptxpy.func` returning a tuple (type TupleType): the
    only place a tuple is built; each item is already converted to its element type."""
    items: list


# --- statements ------------------------------------------------------------------------------
@dataclass(eq=False)
class Stmt(Node):
    pass


@dataclass(eq=False)
class Assign(Stmt):
    targets: list            # variable names; more than one for tuple assignment
    values: list             # one Expr per target (all evaluated before any is assigned),
                             # or a single tuple-typed Expr for `a, b = f(x)`


@dataclass(eq=False)
class Store(Stmt):
    array: str
    indices: list
    value: Expr              # already cast to the element type


@dataclass(eq=False)
class VectorLoad(Stmt):
    """`v0, v1, v2, v3 = x[i:i + 4]` or `x[r, j:j + 4]` (width a compile-time constant)."""
    targets: list
    array: str
    start: Expr
    width: int
    lead: list = field(default_factory=list)   # indices of the leading dimensions


@dataclass(eq=False)
class VectorStore(Stmt):
    """`out[i:i + 4] = (a, b, c, d)` or `out[r, j:j + 4] = ...`."""
    array: str
    start: Expr
    values: list
    lead: list = field(default_factory=list)


@dataclass(eq=False)
class MapShared(Stmt):
    """`view = ptxpy.map_shared_rank(array, rank)`: from here on `view` names shared array
    `array` of the cluster's block of rank `rank` (u32), in the shared::cluster space."""
    view: str
    array: str
    rank: Expr


@dataclass(eq=False)
class ViewArray(Stmt):
    """`view = array.view(T)`: from here on `view` names the memory of `array` (global or shared)
    as elements of scalar type `elem`, at least as wide as the array's; its last extent is the
    array's divided by the ratio of the two widths (the other extents are the array's)."""
    view: str
    array: str
    elem: Scalar


@dataclass(eq=False)
class ExprStmt(Stmt):
    value: Expr              # evaluated for its effects (intrinsics, calls)


@dataclass(eq=False)
class If(Stmt):
    cond: Expr
    body: list
    orelse: list


@dataclass(eq=False)
class While(Stmt):
    cond: Expr
    body: list


@dataclass(eq=False)
class For(Stmt):
    """`for var in range(start, stop, step)`: all three of var's type (an int type).

    `step_sign` is +1 or -1 when the step is a compile-time constant (the loop tests
    `var < stop` or `var > stop`), 0 when it is only known at run time (the builder computes
    the trip count `len(range(start, stop, step))` once and counts it down; a zero step gives
    no iterations). A zero constant step is a frontend error.
    """
    var: str
    start: Expr
    stop: Expr
    step: Expr
    step_sign: int
    body: list


@dataclass(eq=False)
class StaticFor(Stmt):
    """`for var in ptxpy.static_range(...)`: the body is unrolled once per value.

    `var` is assigned each value (so it holds the last one after the loop). When `bodies` is
    given, `bodies[k]` is the body typed for `values[k]`, in which `var` is the weak constant
    `values[k]` (the frontend types the body once per value when it mentions `var`);
    otherwise `body` is used for every value.
    """
    var: str
    values: list             # Python ints
    body: list
    bodies: list | None = None


@dataclass(eq=False)
class Break(Stmt):
    pass


@dataclass(eq=False)
class Continue(Stmt):
    pass


@dataclass(eq=False)
class Return(Stmt):
    value: Expr | None       # kernels: None; funcs: the value (tuple-typed for tuple returns)


@dataclass(eq=False)
class Assert(Stmt):
    cond: Expr
    message: str             # checked only when compiling with debug=True


@dataclass(eq=False)
class Print(Stmt):
    format: str              # printf format the frontend built from literals and scalars
    args: list


@dataclass(eq=False)
class Pass(Stmt):
    pass


# --- functions and modules -------------------------------------------------------------------
@dataclass(eq=False)
class Param:
    name: str
    type: Scalar | ArrayType
    by_ref: bool = False     # scalar passed as a pointer (traced JAX scalar), see abi.ParamSpec


@dataclass(eq=False)
class ArrayDecl:
    """A `shared_array` or `local_array` the function declares (SSA builder makes SharedDecls)."""
    name: str
    elem: Scalar
    shape: tuple             # ints, or for a shared array sized at launch formulas (launch_shape.py)
    space: str               # 'shared' | 'local'
    loc: tuple | None = None   # the `shared_array`/`local_array` call


@dataclass(eq=False)
class FuncDef(Node):
    name: str
    params: list             # Param
    return_type: Scalar | TupleType | None
    body: list
    is_kernel: bool
    locals: dict = field(default_factory=dict)   # variable name -> Scalar (every local's one type)
    arrays: list = field(default_factory=list)   # ArrayDecl
    written_arrays: set = field(default_factory=set)  # array params stored to (incl. via funcs)
    #: array param -> ((box, swizzle), ...): the tensor maps (TMA) the launch passes with it
    tensor_maps: dict = field(default_factory=dict)
    #: array params read by `load_acquire`/`load_relaxed` (incl. via funcs): never through the
    #: read-only path, as another thread may write them while the kernel runs
    ordered_arrays: set = field(default_factory=set)


@dataclass(eq=False)
class TypedModule:
    """One kernel specialisation and the device functions it calls."""
    kernel: FuncDef
    funcs: dict              # name -> FuncDef (device functions, typed for this specialisation)
    filename: str
    source_lines: list


# --- printing --------------------------------------------------------------------------------
def format_expr(e: Expr) -> str:
    t = f":{e.type}" if e.type is not None else ""
    if isinstance(e, Constant):
        return f"{e.value!r}{t}"
    if isinstance(e, Var):
        return f"{e.name}{t}"
    if isinstance(e, Load):
        return f"{e.array}[{', '.join(map(format_expr, e.indices))}]{t}"
    if isinstance(e, Shape):
        return f"{e.array}.shape[{e.dim}]"
    if isinstance(e, TableLoad):
        return f"{e.table}[{format_expr(e.index)}]{t}"
    if isinstance(e, Unary):
        return f"({e.op} {format_expr(e.operand)}){t}"
    if isinstance(e, Binary):
        return f"({format_expr(e.left)} {e.op} {format_expr(e.right)}){t}"
    if isinstance(e, Pow):
        return f"({format_expr(e.base)} ** {e.exponent}){t}"
    if isinstance(e, Compare):
        parts = [format_expr(e.operands[0])]
        for op, rhs, ty in zip(e.ops, e.operands[1:], e.operand_types):
            parts += [f"{op}.{ty}", format_expr(rhs)]
        return "(" + " ".join(parts) + ")"
    if isinstance(e, BoolOp):
        return "(" + f" {e.op} ".join(map(format_expr, e.values)) + ")"
    if isinstance(e, IfExp):
        return f"({format_expr(e.then)} if {format_expr(e.cond)} else {format_expr(e.orelse)}){t}"
    if isinstance(e, Cast):
        return f"{e.type}({format_expr(e.operand)})"
    if isinstance(e, (Intrinsic, Call)):
        name = e.name if isinstance(e, Intrinsic) else e.func
        args = [format_expr(a) for a in e.args]
        extra = dict(getattr(e, "extra", None) or {})
        if "array" in extra and "indices" in extra:     # an atomic's target first
            indices = ", ".join(map(format_expr, extra.pop("indices")))
            args.insert(0, f"{extra.pop('array')}[{indices}]")
        text = ", ".join(args)
        if extra:     # what else the call names: its arrays, its constants
            text += ("; " if text else "") + ", ".join(f"{key}={_format_extra(value)}"
                                                       for key, value in extra.items())
        return f"{name}({text}){t}"
    if isinstance(e, TupleItem):
        return f"{format_expr(e.value)}[{e.index}]{t}"
    if isinstance(e, TupleExpr):
        return f"({', '.join(map(format_expr, e.items))}){t}"
    if isinstance(e, Once):
        return f"once {format_expr(e.value)}"
    if isinstance(e, ArrayArg):
        return e.array
    return f"<{type(e).__name__}>"


def _format_extra(value) -> str:
    """An intrinsic's extra: an expression, a list of them, an array element or slice
    (array, leading indices, start, width), a tensor copy's box or tile, or a constant."""
    if isinstance(value, Expr):
        return format_expr(value)
    if isinstance(value, list):
        return "[" + ", ".join(map(_format_extra, value)) + "]"
    if isinstance(value, tuple) and len(value) == 4 and isinstance(value[0], str):
        array, lead, start, width = value
        index = "".join(f"{format_expr(i)}, " for i in lead) + format_expr(start)
        return f"{array}[{index}{f' : +{width}' if width != 1 else ''}]"
    if isinstance(value, tuple) and len(value) == 3 and isinstance(value[0], str):
        array, lead, rest = value
        if isinstance(rest, tuple):         # a tensor copy's box: starts and extents
            parts = [f"{format_expr(s)} : +{n}" for s, n in zip(lead, rest)]
        else:                               # its tile: leading indices, whole dimensions
            parts = [format_expr(i) for i in lead] + [":"] * len(rest)
        return f"{array}[{', '.join(parts)}]"
    return str(value)


def format_body(body: list, indent: str = "    ") -> list:
    lines = []
    for s in body:
        lines += _format_stmt(s, indent)
    return lines


def _lead(s) -> str:
    return "".join(f"{format_expr(i)}, " for i in s.lead)


def _format_stmt(s: Stmt, ind: str) -> list:
    head = f"{ind}"
    if isinstance(s, Assign):
        return [f"{head}{', '.join(s.targets)} = {', '.join(map(format_expr, s.values))}"]
    if isinstance(s, Store):
        return [f"{head}{s.array}[{', '.join(map(format_expr, s.indices))}] = {format_expr(s.value)}"]
    if isinstance(s, VectorLoad):
        return [f"{head}{', '.join(s.targets)} = {s.array}[{_lead(s)}{format_expr(s.start)} : +{s.width}]"]
    if isinstance(s, VectorStore):
        return [f"{head}{s.array}[{_lead(s)}{format_expr(s.start)} : +{len(s.values)}] = "
                f"({', '.join(map(format_expr, s.values))})"]
    if isinstance(s, ExprStmt):
        return [f"{head}{format_expr(s.value)}"]
    if isinstance(s, MapShared):
        return [f"{head}{s.view} = map_shared_rank({s.array}, {format_expr(s.rank)})"]
    if isinstance(s, ViewArray):
        return [f"{head}{s.view} = {s.array}.view({s.elem})"]
    if isinstance(s, If):
        out = [f"{head}if {format_expr(s.cond)}:"] + format_body(s.body, ind + "    ")
        if s.orelse:
            out += [f"{head}else:"] + format_body(s.orelse, ind + "    ")
        return out
    if isinstance(s, While):
        return [f"{head}while {format_expr(s.cond)}:"] + format_body(s.body, ind + "    ")
    if isinstance(s, For):
        rng = ", ".join(map(format_expr, (s.start, s.stop, s.step)))
        return [f"{head}for {s.var} in range({rng}):"] + format_body(s.body, ind + "    ")
    if isinstance(s, StaticFor):
        if s.bodies is None:
            return [f"{head}for {s.var} in static{s.values}:"] + format_body(s.body, ind + "    ")
        out = []
        for value, body in zip(s.values, s.bodies):
            out += [f"{head}static {s.var} = {value}:"] + format_body(body, ind + "    ")
        return out
    if isinstance(s, Return):
        return [f"{head}return" + (f" {format_expr(s.value)}" if s.value is not None else "")]
    if isinstance(s, Assert):
        return [f"{head}assert {format_expr(s.cond)}, {s.message!r}"]
    if isinstance(s, Print):
        return [f"{head}printf({s.format!r}, {', '.join(map(format_expr, s.args))})"]
    return [f"{head}{type(s).__name__.lower()}"]


def format_func(f: FuncDef, key: str | None = None) -> str:
    """`f` as text; `key` names a device function specialised for Const values (`f[N=4]`)."""
    kind = "kernel" if f.is_kernel else "func"
    params = ", ".join(f"{p.name}: {p.type}" for p in f.params)
    ret = f" -> {f.return_type}" if f.return_type is not None else ""
    lines = [f"{kind} {key or f.name}({params}){ret}:"]
    for decl in f.arrays:
        extents = ", ".join(describe(n) for n in decl.shape)
        lines.append(f"    {decl.space} {decl.name}: {decl.elem}[{extents}]")
    if f.locals:
        lines.append("    # locals: " + ", ".join(f"{k}: {v}" for k, v in f.locals.items()))
    return "\n".join(lines + format_body(f.body))


def format_module(m: TypedModule) -> str:
    return "\n\n".join([format_func(f, key) for key, f in m.funcs.items()] + [format_func(m.kernel)])
