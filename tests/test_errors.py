"""Every kind of user error prints as SPEC 2.6 says: `file.py:LINE:COL: error: message`, the
source line, and a caret under the column.

Each case is a kernel module (after HEADER); the expected first line is compared word for word,
the second and third lines are checked against the source.
"""
import pytest

from ptxpy.transpiler import driver
from ptxpy.transpiler.errors import CompileError
from ptxpy.transpiler.frontend import check_kernel, parse_module
from ptxpy.transpiler.typed import format_body
from ptxpy.types import f32

HEADER = "import math\nimport ptxpy\nfrom ptxpy import Array, Const, f32, f64, i32, i64\n"

CASES = [
    ('huge_local_array',
     '@ptxpy.jit\ndef k(x: Array[f32], v: i32):\n    s = ptxpy.local_array(2 ** 62, f32)\n',
     'kernels.py:6:9: error: local arrays take 18446744073709551616 bytes per thread; the limit is 524288'),
    ('float_axis',
     '@ptxpy.jit\ndef k(out: Array[i32]):\n    out[0] = ptxpy.program_id(1.0)\n',
     'kernels.py:6:31: error: the axis of ptxpy.program_id must be 0, 1 or 2, got 1.0'),
    ('float_vector_width_load',
     '@ptxpy.jit\ndef k(x: Array[f32], v: i32):\n    a, b = x[v:v + 2.0]\n',
     'kernels.py:6:12: error: the width of a vector access must be an integer, got 2.0'),
    ('float_vector_width_store',
     '@ptxpy.jit\ndef k(x: Array[f32], v: i32):\n    x[v:v + 2.0] = (1.0, 2.0)\n',
     'kernels.py:6:5: error: the width of a vector access must be an integer, got 2.0'),
    ('syntax_error',
     '@ptxpy.jit\ndef k(x: Array[f32]:\n    pass\n',
     'kernels.py:5:20: error: invalid syntax'),
    ('unknown_name',
     '@ptxpy.jit\ndef k(out: Array[f32]):\n    out[0] = foo + 1\n',
     "kernels.py:6:14: error: name 'foo' is not defined"),
    ('python_builtin',
     '@ptxpy.jit\ndef k(out: Array[f32]):\n    out[0] = sum(out)\n',
     "kernels.py:6:14: error: name 'sum' is a Python builtin that kernels do not support; sum in "
     "a loop, or across a warp with ptxpy.warp_sum"),
    ('python_pow',
     '@ptxpy.jit\ndef k(out: Array[f32]):\n    out[0] = pow(out[1], 2)\n',
     "kernels.py:6:14: error: name 'pow' is a Python builtin that kernels do not support; write "
     "x ** k (k a constant integer) or math.pow(x, y)"),
    ('float_modulo_by_zero',
     '@ptxpy.jit\ndef k(out: Array[f32]):\n    out[0] = 7.0 % 0.0\n',
     "kernels.py:6:14: error: cannot evaluate this constant expression: float modulo by zero"),
    ('constant_overflow',
     '@ptxpy.jit\ndef k(out: Array[f32]):\n    out[0] = 2.0 ** 2000\n',
     "kernels.py:6:14: error: cannot evaluate this constant expression: the result is too large "
     "for a float"),
    ('foreign_module',
     'import numpy as np\n@ptxpy.jit\ndef k(out: Array[f32]):\n    out[0] = np.float32(1)\n',
     "kernels.py:7:14: error: 'np.float32' (from module numpy) cannot be used in a kernel (only math and ptxpy can)"),
    ('module_variable',
     'table = [1, 2, 3]\n@ptxpy.jit\ndef k(out: Array[i32]):\n    out[0] = table\n',
     "kernels.py:7:14: error: name 'table' is a module-level variable that is not a compile-time constant (kernels can use parameters, locals, module constants, @ptxpy.func functions, math and ptxpy)"),
    ('plain_function',
     'def helper(v):\n    return v\n@ptxpy.jit\ndef k(out: Array[f32]):\n    out[0] = helper(1.0)\n',
     "kernels.py:8:14: error: 'helper' is not a @ptxpy.func; decorate it with @ptxpy.func to call it from a kernel"),
    ('class',
     '@ptxpy.jit\ndef k(out: Array[f32]):\n    class Point:\n        pass\n',
     'kernels.py:6:5: error: classes are not supported in kernels'),
    ('nested_function',
     '@ptxpy.jit\ndef k(out: Array[f32]):\n    def inner(v):\n        return v\n',
     'kernels.py:6:5: error: nested functions (closures) are not supported; define a @ptxpy.func at module level'),
    ('lambda',
     '@ptxpy.jit\ndef k(out: Array[f32]):\n    f = lambda v: v + 1\n',
     'kernels.py:6:9: error: lambda functions are not supported in kernels'),
    ('non_ascii_kernel_parameter',
     '@ptxpy.jit\ndef k(out: Array[f32], maß: f32):\n    out[0] = maß\n',
     "kernels.py:5:24: error: kernel parameter name 'maß' is not ASCII: it names a PTX parameter, and PTX names are ASCII (rename it)"),
    ('star_args',
     '@ptxpy.jit\ndef k(out: Array[f32], *rest):\n    pass\n',
     "kernels.py:5:24: error: '*rest' parameters are not supported (list every parameter with its type)"),
    ('star_kwargs',
     '@ptxpy.func\ndef f(a: f32, **options) -> f32:\n    return a\n'
     '@ptxpy.jit\ndef k(x: Array[f32]):\n    x[0] = f(x[1])\n',
     "kernels.py:5:15: error: '**options' parameters are not supported (list every parameter with its type)"),
    ('yield',
     '@ptxpy.jit\ndef k(out: Array[f32]):\n    yield 1\n',
     "kernels.py:6:5: error: generators ('yield') are not supported in kernels"),
    ('try',
     '@ptxpy.jit\ndef k(out: Array[f32]):\n    try:\n        out[0] = 1.0\n    except IndexError:\n        pass\n',
     'kernels.py:6:5: error: try statements are not supported in kernels'),
    ('with',
     '@ptxpy.jit\ndef k(out: Array[f32]):\n    with lock:\n        pass\n',
     'kernels.py:6:5: error: with statements are not supported in kernels'),
    ('raise',
     '@ptxpy.jit\ndef k(out: Array[f32]):\n    raise ValueError("bad")\n',
     'kernels.py:6:5: error: raise is not supported in kernels (use assert, checked under debug=True)'),
    ('list',
     '@ptxpy.jit\ndef k(out: Array[f32]):\n    values = [1.0, 2.0]\n',
     'kernels.py:6:14: error: lists are not supported in kernels'),
    ('dict',
     '@ptxpy.jit\ndef k(out: Array[f32]):\n    table = {0: 1.0}\n',
     'kernels.py:6:13: error: dicts are not supported in kernels'),
    ('set',
     '@ptxpy.jit\ndef k(out: Array[f32]):\n    seen = {1, 2}\n',
     'kernels.py:6:12: error: sets are not supported in kernels'),
    ('comprehension',
     '@ptxpy.jit\ndef k(out: Array[f32]):\n    squares = [i * i for i in range(4)]\n',
     'kernels.py:6:15: error: list comprehensions are not supported in kernels'),
    ('string',
     '@ptxpy.jit\ndef k(out: Array[f32]):\n    name = "kernel"\n',
     'kernels.py:6:12: error: strings are only supported as print() arguments and assert messages'),
    ('fstring',
     '@ptxpy.jit\ndef k(n: i32):\n    print(f"n={n}")\n',
     'kernels.py:6:11: error: f-strings are not supported in kernels'),
    ('global',
     '@ptxpy.jit\ndef k(out: Array[f32]):\n    global counter\n',
     'kernels.py:6:5: error: global declarations are not supported in kernels'),
    ('nonlocal',
     '@ptxpy.jit\ndef k(out: Array[f32]):\n    nonlocal counter\n',
     'kernels.py:6:5: error: nonlocal declarations are not supported in kernels'),
    ('del',
     '@ptxpy.jit\ndef k(n: i32):\n    m = n\n    del m\n',
     'kernels.py:7:5: error: del is not supported in kernels'),
    ('import',
     '@ptxpy.jit\ndef k(out: Array[f32]):\n    import os\n',
     'kernels.py:6:5: error: imports inside kernels are not supported; import at module level'),
    ('walrus',
     '@ptxpy.jit\ndef k(n: i32, out: Array[i32]):\n    if (m := n * 2) > 3:\n        out[0] = m\n',
     "kernels.py:6:9: error: assignment expressions (':=') are not supported in kernels"),
    ('starred',
     '@ptxpy.jit\ndef k(n: i32):\n    a, *b = n, n, n\n',
     'kernels.py:6:8: error: starred assignment is not supported in kernels'),
    ('slice',
     '@ptxpy.jit\ndef k(x: Array[f32], out: Array[f32]):\n    out[0] = x[1:5:2]\n',
     'kernels.py:6:16: error: slices are only supported for vector access: v0, v1 = x[i:i + 2] or x[i:i + 2] = (v0, v1)'),
    ('async',
     '@ptxpy.jit\nasync def k(out: Array[f32]):\n    pass\n',
     'kernels.py:5:1: error: async functions cannot be kernels or device functions'),
    ('match',
     '@ptxpy.jit\ndef k(n: i32):\n    match n:\n        case 0:\n            pass\n',
     'kernels.py:6:5: error: match statements are not supported in kernels'),
    ('other_decorator',
     'import functools\n@functools.cache\n@ptxpy.jit\ndef k(out: Array[f32]):\n    pass\n',
     "kernels.py:5:1: error: unsupported decorator '@functools.cache' on a ptxpy function (only @ptxpy.jit or @ptxpy.func)"),
    ('intrinsic_keyword',
     '@ptxpy.jit\ndef k(x: Array[f32], out: Array[f32]):\n    out[0] = math.sqrt(x=x[0])\n',
     "kernels.py:6:24: error: math.sqrt() got an unexpected keyword argument 'x'"),
    ('missing_annotation',
     '@ptxpy.jit\ndef k(x: Array[f32], n):\n    pass\n',
     "kernels.py:5:22: error: parameter 'n' of a kernel needs a type annotation (e.g. 'x: Array[f32]' or 'n: i32')"),
    ('unsupported_annotation',
     '@ptxpy.jit\ndef k(x: list):\n    pass\n',
     "kernels.py:5:10: error: unsupported type annotation 'list' (use a ptxpy scalar type, bool, int, float, Array[T] or Array[T, R])"),
    ('wrong_argument_count',
     '@ptxpy.func\ndef add(a: f32, b: f32) -> f32:\n    return a + b\n@ptxpy.jit\ndef k(out: Array[f32]):\n    out[0] = add(1.0)\n',
     'kernels.py:9:14: error: add() takes 2 arguments (1 given)'),
    ('intrinsic_argument_count',
     '@ptxpy.jit\ndef k(out: Array[i32]):\n    out[0] = ptxpy.program_id()\n',
     'kernels.py:6:14: error: ptxpy.program_id() takes 1 argument (0 given)'),
    ('operand_types',
     '@ptxpy.jit\ndef k(n: i32, out: Array[i32]):\n    out[0] = n << 1.5\n',
     "kernels.py:6:14: error: operator '<<' needs integer or bool operands, got i32 and f32"),
    ('bitwise_operands_promote_to_float',   # found by tests/test_differential.py: was a crash
     '@ptxpy.jit\ndef k(n: i64, out: Array[i64]):\n    out[0] = n ^ ptxpy.bitcast(n, ptxpy.u64)\n',
     "kernels.py:6:14: error: operator '^' needs operands that promote to an integer type, but i64 and u64 promote to f64; cast one of them"),
    ('range_arguments_promote_to_float',
     '@ptxpy.jit\ndef k(n: i64, out: Array[i64]):\n    for j in range(n, ptxpy.bitcast(n, ptxpy.u64)):\n        out[0] = j\n',
     "kernels.py:6:14: error: range() arguments promote to f64; cast them to one integer type"),
    ('assignment_conflict',
     '@ptxpy.jit\ndef k(x: Array[f64], out: Array[f32]):\n    acc = 0.0\n    acc = acc + x[0]\n',
     "kernels.py:7:11: error: cannot assign f64 to variable 'acc' of type f32; use f32(...) to convert"),
    ('loop_variable_type',
     '@ptxpy.jit\ndef k(n: i64):\n    i = 0\n    for i in range(n):\n        pass\n',
     "kernels.py:7:9: error: loop variable 'i' is i32, but the range gives i64"),
    ('wrong_rank',
     '@ptxpy.jit\ndef k(x: Array[f32, 2], out: Array[f32]):\n    out[0] = x[0]\n',
     "kernels.py:6:14: error: array 'x' has rank 2 but is indexed with 1 index"),
    ('float_index',
     '@ptxpy.jit\ndef k(x: Array[f32], out: Array[f32]):\n    out[0] = x[x[0]]\n',
     'kernels.py:6:16: error: array indices must be integers, got f32'),
    ('bool_index',
     '@ptxpy.jit\ndef k(x: Array[f32], out: Array[f32]):\n    out[0] = x[True]\n',
     'kernels.py:6:16: error: array indices must be integers, got bool'),
    ('negative_index',
     '@ptxpy.jit\ndef k(x: Array[f32], out: Array[f32]):\n    out[0] = x[-1]\n',
     'kernels.py:6:16: error: negative index -1: indexing never wraps (a[-1] is not the last element)'),
    ('assign_shape',
     '@ptxpy.jit\ndef k(x: Array[f32]):\n    x.shape[0] = 4\n',
     'kernels.py:6:5: error: cannot assign to the shape of an array'),
    ('shape_out_of_range',
     '@ptxpy.jit\ndef k(x: Array[f32], out: Array[i32]):\n    out[0] = x.shape[1]\n',
     "kernels.py:6:14: error: x.shape[1] is out of range: 'x' has rank 1"),
    ('round_of_nan',
     '@ptxpy.jit\ndef k(out: Array[f32]):\n    out[0] = round(-math.inf)\n',
     "kernels.py:6:14: error: cannot round -inf to an integer"),
    ('float_of_a_bad_string',
     '@ptxpy.jit\ndef k(out: Array[f32]):\n    out[0] = float("1.2.3")\n',
     "kernels.py:6:20: error: could not convert string to float: '1.2.3'"),
    ('shape_negative_out_of_range',
     '@ptxpy.jit\ndef k(x: Array[f32], out: Array[i32]):\n    out[0] = x.shape[-2]\n',
     "kernels.py:6:14: error: x.shape[-2] is out of range: 'x' has rank 1"),
    ('array_as_value',
     '@ptxpy.jit\ndef k(x: Array[f32], out: Array[f32]):\n    y = x\n',
     "kernels.py:6:9: error: array 'x' cannot be used as a value; index it (x[i]) or pass it to a @ptxpy.func"),
    ('assign_to_array',
     '@ptxpy.jit\ndef k(x: Array[f32], out: Array[f32]):\n    out = 1.0\n',
     "kernels.py:6:5: error: cannot assign to array 'out' (arrays cannot be reassigned)"),
    ('scalar_indexed',
     '@ptxpy.jit\ndef k(n: i32):\n    n[0] = 1\n',
     "kernels.py:6:5: error: 'n' is a scalar (i32), not an array"),
    ('break_outside_loop',
     '@ptxpy.jit\ndef k(n: i32):\n    if n > 0:\n        break\n',
     "kernels.py:7:9: error: 'break' outside a loop"),
    ('continue_outside_loop',
     '@ptxpy.jit\ndef k(n: i32):\n    continue\n',
     "kernels.py:6:5: error: 'continue' outside a loop"),
    ('kernel_return_value',
     '@ptxpy.jit\ndef k(n: i32):\n    return n + 1\n',
     'kernels.py:6:5: error: a kernel cannot return a value; write results into an output array'),
    ('kernel_return_annotation',
     '@ptxpy.jit\ndef k(n: i32) -> i32:\n    pass\n',
     'kernels.py:5:18: error: a kernel returns nothing: write its results into output arrays'),
    ('func_missing_return',
     '@ptxpy.func\ndef f(a: f32) -> f32:\n    if a > 0:\n        return a\n@ptxpy.jit\ndef k(out: Array[f32]):\n    out[0] = f(1.0)\n',
     "kernels.py:5:5: error: @ptxpy.func 'f' must end with a return statement (it returns f32)"),
    ('func_return_without_annotation',
     '@ptxpy.func\ndef f(a: f32):\n    return a\n@ptxpy.jit\ndef k(out: Array[f32]):\n    f(1.0)\n',
     "kernels.py:6:5: error: 'f' has no return annotation; annotate it (-> f32) to return a value"),
    ('static_range_past_sys_maxsize',
     '@ptxpy.jit\ndef k(out: Array[i32]):\n    for i in ptxpy.static_range(2 ** 64):\n        out[0] = i\n',
     "kernels.py:6:14: error: ptxpy.static_range of 18446744073709551616 iterations is too long to unroll (at most 4096)"),
    ('static_range_down_past_sys_maxsize',
     '@ptxpy.jit\ndef k(out: Array[i32]):\n    for i in ptxpy.static_range(2 ** 70, -1, -3):\n        out[0] = i\n',
     "kernels.py:6:14: error: ptxpy.static_range of 393530540239137101142 iterations is too long to unroll (at most 4096)"),
    ('static_range_not_constant',
     '@ptxpy.jit\ndef k(n: i32, out: Array[i32]):\n    for i in ptxpy.static_range(n):\n        out[i] = i\n',
     "kernels.py:6:33: error: an argument of ptxpy.static_range must be a compile-time constant: literals, module constants, Const parameters and arithmetic on them ('n' is a variable)"),
    ('power_not_constant',
     '@ptxpy.jit\ndef k(x: Array[f32], n: i32):\n    x[0] = x[0] ** n\n',
     "kernels.py:6:20: error: the exponent of '**' must be a compile-time constant: literals, module constants, Const parameters and arithmetic on them ('n' is a variable); use math.pow for a run-time exponent"),
    ('power_float_exponent',
     '@ptxpy.jit\ndef k(x: Array[f32]):\n    x[0] = x[0] ** 0.5\n',
     "kernels.py:6:20: error: the exponent of '**' must be a compile-time integer, got 0.5 (use math.pow or math.sqrt)"),
    ('shared_shape_not_constant',
     '@ptxpy.jit\ndef k(n: i32):\n    m = 1\n    m = n\n    s = ptxpy.shared_array(m, f32)\n',
     "kernels.py:8:28: error: 'm' is a variable; the shape of ptxpy.shared_array must be a "
     "compile-time constant, or known at launch: built from ptxpy.block_dim, x.shape[k] of the "
     "kernel's array parameters, its integer scalar parameters and constants "
     "(+ - * // % ptxpy.cdiv min max), or a variable assigned once, before it, from such an "
     "expression"),
    ('range_step_zero',
     '@ptxpy.jit\ndef k(n: i32):\n    for i in range(0, n, 0):\n        pass\n',
     'kernels.py:6:26: error: range() step must not be zero'),
    ('range_float',
     '@ptxpy.jit\ndef k(x: f32):\n    for i in range(x):\n        pass\n',
     'kernels.py:6:20: error: range() arguments must be integers, got f32'),
    ('for_over_other',
     '@ptxpy.jit\ndef k(x: Array[f32]):\n    for v in x:\n        pass\n',
     'kernels.py:6:14: error: for loops can only iterate over range(...) or ptxpy.static_range(...)'),
    ('recursion',
     '@ptxpy.func\ndef fact(n: i32) -> i32:\n    if n <= 1:\n        return 1\n    return n * fact(n - 1)\n@ptxpy.jit\ndef k(out: Array[i32]):\n    out[0] = fact(5)\n',
     "kernels.py:8:16: error: recursive call to 'fact' (fact -> fact): recursion is not supported"),
    ('mutual_recursion',
     '@ptxpy.func\ndef even(n: i32) -> bool:\n    return n == 0 or odd(n - 1)\n@ptxpy.func\ndef odd(n: i32) -> bool:\n    return n != 0 and even(n - 1)\n@ptxpy.jit\ndef k(out: Array[i32]):\n    out[0] = even(4)\n',
     "kernels.py:9:23: error: recursive call to 'even' (even -> odd -> even): recursion is not supported"),
    ('used_before_assignment',
     '@ptxpy.jit\ndef k(out: Array[f32]):\n    out[0] = total\n    total = 1.0\n',
     "kernels.py:6:14: error: local variable 'total' is used before it is assigned"),
    ('is_comparison',
     '@ptxpy.jit\ndef k(n: i32, out: Array[i32]):\n    out[0] = n is 3\n',
     "kernels.py:6:16: error: 'is' comparisons are not supported in kernels; use == or !="),
    ('in_comparison',
     '@ptxpy.jit\ndef k(n: i32, out: Array[i32]):\n    out[0] = n in (1, 2)\n',
     "kernels.py:6:16: error: 'in' is not supported in kernels"),
    ('math_unsupported',
     '@ptxpy.jit\ndef k(out: Array[f32]):\n    out[0] = math.lgamma(out[1])\n',
     'kernels.py:6:14: error: math.lgamma is not supported in kernels (supported: acos acosh asin asinh atan atan2 atanh cbrt ceil copysign cos cosh erf erfc exp exp2 expm1 fabs floor fmod frexp hypot isfinite isinf isnan ldexp log log10 log1p log2 pow sin sinh sqrt tan tanh trunc, and the constants pi e tau inf nan)'),
    ('ptxpy_unknown',
     '@ptxpy.jit\ndef k(out: Array[f32]):\n    out[0] = ptxpy.thread_id()\n',
     "kernels.py:6:14: error: ptxpy has no attribute 'thread_id'; did you mean ptxpy.thread_idx?"),
    ('axis_out_of_range',
     '@ptxpy.jit\ndef k(out: Array[i32]):\n    out[0] = ptxpy.program_id(3)\n',
     'kernels.py:6:31: error: the axis of ptxpy.program_id must be 0, 1 or 2, got 3'),
    ('tuple_to_one_variable',
     '@ptxpy.func\ndef two(a: i32) -> tuple[i32, i32]:\n    return a, a\n@ptxpy.jit\ndef k(n: i32):\n    t = two(n)\n',
     'kernels.py:9:9: error: cannot assign a tuple of 2 values to one variable; unpack it: a, b = f(...)'),
    ('unpack_count',
     '@ptxpy.jit\ndef k(n: i32):\n    a, b = n, n, n\n',
     'kernels.py:6:5: error: cannot unpack 3 values into 2 variables'),
    ('kernel_calls_kernel',
     '@ptxpy.jit\ndef other(n: i32):\n    pass\n@ptxpy.jit\ndef k(n: i32):\n    other(n)\n',
     "kernels.py:9:5: error: 'other' is a @ptxpy.jit kernel; a kernel cannot call another kernel (make it a @ptxpy.func)"),
    ('const_needs_value',
     '@ptxpy.jit\ndef k(out: Array[f32], K: Const[int]):\n    out[0] = K\n',
     "kernels.py:5:24: error: Const parameter 'K' of kernel 'k' needs a value (it has no default)"),
    ('func_const_not_constant',
     '@ptxpy.func\ndef f(v: f32, N: Const[int]) -> f32:\n    return v * N\n@ptxpy.jit\ndef k(x: Array[f32], n: i32):\n    x[0] = f(x[0], n)\n',
     "kernels.py:9:20: error: the argument for Const parameter 'N' of f() must be a compile-time constant: literals, module constants, Const parameters and arithmetic on them ('n' is a variable)"),
    ('func_const_wrong_kind',
     '@ptxpy.func\ndef f(v: f32, N: Const[int] = 2) -> f32:\n    return v * N\n@ptxpy.jit\ndef k(x: Array[f32]):\n    x[0] = f(x[0], N=0.5)\n',
     "kernels.py:9:22: error: Const parameter 'N' of f() is Const[int] but was given 0.5"),
    ('func_const_recursion',
     '@ptxpy.func\ndef f(v: f32, N: Const[int]) -> f32:\n    if N == 0:\n        return v\n    return f(v, N - 1)\n@ptxpy.jit\ndef k(x: Array[f32]):\n    x[0] = f(x[0], 3)\n',
     "kernels.py:8:12: error: recursive call to 'f' (f[N=3] -> f[N=2]): recursion is not supported"),
    ('const_on_local',
     '@ptxpy.jit\ndef k(x: Array[f32]):\n    n: Const[int] = 3\n',
     "kernels.py:6:8: error: Const[...] is only allowed on parameters of kernels and device functions"),
    ('keyword_repeated',
     '@ptxpy.func\ndef f(v: f32, N: Const[int] = 2) -> f32:\n    return v * N\n@ptxpy.jit\ndef k(x: Array[f32]):\n    x[0] = f(x[0], N=1, N=2)\n',
     "kernels.py:9:25: error: keyword argument repeated: 'N'"),
    ('tuple_index_negative',
     'AT = (1, -2)\n@ptxpy.jit\ndef k(x: Array[f32, 2]):\n    x[AT] = 0.0\n',
     "kernels.py:7:7: error: 'AT' is (1, -2): indices must be integers from 0"),
    ('round_ndigits',
     '@ptxpy.jit\ndef k(x: Array[f32]):\n    x[0] = round(x[0], 2)\n',
     "kernels.py:6:24: error: round() with ndigits is not supported in kernels (round(x) rounds to an integer)"),
    ('default_on_scalar',
     '@ptxpy.jit\ndef k(out: Array[f32], a: f32 = 1.0):\n    pass\n',
     "kernels.py:5:33: error: parameter 'a' has a default value, which only Const parameters may have"),
    ('vector_width',
     '@ptxpy.jit\ndef k(x: Array[f32], i: i32):\n    a, b, c = x[i:i + 3]\n',
     'kernels.py:6:15: error: vector access of 3 f32 elements is not supported (2 or 4 elements, or 8 of a 16-bit type)'),
    ('vector_not_constant',
     '@ptxpy.jit\ndef k(x: Array[f32], i: i32, w: i32):\n    a, b = x[i:i + w]\n',
     "kernels.py:6:20: error: the width of a vector access (x[i:i + 4]) must be a compile-time constant: literals, module constants, Const parameters and arithmetic on them ('w' is a variable)"),
    ('atomic_too_few_indices',
     '@ptxpy.jit\ndef k(x: Array[f32, 2]):\n    ptxpy.atomic_add(x, 0, 1.0)\n',
     "kernels.py:6:25: error: array 'x' has rank 2 but the atomic gives 1 index"),
    ('atomic_of_an_element',
     '@ptxpy.jit\ndef k(x: Array[f32, 2], i: i32):\n    ptxpy.atomic_add(x[i, 2 * i], x[0, 0])\n',
     "kernels.py:6:22: error: ptxpy.atomic_add takes the array and the index apart: write "
     "ptxpy.atomic_add(x, (i, 2 * i), x[0, 0])"),
    ('item_of_an_element',
     '@ptxpy.jit\ndef k(x: Array[f32]):\n    x[0] = x[1].item()\n',
     "kernels.py:6:12: error: 'x[1].item': values have no attributes or methods in kernels: "
     "'x[1]' is already a number, write x[1]"),
    ('method_of_a_local',
     '@ptxpy.jit\ndef k(x: Array[f32]):\n    v = x[1]\n    x[0] = v.astype(f32)\n',
     "kernels.py:7:12: error: 'v.astype': values have no attributes or methods in kernels: "
     "convert with a type, as f32(v)"),
    ('method_of_an_array',
     '@ptxpy.jit\ndef k(x: Array[f32]):\n    x[0] = x.sum()\n',
     "kernels.py:6:12: error: 'x.sum': arrays have no methods in kernels (their attributes are "
     "shape, size and ndim)"),
    ('math_fma',
     '@ptxpy.jit\ndef k(x: Array[f32]):\n    x[0] = math.fma(x[1], x[2], x[3])\n',
     "kernels.py:6:12: error: math.fma is not supported in kernels; ptxpy.fma(a, b, c) is the "
     "fused multiply-add"),
    ('atomic_not_array',
     '@ptxpy.jit\ndef k(n: i32):\n    ptxpy.atomic_add(n, 0, 1)\n',
     "kernels.py:6:22: error: ptxpy.atomic_add needs an array, got 'n'"),
    ('atomic_float_bitwise',
     '@ptxpy.jit\ndef k(x: Array[f32]):\n    ptxpy.atomic_or(x, 0, 1.0)\n',
     "kernels.py:6:21: error: ptxpy.atomic_or needs an integer array, 'x' holds f32"),
    ('syncthreads_value',
     '@ptxpy.jit\ndef k(out: Array[f32]):\n    v = ptxpy.syncthreads()\n',
     "kernels.py:6:9: error: 'ptxpy.syncthreads()' returns no value"),
    ('invert_float',
     '@ptxpy.jit\ndef k(x: Array[f32]):\n    x[0] = ~x[0]\n',
     "kernels.py:6:12: error: operator '~' needs an integer, got f32"),
    ('constant_division_by_zero',
     '@ptxpy.jit\ndef k(out: Array[i32]):\n    out[0] = 1 // 0\n',
     'kernels.py:6:14: error: cannot evaluate this constant expression: integer division or modulo by zero'),
    ('func_array_mismatch',
     '@ptxpy.func\ndef first(a: Array[f32]) -> f32:\n    return a[0]\n@ptxpy.jit\ndef k(x: Array[f64], out: Array[f32]):\n    out[0] = first(x)\n',
     "kernels.py:9:20: error: parameter 'a' of first() is Array[f32], but 'x' is Array[f64]"),
    ('print_keyword',
     '@ptxpy.jit\ndef k(n: i32):\n    print(n, file=None)\n',
     "kernels.py:6:14: error: print() got an unsupported keyword argument 'file'"),
    ('literal_out_of_range',
     '@ptxpy.jit\ndef k(v: i32):\n    v = 3000000000\n',
     "kernels.py:6:9: error: 3000000000 does not fit in variable 'v' of type i32; use i32(...) to wrap it"),
    ('nan_to_int',
     '@ptxpy.jit\ndef k(out: Array[i32]):\n    out[0] = int(math.nan)\n',
     'kernels.py:6:18: error: cannot convert nan to i32'),
    ('static_range_variable_assigned',
     '@ptxpy.jit\ndef k(out: Array[i32]):\n    for k in ptxpy.static_range(4):\n        k = k + 1\n',
     "kernels.py:7:9: error: cannot assign to 'k' inside its ptxpy.static_range loop: it is a compile-time constant in each unrolled iteration (use another name)"),
    ('static_range_error_in_a_later_iteration',
     '@ptxpy.jit\ndef k(x: Array[f32, 2], out: Array[f32]):\n    for d in ptxpy.static_range(3):\n        out[d] = f32(x.shape[d])\n',
     "kernels.py:7:22: error: x.shape[2] is out of range: 'x' has rank 2 (in the unrolled iteration where d = 2)"),
    ('error_in_live_constant_branch',
     '@ptxpy.jit\ndef k(x: Array[f32], VEC: Const[int] = 2):\n    if VEC == 4:\n        a, b = x[0:VEC]\n    else:\n        a, b, c = x[0:VEC]\n',
     'kernels.py:9:9: error: a vector load of 2 elements needs 2 variables, got 3'),
    ('tuple_store_into_scalar',
     '@ptxpy.jit\ndef k(x: Array[f32], n: i32):\n    n[0], a = 1.0, 2\n',
     "kernels.py:6:5: error: 'n' is a scalar (i32), not an array"),
    ('tuple_store_vector_slice',
     '@ptxpy.jit\ndef k(x: Array[f32]):\n    x[0:2], a = (1.0, 2.0), 2\n',
     'kernels.py:6:5: error: a vector store cannot be part of a tuple assignment; assign it on its own line'),
    ('tuple_store_count',
     '@ptxpy.jit\ndef k(x: Array[f32]):\n    x[0], x[1] = 1.0, 2.0, 3.0\n',
     'kernels.py:6:5: error: cannot unpack 3 values into 2 targets'),
    ('call_of_warp_size',
     '@ptxpy.jit\ndef k(out: Array[i32]):\n    out[0] = ptxpy.WARP_SIZE()\n',
     "kernels.py:6:14: error: 'ptxpy.WARP_SIZE' is a value, not a function: write ptxpy.WARP_SIZE without the parentheses"),
    ('call_of_math_pi',
     '@ptxpy.jit\ndef k(out: Array[f32]):\n    out[0] = math.pi()\n',
     "kernels.py:6:14: error: 'math.pi' is a value, not a function: write math.pi without the parentheses"),
    ('call_of_thread_idx_x',
     '@ptxpy.jit\ndef k(out: Array[i32]):\n    out[0] = ptxpy.thread_idx.x()\n',
     "kernels.py:6:14: error: 'ptxpy.thread_idx.x' is a value, not a function: write ptxpy.thread_idx.x without the parentheses"),
    ('call_of_a_scalar_parameter',
     '@ptxpy.jit\ndef k(out: Array[i32], n: i32):\n    out[0] = n(1)\n',
     "kernels.py:6:14: error: 'n' is a value, not a function: write n without the parentheses"),
    ('call_of_a_module_constant',
     'N = 4\n@ptxpy.jit\ndef k(out: Array[i32]):\n    out[0] = N()\n',
     "kernels.py:7:14: error: 'N' is a value, not a function: write N without the parentheses"),
    ('tuple_constant_as_a_number',
     'TILE = (4, 8)\n@ptxpy.jit\ndef k(x: Array[f32]):\n    x[0] = TILE + 1\n',
     "kernels.py:7:12: error: 'TILE' is the tuple constant (4, 8): use it as a shape (ptxpy.shared_array(TILE, f32)) or take an item of it (TILE[0])"),
    ('tuple_constant_item_out_of_range',
     'TILE = (4, 8)\n@ptxpy.jit\ndef k(x: Array[f32]):\n    x[0] = TILE[2]\n',
     'kernels.py:7:12: error: TILE[2]: index 2 is out of range for the tuple (4, 8)'),
    ('tuple_constant_item_by_a_float',
     'TILE = (4, 8)\n@ptxpy.jit\ndef k(x: Array[f32], i: f32):\n    x[0] = TILE[i]\n',
     "kernels.py:7:17: error: TILE[i]: a tuple constant's index must be an integer, got f32"),
    ('tuple_constant_as_a_loop_bound',
     'TILE = (4, 8)\n@ptxpy.jit\ndef k(x: Array[f32]):\n    for j in ptxpy.static_range(TILE):\n        x[j] = 1.0\n',
     'kernels.py:7:33: error: an argument of ptxpy.static_range must be a number, not the tuple (4, 8)'),
    ('len_of_a_number',
     'N = 4\n@ptxpy.jit\ndef k(x: Array[f32]):\n    x[0] = len(N)\n',
     "kernels.py:7:16: error: len() needs an array or a tuple module constant, got 'N'"),
    ('item_of_a_number_constant',
     'N = 4\n@ptxpy.jit\ndef k(x: Array[f32]):\n    x[0] = N[0]\n',
     'kernels.py:7:12: error: N[0]: N is a number, not a tuple'),
    ('tuple_store_negative_index',
     '@ptxpy.jit\ndef k(x: Array[f32]):\n    x[0], x[-1] = x[1], x[0]\n',
     'kernels.py:6:13: error: negative index -1: indexing never wraps (a[-1] is not the last element)'),
    ('string_formatting_in_print',
     '@ptxpy.jit\ndef k(x: Array[f32]):\n    i = ptxpy.global_id()\n    print("{}".format(i))\n',
     'kernels.py:7:11: error: \'"{}".format\': string methods and formatting are not supported in '
     'kernels; print takes the values as arguments: print("x =", x)'),
    ('array_for_a_scalar_parameter',
     '@ptxpy.func\ndef f(a: f32, b: f32) -> f32:\n    return a + b\n'
     '@ptxpy.jit\ndef k(x: Array[f32]):\n    x[0] = f(x, 1.0)\n',
     "kernels.py:9:14: error: parameter 'a' of f() is f32, but 'x' is Array[f32]"),
    ('indices_one_at_a_time',
     '@ptxpy.jit\ndef k(x: Array[f32, 2]):\n    x[0, 0] = x[0][1]\n',
     "kernels.py:6:15: error: 'x' is an array of rank 2; index it with all 2 indices at once: x[0, 1]"),
    ('indices_one_at_a_time_in_a_store',
     '@ptxpy.jit\ndef k(x: Array[f32, 2]):\n    x[0][1] = 1.0\n',
     "kernels.py:6:5: error: 'x' is an array of rank 2; index it with all 2 indices at once: x[0, 1]"),
    ('index_of_an_element',
     '@ptxpy.jit\ndef k(x: Array[f32]):\n    x[0] = x[1][2]\n',
     "kernels.py:6:12: error: 'x[1]' is an element of 'x' (f32); it cannot be indexed"),
    ('keyword_of_max',
     '@ptxpy.jit\ndef k(x: Array[f32]):\n    x[0] = max(x[1], 1.0, key=abs)\n',
     "kernels.py:6:27: error: keyword arguments are not supported by max() (got 'key=')"),
    ('scalar_type_not_imported',
     '@ptxpy.jit\ndef k(x: Array[f32], n: u32):\n    x[0] = 1.0\n',
     "kernels.py:5:25: error: 'u32' is not imported (from ptxpy import u32)"),
    ('element_type_not_imported',
     '@ptxpy.jit\ndef k(x: Array[u8]):\n    x[0] = 1\n',
     "kernels.py:5:16: error: 'u8' is not imported (from ptxpy import u8)"),
    ('cast_not_imported',
     '@ptxpy.jit\ndef k(x: Array[f32]):\n    x[0] = f16(1.0)\n',
     "kernels.py:6:12: error: name 'f16' is not defined (it is ptxpy.f16: from ptxpy import f16)"),
    ('cuda_thread_index',
     '@ptxpy.jit\ndef k(x: Array[f32]):\n    x[0] = ptxpy.threadIdx.x\n',
     "kernels.py:6:12: error: ptxpy has no attribute 'threadIdx'; CUDA's threadIdx is ptxpy.thread_idx"),
    ('cuda_syncthreads',
     '@ptxpy.jit\ndef k(x: Array[f32]):\n    ptxpy.__syncthreads()\n',
     "kernels.py:6:5: error: ptxpy has no attribute '__syncthreads'; CUDA's __syncthreads is "
     "ptxpy.syncthreads"),
    ('typo_in_a_compile_time_constant',
     'BLOCK = 4\n@ptxpy.jit\ndef k(x: Array[f32]):\n    for j in ptxpy.static_range(BLOK):\n'
     '        x[j] = 1.0\n',
     "kernels.py:7:33: error: name 'BLOK' is not defined; did you mean BLOCK?"),
    ('typo_in_a_ptxpy_constant',
     '@ptxpy.jit\ndef k(x: Array[f32]):\n    r = ptxpy.local_array(ptxpy.WARPSIZE, f32)\n'
     '    x[0] = r[0]\n',
     "kernels.py:6:27: error: ptxpy has no attribute 'WARPSIZE'; did you mean ptxpy.WARP_SIZE?"),
    ('string_formatting_in_print',
     '@ptxpy.jit\ndef k(x: Array[f32]):\n    print("%f" % x[0])\n',
     "kernels.py:6:11: error: '\"%f\" % x[0]': string formatting is not supported in kernels; "
     "print takes the values as arguments: print(\"x =\", x)"),
    ('an_accumulator_started_at_an_int',
     '@ptxpy.jit\ndef k(x: Array[f32], out: Array[f32]):\n    acc = 0\n'
     '    for j in range(4):\n        acc += x[j]\n    out[0] = acc\n',
     "kernels.py:8:9: error: cannot assign f32 to variable 'acc' of type i32; 'acc' is i32 because "
     "its first value is the integer 0: start it as a float (acc = 0.0), or use i32(...) to convert"),
    ('the_whole_shape_as_a_value',
     '@ptxpy.jit\ndef k(x: Array[f32, 2]):\n    s = x.shape\n',
     "kernels.py:6:9: error: 'x.shape' is a tuple; use one extent (x.shape[0]) or unpack it into "
     "variables: n, m = x.shape"),
    ('the_shape_unpacked_into_too_few',
     '@ptxpy.jit\ndef k(x: Array[f32, 3]):\n    n, m = x.shape\n',
     "kernels.py:6:5: error: cannot unpack the 3 extents of 'x.shape' into 2 variables"),
    ('a_string_const_default',
     '@ptxpy.jit\ndef k(x: Array[f32], N: Const[int] = "s"):\n    x[0] = 1.0\n',
     "kernels.py:5:38: error: the default of Const parameter 'N' must be a number or a bool (it "
     "is Const[int]), not a string"),
    ('a_list_as_a_shared_shape',
     '@ptxpy.jit\ndef k(x: Array[f32]):\n    s = ptxpy.shared_array([16, 16], f32)\n'
     '    x[0] = s[0, 0]\n',
     "kernels.py:6:28: error: the shape of ptxpy.shared_array is a tuple, not a list: (16, 16)"),
    ('a_numba_signature',
     '@ptxpy.jit("void(float32[:])")\ndef k(x: Array[f32]):\n    x[0] = 1.0\n',
     "kernels.py:4:12: error: @ptxpy.jit takes no signature or other positional argument: ptxpy "
     "reads the types from the function's annotations (x: Array[f32], n: i32), and its options "
     "are keywords (grid=..., block=...)"),
    ('a_quoted_annotation_of_no_type',
     '@ptxpy.jit\ndef k(x: "Array[f33]"):\n    pass\n',
     "kernels.py:5:10: error: unsupported type annotation 'f33' (use a ptxpy scalar type, bool, "
     "int, float, Array[T] or Array[T, R])"),
    ('a_quoted_annotation_that_does_not_parse',
     '@ptxpy.jit\ndef k(x: "Array[f32"):\n    pass\n',
     "kernels.py:5:10: error: unsupported type annotation \"Array[f32\": its text is not a type "
     "(use a ptxpy scalar type, bool, int, float, Array[T] or Array[T, R])"),
    ('unpack_a_scalar',
     '@ptxpy.jit\ndef k(x: Array[f32]):\n    a, b = i32(3)\n',
     "kernels.py:6:12: error: cannot unpack an i32 value into 2 variables"),
    ('numba_grid',
     '@ptxpy.jit\ndef k(x: Array[f32]):\n    x[ptxpy.grid(1)] = 1.0\n',
     "kernels.py:6:7: error: ptxpy has no attribute 'grid'; Numba's cuda.grid(1) is "
     "ptxpy.global_id(0) (cuda.grid(2): ptxpy.global_id(0), ptxpy.global_id(1))"),
    ('numba_atomic',
     '@ptxpy.jit\ndef k(x: Array[f32]):\n    ptxpy.atomic.max(x, 0, 1.0)\n',
     "kernels.py:6:5: error: ptxpy has no attribute 'atomic'; Numba's cuda.atomic.max is "
     "ptxpy.atomic_max"),
    ('numba_shared_array',
     '@ptxpy.jit\ndef k(x: Array[f32]):\n    s = ptxpy.shared.array(32, f32)\n',
     "kernels.py:6:9: error: ptxpy has no attribute 'shared'; Numba's cuda.shared.array(shape, "
     "dtype) is ptxpy.shared_array(shape, dtype)"),
    ('numpy_dtype_name',
     '@ptxpy.jit\ndef k(x: Array[f32]):\n    x[0] = ptxpy.float32(ptxpy.WARP_SIZE)\n',
     "kernels.py:6:12: error: ptxpy has no attribute 'float32'; ptxpy's float32 is ptxpy.f32"),
    ('cuda_name_not_imported',
     '@ptxpy.jit\ndef k(x: Array[f32]):\n    x[0] = blockDim.x\n',
     "kernels.py:6:12: error: name 'blockDim' is not defined; CUDA's blockDim is ptxpy.block_dim"),
    ('misspelt_math_function',
     '@ptxpy.jit\ndef k(x: Array[f32]):\n    x[0] = math.sqr(x[1])\n',
     "kernels.py:6:12: error: module 'math' has no attribute 'sqr'; did you mean math.sqrt?"),
    ('keyword_only_marker',
     '@ptxpy.jit\ndef k(x: Array[f32], *, n: i32):\n    x[0] = 1.0\n',
     "kernels.py:5:22: error: keyword-only parameters ('*' in the parameter list) are not "
     "supported; remove the '*'"),
    ('positional_only_marker',
     '@ptxpy.func\ndef f(a: f32, /) -> f32:\n    return a\n'
     '@ptxpy.jit\ndef k(x: Array[f32]):\n    x[0] = f(x[1])\n',
     "kernels.py:5:15: error: positional-only parameters ('/' in the parameter list) are not "
     "supported; remove the '/'"),
    ('attribute_of_a_shape',
     '@ptxpy.jit\ndef k(x: Array[f32], out: Array[f64]):\n    out[0] = f64(x.shape.x)\n',
     "kernels.py:6:18: error: 'x.shape' is a tuple of extents; it has no attribute 'x' (use x.shape[0])"),
    ('float_index_of_a_shape',
     '@ptxpy.jit\ndef k(x: Array[f32], out: Array[f64]):\n    out[0] = f64(x.shape[0.0])\n',
     "kernels.py:6:26: error: the index of x.shape must be an integer, got 0.0"),
    ('lambda_called',
     '@ptxpy.jit\ndef k(out: Array[f32]):\n    out[0] = (lambda: 1.0)()\n',
     "kernels.py:6:15: error: lambda functions are not supported in kernels"),
    ('nested_tuple_constant',
     'T = ((1, 2), (3, 4))\n@ptxpy.jit\ndef k(out: Array[f32]):\n    out[0] = T[0][1]\n',
     "kernels.py:7:14: error: name 'T' is a tuple holding tuples or other values, which ptxpy does "
     "not take as a constant: tuple constants are flat tuples of numbers"),
    ('module_constant_that_cannot_be_computed',
     'BAD = math.log(0.0)\n@ptxpy.jit\ndef k(out: Array[f32]):\n    out[0] = BAD\n',
     "kernels.py:7:14: error: name 'BAD' is a module constant whose value cannot be computed: "
     "math domain error"),
    ('constant_assigned_under_an_if',
     'if math.pi > 3:\n    BLOCK = 512\nelse:\n    BLOCK = 256\n@ptxpy.jit\ndef k(out: Array[f32]):\n'
     '    out[0] = BLOCK\n',
     "kernels.py:10:14: error: name 'BLOCK' is assigned inside a top-level 'if' statement (line 5), "
     "which ptxpy does not evaluate: a module constant is a plain top-level assignment "
     "(BLOCK = ...); or pass the value as a Const parameter"),
    ('loop_variable_of_a_top_level_for',
     'for j in range(3):\n    pass\n@ptxpy.jit\ndef k(out: Array[f32]):\n    out[0] = j\n',
     "kernels.py:8:14: error: name 'j' is assigned inside a top-level 'for' statement (line 4), "
     "which ptxpy does not evaluate: a module constant is a plain top-level assignment "
     "(j = ...); or pass the value as a Const parameter"),
    ('nul_in_print_text',
     '@ptxpy.jit\ndef k(out: Array[f32]):\n    print("a\\x00b", 1)\n',
     "kernels.py:6:11: error: print() text cannot contain a NUL character ('\\0')"),
    ('huge_integer_shortened',
     'N = 2 ** 1000\n@ptxpy.jit\ndef k(out: Array[i64]):\n    out[0] = N % 7\n',
     "kernels.py:7:14: error: integer constant 107150860718626...376 (302 digits) does not fit in 64 bits"),
    ('range_shadowed_by_a_local',
     '@ptxpy.jit\ndef k(out: Array[f32]):\n    range = 3\n    for i in range(4):\n        out[i] = 1.0\n',
     "kernels.py:7:14: error: 'range' here is a local variable, which hides the builtin range(); rename it"),
    ('type_shadowed_by_the_module',
     'f64 = float\n@ptxpy.jit\ndef k(out: Array[f64]):\n    out[0] = 1.0\n',
     "kernels.py:6:18: error: 'f64' is defined again in this module, so it no longer names ptxpy's "
     "f64; rename that definition"),
    ('const_of_a_wide_type',
     '@ptxpy.jit\ndef k(x: Array[f32], N: Const[i64] = 1):\n    x[0] = 1.0\n',
     "kernels.py:5:31: error: Const[i64] is not supported: Const takes int, float or bool (also "
     "written i32, f32, bool_)"),
]


