"""SSA construction: `typed.TypedModule` -> `ir.Function`, one kernel with its device functions inlined.

SSA is built directly from the tree as in Braun et al., "Simple and Efficient Construction of
SSA Form" (CC 2013): every variable write is recorded per block, a read looks the variable up
in the block and otherwise in its predecessors, placing phis at merge points. A block is
*sealed* once all its predecessors are known; reads in an unsealed block (a loop header while
its body is being built) create incomplete phis that are completed when it is sealed. Phis
whose arguments are all one value (or themselves) are removed on the spot.

Layout: the entry block, then blocks in the order code is emitted into them (loop headers,
bodies, latches, exits), then the kernel's exit block, then the cold blocks of debug checks.
Code after a `break`/`continue`/`return` and the arm of an `if` whose condition folds to a
constant are never built; integer and boolean arithmetic on constants is folded while building
(the scalar replacement of local arrays depends on it).

Notes on semantics (see also docs/design.md):
- `range` loops step a hidden induction variable; the loop variable is assigned from it at the
  top of every iteration, so writes to it in the body do not change the iteration count. A
  constant-step loop never steps past `stop` (where it could, it steps from `min(v, stop -
  step)`), so it cannot wrap around the type's end (`stepped_for`). With a run-time step
  (`step_sign == 0`) the loop instead counts down a hidden trip count,
  `len(range(start, stop, step))` computed once in unsigned arithmetic (`trip_count`), exact for
  every value of the type: one compare per iteration, whatever the step's sign.
- `static_range` loops are unrolled; a `StaticFor` with `bodies` has one typed body per value
  (the frontend typed the loop variable as a constant in each).
- Shift amounts are converted to 32 bits; shifting by the width or more gives what PTX gives
  (0 for `<<` and unsigned `>>`, the sign for signed `>>`), negative amounts are not an error.
- `shfl` attrs: `mode`, and `clamp` the PTX `c` operand (31 for idx/down/bfly, 0 for up); args:
  value, lane and, optionally, the member mask (else the whole warp) and the clamp as a value
  (then no `clamp` attr: a block that is not whole warps clamps at its last present lane).
- `math.exp` and the other transcendental functions inline the math library's `@ptxpy.func`
  of their type (`lower_intrinsics.call_library`, docs/math.md); f16/bf16 math is computed in f32.
- A `local_array` whose every access has a compile-time index after unrolling is replaced by
  one SSA variable per element; one access with a run-time (or out-of-range constant) index
  moves the array to `.local` memory (the build is simply restarted with it there).
"""
from __future__ import annotations

import itertools
import operator

from ptxpy.types import ArrayType, ConstType, Scalar, TupleType, bool_, f32, f64, i32, i64, u32, u64

from . import ir, typed
from .abi import NARROW_CARRIER, RESERVED_PTX_NAMES, ParamSpec, unique_ptx_names
from .backend.target import shared_bytes, shared_limit, sm_number
from .errors import CompileError, DeepRecursion
from .launch_shape import is_formula

PRINTF_MAX_ARGS = 32      # CUDA's printf drops arguments beyond 32
_UNSAFE_IN_SELECT = frozenset({"truediv", "floordiv", "mod"})
_SREG_INTRINSICS = frozenset(
    f"{base}.{axis}" for base in typed.DIM3_NAMES for axis in "xyz"
) | {"lane_id", "warp_id", "global_id", "program_id", "num_programs", "cluster_rank", "cluster_size"}


def build_function(module: typed.TypedModule, arch: str = "sm_90", options: dict | None = None) -> ir.Function:
    """Build the SSA form of `module.kernel` with every `@ptxpy.func` call inlined."""
    options = dict(options or {})
    in_memory: set = set()
    with DeepRecursion():
        while True:
            try:
                return _Builder(module, arch, options, in_memory).build()
            except _Demote as demote:
                in_memory.add(demote.decl)
            except CompileError as err:
                if err.source_line is None:
                    err.located(module.filename, module.source_lines)
                raise


class _Demote(Exception):
    """A local array in registers met a run-time index: the build restarts with it in memory."""

    def __init__(self, decl):
        super().__init__(decl.name)
        self.decl = decl


class _Array:
    """What an array name means in a scope: where its elements live and its shape values."""

    def __init__(self, name, elem, shape, space, base=None, nc=False, decl=None, uid=0,
                 large=False):
        self.name = name
        self.elem: Scalar = elem
        self.shape: list = shape      # one i32 Value per dimension
        self.space = space            # 'global' | 'shared' | 'local' | 'reg'
        self.base = base              # i64 address of element 0 (memory arrays)
        self.nc = nc                  # read through the read-only path
        self.decl = decl
        self.uid = uid
        self.large = large            # 2**31 elements or more: the linear index is 64-bit


class _ClusterView(_Array):
    """`view = ptxpy.map_shared_rank(array, rank)`: `array` in the shared memory of another
    block of the cluster. Its base, a shared::cluster address, is a variable: written where the
    view is mapped (again in each iteration of a loop), read where an element is used."""

    def __init__(self, builder, key, name: str, source: _Array):
        super().__init__(name, source.elem, source.shape, "shared::cluster", decl=source.decl,
                         large=source.large)
        self.builder, self.key = builder, key

    @property
    def base(self):
        return self.builder.read(self.key)

    @base.setter
    def base(self, value) -> None:
        pass        # (_Array.__init__ sets None: the base is the variable's)


class _ElemView(_Array):
    """`view = array.view(T)`: `array`'s memory (global or shared) as elements of `T`, `ratio`
    times as wide. Its last extent is computed where it is used, from the array's (which every
    use sees), so a view made inside a branch or a loop needs no variable."""

    def __init__(self, builder, name: str, elem, source: _Array, ratio: int):
        super().__init__(name, elem, source.shape, source.space, source.base, nc=source.nc,
                         decl=source.decl, large=source.large)
        self.builder, self.source, self.shift = builder, source, ratio.bit_length() - 1

    @property
    def shape(self):
        extents = list(self.source.shape)
        if self.shift:
            extents[-1] = self.builder.op("shr", extents[-1], ir.Const(i32, self.shift))
        return extents

    @shape.setter
    def shape(self, value) -> None:
        pass        # (_Array.__init__ sets the array's: the view's are computed)


class _Expansion:
    def __init__(self, builder, site):
        self.builder, self.site = builder, site

    def __enter__(self):
        self.outermost = self.builder.expansion is None
        if self.outermost:
            self.builder.expansion = self.site

    def __exit__(self, *exc):
        if self.outermost:
            self.builder.expansion = None
        return False


class _Scope:
    """One function instance: the kernel, or one inlined call."""

    def __init__(self, uid, func: typed.FuncDef):
        self.uid = uid
        self.func = func
        self.types = dict(func.locals)
        self.types.update({p.name: p.type for p in func.params if isinstance(p.type, Scalar)})
        self.arrays: dict[str, _Array] = {}
        self.loops: list = []          # (break target, continue target)
        self.ret_block = None
        self.ret_keys: list = []
        self.ret_types: list = []


#: typed expression class -> its `_Builder` method (looked up by name once)
_EXPR_HANDLERS: dict = {}


