"""Registers per thread and SASS size: ptxpy (PTX -> ptxas) against nvcc on the same kernels in CUDA C++.

Kernels compared:

- every `@ptxpy.jit` kernel of examples/*.py, specialised as the example runs it on a GPU (its
  Const values; a scalar that the example passes through `jax.jit` is a by-reference parameter,
  as ptxpy then compiles it), against its line-by-line CUDA C++ twin in
  benchmarks/examples_cuda.cu (see the comment at its top for the translation rules);
- the four kernels of benchmarks/compile_kernels.py, against benchmarks/registers_cuda.cu.

For each kernel and each --arch (default sm_80 and sm_90):

1. ptxpy's PTX: `kernel.transpile(...)` with `jax.ShapeDtypeStruct`s (examples) or
   `ptxpy.transpile(source, arch=...)` (compile_kernels), for that arch;
2. `ptxas -v -arch=sm_XX kernel.ptx -o kernel.cubin`: "Used N registers" and the spills;
3. `nvcc -O3 -arch=sm_XX -cubin --resource-usage twin.cu`: the same, per kernel;
4. when `cuobjdump` (or else `nvdisasm`) is found, the SASS instructions of each kernel's
   function in both cubins (`cuobjdump -sass`). Counted: every instruction line of the
   function (`/*0040*/   IMAD.MOV.U32 R1, RZ, RZ, c[0x0][0x28] ;`, predicated ones included,
   EXIT, branches, BSSY/BSYNC ...), except NOPs and the `BRA` to itself after the last EXIT:
   those are the padding that aligns the end of the function, not code. Static counts, not
   executed instructions. Without either tool the SASS column reads "n/a".

    python benchmarks/registers.py [--arch sm_80 sm_90] [--json PATH] [--sass-tool PATH]

The disk cache of compiled kernels is off for this run (PTXPY_CACHE=0): the PTX always comes
from the compiler of the working tree.
"""
from __future__ import annotations

import argparse
import dataclasses
import datetime
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from typing import Callable

os.environ.setdefault("PTXPY_CACHE", "0")
os.environ.setdefault("PTXPY_PRELOAD", "0")

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

import ptxpy  # noqa: E402
from ptxpy.transpiler.ptxas import find_ptxas  # noqa: E402

from benchmarks.compile_kernels import KERNELS  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
EXAMPLES_CUDA = os.path.join(HERE, "examples_cuda.cu")
BENCH_CUDA = os.path.join(HERE, "registers_cuda.cu")
EXAMPLES_DIR = os.path.join(ROOT, "examples")


@dataclasses.dataclass
class Case:
    """One kernel specialisation: the ptxpy kernel and its CUDA C++ twin."""
    row: str                    # label in the table
    source: str                 # where the ptxpy kernel is
    cuda_file: str
    cuda_name: str              # extern "C" name in cuda_file
    ptx: Callable[[str], str]   # arch -> ptxpy's PTX
    spec: str = ""              # the specialisation, in words


