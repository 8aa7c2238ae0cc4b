"""`ptxpy transpile FILE.py ...` and `ptxpy --version` (SPEC 3).

Exit status: 0 on success, 1 on an error in the input (reported as `file.py:L:C: error: ...`),
2 on bad usage.
"""
from __future__ import annotations

import argparse
import ast
import gc
import os
import sys
import time

import ptxpy
from ptxpy.transpiler import driver
from ptxpy.transpiler.errors import CompileError

EXIT_OK, EXIT_INPUT_ERROR, EXIT_USAGE = 0, 1, 2


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="ptxpy", description="Compile type-annotated Python kernels to PTX.")
    parser.add_argument("--version", action="version", version=f"ptxpy {ptxpy.__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    t = commands.add_parser("transpile", help="write one NAME.ptx per @ptxpy.jit kernel of FILE.py",
                            description="Read FILE.py without running it and write one DIR/NAME.ptx "
                                        "per @ptxpy.jit kernel.")
    t.add_argument("file", metavar="FILE.py")
    t.add_argument("-o", "--output-dir", metavar="DIR", help="where to write (default: beside FILE.py)")
    t.add_argument("--arch", default=driver.DEFAULT_ARCH, help="target, e.g. sm_80, sm_90 (default: sm_90)")
    # one NAME per --kernel, as -D takes one NAME=VALUE: a list of names after one --kernel
    # would take FILE.py for a name when the file comes last
    t.add_argument("--kernel", action="append", metavar="NAME", default=[],
                   help="only this kernel (repeat for several)")
    t.add_argument("-D", dest="defines", action="append", default=[], metavar="NAME=VALUE",
                   help="value of a Const parameter")
    t.add_argument("--emit", choices=("ptx", "ssa", "typed"), default="ptx",
                   help="ptx: write .ptx files (default); ssa, typed: print that stage instead")
    t.add_argument("--check", action="store_true", help="assemble each PTX with ptxas and report registers")
    t.add_argument("--fast-math", action="store_true", help="hardware approximations for / sqrt exp log sin cos")
    t.add_argument("--debug", action="store_true", help="bounds checks and asserts, stopping with the source line")
    return parser


def main(argv=None) -> int:
    parser = build_parser()
    args, extra = parser.parse_known_args(argv)
    if extra:
        hint = " (one NAME per --kernel: --kernel a --kernel b)" if args.kernel else ""
        parser.error(f"unrecognized arguments: {' '.join(extra)}{hint}")
    if args.command != "transpile":
        parser.print_usage(sys.stderr)
        return EXIT_USAGE
    try:
        defines = parse_defines(args.defines)
        check_arch(args.arch)
        source = read_source(args.file)
        return transpile_file(args, source, defines, own_process=argv is None)
    except UsageError as err:
        print(f"ptxpy: error: {err}", file=sys.stderr)
        return EXIT_USAGE
    except CompileError as err:
        print(err, file=sys.stderr)
        return EXIT_INPUT_ERROR


class UsageError(Exception):
    pass


def parse_defines(items: list[str]) -> dict:
    defines = {}
    for item in items:
        name, sep, text = item.partition("=")
        if not sep or not name.isidentifier():
            raise UsageError(f"-D expects NAME=VALUE, got '{item}'")
        defines[name] = parse_value(text)
    return defines


def parse_value(text: str):
    lowered = text.strip().lower()
    if lowered in ("true", "false"):
        return lowered == "true"
    try:
        value = ast.literal_eval(text.strip())
    except (ValueError, SyntaxError):
        raise UsageError(f"-D value '{text}' is not a number or boolean") from None
    if not isinstance(value, (int, float, bool)):
        raise UsageError(f"-D value '{text}' is not a number or boolean")
    return value


def check_arch(arch: str) -> None:
    try:
        driver.check_arch(arch)
    except CompileError as err:
        raise UsageError(err.message) from None


def read_source(path: str) -> str:
    """The file's text, decoded as Python decodes a source file (UTF-8 unless a coding
    declaration or BOM says otherwise)."""
    if not path.endswith(".py"):
        raise UsageError(f"expected a .py file, got '{path}'")
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as err:
        raise UsageError(f"cannot read '{path}': {err.strerror}") from None
    return driver.decode_source(data, path)


def transpile_file(args, source: str, defines: dict, own_process: bool = False) -> int:
    """Compile the kernels of `source` as the CLI's arguments say; `own_process` when this is
    the `ptxpy` command itself (not `main([...])` called from Python)."""
    options = driver.Options(driver.check_arch(args.arch), args.fast_math, args.debug)
    program = driver.parse(source, args.file)
    names = driver.kernel_names(program, args.kernel)
    if not names:
        print(f"{args.file}: no @ptxpy.jit kernels found", file=sys.stderr)
    warn_unused_defines(defines, [program.kernels[name] for name in names])
    out_dir = args.output_dir or os.path.dirname(os.path.abspath(args.file))
    for k, name in enumerate(names):
        consts = driver.consts_for(program.kernels[name], defines)
        start = time.perf_counter()
        stages = driver.compile_kernel(program, name, consts, options=options, stop_after=args.emit)
        elapsed = (time.perf_counter() - start) * 1e3
        if k == 0 and own_process and len(names) > 1:
            # The compiler is loaded now, and the process is the command's own: exempt its
            # objects (libcst's above all) from Python's collector, which would walk them all
            # again in its next collections (5-10 ms each; BENCHMARKS.md).
            gc.freeze()
        if args.emit == "typed":
            from ptxpy.transpiler.typed import format_module
            print(format_module(stages.typed))
        elif args.emit == "ssa":
            print(stages.ssa)
        else:
            path = write_ptx(out_dir, name, stages.kernel.ptx)
            print(f"{path}  ({elapsed:.1f} ms)")
            if args.check and not check_with_ptxas(name, stages.kernel.ptx, options.arch):
                return EXIT_INPUT_ERROR
    return EXIT_OK


def warn_unused_defines(defines: dict, kernels: list) -> None:
    """A -D that sets no Const parameter of the kernels compiled is most likely a typo."""
    for name in defines:
        if not any(driver.consts_for(kernel, {name: None}) for kernel in kernels):
            print(f"ptxpy: warning: -D {name}: no kernel compiled has a Const parameter "
                  f"'{name}'", file=sys.stderr)


def write_ptx(out_dir: str, name: str, text: str) -> str:
    """Write DIR/NAME.ptx whole or not at all (through a temporary file and a rename)."""
    path = os.path.join(out_dir, f"{name}.ptx")
    tmp = f"{path}.tmp{os.getpid()}"
    try:
        os.makedirs(out_dir, exist_ok=True)
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, path)
    except OSError as err:
        if os.path.exists(tmp):
            os.remove(tmp)
        raise UsageError(f"cannot write '{path}': {err.strerror}") from None
    return path


def check_with_ptxas(name: str, ptx: str, arch: str) -> bool:
    from ptxpy.transpiler import ptxas

    if ptxas.find_ptxas() is None:
        print(f"{name}: ptxas not found on the PATH; not checked", file=sys.stderr)
        return True
    ok, log, registers = ptxas.assemble(ptx, arch)
    if not ok:
        print(f"{name}: ptxas rejected the PTX:\n{log}", file=sys.stderr)
        return False
    print(f"{name}: ptxas {arch}: {registers} registers")
    return True


if __name__ == "__main__":
    sys.exit(main())
