"""`ptxpy transpile FILE.py ...` and `ptxpy --version` (SPEC 3).

Exit status: 0 on success, 1 on an error in the input (reported as `file.py:L:C: error: ...`),
2 on bad usage; as the command itself, 130 on Ctrl-C and 141 when the reader of its output
has gone (`| head`), both quietly, as a tool killed by SIGINT or SIGPIPE would.
"""
from __future__ import annotations

import argparse
import ast
import gc
import os
import re
import sys
import time

import ptxpy
from ptxpy.transpiler import driver
from ptxpy.transpiler.errors import CompileError, source_lines

EXIT_OK, EXIT_INPUT_ERROR, EXIT_USAGE = 0, 1, 2
EXIT_INTERRUPTED, EXIT_BROKEN_PIPE = 128 + 2, 128 + 13     # 128 + SIGINT, 128 + SIGPIPE


class Parser(argparse.ArgumentParser):
    """argparse's parser, its errors printed as `ptxpy: error: ...` (docs/cli.md), after the
    usage of the command at fault (`ptxpy transpile` or `ptxpy`)."""

    def error(self, message: str):
        self.print_usage(sys.stderr)
        self.exit(EXIT_USAGE, f"ptxpy: error: {message}\n")


def build_parser() -> Parser:
    parser = Parser(prog="ptxpy", description="Compile type-annotated Python kernels to PTX.",
                    allow_abbrev=False)
    parser.add_argument("--version", action="store_true", help="print ptxpy's version and exit")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    t = commands.add_parser("transpile", help="write one NAME.ptx per @ptxpy.jit kernel of FILE.py",
                            usage="ptxpy transpile FILE.py [-o DIR] [--arch sm_90] [--kernel NAME ...] "
                                  "[-D NAME=VALUE ...]\n                       [--emit ptx|ssa|typed] "
                                  "[--check] [--fast-math] [--debug] [--max-registers N]\n"
                                  "                       [--launch-bounds THREADS[,BLOCKS]] "
                                  "[--cluster X[,Y[,Z]]]",
                            allow_abbrev=False,
                            description="Read FILE.py without running it and write one DIR/NAME.ptx "
                                        "per @ptxpy.jit kernel.")
    t.set_defaults(command_parser=t)
    t.add_argument("--version", action="store_true", dest="command_version",
                   help="print ptxpy's version and exit (as ptxpy --version), alone")
    t.add_argument("file", metavar="FILE.py", nargs="?")
    t.add_argument("-o", "--output-dir", metavar="DIR", help="where to write (default: beside FILE.py)")
    t.add_argument("--arch", default=driver.DEFAULT_ARCH, help="target, e.g. sm_80, sm_90 (default: sm_90)")
    # `--kernel a b` and `--kernel a --kernel b` alike; a FILE.py that comes after the names
    # is taken back from them (parse_arguments)
    t.add_argument("--kernel", action="extend", nargs="+", metavar="NAME", default=[],
                   help="only these kernels")
    t.add_argument("-D", dest="defines", action="append", default=[], metavar="NAME=VALUE",
                   help="value of a Const parameter")
    t.add_argument("--emit", choices=("ptx", "ssa", "typed"), default="ptx",
                   help="ptx: write .ptx files (default); ssa, typed: print that stage instead")
    t.add_argument("--check", action="store_true", help="assemble each PTX with ptxas and report registers")
    t.add_argument("--fast-math", action="store_true", help="hardware approximations for / sqrt exp log sin cos")
    t.add_argument("--debug", action="store_true", help="bounds checks and asserts, stopping with the source line")
    t.add_argument("--max-registers", metavar="N", help="registers per thread at most (PTX .maxnreg)")
    t.add_argument("--launch-bounds", metavar="THREADS[,BLOCKS]",
                   help="threads per block at most[, blocks per SM at least] (.maxntid, .minnctapersm)")
    t.add_argument("--cluster", metavar="X[,Y[,Z]]",
                   help="blocks per thread-block cluster (.reqnctapercluster, sm_90)")
    return parser


def main(argv=None) -> int:
    """`ptxpy ARGV...`: the command itself when `argv` is None (it then takes sys.argv, and
    owns the process's streams), else a call from Python."""
    if argv is not None:
        return run(argv)
    _path_bytes_as_given()
    try:
        status = run(sys.argv[1:], own_process=True)
        sys.stdout.flush()          # a reader gone shows here, not in Python's exit
        return status
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        # what is still buffered goes nowhere, instead of failing again at exit
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_BROKEN_PIPE