class _Builder:
    def __init__(self, module, arch, options, in_memory):
        kernel = module.kernel
        self.module = module
        self.func = ir.Function(kernel.name, [], filename=module.filename,
                                source_lines=list(module.source_lines), arch=arch, options=options)
        self.debug = bool(options.get("debug"))
        self.fast_math = bool(options.get("fast_math"))
        self.in_memory = in_memory
        self.loc = kernel.loc
        self.defs: dict = {}            # variable key -> {block: value}
        # Each open if/else (statement or expression, with its condition): the variables
        # assigned in it so far. bypass: a block where such a construct's paths merge (its arms,
        # its join) -> (the block it starts in, the variables assigned in it): a variable not
        # among them has there the value it had at the start, without a phi to find that out.
        self.assigned: list = []
        self.bypass: dict = {}
        self.var_types: dict = {}
        self.sealed: set = set()
        self.incomplete: dict = {}      # block -> {variable key: incomplete phi}
        self.filling: set = set()       # phis whose operands are being added
        self.uses: dict = {}            # instr -> instrs using it
        self.forward: dict = {}         # removed trivial phi -> its replacement
        self.placed: set = set()
        self.cold: list = []
        self.block_count = itertools.count()
        self.uids = itertools.count(1)
        self.symbols: set = set()
        self.tables: dict = {}          # (tuple constant's name, type) -> its .const _Array
        self.stmt_line = None           # the first line of the statement being built
        self.reads_to_check: list = []  # (value, name, loc) of variable reads through a phi
        self.exit_block = None
        self.call_depth = 0
        self.once_values = None         # TupleExpr being built: its shared operands (Once) -> values
        self.statements_built = 0       # (unrolled and inlined copies counted each time)
        self.expansion = None           # (what, loc) of the outermost unrolled loop or call
        self.entry = self.new_block("entry")
        self.sealed.add(self.entry)
        self.start(self.entry)
        self.scope = _Scope(0, kernel)
        self.kernel_scope = self.scope
        self.scalar_params: dict = {}   # name -> (ParamSpec, PTX name), for scalar_param
        self.tensor_map_params: dict = {}   # (array param, (box, swizzle)) -> its map's PTX name

    # --- driver ------------------------------------------------------------------------------
    def build(self) -> ir.Function:
        kernel = self.module.kernel
        self.emit_params(kernel)
        self.declare_arrays(self.scope, kernel, prefix="")
        self.stmts(kernel.body)
        self.loc = kernel.loc
        if self.exit_block is not None:
            self.br(self.exit_block)
            self.seal(self.exit_block)
            self.start(self.exit_block)
        if self.live:
            self.terminate(ir.Instr("ret", None))
        self.func.blocks += [b for b in self.cold if b.preds]
        self.warn_unassigned_reads()
        self.check_shared_limit(kernel)
        return self.func

    def check_shared_limit(self, kernel: typed.FuncDef) -> None:
        """The kernel's shared arrays, its device functions' included, fit one block on the
        target (past 48 KB they are dynamic shared memory: target.shared_layout)."""
        total = sum(shared_bytes(self.func.arrays))
        limit = shared_limit(self.func.arch)
        if total > limit:
            arrays = self.func.arrays
            first_over = next(decl for k, decl in enumerate(arrays)
                              if sum(shared_bytes(arrays[:k + 1])) > limit)
            raise CompileError(f"shared arrays take {total} bytes; {self.func.arch} gives a block at most "
                               f"{limit} ({limit // 1024} KB)", first_over.loc or kernel.loc)

    def warn_unassigned_reads(self) -> None:
        """A variable read where some path reaches it without an assignment (`if c: y = 1`,
        then `y`): Python would raise UnboundLocalError on that path, the kernel reads an
        undefined value. Legal (the path may never be taken), so a warning, once per name."""
        undefined = _phis_reaching_undef(self.func)
        warned = set()
        for value, name, loc in self.reads_to_check:
            value = self.resolve(value)
            if name not in warned and (isinstance(value, ir.Undef) or value in undefined):
                warned.add(name)
                self.func.warnings.append(
                    (loc, f"'{name}' may be used before it is assigned: on some path to here it "
                          "is not assigned (the value read there is undefined)"))

    def emit_params(self, kernel: typed.FuncDef) -> None:
        batched = {name: (div, mod) for name, div, mod in self.func.options.get("batched", ())}
        aliased = set(self.func.options.get("aliased", ()))
        large = set(self.func.options.get("large_arrays", ()))
        specs = unique_ptx_names(kernel.name, [self.param_spec(kernel, p) for p in kernel.params
                                               if not isinstance(p.type, ConstType)])
        self.func.params.extend(specs)
        self.symbols.update(name for spec in specs for name, _ in spec.ptx_params(kernel.name))
        self.symbols.update(RESERVED_PTX_NAMES)
        for spec, p in zip(specs, [p for p in kernel.params if not isinstance(p.type, ConstType)]):
            self.loc = getattr(p, "loc", None) or kernel.loc
            names = [name for name, _ in spec.ptx_params(kernel.name)]
            if spec.kind == "array":
                base = self.emit("param", ir.ADDR_TYPE, attrs={"name": names[0], "ptr": True})
                shape = [self.emit("param", i32, attrs={"name": name})
                         for name in names[1:1 + spec.rank]]
                for entry, name in zip(spec.tensor_maps, names[1 + spec.rank:]):
                    self.tensor_map_params[p.name, entry] = name
                if p.name in batched:
                    base = self.batch_item_base(base, shape, p.type.elem, *batched[p.name])
                # an aliased input's memory is written; an array read by an ordered load
                # (load_acquire) may be written meanwhile by another thread
                nc = (not spec.written and p.name not in aliased
                      and p.name not in kernel.ordered_arrays)
                self.scope.arrays[p.name] = _Array(p.name, p.type.elem, shape, "global", base, nc=nc,
                                                   large=p.name in large)
                continue
            self.scalar_params[p.name] = (spec, names[0])
            self.write(self.var_key(p.name, p.type), self.scalar_param(p.name))

    def scalar_param(self, name: str):
        """The kernel's scalar parameter `name` as the launch passes it (read again here)."""
        spec, ptx_name = self.scalar_params[name]
        if spec.by_ref:
            ptr = self.emit("param", ir.ADDR_TYPE, attrs={"name": ptx_name, "ptr": True})
            value = self.emit("load", spec.carrier or spec.dtype, [ptr], {"space": "global", "nc": True})
            return self.coerce(value, spec.dtype)
        return self.emit("param", spec.dtype, attrs={"name": ptx_name})

    def param_spec(self, kernel: typed.FuncDef, p) -> ParamSpec:
        if isinstance(p.type, ArrayType):
            return ParamSpec(p.name, "array", p.type.elem, p.type.rank,
                             written=p.name in kernel.written_arrays,
                             tensor_maps=kernel.tensor_maps.get(p.name, ()))
        if not isinstance(p.type, Scalar):
            raise CompileError(f"parameter '{p.name}' of type {p.type} cannot be passed to a kernel",
                               kernel.loc)
        narrow = p.name in self.func.options.get("narrow_refs", ())
        return ParamSpec(p.name, "scalar", p.type, by_ref=p.by_ref,
                         carrier=NARROW_CARRIER.get(p.type.name) if narrow else None)

    def batch_item_base(self, base, shape: list, elem: Scalar, div: int, mod: int):
        """Batched specialisation (docs/jax.md, vmap): the array holds one item of `shape` per
        batch index `(ctaid.z / div) % mod` (no `% mod` when mod is 0); returns the item's base
        `base + index * prod(shape) * elem size`, in 64-bit arithmetic."""
        index = self.coerce_bits(self.emit("sreg", i32, attrs={"name": "ctaid.z"}), u32)
        if div != 1:
            index = self.op("div", index, ir.Const(u32, div))
        if mod:
            index = self.op("rem", index, ir.Const(u32, mod))
        offset = self.emit("cvt", i64, [index])
        for extent in shape:
            offset = self.op("mul", offset, self.emit("cvt", i64, [self.coerce_bits(extent, u32)]))
        return self.op("add", base, self.op("mul", offset, ir.Const(i64, elem.nbytes)))

    def declare_arrays(self, scope: _Scope, func: typed.FuncDef, prefix: str) -> None:
        for decl in func.arrays:
            shape = (decl.shape,) if isinstance(decl.shape, int) else tuple(decl.shape)
            if any(map(is_formula, shape)):
                scope.arrays[decl.name] = self.launch_sized_array(decl, shape, prefix)
                continue
            count = 1
            for n in shape:
                count *= int(n)
            dims = [ir.Const(i32, int(n)) for n in shape]
            if decl.space == "local" and decl not in self.in_memory:
                scope.arrays[decl.name] = _Array(decl.name, decl.elem, dims, "reg", decl=decl,
                                                 uid=next(self.uids))
                continue
            space = "shared" if decl.space == "shared" else "local"
            symbol = self.unique_symbol(f"{'smem' if space == 'shared' else 'local'}_{prefix}{decl.name}")
            self.func.arrays.append(ir.SharedDecl(symbol, decl.elem, count, 16, space, loc=decl.loc))
            addr = ir.Instr("addr_of", ir.ADDR_TYPE, attrs={"symbol": symbol}, loc=self.loc)
            if self.entry.terminator is not None:
                self.entry.insert_before_terminator(addr)
            else:
                self.entry.append(addr)
            scope.arrays[decl.name] = _Array(decl.name, decl.elem, dims, space, addr, decl=decl)

    def launch_sized_array(self, decl, shape: tuple, prefix: str) -> _Array:
        """A shared array sized at launch (transpiler/launch_shape.py): it lies in the region
        after the static shared arrays, where `addr_of` of its symbol points (target.shared_layout),
        after the arrays of this kind declared before it, each on a 16-byte boundary. Its extents
        and place are computed where it is declared, from values every block knows from the
        start (`ntid`, the shape parameters), so each use sees the same ones."""
        earlier = [d.launch for d in self.func.arrays if d.launch]
        symbol = self.unique_symbol(f"smem_{prefix}{decl.name}")
        self.func.arrays.append(ir.SharedDecl(symbol, decl.elem, 0, 16, "shared",
                                              launch=(decl.name, decl.elem.nbytes, shape),
                                              loc=decl.loc))
        offset = ir.Const(i32, 0)
        for _, elem_bytes, extents in earlier:
            offset = self.op("add", offset, self.launch_region_bytes(extents, elem_bytes))
        dims = [self.launch_value(extent) for extent in shape]
        base = self.emit("addr_of", ir.ADDR_TYPE, attrs={"symbol": symbol})
        base = self.op("add", base, self.emit("cvt", i64, [offset]))
        return _Array(decl.name, decl.elem, dims, "shared", base, decl=decl)

    def launch_region_bytes(self, extents: tuple, elem_bytes: int):
        """An array's bytes rounded up to 16 (launch_shape.aligned), in i32."""
        count = ir.Const(i32, elem_bytes)
        for extent in extents:
            count = self.op("mul", count, self.launch_value(extent))
        return self.op("and", self.op("add", count, ir.Const(i32, 15)), ir.Const(i32, -16))

    def launch_value(self, formula):
        """An extent formula's i32 value, as the host computes it (launch_shape.evaluate)."""
        if isinstance(formula, int):
            return ir.Const(i32, formula)
        head = formula[0]
        if head == "block_dim":
            return self.emit("sreg", i32, attrs={"name": f"ntid.{formula[1]}"})
        if head == "shape":
            return self.kernel_scope.arrays[formula[1]].shape[formula[2]]
        if head == "scalar":    # the host checked that its value is an i32
            return self.coerce_bits(self.scalar_param(formula[1]), i32)
        if head == "neg":
            return self.binary("sub", i32, ir.Const(i32, 0), self.launch_value(formula[1]))
        a, b = self.launch_value(formula[1]), self.launch_value(formula[2])
        if head == "cdiv":
            from .lower_intrinsics import ceil_division

            return ceil_division(self, i32, a, b)
        names = {"+": "add", "-": "sub", "*": "mul", "//": "floordiv", "%": "mod", "min": "min",
                 "max": "max"}
        return self.binary(names[head], i32, a, b)

    def unique_symbol(self, base: str) -> str:
        """`base` as a PTX name not taken yet (PTX names are ASCII: `é` is written `_xe9`)."""
        if not base.isascii():
            base = "".join(c if c.isascii() else f"_x{ord(c):x}" for c in base)
        name, n = base, 1
        while name in self.symbols:
            n += 1
            name = f"{base}_{n}"
        self.symbols.add(name)
        return name

    # --- blocks and instructions -------------------------------------------------------------
    def new_block(self, hint: str) -> ir.Block:
        block = ir.Block(f"{hint}{next(self.block_count)}")
        block.func = self.func
        return block

    def start(self, block: ir.Block) -> None:
        """Continue emitting into `block`; it joins the layout only when something reaches it.

        A sealed block whose only predecessor jumps straight to it is merged into that
        predecessor instead (the continuation of an inlined call, most joins and latches).
        """
        if block in self.sealed and len(block.preds) == 1 and not block.instrs and not block.phis:
            pred = block.preds[0]
            if pred.terminator is not None and pred.terminator.op == "br" and pred in self.placed:
                ir.remove_instr(pred.terminator)
                block.preds.clear()
                self.block = pred
                return
        if (block.preds or block is self.entry) and block not in self.placed:
            self.placed.add(block)
            self.func.blocks.append(block)
        self.block = block

    @property
    def live(self) -> bool:
        return self.block in self.placed

    def resolve(self, value):
        forward = self.forward
        while value.__class__ is ir.Instr and value in forward:
            value = forward[value]
        return value

    def track(self, instr: ir.Instr) -> None:
        uses = self.uses
        for arg in instr.args:
            if arg.__class__ is ir.Instr:
                found = uses.get(arg)
                if found is None:
                    uses[arg] = [instr]
                else:
                    found.append(instr)

    def emit(self, op: str, type, args=(), attrs=None):
        forward = self.forward
        args = [self.resolve(a) if a.__class__ is ir.Instr and a in forward else a for a in args]
        folded = _fold(op, type, args, attrs or _NO_ATTRS)
        if folded is not None:
            return folded
        instr = ir.Instr(op, type, args, attrs, loc=self.loc)
        self.block.append(instr)
        self.track(instr)
        return instr

    def op(self, op: str, *args, **attrs):
        """An instruction whose result has the type of its first argument."""
        return self.emit(op, args[0].type, args, attrs)

    def terminate(self, instr: ir.Instr) -> None:
        instr.loc = instr.loc or self.loc
        instr.args = [self.resolve(a) for a in instr.args]
        live = self.live
        self.block.append(instr)
        self.track(instr)
        if live:
            for target in instr.targets:
                if target in self.sealed:
                    raise AssertionError(f"edge into sealed block {target}")
                target.preds.append(self.block)
        dead = self.new_block("dead")
        self.sealed.add(dead)
        self.block = dead

    def br(self, target: ir.Block) -> None:
        self.terminate(ir.Instr("br", None, targets=[target]))

    def cbr(self, cond, then: ir.Block, orelse: ir.Block) -> None:
        cond = self.resolve(cond)
        if isinstance(cond, ir.Const):
            self.br(then if cond.value else orelse)
        else:
            self.terminate(ir.Instr("cbr", None, [cond], targets=[then, orelse]))

    def cold_block(self, hint: str, fmt: str, args: list) -> ir.Block:
        """A block that prints `fmt` and traps, placed after all others. `args` are (value,
        type) pairs: each value is converted to the type its `%` directive reads in this
        block, off the path that passes the check."""
        block = self.new_block(hint)
        printed = [self._converted_in(block, self.resolve(value), ty) for value, ty in args]
        attrs = {"fmt": self.printf_format(fmt)}
        self._append(block, ir.Instr("printf", None, printed, attrs, loc=self.loc))
        self._append(block, ir.Instr("trap", None, loc=self.loc))
        self.cold.append(block)
        self.placed.add(block)
        return block

    def _converted_in(self, block: ir.Block, value, ty: Scalar):
        """`value` as `ty` (a `cvt` appended to `block` unless it is a constant or already is)."""
        if value.type == ty:
            return value
        if isinstance(value, ir.Const):
            return _const(ty, value.value)
        return self._append(block, ir.Instr("cvt", ty, [value], loc=self.loc))

    def _append(self, block: ir.Block, instr: ir.Instr) -> ir.Instr:
        block.append(instr)
        self.track(instr)
        return instr

    def printf_format(self, fmt: str) -> str:
        """`fmt` if vprintf can print it: the PTX holds it as a NUL-terminated UTF-8 string."""
        if "\0" in fmt:
            raise CompileError("print() text cannot contain a NUL character ('\\0')", self.loc)
        try:
            fmt.encode("utf-8")
        except UnicodeEncodeError:
            raise CompileError("print() text and assert messages must be valid Unicode "
                               "(this one has a lone surrogate)", self.loc) from None
        return fmt

    def where(self) -> str:
        name = self.func.filename.encode("utf-8", "replace").decode().replace("%", "%%")
        return f"{name}:{self.loc[0] if self.loc else 0}"

    # --- variables (Braun et al.) ------------------------------------------------------------
    def var_key(self, name: str, type=None):
        key = (self.scope.uid, name)
        if key not in self.var_types:
            ty = self.scope.types.get(name, type)
            if not isinstance(ty, Scalar):
                raise CompileError(f"variable '{name}' has no scalar type", self.loc)
            self.var_types[key] = ty
        return key

    def hidden(self, type: Scalar):
        key = ("$", next(self.uids))
        self.var_types[key] = type
        return key

    def write(self, key, value, block=None) -> None:
        self.defs.setdefault(key, {})[block or self.block] = value
        if self.assigned:
            self.assigned[-1].add(key)

    def read(self, key, block=None):
        block = block or self.block
        defs = self.defs.setdefault(key, {})
        bypass = self.bypass
        path = []
        while block not in defs and block in self.sealed:
            if len(block.preds) == 1:
                path.append(block)
                block = block.preds[0]
                continue
            skip = bypass.get(block)
            if skip is None or key in skip[1] or not block.preds:
                break
            path.append(block)
            block = skip[0]
        value = self.resolve(defs[block]) if block in defs else self.read_at_merge(key, block)
        for b in path:
            defs[b] = value
        return value

    def read_at_merge(self, key, block: ir.Block):
        ty = self.var_types[key]
        defs = self.defs[key]           # (what a read finds, not an assignment: no `write`)
        if block not in self.sealed:
            value = self.new_phi(block, ty)
            self.incomplete.setdefault(block, {})[key] = value
        elif not block.preds:
            value = ir.Undef(ty)
        else:
            phi = self.new_phi(block, ty)
            defs[block] = phi
            value = self.add_phi_operands(key, phi)
        defs[block] = value
        return value

    def open_merge(self) -> tuple:
        """Start an if/else (statement or expression) in the current block: (that block, the
        set that will hold the variables assigned in it, its condition included)."""
        assigned = set()
        self.assigned.append(assigned)
        return self.block, assigned

    def close_merge(self, start: tuple, *merges: ir.Block) -> None:
        """End the if/else `start`: at its blocks `merges` (the arms, the join), a variable it
        does not assign is read from where it started."""
        head, assigned = start
        self.assigned.pop()
        if self.assigned:
            self.assigned[-1] |= assigned
        for block in merges:
            self.bypass[block] = (head, assigned)

    def new_phi(self, block: ir.Block, ty: Scalar) -> ir.Instr:
        phi = ir.Instr("phi", ty, loc=self.loc)
        block.append(phi)
        return phi

    def add_phi_operands(self, key, phi: ir.Instr):
        self.filling.add(phi)
        for pred in phi.block.preds:
            phi.args.append(self.read(key, pred))
        self.filling.discard(phi)
        phi.args = [self.resolve(a) for a in phi.args]
        self.track(phi)
        return self.remove_trivial_phi(phi)

    def remove_trivial_phi(self, phi: ir.Instr):
        same = None
        for arg in phi.args:
            arg = self.resolve(arg)
            if arg is phi or (same is not None and _same_value(arg, same)):
                continue
            if same is not None:
                return phi
            same = arg
        if same is None:
            same = ir.Undef(phi.type)
        self.forward[phi] = same
        users = [u for u in self.uses.pop(phi, []) if u is not phi]
        for user in users:
            user.args = [same if a is phi else a for a in user.args]
            if isinstance(same, ir.Instr):
                self.uses.setdefault(same, []).append(user)
        ir.remove_instr(phi)
        for user in users:
            if user.is_phi and user.block is not None and user not in self.filling:
                self.remove_trivial_phi(user)
        return same

    def seal(self, block: ir.Block) -> None:
        if block in self.sealed:
            return
        self.sealed.add(block)
        for key, phi in self.incomplete.pop(block, {}).items():
            self.add_phi_operands(key, phi)

    # --- statements --------------------------------------------------------------------------
    def stmts(self, body: list) -> None:
        self.statements_built += len(body)
        if self.statements_built > typed.MAX_STATEMENTS:
            raise self.too_large()
        outer = self.stmt_line
        for stmt in body:
            if not self.live:
                break
            self.loc = stmt.loc or self.loc
            self.stmt_line = self.loc[0] if self.loc else None
            handler = getattr(self, "s_" + type(stmt).__name__, None)
            if handler is None:
                raise CompileError(f"cannot compile a {type(stmt).__name__} statement", stmt.loc)
            handler(stmt)
        self.stmt_line = outer

    def too_large(self) -> CompileError:
        what, loc = self.expansion or ("kernel", self.loc)
        if what == "loop":
            return CompileError(f"unrolling this ptxpy.static_range, with the loops and calls "
                                f"inside it, gives more than {typed.MAX_STATEMENTS} statements; use "
                                "range() for a loop that need not be unrolled", loc)
        if what == "call":
            return CompileError(f"inlining this call, with the calls and unrolled loops inside "
                                f"it, gives more than {typed.MAX_STATEMENTS} statements: every "
                                "@ptxpy.func call is inlined, so a function that calls another "
                                "twice doubles the code at each level", loc)
        return CompileError(f"this kernel has more than {typed.MAX_STATEMENTS} statements", loc)

    def expanding(self, what: str, loc):
        """Context of an unrolled loop or an inlined call: the outermost one is what
        `too_large` names."""
        return _Expansion(self, (what, loc))

    def expr_loc(self, loc):
        """An expression's loc for its instructions: on a line after its statement's first,
        it also names that line, `(line, col, statement line)`, for the PTX to show the
        statement as one comment (emit.py)."""
        if loc[0] == self.stmt_line or self.stmt_line is None:
            return loc
        return (loc[0], loc[1], self.stmt_line)

    def s_Pass(self, s) -> None:
        pass

    def s_ExprStmt(self, s) -> None:
        self.ev(s.value)

    def s_Assign(self, s) -> None:
        if len(s.values) == 1 and (len(s.targets) > 1 or isinstance(s.values[0].type, TupleType)):
            values = self.ev_tuple(s.values[0])
        else:
            values = [self.ev(v) for v in s.values]
        if len(values) != len(s.targets):
            raise CompileError(f"cannot assign {len(values)} values to {len(s.targets)} names", s.loc)
        for name, value in zip(s.targets, values):
            self.assign(name, value)

    def assign(self, name: str, value) -> None:
        key = self.var_key(name, value.type)
        self.write(key, self.coerce(value, self.var_types[key]))

    def s_MapShared(self, s) -> None:
        source = self.array(s.array)
        if source.space != "shared":
            where = {"global": "an array parameter, in global memory",
                     "shared::cluster": "itself a view of another block's shared memory"}.get(
                         source.space, "a local array")
            raise CompileError(f"ptxpy.map_shared_rank maps a shared array (ptxpy.shared_array); "
                               f"'{s.array}' is {where}", s.loc)
        if sm_number(self.func.arch) < 90:
            raise CompileError(f"ptxpy.map_shared_rank needs sm_90 or newer (thread-block "
                               f"clusters); the target is {self.func.arch}", s.loc)
        rank = self.coerce_bits(self.ev(s.rank), u32)
        if self.debug:
            size = self.emit("sreg", i32, attrs={"name": "cluster_nctarank"})
            ok = self.emit("cmp", bool_, [rank, self.coerce_bits(size, u32)], {"pred": "lt"})
            self.check(ok, f"{self.where()}: ptxpy.map_shared_rank: rank %u is not a block of the "
                           "cluster, which has %d\n", [(rank, u32), (size, i32)])
        key = ("$view", self.scope.uid, s.view)
        self.var_types[key] = ir.ADDR_TYPE
        self.write(key, self.emit("mapa", ir.ADDR_TYPE, [source.base, rank]))
        if s.view not in self.scope.arrays:
            self.scope.arrays[s.view] = _ClusterView(self, key, s.view, source)

    def s_ViewArray(self, s) -> None:
        source = self.array(s.array)
        if source.space not in ("global", "shared"):
            where = {"shared::cluster": "a view of another block's shared memory"}.get(
                source.space, "a local array")
            raise CompileError(f"{s.array}.view({s.elem}): views are of array parameters and "
                               f"shared arrays; '{s.array}' is {where}", s.loc)
        ratio = s.elem.nbytes // source.elem.nbytes
        if self.debug and ratio > 1:
            last = source.shape[-1]
            ok = self.emit("cmp", bool_, [self.op("and", last, ir.Const(i32, ratio - 1)),
                                          ir.Const(i32, 0)], {"pred": "eq"})
            self.check(ok, f"{self.where()}: {s.array}.view({s.elem}): the last extent of "
                           f"'{s.array}' (%d elements of {source.elem.nbytes} bytes) is not a "
                           f"whole number of {s.elem.nbytes}-byte elements\n", [(last, i32)])
        if s.view not in self.scope.arrays:
            self.scope.arrays[s.view] = _ElemView(self, s.view, s.elem, source, ratio)

    def s_Store(self, s) -> None:
        value = self.ev(s.value)
        indices = [self.ev(i) for i in s.indices]
        array = self.array(s.array)
        self.store_elem(array, indices, self.coerce(value, array.elem))

    def s_If(self, s) -> None:
        cond = None
        if _simple(s.cond):
            cond = self.as_bool(self.ev(s.cond))
            if isinstance(cond, ir.Const):
                self.stmts(s.body if cond.value else s.orelse)
                return
        then, join = self.new_block("then"), self.new_block("endif")
        orelse = self.new_block("else") if s.orelse else join
        merge = self.open_merge()
        if cond is not None:
            self.cbr(cond, then, orelse)
        else:
            self.branch(s.cond, then, orelse)
        self.seal(then)
        self.start(then)
        self.stmts(s.body)
        self.br(join)
        if s.orelse:
            self.seal(orelse)
            self.start(orelse)
            self.stmts(s.orelse)
            self.br(join)
        self.close_merge(merge, then, orelse, join)
        self.seal(join)
        self.start(join)

    def s_While(self, s) -> None:
        header = self.new_block("while")
        self.br(header)
        self.start(header)
        body, exit = self.new_block("body"), self.new_block("endwhile")
        self.branch(s.cond, body, exit)
        self.loop_body(body, s.body, exit, header)
        self.br(header)
        self.seal(header)
        self.seal(exit)
        self.start(exit)

    def loop_body(self, body: ir.Block, stmts: list, exit: ir.Block, next: ir.Block) -> None:
        self.seal(body)
        self.start(body)
        self.scope.loops.append((exit, next))
        self.stmts(stmts)
        self.scope.loops.pop()

    def s_For(self, s) -> None:
        ty = self.scope.types.get(s.var, s.start.type)
        start, stop, step = (self.coerce(self.ev(e), ty) for e in (s.start, s.stop, s.step))
        if _runs_at_least_once(start, stop, step, s.step_sign):
            # the variable is assigned on every path out of the loop: no warning for a read after it
            self.assign(s.var, start)
        if s.step_sign == 0:
            self.counted_for(s, start, stop, step)
        else:
            self.stepped_for(s, start, stop, step)

    def stepped_for(self, s, start, stop, step) -> None:
        """A constant-step loop, tested at its header (`v < stop`, `v > stop` for a negative
        step). Where `v + step` could wrap past the type's end, the latch steps from
        `min(v, stop - step)` instead (`max` for a negative step; `latch_limit`): a value past
        the last one then lands on `stop` itself rather than wrapping around to the type's
        other end, and the header test ends the loop. (Rotated loops, the other exact form,
        measured 6% slower on examples/matmul.py: BENCHMARKS.md, session 31.)"""
        pred = "lt" if s.step_sign > 0 else "gt"
        limit = self.latch_limit(stop, step, s.step_sign)
        induction = self.hidden(start.type)
        self.write(induction, start)

        def advance(iv):
            if limit is not None:
                iv = self.op("min" if s.step_sign > 0 else "max", iv, limit)
            if s.step_sign < 0 and not step.type.is_signed:   # an unsigned loop counting down
                self.write(induction, self.op("sub", iv, _const(step.type, _step_size(step, -1))))
            else:
                self.write(induction, self.op("add", iv, step))

        self.range_loop(s, induction, lambda iv: self.emit("cmp", bool_, [iv, stop], {"pred": pred}),
                        advance)

    def latch_limit(self, stop, step, sign: int):
        """`stop - step`, clamped to the type's end, or None where `v + step` cannot wrap for any
        `v` short of `stop` (a step of 1 or -1, or a constant `stop` far enough from the end).
        The clamp keeps `min(v, limit) + step` from wrapping when `stop` lies within a step of
        the type's other end (the loop then ends after its first iteration)."""
        ty = stop.type
        lo, hi = (-(1 << (ty.bits - 1)), (1 << (ty.bits - 1)) - 1) if ty.is_signed else (0, (1 << ty.bits) - 1)
        size = _step_size(step, sign)
        far_from_end = isinstance(stop, ir.Const) and lo - sign * size - 1 <= stop.value <= hi - sign * size + 1
        if size == 1 or far_from_end:
            return None
        if sign > 0:
            clamped = self.op("max", stop, _const(ty, lo + size))
        else:
            clamped = self.op("min", stop, _const(ty, hi - size))
        return self.op("sub", clamped, step)   # in an unsigned type, modulo its size

    def counted_for(self, s, start, stop, step) -> None:
        """A run-time step: the trip count, computed once, is counted down (one compare per
        iteration instead of testing both directions)."""
        induction = self.hidden(start.type)
        self.write(induction, start)
        count = self.trip_count(start, stop, step)
        counter = self.hidden(count.type)
        self.write(counter, count)

        def left_over(iv):
            return self.emit("cmp", bool_, [self.read(counter), _const(count.type, 0)], {"pred": "ne"})

        def advance(iv):
            self.write(induction, self.op("add", iv, step))
            self.write(counter, self.op("sub", self.read(counter), _const(count.type, 1)))

        self.range_loop(s, induction, left_over, advance)

    def range_loop(self, s, induction, test, advance) -> None:
        """The blocks of `for v in range(...)`: `test(v)` at the header, the body with `v`
        assigned, and `advance(v)` at the latch (the target of `continue`)."""
        header = self.new_block("for")
        self.br(header)
        self.start(header)
        iv = self.read(induction)
        cond = test(iv)
        body, latch, exit = self.new_block("body"), self.new_block("next"), self.new_block("endfor")
        self.cbr(cond, body, exit)
        self.seal(body)
        self.start(body)
        self.assign(s.var, iv)
        self.scope.loops.append((exit, latch))
        self.stmts(s.body)
        self.scope.loops.pop()
        self.br(latch)
        self.seal(latch)
        self.start(latch)
        advance(iv)
        self.br(header)
        self.seal(header)
        self.seal(exit)
        self.start(exit)

    def trip_count(self, start, stop, step):
        """`len(range(start, stop, step))` for a step whose sign is only known at run time (0 for
        a zero step), as an unsigned integer of at least 32 bits. Exact for every value of the
        loop's type: the distance between the bounds and the step's magnitude are computed in
        the unsigned type of the operands' width (narrower types are widened first)."""
        ty = start.type
        if ty.bits < 32:
            wide = i32 if ty.is_signed else u32
            start, stop, step = (self.emit("cvt", wide, [v]) for v in (start, stop, step))
            ty = wide
        unsigned = u32 if ty.bits == 32 else u64
        zero = _const(ty, 0)
        up = self.emit("cmp", bool_, [step, zero], {"pred": "gt"})
        nonempty = self.op("and", up, self.emit("cmp", bool_, [start, stop], {"pred": "lt"}))
        if ty.is_signed:
            down = self.emit("cmp", bool_, [step, zero], {"pred": "lt"})
            below = self.op("and", down, self.emit("cmp", bool_, [start, stop], {"pred": "gt"}))
            nonempty = self.op("or", nonempty, below)
            span = self.emit("select", ty, [up, self.op("sub", stop, start), self.op("sub", start, stop)])
            size = self.op("abs", step)         # abs of the most negative value wraps to it
        else:
            span, size = self.op("sub", stop, start), step
        span, size = self.coerce(span, unsigned), self.coerce(size, unsigned)
        one = _const(unsigned, 1)
        size = self.op("max", size, one)              # a zero step: no iterations, no division by 0
        count = self.op("add", self.op("div", self.op("sub", span, one), size), one)
        return self.emit("select", unsigned, [nonempty, count, _const(unsigned, 0)])

    def s_StaticFor(self, s) -> None:
        ty = self.scope.types.get(s.var, i32)
        bodies = s.bodies if s.bodies is not None else [s.body] * len(s.values)
        jumps = any(_has_loop_jump(body) for body in (bodies if s.bodies is not None else [s.body]))
        exit = self.new_block("endstatic") if jumps else None
        with self.expanding("loop", s.loc):
            self.unroll(s, ty, bodies, jumps, exit)
        if jumps:
            self.br(exit)
            self.seal(exit)
            self.start(exit)

    def unroll(self, s, ty, bodies, jumps, exit) -> None:
        for value, stmts in zip(s.values, bodies):
            if not self.live:
                break
            self.loc = s.loc
            self.assign(s.var, _const(ty, value))
            if not jumps:
                self.stmts(stmts)
                continue
            nxt = self.new_block("iter")
            self.scope.loops.append((exit, nxt))
            self.stmts(stmts)
            self.scope.loops.pop()
            self.br(nxt)
            self.seal(nxt)
            self.start(nxt)

    def s_Break(self, s) -> None:
        self.br(self.loop_targets(s, "break")[0])

    def s_Continue(self, s) -> None:
        self.br(self.loop_targets(s, "continue")[1])

    def loop_targets(self, s, what: str):
        if not self.scope.loops:
            raise CompileError(f"'{what}' outside a loop", s.loc)
        return self.scope.loops[-1]

    def s_Return(self, s) -> None:
        scope = self.scope
        if scope.func.is_kernel:
            if s.value is not None:
                raise CompileError("a kernel cannot return a value (write it to an output array)", s.loc)
            if self.exit_block is None:
                self.exit_block = self.new_block("exit")
            self.br(self.exit_block)
            return
        if s.value is None:
            values = []
        elif isinstance(scope.func.return_type, TupleType):     # also a 1-tuple
            values = self.ev_tuple(s.value)
        else:
            values = [self.ev(s.value)]
        if len(values) != len(scope.ret_types):
            raise CompileError(f"'{scope.func.name}' must return {len(scope.ret_types)} value(s)", s.loc)
        for key, ty, value in zip(scope.ret_keys, scope.ret_types, values):
            self.write(key, self.coerce(value, ty))
        self.br(scope.ret_block)

    def s_Assert(self, s) -> None:
        if not self.debug:
            return
        message = (": " + s.message) if s.message else ""
        fmt = f"{self.where()}: assertion failed{message.replace('%', '%%')}\n"
        ok = self.new_block("assert_ok")
        self.branch(s.cond, ok, self.cold_block("assert_fail", fmt, []))
        self.seal(ok)
        self.start(ok)

    def s_Print(self, s) -> None:
        if len(s.args) > PRINTF_MAX_ARGS:
            raise CompileError(f"print() with {len(s.args)} values: device printf takes at most "
                               f"{PRINTF_MAX_ARGS} (literals do not count)", s.loc)
        args = [self.printf_arg(self.ev(a)) for a in s.args]
        self.emit("printf", None, args, {"fmt": self.printf_format(s.format)})

    def printf_arg(self, value):
        ty = value.type
        if ty.is_float and ty.bits < 64:
            return self.emit("cvt", f64, [value])
        if ty.is_bool or (ty.is_int and ty.bits < 32):
            return self.emit("cvt", u32 if ty.kind == "uint" else i32, [value])
        return value

    def s_VectorLoad(self, s) -> None:
        array = self.array(s.array)
        lead = [self.ev(i) for i in s.lead]
        start = self.ev(s.start)
        if self.vectorizable(array, s.width):
            addr = self.vector_address(array, lead, start, s.width, where=s.start.loc)
            values = []
            for piece, n in self.vector_pieces(array, addr, s.width):
                attrs = {"space": array.space, "nc": array.nc, "n": n}
                vec = self.emit("vload", array.elem, [piece], attrs)
                values += [self.emit("extract", array.elem, [vec], {"index": k}) for k in range(n)]
        else:
            values = [self.load_elem(array, [*lead, self.op("add", start, _const(start.type, k))])
                      for k in range(s.width)]
        for name, value in zip(s.targets, values):
            self.assign(name, value)

    def s_VectorStore(self, s) -> None:
        values = [self.ev(v) for v in s.values]
        array = self.array(s.array)
        lead = [self.ev(i) for i in s.lead]
        start = self.ev(s.start)
        values = [self.coerce(v, array.elem) for v in values]
        if self.vectorizable(array, len(values)):
            addr = self.vector_address(array, lead, start, len(values), where=s.start.loc)
            for k, (piece, n) in enumerate(self.vector_pieces(array, addr, len(values))):
                self.emit("vstore", None, [piece, *values[k * n:(k + 1) * n]], {"space": array.space})
            return
        for k, value in enumerate(values):
            self.store_elem(array, [*lead, self.op("add", start, _const(start.type, k))], value)

    def vectorizable(self, array: _Array, width: int) -> bool:
        return array.space != "reg" and width in (2, 4, 8) and width * array.elem.nbytes <= 32

    def vector_pieces(self, array: _Array, addr, width: int) -> list:
        """[(address, elements)] of the accesses a vector access of `width` elements is made of:
        one, or two of 16 bytes for 4 elements of a 64-bit type (an access is at most 128 bits
        before sm_100)."""
        if width * array.elem.nbytes <= 16:
            return [(addr, width)]
        half = width // 2
        return [(addr, half), (self.op("add", addr, ir.Const(i64, half * array.elem.nbytes)), half)]

    def vector_address(self, array: _Array, lead: list, start, width: int, guard=None,
                       where=None):
        """Address of `array[*lead, start]`; under debug, checks that the flat element index is a
        multiple of `width` (so the access is aligned) and that all `width` elements are in bounds
        (where `guard`, a bool, is true: an access it turns off reads nothing). `where`: the
        source position of `start`, for the warning of a constant misaligned one."""
        indices = [*lead, start]
        start = self.resolve(start)
        if isinstance(start, ir.Const) and start.value % width:
            self.warn(f"misaligned vector access: '{array.name}' at element {start.value} of its "
                      f"last axis, which is not a multiple of {width} (a GPU fault when it runs)",
                      where)
        what = (f"misaligned vector access to '{array.name}' at element %lld (must be a multiple "
                f"of {width})")
        return self.span_address(array, lead, start, width, width * array.elem.nbytes, what,
                                 array.elem.nbytes, guard)

    def span_address(self, array: _Array, lead: list, start, width: int, align: int, what: str,
                     unit: int = 1, guard=None):
        """Address of `array[*lead, start]`, the first of `width` elements; under debug the span
        is checked against the array's bounds (where `guard`, a bool, is true) and its byte
        offset for a multiple of `align`: a misaligned one stops with `what`, whose %lld is the
        offset in `unit`s (1: bytes; the element size: elements)."""
        address = self.element_address(array, [*lead, start], checked=True)
        if self.debug:
            self.bounds_check(array, [*lead, start], guard)
            self.bounds_check(array, [*lead, self.op("add", start, _const(start.type, width - 1))], guard)
            offset = self.op("sub", address, array.base)
            misaligned = self.op("and", offset, ir.Const(i64, align - 1))
            shown = offset if unit == 1 else self.op("div", offset, ir.Const(i64, unit))
            aligned = self.emit("cmp", bool_, [misaligned, ir.Const(i64, 0)], {"pred": "eq"})
            self.check(self.unless_off(aligned, guard), f"{self.where()}: {what}\n", [(shown, i64)])
        return address

    # --- arrays ------------------------------------------------------------------------------
    def array(self, name: str) -> _Array:
        array = self.scope.arrays.get(name)
        if array is None:
            raise CompileError(f"'{name}' is not an array", self.loc)
        return array

    def load_elem(self, array: _Array, indices: list):
        if array.space == "reg":
            return self.read(self.register_element(array, indices))
        addr = self.element_address(array, indices)
        attrs = {"space": array.space}
        if array.nc:
            attrs["nc"] = True
        return self.emit("load", array.elem, [addr], attrs)

    def store_elem(self, array: _Array, indices: list, value) -> None:
        if array.space == "reg":
            self.write(self.register_element(array, indices), value)
            return
        addr = self.element_address(array, indices)
        self.emit("store", None, [addr, value], {"space": array.space})

    def register_element(self, array: _Array, indices: list):
        """The variable key of a register array element; the index must be a constant in range."""
        self.check_rank(array, indices)
        flat = 0
        for index, extent in zip(indices, array.shape):
            index = self.resolve(index)
            if not isinstance(index, ir.Const) or not 0 <= index.value < extent.value:
                raise _Demote(array.decl)
            flat = flat * extent.value + index.value
        key = ("$reg", array.uid, flat)
        self.var_types.setdefault(key, array.elem)
        return key

    def check_rank(self, array: _Array, indices: list) -> None:
        if len(indices) != len(array.shape):
            raise CompileError(f"'{array.name}' has {len(array.shape)} dimension(s), "
                               f"indexed with {len(indices)}", self.loc)

    def element_address(self, array: _Array, indices: list, checked: bool = False):
        """base + row-major linear index * element size (i32 arithmetic unless an index is 64-bit
        or the array has 2**31 elements or more)."""
        self.check_rank(array, indices)
        if array.space in ("shared", "local", "shared::cluster"):
            self.warn_constant_out_of_bounds(array, indices)
        if self.debug and not checked:
            self.bounds_check(array, indices)
        wide = array.large or any(v.type.bits > 32 for v in indices)
        ity = i64 if wide else i32
        linear = None
        for index, extent in zip(indices, array.shape):
            index = self.coerce(index, ity)
            if linear is None:
                linear = index
            else:
                linear = self.op("add", self.op("mul", linear, self.coerce(extent, ity)), index)
        size = array.elem.nbytes
        if wide:
            offset = self.op("mul", linear, ir.Const(i64, size))
        else:
            offset = self.emit("mul_wide", i64, [linear, ir.Const(i32, size)])
        return self.op("add", array.base, offset)

    def warn_constant_out_of_bounds(self, array: _Array, indices: list) -> None:
        """A constant index outside a shared or local array's constant extent: legal where that
        code never runs (a guarded copy of an unrolled loop), so a warning."""
        for axis, (index, extent) in enumerate(zip(indices, array.shape)):
            index = self.resolve(index)
            if (isinstance(index, ir.Const) and isinstance(extent, ir.Const)
                    and not 0 <= index.value < extent.value):
                self.warn(f"index {index.value} is out of bounds for axis {axis} of '{array.name}' "
                          f"({extent.value} elements): the access is undefined if it runs")
                return

    def warn(self, message: str, loc=None) -> None:
        """A warning at `loc` (the statement being built's position by default)."""
        entry = (loc or self.loc, message)
        if entry not in self.func.warnings:
            self.func.warnings.append(entry)

    def bounds_check(self, array: _Array, indices: list, guard=None) -> None:
        """Under debug: trap unless every index is in range (or `guard`, a bool, is false)."""
        self.check_rank(array, indices)
        for axis, (index, extent) in enumerate(zip(indices, array.shape)):
            uty = u64 if index.type.bits > 32 else u32
            ok = self.emit("cmp", bool_, [self.coerce_bits(index, uty), self.coerce_bits(extent, uty)],
                           {"pred": "lt"})
            ok = self.unless_off(ok, guard)
            shown, conversion = (u64, "%llu") if index.type == u64 else (i64, "%lld")
            fmt = (f"{self.where()}: index out of bounds: index {conversion} is not in [0, %d) "
                   f"for axis {axis} of '{array.name}'\n")
            self.check(ok, fmt, [(index, shown), (extent, i32)])

    def unless_off(self, ok, guard):
        """`ok`, or true where `guard` (a bool; None: always on) turns the access off."""
        if guard is None:
            return ok
        return self.emit("select", bool_, [guard, ok, ir.Const(bool_, True)])

    def check(self, ok, fmt: str, args: list) -> None:
        """Continue when `ok`, else print `fmt` and trap (in a cold block)."""
        ok = self.resolve(ok)
        if isinstance(ok, ir.Const) and ok.value:
            return
        cont = self.new_block("ok")
        self.cbr(ok, cont, self.cold_block("oob", fmt, args))
        self.seal(cont)
        self.start(cont)

    def coerce_bits(self, value, ty: Scalar):
        """Convert an integer to `ty` keeping its bits (sign-extended when widening)."""
        if value.type.is_bool:
            value = self.emit("cvt", i32, [value])
        return self.coerce(value, ty)

    # --- expressions -------------------------------------------------------------------------
    def ev(self, e):
        saved = self.loc
        loc = getattr(e, "loc", None)
        if loc:
            self.loc = loc if loc[0] == self.stmt_line else self.expr_loc(loc)
        try:
            handler = _EXPR_HANDLERS.get(e.__class__) or self._expr_handler(e.__class__)
            return handler(self, e)
        finally:
            self.loc = saved

    def _expr_handler(self, cls):
        """`_Builder.x_NAME` for expressions of class NAME, kept in `_EXPR_HANDLERS`."""
        handler = getattr(_Builder, "x_" + cls.__name__, None)
        if handler is None:
            raise CompileError(f"cannot compile a {cls.__name__} expression", self.loc)
        _EXPR_HANDLERS[cls] = handler
        return handler

    def ev_tuple(self, e) -> list:
        """The values of a tuple-valued expression: a call returning a tuple, or `return a, b`."""
        values = [self.ev(x) for x in e] if isinstance(e, (list, tuple)) else self.ev(e)
        if not isinstance(values, list):
            raise CompileError("expected a tuple value", getattr(e, "loc", self.loc))
        return values

    def x_TupleExpr(self, e):
        """`return a, b` in a function returning a tuple (frontend's typecheck.TupleExpr), and
        the tuples of `divmod` and `math.frexp`, whose items share operands (`Once`)."""
        saved, self.once_values = self.once_values, {}
        try:
            return [self.ev(x) for x in e.items]
        finally:
            self.once_values = saved

    def x_Once(self, e):
        """A shared operand: its value in this TupleExpr, evaluated by the first item to read it."""
        if self.once_values is None:
            return self.ev(e.value)
        value = self.once_values.get(e)
        if value is None:
            value = self.once_values[e] = self.ev(e.value)
        return value

    def coerce(self, value, ty: Scalar):
        """`value` converted to `ty` as a cast does (to bool: != 0)."""
        if value.type is ty or value.type == ty:
            return value
        if ty.is_bool:
            return self.emit("cmp", bool_, [value, _const(value.type, 0)], {"pred": "ne"})
        return self.emit("cvt", ty, [value])

    def as_bool(self, value):
        return self.coerce(value, bool_)

    def x_Constant(self, e):
        return _const(e.type, e.value)

    def x_Var(self, e):
        value = self.read(self.var_key(e.name, e.type))
        if value.__class__ is ir.Undef or value.__class__ is ir.Instr and value.op == "phi":
            self.reads_to_check.append((value, e.name, e.loc or self.loc))
        return value

    def x_Load(self, e):
        indices = [self.ev(i) for i in e.indices]
        return self.load_elem(self.array(e.array), indices)

    def x_TableLoad(self, e):
        index = self.ev(e.index)
        return self.load_elem(self.table(e), [index])

    def table(self, e: typed.TableLoad) -> _Array:
        """The tuple constant's numbers as a `.const` array of `e.type`, declared once."""
        key = (e.table, e.type)
        if key not in self.tables:
            values = e.values
            suffix = "" if not any(k[0] == e.table for k in self.tables) else f"_{e.type}"
            symbol = self.unique_symbol(f"const_{e.table}{suffix}")
            self.func.arrays.append(ir.SharedDecl(symbol, e.type, len(values), max(1, e.type.nbytes),
                                                  "const", values))
            addr = ir.Instr("addr_of", ir.ADDR_TYPE, attrs={"symbol": symbol}, loc=self.loc)
            if self.entry.terminator is not None:
                self.entry.insert_before_terminator(addr)
            else:
                self.entry.append(addr)
            self.tables[key] = _Array(e.table, e.type, [ir.Const(i32, len(values))], "const", addr)
        return self.tables[key]

    def x_Shape(self, e):
        shape = self.array(e.array).shape
        if not 0 <= e.dim < len(shape):
            raise CompileError(f"'{e.array}' has no dimension {e.dim}", e.loc)
        return shape[e.dim]

    def x_Unary(self, e):
        value = self.coerce(self.ev(e.operand), e.type)
        if e.op == "neg":
            return self.op("neg", value)
        if e.op in ("invert", "not"):
            return self.op("not", value)
        raise CompileError(f"unknown unary operator '{e.op}'", e.loc)

    def x_Binary(self, e):
        left = self.ev(e.left)
        right = self.ev(e.right)
        return self.binary(e.op, e.type, left, right)

    def binary(self, op: str, ty: Scalar, left, right):
        if op in ("shl", "shr"):
            amount = right
            if right.type.bits == 64:
                # read as unsigned and clamped before it is cut to 32 bits (2**32 shifts everything out)
                amount = self.op("min", self.coerce_bits(right, u64), _const(u64, 64))
            if amount.type not in (i32, u32):
                amount = self.coerce_bits(amount, u32 if amount.type.kind == "uint" else i32)
            return self.emit(op, ty, [self.coerce(left, ty), amount])
        left, right = self.coerce(left, ty), self.coerce(right, ty)
        if op in ("add", "sub", "mul") and ty.is_float and self.fast_math:
            # may be fused into fma (passes/contract.py); the math library's code never is
            return self.emit(op, ty, [left, right], {"contract": True})
        if op in ("add", "sub", "mul", "min", "max", "and", "or", "xor"):
            return self.emit(op, ty, [left, right])
        if op in ("maximum", "minimum"):    # floats: a NaN operand gives NaN
            return self.emit(op[:3], ty, [left, right], {"nan": True})
        if op == "truediv":
            return self.divide(left, right)
        if op in ("floordiv", "mod"):
            if ty.is_float:
                return self.float_floor_division(op, ty, left, right)
            if ty.is_signed:
                return self.emit("floordiv" if op == "floordiv" else "floormod", ty, [left, right])
            return self.emit("div" if op == "floordiv" else "rem", ty, [left, right])
        raise CompileError(f"unknown binary operator '{op}'", self.loc)

    def float_floor_division(self, op: str, ty: Scalar, left, right):
        """Python's float `//` or `%`: the math library's, from the exact remainder (f16 and
        bf16 in f32, as NumPy computes them); under fast_math, f32 takes floor(a / b) and
        a - floor(a / b) * b instead (docs/language.md)."""
        if self.fast_math and ty == f32:
            quotient = self.op("floor", self.divide(left, right))
            return quotient if op == "floordiv" else self.op("sub", left, self.op("mul", quotient, right))
        from .lower_intrinsics import call_library

        wide = ty if ty in (f32, f64) else f32
        name = "floordiv" if op == "floordiv" else "floormod"
        return self.coerce(call_library(self, f"{name}_{wide}", [left, right]), ty)

    def divide(self, left, right):
        if self.fast_math and left.type == f32:
            return self.op("div", left, right, approx=True)
        return self.op("div", left, right)

    def x_Pow(self, e):
        base = self.coerce(self.ev(e.base), e.type)
        n = int(e.exponent)
        if n < 0 and not e.type.is_float:
            raise CompileError("a negative exponent needs a float base", e.loc)
        result = _const(e.type, 1)
        square = base
        k = abs(n)
        first = True
        while k:
            if k & 1:
                result = square if first else self.op("mul", result, square)
                first = False
            k >>= 1
            if k:
                square = self.op("mul", square, square)
        return self.divide(_const(e.type, 1), result) if n < 0 else result

    def x_Cast(self, e):
        return self.coerce(self.ev(e.operand), e.type)

    def compare(self, op: str, ty: Scalar, left, right):
        return self.emit("cmp", bool_, [self.coerce(left, ty), self.coerce(right, ty)], {"pred": op})

    def x_Compare(self, e):
        if all(_simple(x) for x in e.operands[2:]):
            values = [self.ev(x) for x in e.operands]
            result = None
            for k, (op, ty) in enumerate(zip(e.ops, e.operand_types)):
                c = self.compare(op, ty, values[k], values[k + 1])
                result = c if result is None else self.op("and", result, c)
            return result
        return self.lazy_bool(e)

    def x_BoolOp(self, e):
        if all(_simple(x) for x in e.values[1:]):
            values = [self.as_bool(self.ev(x)) for x in e.values]
            result = values[0]
            for value in values[1:]:
                result = self.op(e.op, result, value)
            return result
        return self.lazy_bool(e)

    def lazy_bool(self, e):
        """A short-circuit boolean as a value: branches to a join block, merged by a phi."""
        result = self.hidden(bool_)
        yes, no, join = self.new_block("true"), self.new_block("false"), self.new_block("bool")
        merge = self.open_merge()
        self.branch(e, yes, no)
        for block, value in ((yes, True), (no, False)):
            self.seal(block)
            self.start(block)
            self.write(result, ir.Const(bool_, value))
            self.br(join)
        self.close_merge(merge, yes, no, join)
        self.seal(join)
        self.start(join)
        return self.read(result)

    def x_IfExp(self, e):
        if _simple(e.then) and _simple(e.orelse):
            cond = self.as_bool(self.ev(e.cond))
            if isinstance(cond, ir.Const):
                return self.coerce(self.ev(e.then if cond.value else e.orelse), e.type)
            then = self.coerce(self.ev(e.then), e.type)
            orelse = self.coerce(self.ev(e.orelse), e.type)
            return self.emit("select", e.type, [cond, then, orelse])
        result = self.hidden(e.type)
        yes, no, join = self.new_block("ifexp_then"), self.new_block("ifexp_else"), self.new_block("ifexp")
        merge = self.open_merge()
        self.branch(e.cond, yes, no)
        for block, arm in ((yes, e.then), (no, e.orelse)):
            self.seal(block)
            self.start(block)
            if self.live:
                self.write(result, self.coerce(self.ev(arm), e.type))
            self.br(join)
        self.close_merge(merge, yes, no, join)
        self.seal(join)
        self.start(join)
        return self.read(result)

    def branch(self, e, then: ir.Block, orelse: ir.Block) -> None:
        """Jump to `then` when boolean `e` holds, else to `orelse`, evaluating it lazily."""
        if isinstance(e, typed.BoolOp) and not _simple(e):
            for value in e.values[:-1]:
                mid = self.new_block(e.op)
                if e.op == "and":
                    self.branch(value, mid, orelse)
                else:
                    self.branch(value, then, mid)
                self.seal(mid)
                self.start(mid)
            self.branch(e.values[-1], then, orelse)
        elif isinstance(e, typed.Unary) and e.op == "not" and not _simple(e):
            self.branch(e.operand, orelse, then)
        elif isinstance(e, typed.Compare) and len(e.ops) > 1 and not _simple(e):
            self.branch_compare(e, then, orelse)
        else:
            self.cbr(self.as_bool(self.ev(e)), then, orelse)

    def branch_compare(self, e, then: ir.Block, orelse: ir.Block) -> None:
        saved = self.loc
        self.loc = self.expr_loc(e.loc) if e.loc else saved
        left = self.ev(e.operands[0])
        last = len(e.ops) - 1
        for k, (op, ty) in enumerate(zip(e.ops, e.operand_types)):
            right = self.ev(e.operands[k + 1])
            cond = self.compare(op, ty, left, right)
            if k == last:
                self.cbr(cond, then, orelse)
            else:
                mid = self.new_block("cmp")
                self.cbr(cond, mid, orelse)
                self.seal(mid)
                self.start(mid)
            left = right
        self.loc = saved

    def x_Intrinsic(self, e):
        from .lower_intrinsics import lower_intrinsic

        return lower_intrinsic(self, e)

    def x_TupleItem(self, e):
        values = self.ev_tuple(e.value)
        return values[e.index]

    def x_ArrayArg(self, e):
        raise CompileError(f"array '{e.array}' can only be passed to a function", e.loc)

    def x_Call(self, e):
        callee = self.module.funcs.get(e.func)
        if callee is None:
            raise CompileError(f"unknown function '{e.func}'", e.loc)
        if self.call_depth > 32:
            raise CompileError(f"device functions nested more than 32 calls deep (at '{e.func}'); "
                               "ptxpy inlines every call: flatten the chain", e.loc)
        if len(e.args) != len(callee.params):
            raise CompileError(f"'{e.func}' takes {len(callee.params)} arguments", e.loc)
        args = [self.array(a.array) if isinstance(a, typed.ArrayArg) else self.ev(a) for a in e.args]
        caller = self.scope
        scope = _Scope(next(self.uids), callee)
        self.scope = scope
        for param, arg in zip(callee.params, args):
            if isinstance(arg, _Array):
                scope.arrays[param.name] = arg
            else:
                self.write(self.var_key(param.name, param.type), self.coerce(arg, param.type))
        self.declare_arrays(scope, callee, prefix=f"{callee.name}_")
        ret = callee.return_type
        scope.ret_types = [] if ret is None else list(ret.items) if isinstance(ret, TupleType) else [ret]
        scope.ret_keys = [self.hidden(t) for t in scope.ret_types]
        scope.ret_block = self.new_block(f"ret_{callee.name}_")
        self.call_depth += 1
        try:
            with self.expanding("call", e.loc):
                self.statements_built += 3      # an inlined call costs about four statements
                self.stmts(callee.body)
            for key, ty in zip(scope.ret_keys, scope.ret_types):
                if self.live:
                    self.write(key, ir.Undef(ty))
            self.br(scope.ret_block)
            self.seal(scope.ret_block)
            self.start(scope.ret_block)
            values = [self.read(k) for k in scope.ret_keys]
        finally:
            self.call_depth -= 1
            self.scope = caller
        if ret is None:
            return None
        return values if isinstance(ret, TupleType) else values[0]


