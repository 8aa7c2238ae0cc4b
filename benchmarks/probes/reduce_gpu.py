"""Cut down random programs that the GPU computes differently from the simulator (device only).

Reads the mismatches that `PTXPY_TEST_DEVICE=gpu python tests/test_differential.py` printed
(`--- program K: mismatch at thread T (a=..., ...): ...` followed by the source), and for each
one greedily removes statements, replaces `if` tests by `True`/`False` and expressions by one
of their operands or by `0`/`1`, keeping each change while the card and the simulator still
disagree on some output. Divisors and array indices are left alone: changing them could make
the program undefined (an integer division by zero, an index out of bounds) rather than smaller.
A `while` loop keeps its test (or becomes `while False:`) and its counter's `w += 1`, so that
every candidate still ends; barriers and thread 0's `if i == 0:` blocks stay, so that no
candidate races.

    python benchmarks/probes/reduce_gpu.py MISMATCHES.txt [OUT_DIR] [--jobs N]

Writes OUT_DIR/program-K.py (the reduced kernel, with the inputs and both results in its
docstring) and prints one summary line per program.
"""
from __future__ import annotations

import itertools
import multiprocessing
import os
import re
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tests"))

NTHREADS = 64
MEM_SLOTS = 4      # test_differential's scratch array
ACC_SLOTS = 4      # its counter array (--atomic)
PROTECTED_OPERATORS = ("FloorDivide", "Modulo", "Divide")


def parse_mismatches(text: str) -> list[dict]:
    """Each printed mismatch: its number, thread, the thread's inputs and the program source,
    and the run's seed where a `# diff-SEED.txt` line names it."""
    programs = []
    for part in re.split(r"^(?=# diff-)", text, flags=re.M):
        seed = re.match(r"# diff-(\d+)", part)
        for block in re.split(r"^--- program ", part, flags=re.M)[1:]:
            header, _, source = block.partition("\n")
            source = re.split(r"^(?:\.\.\. |\d+ programs, )", source, flags=re.M)[0]
            head = re.match(r"(\d+): mismatch at thread (\d+) \((.*?)\): (.*)", header)
            if head:
                programs.append({"number": int(head.group(1)), "thread": int(head.group(2)),
                                 "inputs": dict(re.findall(r"(\w)=np\.\w+\(([^)]*)\)", head.group(3))),
                                 "what": head.group(4), "source": source.strip() + "\n",
                                 "seed": int(seed.group(1)) if seed else None})
    return programs


def generated_inputs(program):
    """The run's own inputs, generated again from its seed (None if the source differs)."""
    import random

    from test_differential import FLAGS, gen_program

    if program["seed"] is None:
        return None
    for flags in itertools.product((False, True), repeat=len(FLAGS)):   # (the run's flags)
        draws = random.Random(f"{program['seed']}:{program['number']}")
        try:
            source, _, inputs, _ = gen_program(lambda lo, hi: draws.randint(lo, hi), *flags)
        except ValueError:          # flags that do not go together
            continue
        if source.strip() == program.get("original", program["source"]).strip():
            return inputs
    return None


def kernel_arrays(source: str):
    """[(name, type, ndim)] of `kern`'s parameters and the columns used of each 2-D output."""
    signature = re.search(r"def kern\((.*)\):", source).group(1)
    params = re.findall(r"(\w+): Array\[(\w+)(?:, (\d))?\]", signature)
    columns = {}
    for name, col in re.findall(r"(o_\w+)\[i, (\d+)\]", source):
        columns[name] = max(columns.get(name, 0), int(col) + 1)
    if "o_mem: Array" in signature:   # the scratch array: also stored at run-time slots
        columns["o_mem"] = MEM_SLOTS
    if "o_acc: Array" in signature:   # the counters: row 0
        columns["o_acc"] = ACC_SLOTS
    return [(n, t, int(d or 1)) for n, t, d in params], columns


