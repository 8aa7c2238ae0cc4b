"""Every PTX text the test suite emits, recorded in order, to compare two compilers byte for byte.

    python benchmarks/ptx_corpus.py record OUT [--drop I,J] [-- PYTEST ARGS]
    python benchmarks/ptx_corpus.py compare A B [--show N]

`record` runs `pytest tests` (hypothesis seeded, the kernel cache off) with this module as a
plugin: every `backend.emit_ptx` result is kept, in order, as `kernel arch sha1` lines in OUT and
the texts in OUT.texts. `--drop` first removes those entries (by index) of `passes.PIPELINE`:
whether a pass changes any PTX. `compare` reports the texts that differ (temporary paths in the
`.file` lines ignored) and shows the first N diffs. A compiler change meant to keep the PTX
(a speed-up) should compare equal; one meant to improve it shows where.
"""
from __future__ import annotations

import argparse
import atexit
import difflib
import hashlib
import os
import pickle
import re
import subprocess
import sys

_RECORD = "PTX_CORPUS_OUT"
_DROP = "PTX_CORPUS_DROP"


def _install() -> None:
    """As a pytest plugin (`-p ptx_corpus`): record every PTX the compiler emits."""
    from ptxpy.transpiler import backend, passes

    drop = {int(i) for i in os.environ.get(_DROP, "").split(",") if i}
    if drop:
        passes.PIPELINE[:] = [p for i, p in enumerate(passes.PIPELINE) if i not in drop]
    emit, order, texts = backend.emit_ptx, [], {}

    def recording_emit_ptx(func):
        ptx = emit(func)
        digest = hashlib.sha1(ptx.encode()).hexdigest()
        order.append(f"{func.name} {func.arch} {digest}")
        texts.setdefault(digest, ptx)
        return ptx

    backend.emit_ptx = recording_emit_ptx

    @atexit.register
    def _write():
        with open(os.environ[_RECORD], "w") as f:
            f.write("\n".join(order) + "\n")
        with open(os.environ[_RECORD] + ".texts", "wb") as f:
            pickle.dump(texts, f)


if os.environ.get(_RECORD) and __name__ != "__main__":
    _install()


def record(out: str, drop: str, pytest_args: list) -> int:
    here = os.path.dirname(os.path.abspath(__file__))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [here, os.environ.get("PYTHONPATH")])),
               PTXPY_CACHE="0", **{_RECORD: os.path.abspath(out), _DROP: drop})
    args = pytest_args or ["-q", "tests"]
    return subprocess.call([sys.executable, "-m", "pytest", "-p", "ptx_corpus", "-p", "no:cacheprovider",
                            "--hypothesis-seed=0", *args], env=env)


def _load(path: str) -> tuple:
    with open(path) as f:
        order = [line.split() for line in f if line.strip()]
    with open(path + ".texts", "rb") as f:
        return order, pickle.load(f)


def _normal(ptx: str) -> str:
    return re.sub(r"/tmp/pytest-of-[^/]+/pytest-\d+/", "", ptx)


def compare(a: str, b: str, show: int) -> int:
    (order_a, texts_a), (order_b, texts_b) = _load(a), _load(b)
    if [row[:2] for row in order_a] != [row[:2] for row in order_b]:
        print(f"the runs compiled different kernels ({len(order_a)} against {len(order_b)} texts)")
        return 2
    differ = [(x, y) for x, y in zip(order_a, order_b)
              if _normal(texts_a[x[2]]) != _normal(texts_b[y[2]])]
    print(f"{len(order_a)} PTX texts, {len(differ)} differ")
    for x, y in differ[:show]:
        print(f"--- {x[0]} {x[1]}")
        print("\n".join(difflib.unified_diff(_normal(texts_a[x[2]]).splitlines(),
                                             _normal(texts_b[y[2]]).splitlines(), lineterm="", n=1)))
    return 1 if differ else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    rec = sub.add_parser("record")
    rec.add_argument("out")
    rec.add_argument("--drop", default="", help="indices of passes.PIPELINE to leave out, e.g. 7,8")
    cmp = sub.add_parser("compare")
    cmp.add_argument("a")
    cmp.add_argument("b")
    cmp.add_argument("--show", type=int, default=1)
    argv = sys.argv[1:]
    pytest_args = argv[argv.index("--") + 1:] if "--" in argv else []
    args = parser.parse_args(argv[:argv.index("--")] if "--" in argv else argv)
    if args.command == "record":
        return record(args.out, args.drop, pytest_args)
    return compare(args.a, args.b, args.show)


if __name__ == "__main__":
    sys.exit(main())