# --- helpers ---------------------------------------------------------------------------------
def _const(ty: Scalar, value) -> ir.Const:
    if ty.is_bool:
        return ir.Const(ty, bool(value))
    if ty.is_int:
        return ir.Const(ty, _wrap(int(value), ty))
    return ir.Const(ty, float(value))


def _wrap(value: int, ty: Scalar) -> int:
    mask = (1 << ty.bits) - 1
    value &= mask
    if ty.is_signed and value >> (ty.bits - 1):
        value -= 1 << ty.bits
    return value


def _same_value(a, b) -> bool:
    if a is b:
        return True
    if isinstance(a, ir.Const) and isinstance(b, ir.Const):
        return a == b
    return isinstance(a, ir.Undef) and isinstance(b, ir.Undef) and a.type == b.type


def _simple(e) -> bool:
    """Whether evaluating `e` is cheap, cannot fault and has no effects (so both arms may run)."""
    if isinstance(e, (typed.Constant, typed.Var, typed.Shape)):
        return True
    if isinstance(e, (typed.Unary, typed.Cast)):
        return _simple(e.operand)
    if isinstance(e, typed.Pow):
        return _simple(e.base)
    if isinstance(e, typed.Binary):
        return e.op not in _UNSAFE_IN_SELECT and _simple(e.left) and _simple(e.right)
    if isinstance(e, typed.Compare):
        return all(map(_simple, e.operands))
    if isinstance(e, typed.BoolOp):
        return all(map(_simple, e.values))
    if isinstance(e, typed.IfExp):
        return _simple(e.cond) and _simple(e.then) and _simple(e.orelse)
    if isinstance(e, typed.Intrinsic):
        return e.name in _SREG_INTRINSICS and all(map(_simple, e.args))
    return False