def compile_error(source: str) -> CompileError:
    with pytest.raises(CompileError) as info:
        parsed = parse_module(source, "kernels.py")
        check_kernel(parsed, "k")
    return info.value


@pytest.mark.parametrize("name,body,first_line", CASES, ids=[c[0] for c in CASES])
def test_error_message_line_and_caret(name, body, first_line):
    source = HEADER + body
    err = compile_error(source)
    lines = str(err).splitlines()
    assert lines[0] == first_line
    line, col = err.loc
    assert lines[0].startswith(f"kernels.py:{line}:{col + 1}: error: ")
    assert lines[1] == source.splitlines()[line - 1]
    assert lines[2] == " " * col + "^"
    assert len(lines) == 3


def test_a_kernel_name_that_is_not_ascii():
    """The kernel is a PTX entry of its name, and ptxas takes only ASCII names."""
    source = HEADER + '@ptxpy.jit\ndef größe(out: Array[f32]):\n    out[0] = 1.0\n'
    with pytest.raises(CompileError) as info:
        check_kernel(parse_module(source, "kernels.py"), "größe")
    lines = str(info.value).splitlines()
    assert lines[0] == ("kernels.py:5:5: error: kernel name 'größe' is not ASCII: the kernel is a "
                        "PTX entry of the same name, and PTX names are ASCII (rename it)")
    assert lines[1:] == ["def größe(out: Array[f32]):", "    ^"]