def build_args(program):
    from test_differential import input_values, np_dtype
    from kernel_harness import Out

    params, columns = kernel_arrays(program["source"])
    rng = np.random.default_rng(program["number"])
    generated = generated_inputs(program)
    args = []
    for name, ty, ndim in params:
        if ndim == 2:
            args.append(Out((NTHREADS, columns.get(name, 1)), np_dtype(ty)))
            continue
        if generated is not None:
            args.append(generated[len(args)])
            continue
        values = input_values(ty, rng)
        if name in program["inputs"]:
            text = program["inputs"][name]
            values[program["thread"]] = np.array(float(text) if ty.startswith(("f", "b")) else
                                                 int(text)).astype(np_dtype(ty))
        args.append(values)
    return args


def results(source, args, device):
    from kernel_harness import run

    os.environ["PTXPY_TEST_DEVICE"] = device
    try:
        return run(source, "kern", args, grid=1, block=NTHREADS, assemble=False)
    finally:
        os.environ["PTXPY_TEST_DEVICE"] = ""


def differs(source, args):
    """(True, first difference) when the card and the simulator disagree; False on any error."""
    from test_differential import same_values

    try:
        simulated = results(source, args, "")
        card = results(source, args, "gpu")
    except BaseException:   # a candidate that does not compile, or is rejected: not smaller
        return False, None
    for array, (want, got) in enumerate(zip(simulated, card)):
        bad = np.argwhere(~same_values(want, got, _type_of(want)))
        if len(bad):
            tid, col = (int(v) for v in bad[0])
            return True, f"output {array} [{tid}, {col}]: simulator {want[tid, col]!r}, card {got[tid, col]!r}"
    return False, None


def _type_of(array):
    kind = {"float16": "f16", "float32": "f32", "float64": "f64", "bfloat16": "bf16",
            "bool": "bool"}
    return kind.get(array.dtype.name, "i32")


def candidates(module):
    """Smaller programs, one change each, biggest changes first."""
    import libcst as cst

    import libcst.matchers as m

    kernel = next(f for f in module.body if isinstance(f, cst.FunctionDef) and f.name.value == "kern")
    statements, tests, expressions = [], [], []
    shared = "shared_array" in module.code
    thread_id = next((s.body[0].value for s in kernel.body.body if m.matches(
        s, m.SimpleStatementLine(body=[m.Assign(targets=[m.AssignTarget(target=m.Name("i"))])]))),
        None)

    class Collect(cst.CSTVisitor):
        def __init__(self):
            self.protected = 0

        def visit_IndentedBlock(self, node):
            # not the kernel's first stores to its scratch array, nor an exchange's store:
            # without them a load could read an element never stored, and the program would
            # be undefined, not smaller
            statements.extend(s for s in node.body if not (node is kernel.body and fills(s))
                              and not counts(s) and not synchronises(s))

        def visit_SimpleStatementLine(self, node):
            return not synchronises(node)

        def visit_If(self, node):
            if synchronises(node):
                return False
            tests.append((node.test, ("True", "False")))
            return None

        def visit_While(self, node):
            # `while w < N: w += 1 ...` keeps its test and counter (or the card never returns)
            tests.append((node.test, ("False",)))
            node.body.visit(self)
            return False

        def visit_Subscript(self, node):
            self.protected += 1

        def leave_Subscript(self, node):
            self.protected -= 1

        def visit_BinaryOperation(self, node):
            if type(node.operator).__name__ in PROTECTED_OPERATORS:
                node.left.visit(self)
                return False
            return None

        def on_visit(self, node):
            if shared and node is thread_id:   # each thread keeps its own row of the array
                return False
            if isinstance(node, cst.BaseExpression) and not self.protected:
                expressions.append(node)
            return super().on_visit(node)

    kernel.body.visit(Collect())
    for statement in statements:
        yield lambda m, s=statement: m.deep_remove(s)
    for test, values in tests:
        for value in values:
            yield lambda m, t=test, v=value: m.deep_replace(t, cst.parse_expression(v))
    for node in expressions:
        for child in operands(node):
            yield lambda m, n=node, c=child: m.deep_replace(n, c)
        if not isinstance(node, cst.Integer):
            for value in ("0", "1"):
                yield lambda m, n=node, v=value: m.deep_replace(n, cst.parse_expression(v))