def _runs_at_least_once(start, stop, step, sign: int) -> bool:
    """Whether `range(start, stop, step)` has an iteration, its bounds and step constants of a
    known sign."""
    if sign == 0 or not all(isinstance(v, ir.Const) for v in (start, stop, step)):
        return False
    return len(range(start.value, stop.value, sign * _step_size(step, sign))) > 0


def _has_loop_jump(body: list) -> bool:
    """Whether `body` breaks or continues the loop it is the body of."""
    for s in body:
        if isinstance(s, (typed.Break, typed.Continue)):
            return True
        if isinstance(s, typed.If) and (_has_loop_jump(s.body) or _has_loop_jump(s.orelse)):
            return True
    return False


_CMP = {"eq": operator.eq, "ne": operator.ne, "lt": operator.lt, "le": operator.le,
        "gt": operator.gt, "ge": operator.ge}
_INT_FOLD = {
    "add": operator.add, "sub": operator.sub, "mul": operator.mul, "and": operator.and_,
    "or": operator.or_, "xor": operator.xor, "min": min, "max": max,
}


_NO_ATTRS: dict = {}   # (never changed)


def _fold(op: str, ty, args: list, attrs: dict):
    """The constant result of a pure integer/boolean op on constants, else None."""
    if op == "select" and isinstance(args[0], ir.Const):
        return args[1] if args[0].value else args[2]
    if op in ("and", "or") and ty == bool_:
        for k in (0, 1):
            a, other = args[k], args[1 - k]
            if isinstance(a, ir.Const):
                if a.value == (op == "and"):
                    return other
                return a
    if not args:
        return None
    for a in args:
        if a.__class__ is not ir.Const:
            return None
    values = [a.value for a in args]
    if op == "cmp":
        return ir.Const(bool_, bool(_CMP[attrs["pred"]](values[0], values[1])))
    if ty is None or ty.is_float or any(a.type.is_float for a in args):
        return None
    if op in ("cvt", "mul_wide"):
        value = values[0] if op == "cvt" else values[0] * values[1]
        return _const(ty, value)
    if ty.is_bool:
        if op == "not":
            return ir.Const(bool_, not values[0])
        if op == "xor":
            return ir.Const(bool_, values[0] != values[1])
        return None
    a = values[0]
    if op in _INT_FOLD:
        return _const(ty, _INT_FOLD[op](a, values[1]))
    if op == "neg":
        return _const(ty, -a)
    if op == "not":
        return _const(ty, ~a)
    if op == "abs":
        return _const(ty, abs(a))
    if op in ("shl", "shr"):
        amount = values[1] & 0xFFFFFFFF
        if op == "shl":
            return _const(ty, a << amount if amount < ty.bits else 0)
        return _const(ty, a >> min(amount, ty.bits))
    b = values[1] if len(values) > 1 else None
    if not b:
        return None
    if op == "floordiv":
        return _const(ty, a // b)
    if op == "floormod":
        return _const(ty, a % b)
    if op in ("div", "rem"):
        q = abs(a) // abs(b) * (1 if (a < 0) == (b < 0) else -1)
        return _const(ty, q if op == "div" else a - q * b)
    return None


def _step_size(step: ir.Const, sign: int) -> int:
    """The size of a constant range step whose direction is `sign` (an unsigned type holds a
    negative step wrapped: -3 in u32 is 2**32 - 3)."""
    if sign < 0 and step.value > 0:
        return (1 << step.type.bits) - step.value
    return abs(step.value)


def _phis_reaching_undef(func: ir.Function) -> set:
    """The phis of `func` with an undefined operand, directly or through other phis."""
    phis = [phi for block in func.blocks for phi in block.phis]
    reaching = {phi for phi in phis if any(isinstance(a, ir.Undef) for a in phi.args)}
    changed = bool(reaching)
    while changed:
        changed = False
        for phi in phis:
            if phi not in reaching and any(a in reaching for a in phi.args if a.__class__ is ir.Instr):
                reaching.add(phi)
                changed = True
    return reaching