@pytest.mark.parametrize("name,reason", [
    ("_", "a kernel cannot be named '_': the kernel is a PTX entry of the same name, and PTX "
          "takes no '_' alone (rename it)"),
    ("vprintf", "a kernel cannot be named 'vprintf': that is the CUDA function print() calls, "
                "which the PTX declares (rename it)")])
def test_kernel_names_that_ptx_does_not_take(name, reason):
    source = HEADER + f'@ptxpy.jit\ndef {name}(out: Array[f32]):\n    print(out[0])\n'
    with pytest.raises(CompileError) as info:
        check_kernel(parse_module(source, "kernels.py"), name)
    assert str(info.value).splitlines()[0] == f"kernels.py:5:5: error: {reason}"


def test_errors_in_device_functions_point_into_the_function():
    source = HEADER + (
        "@ptxpy.func\n"
        "def scale(v: f32) -> f32:\n"
        "    return v * undefined_name\n"
        "@ptxpy.jit\n"
        "def k(out: Array[f32]):\n"
        "    out[0] = scale(1.0)\n")
    assert str(compile_error(source)).splitlines()[0] == (
        "kernels.py:6:16: error: name 'undefined_name' is not defined")


def test_unreached_device_function_errors_do_not_stop_other_kernels():
    source = HEADER + (
        "@ptxpy.func\n"
        "def broken(v: f32) -> f32:\n"
        "    return nothing\n"
        "@ptxpy.jit\n"
        "def k(out: Array[f32]):\n"
        "    out[0] = 1.0\n")
    check_kernel(parse_module(source), "k")


