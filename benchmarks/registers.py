"""Registers per thread: ptxpy (PTX -> ptxas) against nvcc on equivalent CUDA C++.

For each kernel of benchmarks/compile_kernels.py, the ptxpy PTX is assembled with
`ptxpy.transpiler.ptxas.assemble` and the CUDA C++ twin in benchmarks/registers_cuda.cu is
compiled with `nvcc -O3 -arch=sm_XX -cubin -Xptxas -v`; "Used N registers" is read per kernel.
When `cuobjdump` is on the PATH, SASS instructions are counted as well.

    python benchmarks/registers.py [--arch sm_80 sm_90]
"""
from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import ptxpy  # noqa: E402
from ptxpy.transpiler.ptxas import assemble, find_ptxas  # noqa: E402

from benchmarks.compile_kernels import KERNELS  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
CUDA_SOURCE = os.path.join(HERE, "registers_cuda.cu")


def find_nvcc() -> str | None:
    for path in (os.environ.get("NVCC"), "/usr/local/bin/nvcc", shutil.which("nvcc"),
                 "/usr/local/cuda/bin/nvcc"):
        if path and os.path.isfile(path) and os.access(path, os.X_OK):
            return path
    return None


def sass_counts(cubin: str) -> dict[str, int]:
    """{kernel: SASS instruction count} from `cuobjdump -sass`, {} without cuobjdump."""
    tool = shutil.which("cuobjdump")
    if tool is None or not os.path.exists(cubin):
        return {}
    proc = subprocess.run([tool, "-sass", cubin], capture_output=True, text=True)
    counts: dict[str, int] = {}
    current = None
    for line in proc.stdout.splitlines():
        m = re.match(r"\s*Function\s*:\s*(\S+)", line)
        if m:
            current = m.group(1)
            counts[current] = 0
            continue
        # instruction lines look like: /*0070*/   IMAD R0, R0, c[0x0][0x0], R3 ;
        if current and re.match(r"\s*/\*[0-9a-f]{4,}\*/\s+\S", line):
            counts[current] += 1
    return counts


def ptxpy_regs(arch: str) -> dict[str, tuple[int | None, int | None]]:
    """{kernel: (registers, SASS instructions or None)} for the ptxpy versions."""
    result = {}
    for name, (source, _) in KERNELS.items():
        ptx = ptxpy.transpile(source, "bench.py", arch=arch)[name]
        ok, log, regs = assemble(ptx, arch)
        if not ok:
            print(f"ptxas failed on ptxpy {name} ({arch}):\n{log}", file=sys.stderr)
            result[name] = (None, None)
            continue
        sass = None
        ptxas = find_ptxas()
        if shutil.which("cuobjdump") and ptxas:
            with tempfile.TemporaryDirectory() as tmp:
                src, cubin = os.path.join(tmp, "k.ptx"), os.path.join(tmp, "k.cubin")
                with open(src, "w") as f:
                    f.write(ptx)
                subprocess.run([ptxas, f"-arch={arch}", src, "-o", cubin], capture_output=True)
                sass = sass_counts(cubin).get(name)
        result[name] = (regs, sass)
    return result


def nvcc_regs(arch: str) -> dict[str, tuple[int | None, int | None]]:
    """{kernel: (registers, SASS instructions or None)} for the CUDA C++ versions."""
    nvcc = find_nvcc()
    if nvcc is None:
        print("nvcc not found", file=sys.stderr)
        return {}
    with tempfile.TemporaryDirectory() as tmp:
        cubin = os.path.join(tmp, "k.cubin")
        proc = subprocess.run([nvcc, "-O3", f"-arch={arch}", "-cubin", "-Xptxas", "-v",
                               CUDA_SOURCE, "-o", cubin], capture_output=True, text=True)
        if proc.returncode != 0:
            print(f"nvcc failed ({arch}):\n{proc.stderr}", file=sys.stderr)
            return {}
        regs: dict[str, int] = {}
        current = None
        for line in (proc.stdout + proc.stderr).splitlines():
            m = re.search(r"Compiling entry function '([^']+)'", line)
            if m:
                current = m.group(1)
                continue
            m = re.search(r"Used (\d+) registers", line)
            if m and current:
                regs[current] = int(m.group(1))
                current = None
        sass = sass_counts(cubin)
    return {name: (regs.get(name), sass.get(name)) for name in KERNELS}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--arch", nargs="+", default=["sm_80", "sm_90"])
    args = parser.parse_args()

    data = {}
    for arch in args.arch:
        data[("ptxpy", arch)] = ptxpy_regs(arch)
        data[("nvcc", arch)] = nvcc_regs(arch)
    have_sass = any(v[1] is not None for d in data.values() for v in d.values())

    def cell(value):
        return "-" if value is None else str(value)

    columns = [(who, arch) for arch in args.arch for who in ("ptxpy", "nvcc")]
    header = ["kernel"] + [f"{who} regs {arch}" for who, arch in columns]
    if have_sass:
        header += [f"{who} SASS {arch}" for who, arch in columns]
    print("| " + " | ".join(header) + " |")
    print("|" + "|".join("---" for _ in header) + "|")
    for name in KERNELS:
        row = [name] + [cell(data[c].get(name, (None, None))[0]) for c in columns]
        if have_sass:
            row += [cell(data[c].get(name, (None, None))[1]) for c in columns]
        print("| " + " | ".join(row) + " |")
    if not have_sass:
        print("\n(cuobjdump not found: SASS instruction counts skipped)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
