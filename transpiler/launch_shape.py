"""Shared arrays sized at launch (CUDA's `extern __shared__` with a size chosen per launch).

`ptxpy.shared_array((ptxpy.block_dim.x, x.shape[1]), f32)` has extents the kernel knows only at
launch. The type checker turns each such extent into a *formula*, a small tree of tuples that
both sides evaluate the same way: the kernel (ssa_builder, in i32 arithmetic) to find the array,
and the host (this module, in Python ints checked against i32) to ask for enough dynamic shared
memory at each launch.

A formula is one of:
    7                        an int constant
    ("block_dim", "x")       ptxpy.block_dim.x (.y, .z)
    ("shape", "x", 1)        x.shape[1] of the kernel's array parameter x (its kernel view: a
                             batched specialisation leaves out the batch axis)
    ("scalar", "n")          the kernel's integer scalar parameter n, as the launch passes it
    ("neg", a)               -a
    (op, a, b)               op in "+ - * // % cdiv min max", Python's meaning (floor division)

These arrays lie after the kernel's static shared arrays in the `.extern .shared` array, each
starting on a 16-byte boundary, in the order they are declared (target.shared_layout).
"""
from __future__ import annotations

ALIGN = 16
I32_MIN, I32_MAX = -(1 << 31), (1 << 31) - 1


class LaunchShapeError(ValueError):
    """A launch whose shared array sizes cannot be computed (a negative extent, an overflow)."""


def is_formula(extent) -> bool:
    """True for an extent known only at launch (a tuple), False for a compile-time int."""
    return isinstance(extent, tuple)


def aligned(nbytes: int) -> int:
    return -(-nbytes // ALIGN) * ALIGN


def describe(formula, context: int = 0) -> str:
    """The formula as the user would write it (for the PTX comment and messages); `context`
    is the precedence of the operator around it (1: + -, 2: * // %, 3: unary -)."""
    if isinstance(formula, int):
        return str(formula)
    head = formula[0]
    if head == "block_dim":
        return f"ptxpy.block_dim.{formula[1]}"
    if head == "shape":
        return f"{formula[1]}.shape[{formula[2]}]"
    if head == "scalar":
        return formula[1]
    if head == "neg":       # binds tighter than every operator here
        return f"-{describe(formula[1], 3)}"
    if head in ("cdiv", "min", "max"):
        name = "ptxpy.cdiv" if head == "cdiv" else head
        return f"{name}({describe(formula[1])}, {describe(formula[2])})"
    level = 1 if head in ("+", "-") else 2
    text = f"{describe(formula[1], level)} {head} {describe(formula[2], level + 1)}"
    return f"({text})" if level < context else text


def evaluate(formula, shapes: dict, block: tuple, scalars: dict | None = None) -> int:
    """The formula's value at a launch: `shapes` maps each array parameter to its shape (as the
    kernel sees it), `block` is the launch's (x, y, z), `scalars` the values of the scalar
    parameters passed by value. Raises LaunchShapeError where the kernel's i32 arithmetic would
    overflow or divide by zero, or a scalar it needs is not known on the host."""
    if isinstance(formula, int):
        return formula
    head = formula[0]
    if head == "block_dim":
        return int(block["xyz".index(formula[1])])
    if head == "shape":
        return int(shapes[formula[1]][formula[2]])
    if head == "scalar":
        value = _scalar(formula[1], scalars)
    elif head == "neg":
        value = -evaluate(formula[1], shapes, block, scalars)
    else:
        a, b = evaluate(formula[1], shapes, block, scalars), evaluate(formula[2], shapes, block, scalars)
        if head in ("//", "%", "cdiv") and b == 0:
            raise LaunchShapeError(f"{describe(formula)} divides by zero")
        value = _BINARY[head](a, b)
    if not I32_MIN <= value <= I32_MAX:
        raise LaunchShapeError(f"{describe(formula)} is {value}, past the 32-bit integers the "
                               "kernel computes it in")
    return value


_BINARY = {"+": lambda a, b: a + b, "-": lambda a, b: a - b, "*": lambda a, b: a * b,
           "//": lambda a, b: a // b, "%": lambda a, b: a % b, "cdiv": lambda a, b: -(-a // b),
           "min": min, "max": max}


def _scalar(name: str, scalars: dict | None) -> int:
    if scalars is None or name not in scalars:
        raise LaunchShapeError(f"scalar parameter '{name}' is passed as a JAX array (a device value, "
                               "or traced by jax.jit or jax.vmap), so the host does not know its "
                               "value at launch: pass a Python number, or make it a Const "
                               "parameter")
    return int(scalars[name])


def launch_shared_bytes(kernel, shapes: dict, block: tuple, scalars: dict | None = None) -> int:
    """Bytes of dynamic shared memory one launch of `kernel` (a CompiledKernel) asks for: its
    static arrays past 48 KB (`options["dynamic_shared_bytes"]`) and its arrays sized at
    launch (`options["launch_shared"]`: (name, element bytes, extents) each). `scalars`: the
    values of the scalar parameters passed by value (by name)."""
    total = int(kernel.options.get("dynamic_shared_bytes", 0))
    block = (block,) if isinstance(block, int) else tuple(block)
    block += (1,) * (3 - len(block))
    for name, elem_bytes, extents in kernel.options.get("launch_shared", ()):
        try:
            values = [evaluate(extent, shapes, block, scalars) for extent in extents]
        except LaunchShapeError as err:
            raise LaunchShapeError(f"kernel '{kernel.name}': the shape of shared array '{name}': "
                                   f"{err}") from None
        if any(v < 0 for v in values):
            shown = ", ".join(f"{describe(e)} = {v}" for e, v in zip(extents, values))
            raise LaunchShapeError(f"kernel '{kernel.name}': shared array '{name}' would have a "
                                   f"negative extent at this launch ({shown})")
        count = 1
        for v in values:
            count *= v
        total += aligned(count * elem_bytes)
    from .backend.target import shared_limit

    limit = shared_limit(kernel.arch)
    if kernel.options.get("launch_shared") and total + kernel.shared_bytes > limit:
        raise LaunchShapeError(f"kernel '{kernel.name}': its shared arrays take {total} bytes at "
                               f"this launch; {kernel.arch} gives a block at most {limit} "
                               f"({limit // 1024} KB)")
    return total