def test_a_signature_error_does_not_stop_the_files_other_decorated_kernels(tmp_path):
    import importlib.util

    import numpy as np

    path = tmp_path / "two_kernels.py"
    decorator = "@ptxpy.jit(out_shape=lambda x: x, grid=1, block=4)\n"
    path.write_text(HEADER + decorator + "def bad(x: Array[f32] = 1, out: Array[f32] = 2):\n    pass\n"
                    + decorator + "def good(x: Array[f32], out: Array[f32]):\n    out[0] = x[0]\n")
    spec = importlib.util.spec_from_file_location("two_kernels", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    x = np.zeros(4, np.float32)
    assert ".visible .entry good(" in module.good.ptx(x)
    with pytest.raises(CompileError) as info:
        module.bad.ptx(x)
    assert str(info.value).startswith(f"{path}:5:25: error: parameter 'x' has a default value")


def test_error_without_location_names_the_file():
    parsed = parse_module(HEADER, "kernels.py")
    with pytest.raises(CompileError) as info:
        check_kernel(parsed, "missing")
    assert str(info.value) == "kernels.py: error: no @ptxpy.jit kernel named 'missing'"


def test_unsupported_target_names_the_file_being_compiled():
    import ptxpy
    from ptxpy.transpiler import driver

    source = HEADER + "@ptxpy.jit\ndef k(x: Array[f32]):\n    x[0] = 1.0\n"
    expected = "mod.py: error: unsupported target 'sm_70' (choose from sm_80"
    with pytest.raises(CompileError) as info:
        ptxpy.transpile(source, filename="mod.py", arch="sm_70")
    assert str(info.value).startswith(expected)
    with pytest.raises(CompileError) as info:       # as @ptxpy.jit(arch="sm_70") compiles
        driver.compile_kernel(driver.parse(source, "mod.py"), "k", options=driver.Options("sm_70"))
    assert str(info.value).startswith(expected)


def test_an_error_about_no_file_does_not_claim_one():
    assert str(CompileError("something went wrong")) == "ptxpy: error: something went wrong"


def test_caret_sits_under_the_reported_column():
    source = HEADER + "@ptxpy.jit\ndef k(n: i32):\n    m = n +  oops\n"
    lines = str(compile_error(source)).splitlines()
    assert lines[0] == "kernels.py:6:14: error: name 'oops' is not defined"
    assert lines[2] == " " * 13 + "^"


@pytest.mark.parametrize("odd", ["\f", "\v", "\x1c", "\x85", "\u2028", "\u2029"])
def test_lines_are_numbered_as_python_numbers_them(odd):
    """A form feed (GNU style puts one between sections) or a Unicode line separator in a
    comment is no line break for Python: the error shows the right line, and the PTX puts
    each statement's comment above its own instructions."""
    from ptxpy.transpiler import driver

    body = (f"\f\n@ptxpy.jit\ndef k(out: Array[f32]):\n    # a{odd}b\n    i = ptxpy.global_id(0)\n"
            "    out[i] = 2.0\n")
    lines = str(compile_error(HEADER + body.replace("2.0", "2.0 + oops"))).splitlines()
    assert lines[:2] == ["kernels.py:9:20: error: name 'oops' is not defined",
                         "    out[i] = 2.0 + oops"]
    ptx = driver.transpile(HEADER + body, "kernels.py")["k"]
    assert "// line 8: i = ptxpy.global_id(0)\n    .loc 1 8 " in ptx
    assert "// line 9: out[i] = 2.0\n    .loc 1 9 " in ptx


def test_syntax_error_from_libcst_or_python_is_located():
    err = compile_error(HEADER + "@ptxpy.jit\ndef k(n: i32):\n    x = = 1\n")
    assert str(err).startswith("kernels.py:6:")
    assert err.source_line == "    x = = 1"


def test_every_error_is_a_compile_error_even_for_odd_inputs():
    for source in ["\x00", "def", "@ptxpy.jit\ndef k(:", "(" * 500 + ")" * 500,
                   "x = 1 +" + " 1 +" * 3000 + " 1", "\ufeffimport ptxpy"]:
        try:
            parsed = parse_module(source, "kernels.py")
        except CompileError as err:
            assert str(err).startswith("kernels.py")
        else:
            assert parsed.kernels == {}


KERNEL_AT = ("@ptxpy.jit\n"
             "def k(x: Array[f32]):\n"
             "    x[0] = 1.0\n")


def indented(text: str, levels: int = 1) -> str:
    return "".join("    " * levels + line if line else line for line in text.splitlines(True))


@pytest.mark.parametrize("holder, inside", [
    ("class A:\n", "class 'A'"),
    ("def outer():\n", "function 'outer'"),
    ("if True:\n", "an 'if' block"),
    ("for _ in range(2):\n", "a 'for' block"),
    ("with open(__file__):\n", "a 'with' block"),
    ("try:\n", "a 'try' block"),
])
def test_a_decorated_function_below_the_top_level_is_an_error_at_its_decorator(holder, inside):
    import ptxpy

    tail = "except ImportError:\n    pass\n" if holder == "try:\n" else ""
    source = HEADER + holder + indented(KERNEL_AT) + tail
    with pytest.raises(CompileError) as info:
        ptxpy.transpile(source, "kernels.py")
    assert str(info.value).splitlines() == [
        f"kernels.py:5:5: error: @ptxpy.jit function 'k' must be defined at the top level of the "
        f"module, not inside {inside}", "    @ptxpy.jit", "    ^"]


def test_a_device_function_in_a_block_is_an_error_where_a_kernel_calls_it():
    import ptxpy

    source = HEADER + ("if True:\n    @ptxpy.func\n    def twice(v: f32) -> f32:\n        return 2 * v\n"
                       "@ptxpy.jit\ndef k(x: Array[f32]):\n    x[0] = twice(x[1])\n")
    with pytest.raises(CompileError) as info:
        ptxpy.transpile(source, "kernels.py")
    assert str(info.value).splitlines()[0] == (
        "kernels.py:5:5: error: @ptxpy.func function 'twice' must be defined at the top level of "
        "the module, not inside an 'if' block")


def test_a_nested_kernel_does_not_stop_the_files_other_kernels():
    from ptxpy.transpiler import driver

    source = HEADER + "class A:\n" + indented(KERNEL_AT) + KERNEL_AT.replace("def k", "def good")
    program = driver.parse(source, "kernels.py")
    assert list(program.kernels) == ["A.k", "good"]
    assert list(driver.transpile(source, "kernels.py", kernels=["good"])) == ["good"]


def test_a_kernel_in_a_block_named_like_a_top_level_one_takes_the_name_as_python_does():
    from ptxpy.transpiler import driver

    in_block = "if True:\n" + indented(KERNEL_AT)
    before = driver.parse(HEADER + KERNEL_AT + in_block, "kernels.py")
    after = driver.parse(HEADER + in_block + KERNEL_AT, "kernels.py")
    assert type(before.kernels["k"]).__name__ == "InvalidDecl"     # the block's rebinds 'k'
    assert type(after.kernels["k"]).__name__ == "KernelDecl"


def test_a_kernel_in_a_block_called_through_jit_says_it_must_be_at_the_top_level(tmp_path):
    """It used to say 'ink is not decorated with @ptxpy.jit in its source'."""
    import importlib.util

    import numpy as np

    path = tmp_path / "blocked.py"
    path.write_text(HEADER + "if True:\n" + indented(
        "@ptxpy.jit(out_shape=lambda x: x, grid=1, block=4)\n"
        "def ink(x: Array[f32], out: Array[f32]):\n    out[0] = x[0]\n"))
    spec = importlib.util.spec_from_file_location("blocked", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    with pytest.raises(CompileError) as info:
        module.ink.ptx(np.zeros(4, np.float32))
    assert str(info.value).splitlines()[:3] == [
        f"{path}:5:5: error: @ptxpy.jit function 'ink' must be defined at the top level of the "
        "module, not inside an 'if' block",
        "    @ptxpy.jit(out_shape=lambda x: x, grid=1, block=4)", "    ^"]


def test_a_kernel_defined_in_a_function_is_reported_at_every_call(tmp_path):
    """The second call used to find the parsed file kept and fail past the check (KeyError)."""
    import importlib.util

    import numpy as np

    path = tmp_path / "inner.py"
    path.write_text(HEADER + "def make():\n" + indented(
        "@ptxpy.jit(out_shape=lambda x: x, grid=1, block=4)\n"
        "def ink(x: Array[f32], out: Array[f32]):\n    out[0] = x[0]\n") + "    return ink\n")
    spec = importlib.util.spec_from_file_location("inner", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    kernel = module.make()
    for _ in range(2):
        with pytest.raises(CompileError) as info:
            kernel.ptx(np.zeros(4, np.float32))
        assert "kernel 'make.<locals>.ink' is defined inside a function or class" in str(info.value)


def sum_kernel(terms: int) -> str:
    return HEADER + ("@ptxpy.jit\ndef k(x: Array[f32], out: Array[f32]):\n"
                     f"    out[0] = {' + '.join(f'x[{i}]' for i in range(terms))}\n")


def test_a_long_sum_compiles():
    """400 terms used to be 'the source is nested too deeply to compile' (Python's recursion
    limit, in the positions of libcst's nodes)."""
    from ptxpy.transpiler import driver

    ptx = driver.transpile(sum_kernel(1000), "kernels.py")["k"]
    assert ptx.count("add.rn.f32") == 999


DEEP_SCRIPT = """
import sys
from ptxpy.transpiler import driver
from ptxpy.transpiler.errors import CompileError
try:
    driver.transpile(sys.stdin.read(), "kernels.py")
    print("compiled")
except CompileError as err:
    print(err)
"""


def compile_in_a_subprocess(source: str) -> str:
    """What compiling `source` prints, in a process of its own (a C stack overflow kills it)."""
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", DEEP_SCRIPT], input=source, text=True,
                          capture_output=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


@pytest.mark.parametrize("expression", [
    " + ".join(f"x[{i % 8}]" for i in range(5000)),           # was: nested too deeply, no line
    " and ".join(["x[0] > 0.0"] * 10000),                       # was: a crash of libcst's parser
    "ptxpy" + ".a" * 7000,                                      # was: a crash of libcst's parser
])
def test_an_expression_nested_beyond_the_limit_is_an_error_at_its_statement(expression):
    source = HEADER + f"@ptxpy.jit\ndef k(x: Array[f32], out: Array[f32]):\n    out[0] = {expression}\n"
    lines = compile_in_a_subprocess(source).splitlines()
    assert lines[0] == ("kernels.py:6:5: error: this statement nests expressions more than 4000 "
                        "levels deep, too deeply to compile; split it into several statements")
    assert lines[2] == "    ^"


def test_an_expression_just_below_the_limit_compiles_without_overflowing_the_stack():
    body = "    out[0] = " + "-" * 3990 + "x[0]\n    c = x[1] > 0.0\n    out[1] = f32(" + \
           "not " * 3990 + "c)\n"
    source = HEADER + "@ptxpy.jit\ndef k(x: Array[f32], out: Array[f32]):\n" + body
    assert compile_in_a_subprocess(source) == "compiled\n"


def test_a_nul_byte_is_located():
    source = HEADER + "@ptxpy.jit\ndef k(x: Array[f32]):\n    x[0] = 1.0  # a\0b\n"
    assert str(compile_error(source)).splitlines() == [
        "kernels.py:6:20: error: source contains a NUL byte",
        "    x[0] = 1.0  # a\\0b",
        " " * 19 + "^"]


def test_the_caret_counts_wide_characters_twice():
    source = HEADER + "@ptxpy.jit\ndef k(x: Array[f32]):\n    幅 = 1.0; x[0] = 幅 + oops\n"
    lines = str(compile_error(source)).splitlines()
    assert lines[0] == "kernels.py:6:25: error: name 'oops' is not defined"
    assert lines[2] == " " * 26 + "^"      # under the 'o', the two 幅 taking 2 columns each


@pytest.mark.parametrize("line", ["x ^= x << r", "x = (x >> r) | 1"])
def test_a_shift_widened_by_its_count_suggests_a_count_of_the_value_type(line):
    """`u32 << i32` shifts in i64 (NumPy's promotion); casting the result back is not the fix
    a user wants, a count of the value's own type is."""
    err = compile_error(HEADER + "from ptxpy import u32\n@ptxpy.jit\ndef k(out: Array[u32], r: i32):\n"
                        f"    x = out[0]\n    {line}\n")
    op = "<<" if "<<" in line else ">>"
    assert err.message == (f"cannot assign i64 to variable 'x' of type u32; the shift count's type "
                           f"i32 made `u32 {op} i32` shift in i64 (they promote to it); give the "
                           f"count the value's type: x {op} u32(count)")


MAYBE_UNASSIGNED = """
@ptxpy.jit
def k(x: Array[f32], out: Array[f32], n: i32):
    t = ptxpy.global_id(0)
{body}
"""


@pytest.mark.parametrize("body, name, line", [
    ("    if x[t] > 0.0:\n        y = 1.0\n    out[t] = y", "y", 10),
    ("    for i in range(n):\n        last = x[i]\n    out[t] = last", "last", 10),
    ("    for i in range(n):\n        if x[i] > 0.0:\n            found = i\n            break\n"
     "    out[t] = f32(found)", "found", 12),
])
def test_a_variable_that_may_be_unassigned_where_it_is_read_is_a_warning(body, name, line,
                                                                          tmp_path, capsys):
    """Python would raise UnboundLocalError on the path that skips the assignment; the kernel
    reads an undefined value there. Legal (that path may never run), so a located warning:
    from the CLI on stderr (status 0), from Python a SourceWarning at the line."""
    import ptxpy
    from ptxpy.cli import main
    from ptxpy.transpiler.errors import SourceWarning

    path = tmp_path / "maybe.py"
    path.write_text(HEADER + MAYBE_UNASSIGNED.format(body=body))
    assert main(["transpile", str(path), "-o", str(tmp_path)]) == 0
    first, source, caret = capsys.readouterr().err.splitlines()
    column = source.index(name, source.index("=") if "out[t] =" in source else 0) + 1
    assert first == (f"{path}:{line}:{column}: warning: '{name}' may be used before it is "
                     "assigned: on some path to here it is not assigned (the value read there is "
                     "undefined)")
    assert caret == " " * (column - 1) + "^"
    with pytest.warns(SourceWarning, match=f"'{name}' may be used before it is assigned") as seen:
        ptxpy.transpile(path.read_text(), str(path))
    assert [(w.filename, w.lineno) for w in seen] == [(str(path), line)]


@pytest.mark.parametrize("body", [
    "    if x[t] > 0.0:\n        y = 1.0\n    else:\n        y = 2.0\n    out[t] = y",
    "    y = 0.0\n    for i in range(n):\n        y = x[i]\n    out[t] = y",
    "    for i in range(n):\n        v = x[i]\n        out[i] = v",
    "    if t > 0:\n        return\n    y = x[t]\n    out[t] = y",
    "    acc = 0.0\n    while n > 0:\n        acc += x[n]\n        n -= 1\n    out[t] = acc",
    # a range of constant bounds that is not empty assigns its variable on every path
    "    for i in range(3):\n        pass\n    out[t] = f32(i)",
    "    for i in range(8, 0, -3):\n        if x[i] > 0.0:\n            break\n    out[t] = f32(i)",
    "    for i in range(4):\n        i += 10\n    out[t] = f32(i)",
])
def test_a_variable_assigned_on_every_path_gives_no_warning(body, tmp_path, capsys):
    from ptxpy.cli import main

    path = tmp_path / "fine.py"
    path.write_text(HEADER + MAYBE_UNASSIGNED.format(body=body))
    assert main(["transpile", str(path), "-o", str(tmp_path)]) == 0
    assert capsys.readouterr().err == ""


def test_the_variable_of_an_empty_static_range_read_after_it_is_an_error():
    """`ptxpy.static_range(0)` never assigns its variable, as a dead `if False:` branch never
    does: reading it after the loop is the same error; a variable assigned before keeps its value."""
    body = "    for q in ptxpy.static_range({}):\n        pass\n    out[t] = f32(q)"
    err = compile_error(HEADER + MAYBE_UNASSIGNED.format(body=body.format(0)))
    assert err.message == "local variable 'q' is used before it is assigned"
    assert err.loc == (10, 17)
    source = HEADER + MAYBE_UNASSIGNED.format(body="    q = 5\n" + body.format("2, 2"))
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("error")     # q is assigned on every path: no warning either
        ptx = driver.transpile(source, "kernels.py", kernels=["k"])["k"]
    assert "0f40A00000" in ptx             # f32(q) is 5.0


EXPONENTIAL_CALLS = "".join(f"""
@ptxpy.func
def g{d}(a: f32) -> f32:
    return g{d + 1}(a) + g{d + 1}(a * 2.0)
""" for d in range(20)) + "\n@ptxpy.func\ndef g20(a: f32) -> f32:\n    return a\n"


@pytest.mark.parametrize("body, first_line", [
    ("@ptxpy.jit\ndef k(out: Array[f32]):\n    for a in ptxpy.static_range(4096):\n"
     "        for b in ptxpy.static_range(4096):\n            out[0] += 1.0\n",
     "kernels.py:6:5: error: unrolling this ptxpy.static_range, with the loops and calls inside "
     "it, gives more than 65536 statements; use range() for a loop that need not be unrolled"),
    ("@ptxpy.jit\ndef k(x: Array[f32], out: Array[f32]):\n    for a in ptxpy.static_range(4096):\n"
     "        for b in ptxpy.static_range(4096):\n            out[a] += x[b]\n",
     "kernels.py:6:5: error: unrolling this ptxpy.static_range, with the loops inside it, gives "
     "more than 65536 statements; use range() for a loop that need not be unrolled"),
    ("@ptxpy.jit\ndef k(x: Array[f32], out: Array[f32]):\n    out[0] = g0(x[0])\n" + EXPONENTIAL_CALLS,
     "kernels.py:6:14: error: inlining this call, with the calls and unrolled loops inside it, "
     "gives more than 65536 statements: every @ptxpy.func call is inlined, so a function that "
     "calls another twice doubles the code at each level"),
], ids=["nested_static_range", "nested_static_range_typed_per_copy", "calls_doubling"])
def test_kernels_too_large_after_unrolling_and_inlining(body, first_line):
    """Without the limit these compiled for minutes (issue found by the stop-34 error sweep)."""
    source = HEADER + body
    with pytest.raises(CompileError) as info:
        driver.compile_kernel(driver.parse(source, "kernels.py"), "k")
    lines = str(info.value).splitlines()
    assert lines[0] == first_line
    line, col = info.value.loc
    assert lines[1] == source.splitlines()[line - 1] and lines[2] == " " * col + "^"


def test_unrolling_below_the_limit_compiles():
    source = HEADER + ("@ptxpy.jit\ndef k(x: Array[f32], out: Array[f32]):\n"
                       "    for a in ptxpy.static_range(64):\n"
                       "        for b in ptxpy.static_range(64):\n"
                       "            out[a] += x[b]\n")
    ssa = driver.compile_kernel(driver.parse(source, "kernels.py"), "k", stop_after="ssa").ssa
    assert sum(i.op == "add" and i.type == f32 for i in ssa.instrs()) == 64 * 64


def test_tuple_assignment_at_the_top_level_binds_constants():
    source = HEADER + ("A, (B) = 4, 5.5\n[C, D] = (1, 2)\n@ptxpy.jit\ndef k(out: Array[f32]):\n"
                       "    out[0] = A * B + C - D\n")
    typed_kernel = driver.compile_kernel(driver.parse(source, "kernels.py"), "k",
                                         stop_after="typed").typed.kernel
    assert "out[0:i32] = 21.0:f32" in "\n".join(format_body(typed_kernel.body))


@pytest.mark.parametrize("body, lines, message", [
    ("    r = ptxpy.local_array(4, f32)\n    r[10] = x[0]\n    out[0] = r[10]\n", [7, 8],
     "index 10 is out of bounds for axis 0 of 'r' (4 elements): the access is undefined if it runs"),
    ("    s = ptxpy.shared_array((2, 8), f32)\n    s[1, 8] = x[0]\n    out[0] = s[1, 7]\n", [7],
     "index 8 is out of bounds for axis 1 of 's' (8 elements): the access is undefined if it runs"),
    ("    a, b, c, d = x[2:6]\n    out[0] = a + b + c + d\n", [6],
     "misaligned vector access: 'x' at element 2 of its last axis, which is not a multiple of 4 "
     "(a GPU fault when it runs)"),
])
def test_constant_indices_that_cannot_be_right_are_warnings(body, lines, message):
    """Legal where the code never runs (a guarded copy of an unrolled loop), so warnings."""
    import ptxpy
    from ptxpy.transpiler.errors import SourceWarning

    source = HEADER + "@ptxpy.jit\ndef k(x: Array[f32], out: Array[f32]):\n" + body
    with pytest.warns(SourceWarning) as seen:
        ptxpy.transpile(source, "kernels.py")
    assert [(str(w.message), w.lineno) for w in seen] == [(message, line) for line in lines]


def test_warnings_come_in_source_order_with_the_caret_at_the_access(tmp_path, capsys):
    """Made by different stages (the SSA builder's vector access and out-of-bounds index, its
    unassigned read), printed by line; a misaligned vector access is marked at its start."""
    from ptxpy.cli import main

    path = tmp_path / "warned.py"
    path.write_text(HEADER + "@ptxpy.jit\ndef k(x: Array[f32], out: Array[f32]):\n"
                    "    r = ptxpy.local_array(4, f32)\n    t = ptxpy.thread_idx.x\n"
                    "    if t > 3:\n        y = 1.0\n    a, b, c, d = x[2:6]\n"
                    "    out[t] = r[10] + y + a + b + c + d\n")
    assert main(["transpile", str(path), "-o", str(tmp_path)]) == 0
    err = capsys.readouterr().err.splitlines()
    firsts = [line.split(": warning: ")[0].split(":", 1)[1] for line in err if ": warning: " in line]
    assert firsts == ["10:20", "11:14", "11:22"]   # x[2:6]'s start; r[10]; y
    assert err[2] == " " * 19 + "^"


def test_in_bounds_constant_indices_and_aligned_vectors_give_no_warning():
    import warnings

    import ptxpy

    source = HEADER + ("@ptxpy.jit\ndef k(x: Array[f32], out: Array[f32]):\n"
                       "    s = ptxpy.shared_array(8, f32)\n    s[7] = x[0]\n"
                       "    a, b, c, d = x[4:8]\n    out[0] = s[7] + a + b + c + d\n")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ptxpy.transpile(source, "kernels.py")


@pytest.mark.parametrize("decorator, message", [
    ("@ptxpy.jti", "'@ptxpy.jti' is not a ptxpy decorator; did you mean @ptxpy.jit?"),
    ("@ptxpy.fnc", "'@ptxpy.fnc' is not a ptxpy decorator; did you mean @ptxpy.func?"),
    ("@ptxpy.kernel(block=32)", "'@ptxpy.kernel(block=32)' is not a ptxpy decorator "
                                "(@ptxpy.jit or @ptxpy.func)"),
])
def test_a_misspelled_decorator_is_an_error_not_a_file_without_kernels(decorator, message):
    source = HEADER + decorator + "\ndef k(out: Array[f32]):\n    out[0] = 1.0\n"
    with pytest.raises(CompileError) as info:
        driver.transpile(source, "kernels.py")
    assert str(info.value).splitlines() == [f"kernels.py:4:1: error: {message}", decorator, "^"]


@pytest.mark.parametrize("imports, decorator, message", [
    ("import ptxpy\n", "@ptxpy.jit(block=32)(grid=1)",
     "'@ptxpy.jit(block=32)(grid=1)' calls what @ptxpy.jit(...) returns; give every option in one "
     "call, as @ptxpy.jit(block=..., grid=...)"),
    ("from ptxpy import func\n", "@func()()",
     "'@func()()' calls what @func(...) returns; give every option in one call, as "
     "@func(block=..., grid=...)"),
    ("", "@ptxpy.jit", "name 'ptxpy' is not defined (add 'import ptxpy' to the file)"),
    ("import ptxpy\n", "@jit", "name 'jit' is not defined (add 'from ptxpy import jit' to the file)"),
])
def test_a_decorator_python_could_not_apply_is_an_error(imports, decorator, message):
    source = imports + "from ptxpy import Array, f32\n" + decorator + "\ndef k(out: Array[f32]):\n    out[0] = 1.0\n"
    line = source.count("\n", 0, source.index(decorator)) + 1
    with pytest.raises(CompileError) as info:
        driver.transpile(source, "kernels.py")
    assert str(info.value).splitlines() == [f"kernels.py:{line}:1: error: {message}", decorator, "^"]


def test_other_undefined_decorators_are_left_alone():
    source = "import ptxpy\nfrom ptxpy import Array, f32\n@cache\ndef host(x):\n    return x\n"
    assert driver.transpile(source, "kernels.py") == {}


def test_an_error_that_a_const_value_causes_notes_the_values_given():
    source = ("import ptxpy\nfrom ptxpy import Array, Const, i32\n\n@ptxpy.jit\n"
              "def k(x: Array[i32], K: Const[int] = 1):\n    s = x[0]\n    s += x[1] * K\n    x[0] = s\n")
    assert list(driver.transpile(source, "kernels.py")) == ["k"]     # with its default, it compiles
    with pytest.raises(CompileError) as info:
        driver.transpile(source, "kernels.py", defines={"K": 2**31})
    assert str(info.value) == (
        "kernels.py:7:5: error: cannot assign i64 to variable 's' of type i32; use i32(...) to convert\n"
        "    s += x[1] * K\n"
        "    ^\n"
        "kernels.py:5:5: note: kernel 'k' compiled for Const K=2147483648")


def test_a_note_is_printed_without_a_source_line_even_when_located():
    err = CompileError("bad", (2, 0)).noted("see here", (1, 4))
    err.located("f.py", ["line one\n", "line two\n"])
    assert str(err) == "f.py:2:1: error: bad\nline two\n^\nf.py:1:5: note: see here"