def _load_example(name: str):
    path = os.path.join(EXAMPLES_DIR, f"{name}.py")
    spec = importlib.util.spec_from_file_location(f"_registers_example_{name}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_modules: dict = {}


def _example_ptx(example: str, kernel: str, args: Callable[[], tuple], kwargs: dict):
    def make(arch: str) -> str:
        if example not in _modules:
            _modules[example] = _load_example(example)
        k = getattr(_modules[example], kernel)
        k.arch = arch           # Kernel._specialise compiles for self.arch when it is set
        return k.transpile(*args(), **kwargs)
    return make


def example_cases() -> list[Case]:
    """The examples' kernels, each with the arguments (shapes, Const values, by-value or
    by-reference scalars) of the example's own GPU run."""
    import jax
    import jax.numpy as jnp

    S = jax.ShapeDtypeStruct
    f32, i32, u32 = jnp.float32, jnp.int32, jnp.uint32

    def ref(value):             # a traced JAX scalar: ptxpy passes it by reference
        return jnp.asarray(value, jnp.float32)

    table = [
        # row, example, kernel, cuda name, args, kwargs, specialisation
        ("add_vectors", "add_vectors", "add_vectors", "add_vectors",
         lambda: (S((1 << 26,), f32), S((1 << 26,), f32)), {}, ""),
        ("iota_per_program", "iota", "iota_per_program", "iota_per_program",
         lambda: (4096,), {}, "size=4096"),
        ("iota", "iota", "iota", "iota", lambda: (1 << 26,), {}, "size=2**26"),
        ("saxpy", "saxpy", "saxpy", "saxpy",
         lambda: (S((10_000,), f32), S((10_000,), f32), 2.0), {}, "a by value, the eager call"),
        ("matmul", "matmul", "matmul", "matmul",
         lambda: (S((4096, 4096), f32), S((4096, 4096), f32)), {}, ""),
        ("matmul_blocks", "matmul_blocks", "matmul", "matmul_blocks",
         lambda: (S((1024, 1024), f32), S((1024, 1024), f32)), {}, ""),
        ("rms_norm_warp", "rms_norm", "rms_norm_warp", "rms_norm_warp",
         lambda: (S((16, 512), f32), S((512,), f32), 1e-6), {"N": 512}, "N=512, eps by value"),
        ("rms_norm_kernel CACHE=16", "rms_norm", "rms_norm_kernel", "rms_norm_kernel_cache16",
         lambda: (S((2048, 8192), f32), S((8192,), f32), ref(1e-6)), {"CACHE": 16, "THREADS": 128},
         "CACHE=16, THREADS=128, eps by reference"),
        ("rms_norm_kernel CACHE=0", "rms_norm", "rms_norm_kernel", "rms_norm_kernel_cache0",
         lambda: (S((2048, 8195), f32), S((8195,), f32), ref(1e-6)), {"CACHE": 0, "THREADS": 256},
         "CACHE=0, THREADS=256, eps by reference"),
        ("softmax_kernel CACHE=4", "softmax", "softmax_kernel", "softmax_kernel_cache4",
         lambda: (S((4096, 4096), f32),), {"CACHE": 4}, "CACHE=4"),
        ("softmax_kernel CACHE=0", "softmax", "softmax_kernel", "softmax_kernel_cache0",
         lambda: (S((4096, 4097), f32),), {"CACHE": 0}, "CACHE=0"),
        ("layer_norm_kernel CACHE=4", "layer_norm", "layer_norm_kernel", "layer_norm_kernel_cache4",
         lambda: (S((4096, 4096), f32), S((4096,), f32), S((4096,), f32), ref(1e-5)),
         {"CACHE": 4}, "CACHE=4, eps by reference"),
        ("layer_norm_kernel CACHE=0", "layer_norm", "layer_norm_kernel", "layer_norm_kernel_cache0",
         lambda: (S((4096, 4099), f32), S((4099,), f32), S((4099,), f32), ref(1e-5)),
         {"CACHE": 0}, "CACHE=0, eps by reference"),
        ("swiglu", "swiglu", "swiglu", "swiglu",
         lambda: (S((4096, 2 * 11008), f32),), {}, "fast_math"),
        ("reduce (sum)", "reduction", "reduce", "reduce_sum",
         lambda: (S((1 << 26,), f32),), {"IS_MAX": False}, "IS_MAX=False"),
        ("reduce (max)", "reduction", "reduce", "reduce_max",
         lambda: (S((1 << 26,), f32),), {"IS_MAX": True}, "IS_MAX=True"),
        ("scan_tiles", "prefix_scan", "scan_tiles", "scan_tiles",
         lambda: (S((1 << 24,), i32),), {}, ""),
        ("add_offsets", "prefix_scan", "add_offsets", "add_offsets",
         lambda: (S((1 << 24,), i32), S((1 << 14,), i32)), {}, ""),
        ("transpose", "transpose", "transpose", "transpose",
         lambda: (S((8192, 8192), f32),), {}, ""),
        ("histogram", "histogram", "histogram", "histogram",
         lambda: (S((1 << 26,), u32), 1 << 28, S((256,), i32)), {}, "n by value"),
    ]
    return [Case(row, f"examples/{example}.py", EXAMPLES_CUDA, cuda,
                 _example_ptx(example, kernel, args, kwargs), spec)
            for row, example, kernel, cuda, args, kwargs, spec in table]


def bench_cases() -> list[Case]:
    """The kernels of benchmarks/compile_kernels.py (the table of issue 2)."""
    def make(name: str, source: str):
        return lambda arch: ptxpy.transpile(source, "bench.py", arch=arch)[name]
    return [Case(name, "benchmarks/compile_kernels.py", BENCH_CUDA, name, make(name, source))
            for name, (source, _) in KERNELS.items()]


# --- tools ----------------------------------------------------------------------------------

def find_nvcc() -> str | None:
    for path in (os.environ.get("NVCC"), shutil.which("nvcc"), "/usr/local/cuda/bin/nvcc"):
        if path and os.path.isfile(path) and os.access(path, os.X_OK):
            return path
    return None


def find_sass_tool(explicit: str | None = None) -> str | None:
    """cuobjdump, else nvdisasm: --sass-tool, $CUOBJDUMP, $NVDISASM, the PATH, /usr/local/cuda."""
    candidates = [explicit, os.environ.get("CUOBJDUMP"), shutil.which("cuobjdump"),
                  "/usr/local/cuda/bin/cuobjdump", os.environ.get("NVDISASM"),
                  shutil.which("nvdisasm"), "/usr/local/cuda/bin/nvdisasm"]
    for path in candidates:
        if path and os.path.isfile(path) and os.access(path, os.X_OK):
            return path
    return None


def tool_version(path: str | None) -> str | None:
    if path is None:
        return None
    try:
        out = subprocess.run([path, "--version"], capture_output=True, text=True).stdout
    except OSError:
        return None
    found = re.search(r"release (\S+), V(\S+)", out)
    return found.group(2) if found else (out.strip().splitlines() or [None])[-1]


def parse_ptxas_info(text: str) -> dict[str, dict]:
    """{function: {"registers", "spill_stores", "spill_loads"}} from `ptxas -v` (or nvcc
    --resource-usage) messages:

        ptxas info    : Compiling entry function 'saxpy' for 'sm_90'
        ptxas info    : Function properties for saxpy
            0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
        ptxas info    : Used 12 registers, used 0 barriers, 380 bytes cmem[0]
    """
    info: dict[str, dict] = {}
    current = None
    for line in text.splitlines():
        m = re.search(r"Compiling entry function '([^']+)'", line) or \
            re.search(r"Function properties for (\S+)", line)
        if m:
            current = m.group(1)
            info.setdefault(current, {"registers": None, "spill_stores": 0, "spill_loads": 0})
            continue
        if current is None:
            continue
        m = re.search(r"(\d+) bytes spill stores, (\d+) bytes spill loads", line)
        if m:
            info[current]["spill_stores"] = int(m.group(1))
            info[current]["spill_loads"] = int(m.group(2))
            continue
        m = re.search(r"Used (\d+) registers", line)
        if m:
            info[current]["registers"] = int(m.group(1))
    return info


# One SASS instruction: its offset, an optional predicate, then an opcode in capitals.
# cuobjdump:  "        /*0040*/              @!P0 BRA 0x1a0 ;       /* 0x00000000002c8947 */"
# nvdisasm:   "        /*0040*/              @!P0 BRA `(.L_x_3) ;"
# (nvdisasm also prints directives such as "/*0974*/ .dword saxpy" in data sections: not
# instructions, they start with a dot; the second encoding line of cuobjdump has no offset.)
_SASS_INSN = re.compile(r"^\s*(?:\[[^\]]*\]\s*)?/\*([0-9a-fA-F]+)\*/\s+"
                        r"(@!?U?P(?:T|\d+)\s+)?([A-Z][A-Z0-9_]*)((?:\.[A-Za-z0-9_]+)*)\s*([^;]*);")
_SASS_LABEL = re.compile(r"^\s*(\.L\w*):")


def count_sass(listing: str) -> dict[str, dict]:
    """{function: {"counted", "nop", "padding_bra", "total"}} from `cuobjdump -sass` or
    `nvdisasm` text. "counted" excludes NOPs and the BRA-to-itself that closes the function."""
    counts: dict[str, dict] = {}
    current = None
    labels_here: set[str] = set()
    for line in listing.splitlines():
        m = re.match(r"\s*Function\s*:\s*(\S+)", line)                       # cuobjdump
        if m:
            current = m.group(1)
            counts[current] = {"counted": 0, "nop": 0, "padding_bra": 0, "total": 0}
            labels_here = set()
            continue
        m = re.match(r"\s*\.section\s+([^,\s]+)", line)                      # nvdisasm
        if m:
            section = m.group(1)
            current = section[len(".text."):] if section.startswith(".text.") else None
            if current is not None:
                counts[current] = {"counted": 0, "nop": 0, "padding_bra": 0, "total": 0}
            labels_here = set()
            continue
        if current is None:
            continue
        m = _SASS_LABEL.match(line)
        if m:
            labels_here.add(m.group(1))
            continue
        m = _SASS_INSN.match(line)
        if not m:
            continue
        offset, predicate, opcode, _, operands = m.groups()
        entry = counts[current]
        entry["total"] += 1
        target = operands.strip()
        if opcode == "NOP":
            entry["nop"] += 1
        elif opcode == "BRA" and predicate is None and (
                _hex_equal(target, offset) or target.strip("`()") in labels_here):
            entry["padding_bra"] += 1                    # BRA to itself: the closing self-loop
        else:
            entry["counted"] += 1
        labels_here = set()
    return counts


def _hex_equal(text: str, offset: str) -> bool:
    try:
        return int(text, 16) == int(offset, 16)
    except ValueError:
        return False


def sass_of(cubin: str, tool: str | None) -> dict[str, dict]:
    if tool is None or not os.path.exists(cubin):
        return {}
    is_nvdisasm = os.path.basename(tool).startswith("nvdisasm")
    cmd = [tool, cubin] if is_nvdisasm else [tool, "-sass", cubin]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        print(f"{os.path.basename(tool)} failed on {cubin}:\n{proc.stderr}", file=sys.stderr)
        return {}
    return count_sass(proc.stdout)


# --- compiling ------------------------------------------------------------------------------

def ptxpy_side(case: Case, arch: str, tmp: str, sass_tool: str | None) -> dict:
    """ptxpy's PTX for this arch through ptxas: registers, spills and SASS count (or error)."""
    try:
        ptx = case.ptx(arch)
    except Exception as err:        # the compiler is being changed by others: report, go on
        return {"error": f"transpile failed: {type(err).__name__}: {err}"}
    ptxas = find_ptxas()
    if ptxas is None:
        return {"error": "ptxas not found"}
    stem = re.sub(r"\W+", "_", f"{case.cuda_name}_{arch}")
    src, cubin = os.path.join(tmp, stem + ".ptx"), os.path.join(tmp, stem + ".cubin")
    with open(src, "w") as f:
        f.write(ptx)
    proc = subprocess.run([ptxas, "-v", f"-arch={arch}", src, "-o", cubin],
                          capture_output=True, text=True)
    if proc.returncode != 0:
        return {"error": "ptxas failed: " + (proc.stdout + proc.stderr).strip()[-2000:]}
    infos = parse_ptxas_info(proc.stdout + proc.stderr)
    if len(infos) != 1:
        return {"error": f"expected one entry in ptxpy's PTX, ptxas reported {sorted(infos)}"}
    (info,) = infos.values()
    sass = sass_of(cubin, sass_tool)
    if sass_tool is not None:
        (entry,) = sass.values() if len(sass) == 1 else (None,)
        info["sass"] = entry["counted"] if entry else None
        info["sass_detail"] = entry
    return info


def nvcc_side(cuda_file: str, arch: str, tmp: str, sass_tool: str | None) -> dict[str, dict]:
    """{kernel: info} for every kernel of a CUDA file, or {"": {"error": ...}}."""
    nvcc = find_nvcc()
    if nvcc is None:
        return {"": {"error": "nvcc not found"}}
    cubin = os.path.join(tmp, f"{os.path.basename(cuda_file)}.{arch}.cubin")
    proc = subprocess.run([nvcc, "-O3", f"-arch={arch}", "-cubin", "--resource-usage",
                           cuda_file, "-o", cubin], capture_output=True, text=True)
    if proc.returncode != 0:
        return {"": {"error": f"nvcc failed ({arch}): " + proc.stderr.strip()[-2000:]}}
    infos = parse_ptxas_info(proc.stdout + proc.stderr)
    if sass_tool is not None:
        sass = sass_of(cubin, sass_tool)
        for name, info in infos.items():
            entry = sass.get(name)
            info["sass"] = entry["counted"] if entry else None
            info["sass_detail"] = entry
    return infos


# --- report ---------------------------------------------------------------------------------

def _git(*args: str) -> str | None:
    try:
        proc = subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True)
    except OSError:
        return None
    return proc.stdout.strip() if proc.returncode == 0 else None