def fills(statement) -> bool:
    """`m[k] = ...`, `m[i, k] = ...` or `o_mem[i, k] = ...` with a constant slot k, or an
    exchange's `xs[i] = ...` (another thread reads the element after the barrier)."""
    import libcst.matchers as m

    slot = m.SubscriptElement(slice=m.Index(value=m.Integer()))
    row = m.SubscriptElement(slice=m.Index(value=m.Name("i")))
    target = m.Subscript(value=m.Name("m") | m.Name("o_mem"), slice=m.OneOf([slot], [row, slot]))
    target |= m.Subscript(value=m.Name("xs"), slice=[row])
    store = m.Assign(targets=[m.AssignTarget(target=target)])
    return m.matches(statement, m.SimpleStatementLine(body=[store]))


def synchronises(statement) -> bool:
    """A barrier, or thread 0's `if i == 0:` (the counters' start values, their copy out):
    without them the threads' atomics would race, and the program be undefined."""
    import libcst as cst

    code = cst.Module([]).code_for_node(statement)
    return "syncthreads" in code or code.startswith("if i == 0:")


def counts(statement) -> bool:
    """`w += 1`: the counter of one of test_differential's while loops."""
    import libcst.matchers as m

    step = m.AugAssign(target=m.Name(), operator=m.AddAssign(), value=m.Integer("1"))
    return m.matches(statement, m.SimpleStatementLine(body=[step]))


def operands(node):
    import libcst as cst

    if isinstance(node, cst.BinaryOperation):
        if type(node.operator).__name__ in PROTECTED_OPERATORS:
            return [node.left]
        return [node.left, node.right]
    if isinstance(node, cst.UnaryOperation):
        return [node.expression]
    if isinstance(node, cst.BooleanOperation):
        return [node.left, node.right]
    if isinstance(node, cst.IfExp):
        return [node.body, node.orelse, node.test]
    if isinstance(node, cst.Comparison):
        return [node.left] + [c.comparator for c in node.comparisons]
    if isinstance(node, cst.Call):
        return [a.value for a in node.args]
    return []


def undefined_reads(source: str) -> int:
    """How many `undef` values the optimised SSA holds: a variable read on a path that never
    assigned it. A candidate with more than the original is undefined, not smaller."""
    from kernel_harness import compile_source  # noqa: F401  (puts ptxpy on the path)
    from ptxpy.transpiler import driver

    try:
        program = driver.parse(source, "kernels.py")
        ssa = driver.compile_kernel(program, "kern", stop_after="ssa").ssa
    except BaseException:
        return 1 << 30
    return str(ssa).count("undef")


def reduce_program(program):
    import libcst as cst

    args = build_args(program)
    source = program["source"]
    bad, first = differs(source, args)
    if not bad:
        return program["number"], source, "did not reproduce", 0
    undefined = undefined_reads(source)
    tries = 0
    changed = True
    while changed:      # passes over the candidates until none is kept
        changed, position = False, 0
        while True:
            module = cst.parse_module(source)
            pending = list(candidates(module))[position:]
            kept = False
            for offset, change in enumerate(pending):
                try:
                    smaller = change(module).code
                except Exception:
                    continue
                if smaller == source or len(smaller) > len(source):
                    continue
                if undefined_reads(smaller) > undefined:
                    continue
                tries += 1
                bad, what = differs(smaller, args)
                if bad:
                    source, first, changed, kept = smaller, what, True, True
                    position += offset
                    break
            if not kept:
                break
    return program["number"], source, first, tries


def main(argv):
    jobs = 14
    if "--jobs" in argv:
        at = argv.index("--jobs")
        jobs = int(argv[at + 1])
        argv = argv[:at] + argv[at + 2:]
    programs = parse_mismatches(open(argv[1]).read())
    out_dir = argv[2] if len(argv) > 2 else "reduced"
    os.makedirs(out_dir, exist_ok=True)
    with multiprocessing.get_context("spawn").Pool(jobs) as pool:
        for number, source, first, tries in pool.imap_unordered(reduce_program, programs):
            program = next(p for p in programs if p["number"] == number)
            with open(os.path.join(out_dir, f"program-{number}.py"), "w") as f:
                f.write(f'"""program {number}, thread {program["thread"]}, inputs '
                        f'{program["inputs"]}\n{first}\n({tries} candidates tried)\n"""\n{source}')
            print(f"program {number}: {first} ({tries} tries)\n{source}", flush=True)


if __name__ == "__main__":
    main(sys.argv)