def _path_bytes_as_given() -> None:
    """A file name's bytes that are not text (surrogate-escaped in sys.argv) go out on stdout
    and stderr as they came, as a C compiler prints them, where the stream writes the file
    system's encoding; elsewhere both show them escaped (`\\udcff`), never one of each."""
    import codecs

    def codec(name) -> str:
        try:
            return codecs.lookup(name or "").name
        except LookupError:
            return ""

    same = codec(sys.getfilesystemencoding())
    for stream in (sys.stdout, sys.stderr):
        if hasattr(stream, "reconfigure"):
            as_given = codec(getattr(stream, "encoding", None)) == same
            stream.reconfigure(errors="surrogateescape" if as_given else "backslashreplace")


def run(argv: list[str], own_process: bool = False) -> int:
    args = parse_arguments(build_parser(), argv)
    if args.version:
        print(f"ptxpy {ptxpy.__version__}")
        return EXIT_OK
    try:
        defines = parse_defines(args.defines)
        check_arch(args.arch)
        args.register_bounds = parse_register_bounds(args.max_registers, args.launch_bounds)
        args.cluster_dims = parse_cluster(args.cluster)
        source = read_source(args.file)
        return transpile_file(args, source, defines, own_process)
    except UsageError as err:
        print(f"ptxpy: error: {err}", file=sys.stderr)
        return EXIT_USAGE
    except CompileError as err:
        print(err, file=sys.stderr)
        return EXIT_INPUT_ERROR


def parse_arguments(parser: Parser, argv: list[str]) -> argparse.Namespace:
    """The arguments, if they are a command or `--version` alone; else SystemExit(2)."""
    args, extra = parser.parse_known_args(argv)
    at_fault = getattr(args, "command_parser", parser)
    if extra:
        at_fault.error(f"unrecognized arguments: {' '.join(extra)}")
    if getattr(args, "command_version", False):    # `ptxpy transpile --version`: alone
        if [a for a in argv if a not in ("transpile", "--version")]:
            at_fault.error("--version takes no other arguments")
        args.version, args.command = True, None
        return args
    if args.command == "transpile" and args.file is None:
        if args.kernel and args.kernel[-1].endswith(".py"):   # `--kernel a b FILE.py`
            args.file = args.kernel.pop()
        else:
            at_fault.error("the following arguments are required: FILE.py")
    if args.version and args.command:
        parser.error("--version takes no other arguments")
    if not args.version and not args.command:
        parser.error("a command is required (ptxpy transpile FILE.py)")
    return args


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
    if lowered.lstrip("+-") in ("inf", "infinity", "nan"):     # as Python's float() reads them
        return float(lowered)
    try:
        value = ast.literal_eval(text.strip())
    except (ValueError, SyntaxError):
        raise UsageError(f"-D value '{text}' is not a number or boolean") from None
    if not isinstance(value, (int, float, bool)):
        raise UsageError(f"-D value '{text}' is not a number or boolean")
    return value


def parse_register_bounds(max_registers: str | None, launch_bounds: str | None) -> tuple:
    """(max_registers, launch_bounds) for driver.Options from `--max-registers N` and
    `--launch-bounds THREADS[,BLOCKS]`."""
    def number(text: str, option: str) -> int:
        try:
            return int(text.strip())
        except ValueError:
            raise UsageError(f"{option} expects an integer, got '{text}'") from None

    count = None if max_registers is None else number(max_registers, "--max-registers")
    bounds = None if launch_bounds is None else \
        tuple(number(part, "--launch-bounds") for part in launch_bounds.split(","))
    try:
        return driver.register_bounds(count, bounds)
    except ValueError as err:
        message = str(err).replace("max_registers", "--max-registers")
        raise UsageError(message.replace("launch_bounds", "--launch-bounds")) from None


