"""Every kind of user error prints as SPEC 2.6 says: `file.py:LINE:COL: error: message`, the
source line, and a caret under the column.

Each case is a kernel module (after HEADER); the expected first line is compared word for word,
the second and third lines are checked against the source.
"""
import pytest

from ptxpy.transpiler.errors import CompileError
from ptxpy.transpiler.frontend import check_kernel, parse_module

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
     "kernels.py:6:14: error: name 'sum' is a Python builtin that kernels do not support"),
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
     '@ptxpy.jit\ndef k(n: i32):\n    s = ptxpy.shared_array(n, f32)\n',
     "kernels.py:6:28: error: the shape of ptxpy.shared_array must be a compile-time constant: literals, module constants, Const parameters and arithmetic on them ('n' is a variable)"),
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
     '@ptxpy.jit\ndef k(out: Array[f32]):\n    out[0] = math.atan2(1.0, 2.0)\n',
     'kernels.py:6:14: error: math.atan2 is not supported in kernels (supported: ceil copysign cos erf exp exp2 fabs floor fmod isfinite isinf isnan log log10 log2 pow sin sqrt tan tanh, and the constants pi e tau inf nan)'),
    ('ptxpy_unknown',
     '@ptxpy.jit\ndef k(out: Array[f32]):\n    out[0] = ptxpy.thread_id()\n',
     "kernels.py:6:14: error: ptxpy has no attribute 'thread_id'"),
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
    ('default_on_scalar',
     '@ptxpy.jit\ndef k(out: Array[f32], a: f32 = 1.0):\n    pass\n',
     "kernels.py:5:33: error: parameter 'a' has a default value, which only Const parameters may have"),
    ('vector_width',
     '@ptxpy.jit\ndef k(x: Array[f32], i: i32):\n    a, b, c = x[i:i + 3]\n',
     'kernels.py:6:15: error: vector access of 3 f32 elements is not supported (2 or 4 elements, or 8 of a 16-bit type)'),
    ('vector_not_constant',
     '@ptxpy.jit\ndef k(x: Array[f32], i: i32, w: i32):\n    a, b = x[i:i + w]\n',
     "kernels.py:6:20: error: the width of a vector access (x[i:i + 4]) must be a compile-time constant: literals, module constants, Const parameters and arithmetic on them ('w' is a variable)"),
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
    ('tuple_constant_item_by_variable',
     'TILE = (4, 8)\n@ptxpy.jit\ndef k(x: Array[f32], i: i32):\n    x[0] = TILE[i]\n',
     "kernels.py:7:17: error: TILE[i]: 'i' is a variable (a tuple constant's index must be a compile-time integer)"),
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
