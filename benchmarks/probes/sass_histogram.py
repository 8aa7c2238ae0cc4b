"""Opcode counts of a kernel's SASS: ptxas (sm_90 unless the PTX says sm_90a) and cuobjdump, as
installed with CUDA. `python sass_histogram.py FILE.ptx [--sub OLD=NEW ...] [--top 25]`; with
--sub, the PTX text is replaced first (to see what an instruction form costs)."""
import argparse
import collections
import re
import subprocess
import tempfile
from pathlib import Path


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("ptx")
    parser.add_argument("--sub", nargs="*", default=[])
    parser.add_argument("--top", type=int, default=25)
    args = parser.parse_args()
    text = Path(args.ptx).read_text()
    for pair in args.sub:
        old, new = pair.split("=", 1)
        text = text.replace(old, new)
    arch = "sm_90a" if ".target sm_90a" in text else "sm_90"
    with tempfile.TemporaryDirectory() as folder:
        ptx, cubin = Path(folder) / "k.ptx", Path(folder) / "k.cubin"
        ptx.write_text(text)
        report = subprocess.run(["ptxas", f"-arch={arch}", "-v", str(ptx), "-o", str(cubin)],
                                capture_output=True, text=True, check=True).stderr
        sass = subprocess.run(["cuobjdump", "-sass", str(cubin)], capture_output=True, text=True,
                              check=True).stdout
    counts = collections.Counter(m.group(1).split(".")[0] for m in
                                 re.finditer(r"/\*[0-9a-f]{4,}\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_.]+)", sass))
    print(report.strip().splitlines()[-2].strip(), f"; {sum(counts.values())} instructions")
    print(", ".join(f"{op} {n}" for op, n in counts.most_common(args.top)))


if __name__ == "__main__":
    main()