def _regs(info: dict | None) -> str:
    if not info or "error" in info:
        return "err"
    if info.get("registers") is None:
        return "?"
    text = str(info["registers"])
    if info.get("spill_stores") or info.get("spill_loads"):
        text += f" (spills {info['spill_stores']}/{info['spill_loads']} B)"
    return text


def _sass(info: dict | None) -> str:
    if not info or "error" in info:
        return "err"
    value = info.get("sass")
    return "n/a" if value is None else str(value)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--arch", nargs="+", default=["sm_80", "sm_90"])
    parser.add_argument("--sass-arch", default=None,
                        help="arch of the SASS column (default: sm_90 if given, else the last --arch)")
    parser.add_argument("--json", metavar="PATH", help="also write every number to PATH")
    parser.add_argument("--sass-tool", metavar="PATH", help="cuobjdump or nvdisasm to use")
    parser.add_argument("--only", nargs="+", metavar="TEXT",
                        help="only the kernels whose label contains one of these")
    args = parser.parse_args()
    sass_arch = args.sass_arch or ("sm_90" if "sm_90" in args.arch else args.arch[-1])
    sass_tool = find_sass_tool(args.sass_tool)
    if sass_tool is None:
        print("(no cuobjdump or nvdisasm found: SASS counts are n/a)", file=sys.stderr)

    cases = example_cases() + bench_cases()
    if args.only:
        cases = [c for c in cases if any(t in c.row for t in args.only)]

    results = []
    with tempfile.TemporaryDirectory() as tmp:
        nvcc = {(f, arch): nvcc_side(f, arch, tmp, sass_tool)
                for f in sorted({c.cuda_file for c in cases}) for arch in args.arch}
        for case in cases:
            row = {"kernel": case.row, "source": case.source, "specialisation": case.spec,
                   "cuda": f"{os.path.relpath(case.cuda_file, ROOT)}:{case.cuda_name}",
                   "ptxpy": {}, "nvcc": {}}
            for arch in args.arch:
                row["ptxpy"][arch] = ptxpy_side(case, arch, tmp, sass_tool)
                compiled = nvcc[(case.cuda_file, arch)]
                row["nvcc"][arch] = compiled.get(case.cuda_name) or compiled.get("") or \
                    {"error": f"{case.cuda_name} not in the nvcc output"}
            results.append(row)

    header = ["kernel", "source"] + [f"regs {arch} ptxpy / nvcc" for arch in args.arch] + \
             [f"SASS {sass_arch} ptxpy / nvcc"]
    print("| " + " | ".join(header) + " |")
    print("|" + "|".join(" --- " for _ in header) + "|")
    for row in results:
        source = row["source"].replace("examples/", "").replace("benchmarks/", "")
        if row["specialisation"]:
            source += f" ({row['specialisation']})"
        cells = [row["kernel"], source]
        cells += [f"{_regs(row['ptxpy'][a])} / {_regs(row['nvcc'][a])}" for a in args.arch]
        if sass_arch in args.arch:
            cells.append(f"{_sass(row['ptxpy'][sass_arch])} / {_sass(row['nvcc'][sass_arch])}")
        else:
            cells.append("n/a")
        print("| " + " | ".join(cells) + " |")

    errors = [(row["kernel"], who, arch, info["error"]) for row in results
              for who in ("ptxpy", "nvcc") for arch, info in row[who].items() if "error" in info]
    for kernel, who, arch, error in errors:
        print(f"\n{kernel}, {who} {arch}: {error}", file=sys.stderr)

    if args.json:
        report = {
            "date": datetime.date.today().isoformat(),
            "commit": _git("rev-parse", "--short", "HEAD"),
            "working_tree_changes": bool(_git("status", "--porcelain")),
            "ptxas": find_ptxas(), "ptxas_version": tool_version(find_ptxas()),
            "nvcc": find_nvcc(), "nvcc_version": tool_version(find_nvcc()),
            "nvcc_flags": ["-O3", "-arch=sm_XX", "-cubin", "--resource-usage"],
            "sass_tool": sass_tool, "sass_arch": sass_arch,
            "sass_counted": "instruction lines of the function, less NOPs and the BRA to "
                            "itself after the last EXIT (alignment padding)",
            "kernels": results,
        }
        with open(args.json, "w") as f:
            json.dump(report, f, indent=1)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