def parse_cluster(cluster: str | None) -> tuple:
    """The cluster's (x, y, z) for driver.Options from `--cluster X[,Y[,Z]]`, or ()."""
    if cluster is None:
        return ()
    try:
        dims = tuple(int(part.strip()) for part in cluster.split(","))
    except ValueError:
        raise UsageError(f"--cluster expects integers X[,Y[,Z]], got '{cluster}'") from None
    try:
        return driver.cluster_dims(dims)
    except ValueError as err:
        raise UsageError(str(err).replace("cluster must", "--cluster must", 1)) from None


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
    max_registers, launch_bounds = getattr(args, "register_bounds", (None, ()))
    options = driver.Options(driver.check_arch(args.arch), args.fast_math, args.debug,
                             max_registers=max_registers, launch_bounds=launch_bounds,
                             cluster=getattr(args, "cluster_dims", ()))
    out_dir = output_dir(args)
    warn_ignored_options(args)
    program = driver.parse(source, args.file)
    names = driver.kernel_names(program, args.kernel)
    if not names:
        print(f"{args.file}: warning: no @ptxpy.jit kernels found", file=sys.stderr)
    for name in driver.unused_defines(defines, [program.kernels[name] for name in names]):
        print(f"ptxpy: warning: -D {name}: no kernel compiled has a Const parameter "
              f"'{name}'", file=sys.stderr)
    for k, name in enumerate(names):
        consts = driver.consts_for(program.kernels[name], defines)
        check_define_values(program, program.kernels[name], consts)
        start = time.perf_counter()
        stages = driver.compile_kernel(program, name, consts, stop_after=args.emit,
                                       options=driver.with_decorator_bounds(program, name, options))
        for warning in stages.warnings:
            print(warning, file=sys.stderr)
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
            ptx = driver.with_absolute_file(stages.kernel.ptx, args.file)   # as ptxpy.transpile does
            path = write_ptx(out_dir, name, ptx)
            print(f"{path}  ({elapsed:.1f} ms)")
            if args.check and not check_with_ptxas(name, ptx, options.arch):
                return EXIT_INPUT_ERROR
    return EXIT_OK


def output_dir(args) -> str:
    """The directory to write into: -o DIR, which must not be a file, else beside FILE.py."""
    if args.output_dir is None:
        return os.path.dirname(os.path.abspath(args.file))
    given = args.output_dir
    if args.emit == "ptx" and os.path.exists(given) and not os.path.isdir(given):
        raise UsageError(f"-o '{given}' is not a directory (-o names the directory to write "
                         "NAME.ptx into)")
    return given


def warn_ignored_options(args) -> None:
    """--emit ssa and --emit typed print instead of writing PTX: -o and --check do nothing."""
    ignored = [option for option, given in (("-o", args.output_dir is not None),
                                            ("--check", args.check)) if given]
    if args.emit != "ptx" and ignored:
        print(f"ptxpy: warning: {' and '.join(ignored)} ignored with --emit {args.emit} "
              "(it prints instead of writing PTX)", file=sys.stderr)


def check_define_values(program, kernel, consts: dict) -> None:
    """A -D value of the wrong kind for its Const parameter: an error at the parameter that
    names the -D."""
    for param in kernel.params:
        if param.name in consts and param.type.value_of(consts[param.name]) is None:
            value = consts[param.name]
            message = (f"-D {param.name}={value!r}: Const parameter '{param.name}' is "
                       f"{param.type} but was given {value!r}; {_define_hint(param)}")
            raise CompileError(message, param.loc).located(program.filename,
                                                           source_lines(program.source))


def _define_hint(param) -> str:
    base = param.type.base.name
    if base == "bool":
        return f"use -D {param.name}=True or -D {param.name}=False"
    return "use an integer" if base == "i32" else "use a number"


def write_ptx(out_dir: str, name: str, text: str) -> str:
    """Write DIR/NAME.ptx whole or not at all (through a temporary file and a rename, the
    temporary file removed whatever stops the write, Ctrl-C included)."""
    path = os.path.join(out_dir, f"{name}.ptx")
    tmp = f"{path}.tmp{os.getpid()}"
    try:
        os.makedirs(out_dir, exist_ok=True)
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, path)
    except OSError as err:
        raise UsageError(f"cannot write '{path}': {err.strerror}") from None
    finally:
        if os.path.isfile(tmp):
            os.remove(tmp)
    return path


def check_with_ptxas(name: str, ptx: str, arch: str) -> bool:
    from ptxpy.transpiler import ptxas

    if ptxas.find_ptxas() is None:
        print(f"{name}: ptxas not found on the PATH; not checked", file=sys.stderr)
        return True
    try:
        ok, log, registers = ptxas.assemble(ptx, arch)
    except ptxas.PtxasUnusable as err:
        raise UsageError(str(err)) from None
    if not ok:
        print(f"{name}: ptxas rejected the PTX:\n{log}", file=sys.stderr)
        return False
    target = re.search(r"^\s*\.target\s+(sm_\w+)", ptx, flags=re.M)   # sm_90a where wgmma made it
    arch = target.group(1) if target else arch
    stack = re.search(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads",
                      log)
    spills = "" if not stack or stack.group(2) == stack.group(3) == "0" else \
        f", {stack.group(2)} bytes spill stores, {stack.group(3)} bytes spill loads"
    print(f"{name}: ptxas {arch}: {registers} registers{spills}")
    return True


if __name__ == "__main__":
    sys.exit(main())
