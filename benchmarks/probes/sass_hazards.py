"""Uniform registers that both sides of a divergent branch use: found in the SASS, without the card.

Random programs 748 (seed 3306) and 767 (seed 4323) went wrong on the H100 the same way: ptxas
kept a value in a uniform register (`URn`, one per warp) that lanes on one side of a divergent
branch still needed, while lanes on the other side, which the warp ran first, wrote that
register. The card's driver (580, CUDA 13.0) compiles PTX as `ptxas` 13.0 does, so this looks
for the pattern in the SASS of `ptxas` 13.0 (`nvdisasm` from the `nvidia-cuda-nvdisasm` wheel):

* a branch is divergent unless its predicate is uniform: computed only from uniform registers,
  constants and values computed from those (a flow-sensitive pass over reaching definitions;
  loads, `S2R` and values merged after a divergent branch vary);
* a side of a divergent branch is what its lanes may run before the warp must wait for the
  other side's lanes: up to a `BAR`, a `WARPSYNC`, an `EXIT`, or the `BSYNC` of a `BSSY` open
  at the branch, unless the other side can `YIELD` (program 748: lanes waiting at the `BSYNC`
  after a compare-and-swap loop ran on while others still looped, past its `YIELD`);
* a hazard is a uniform register that one side writes while the other side reads the value it
  held before the branch (its reaching definitions outside that side), unless each of those
  definitions and the write load the same constant.

    python benchmarks/probes/sass_hazards.py FILE.ptx ...           # hazards in each kernel
    python benchmarks/probes/sass_hazards.py --random SEED COUNT [generator flags]
    python benchmarks/probes/sass_hazards.py --reduce SEED NUMBER [generator flags]
    python benchmarks/probes/sass_hazards.py --reduce PROGRAM.py

PTXAS (default /usr/local/cuda-13.0/bin/ptxas) and NVDISASM (default: on the PATH) name the
tools; PTXAS_OPTIONS adds options to ptxas (`-O1`). `--random` compiles the generator's programs (tests/test_differential.py) and prints
those with a hazard; `--reduce` cuts one of them down while its SASS keeps a hazard
(reduce_gpu.py's changes). Neither needs a GPU.
"""
import os
import re
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field, replace

PTXAS = os.environ.get("PTXAS", "/usr/local/cuda-13.0/bin/ptxas")
NVDISASM = os.environ.get("NVDISASM", "nvdisasm")
PTXAS_OPTIONS = tuple(os.environ.get("PTXAS_OPTIONS", "").split())
# SASS_BSYNC=0: check as if a BSYNC never held lanes back
STOP_AT_BSYNC = os.environ.get("SASS_BSYNC", "1") != "0"

INSTRUCTION = re.compile(r"/\*([0-9a-f]{4,})\*/\s+(@!?U?P[T0-9]\s+)?([A-Z0-9_.]+)\s*(.*?)\s*;")
LABEL = re.compile(r"^([.$\w]+):")
LINE = re.compile(r'//## File ".*", line (\d+)')
REGISTER = re.compile(r"\b(UR\d+|UP[0-6]|R\d+|P[0-6])(\.64)?\b")
TARGET = re.compile(r"`\(([^)]+)\)")
# what may differ between lanes whatever its operands (a VOTE's or REDUX's result is the same
# for the lanes that run it together: under a divergent branch the region rule covers it)
VARYING_SOURCES = ("S2R", "CS2R", "LD", "ATOM", "SHFL", "MATCH")
CONVERGENCE = ("BAR", "WARPSYNC", "EXIT")


@dataclass
class Ins:
    index: int
    address: int
    guard: str
    opcode: str
    operands: list
    line: int
    writes: list = field(default_factory=list)
    reads: list = field(default_factory=list)

    def __str__(self):
        guard = f"{self.guard} " if self.guard else ""
        return f"/*{self.address:04x}*/ {guard}{self.opcode} {', '.join(self.operands)}"


def split_operands(text):
    parts, depth, start = [], 0, 0
    for k, ch in enumerate(text):
        depth += ch in "[("
        depth -= ch in "])"
        if ch == "," and depth == 0:
            parts.append(text[start:k].strip())
            start = k + 1
    tail = text[start:].strip()
    return parts + [tail] if tail else parts


def widths(opcode):
    """How many consecutive R (or UR) registers the destination of `opcode` takes."""
    if ".128" in opcode:
        return 4
    base, *mods = opcode.split(".")
    types = [m for m in mods if re.fullmatch(r"(?:BF|[FUS])\d+", m)]
    if base == "I2F" and len(types) == 1:
        return 1     # I2F.S64: the one type named is the source's; the result is an f32
    converts = base in ("F2F", "F2I", "I2F", "I2I")   # the first type named is the result's
    if ".64" in opcode or ".WIDE" in opcode or (converts and types and types[0][1:] == "64"):
        return 2
    return 2 if base in ("DADD", "DMUL", "DFMA", "DMNMX", "DRCP") else 1


def registers(token, width=1):
    found = []
    for name, pair in REGISTER.findall(token):
        kind, number = re.match(r"([A-Z]+)(\d+)", name).groups()
        count = 2 if pair else (width if kind in ("R", "UR") else 1)
        found += [f"{kind}{int(number) + k}" for k in range(count)]
    return found


def effects(ins):
    """The registers `ins` writes and reads (RZ, URZ, PT, UPT are constants, not registers)."""
    ops = ins.operands
    has_dest = bool(ops) and REGISTER.fullmatch(ops[0].lstrip("-!|")) is not None \
        and not ins.opcode.startswith(("BRA", "BSSY", "BSYNC", "CALL", "RET", "WARPSYNC"))
    dests = 0
    if ins.opcode.startswith("ATOM"):      # ATOMG.E.CAS PT, R10, [R10+0x4], ...
        dests = next((k for k, op in enumerate(ops) if "[" in op), 0)
    elif has_dest:
        dests = 1
        while dests < len(ops) and re.fullmatch(r"!?U?P[T0-6]", ops[dests]):
            dests += 1
    width = widths(ins.opcode)
    ins.writes = [r for k in range(dests) for r in registers(ops[k], width if k == 0 else 1)]
    source_width = 2 if ins.opcode.startswith("U") and ".64" in ins.opcode else 1
    ins.reads = [r for op in ops[dests:] for r in registers(op, source_width)]
    for desc in re.findall(r"desc\[(UR\d+)\]", " ".join(ops)):   # a 64-bit descriptor
        ins.reads += registers(desc + ".64")
    if ins.guard:
        ins.reads += registers(ins.guard)


def parse(sass):
    instructions, labels, line = [], {}, 0
    for text in sass.splitlines():
        if m := LINE.search(text):
            line = int(m.group(1))
        elif m := LABEL.match(text.strip()):
            labels[m.group(1)] = len(instructions)
        elif m := INSTRUCTION.search(text):
            address, guard, opcode, rest = m.groups()
            ins = Ins(len(instructions), int(address, 16), (guard or "").strip(), opcode,
                      split_operands(rest), line)
            effects(ins)
            instructions.append(ins)
    return instructions, labels


class Program:
    """One kernel as a graph of single instructions, each subroutine copied in at each of its
    calls (so values set before one call never seem to reach another)."""

    def __init__(self, sass):
        self.parsed, self.labels = parse(sass)
        targets = {self._target(i) for i in self.parsed if i.opcode.startswith("CALL")}
        self.subroutines = sorted(t for t in targets if t is not None)
        main_end = self.subroutines[0] if self.subroutines else len(self.parsed)
        self.ins, self.succ = [], []
        self._copy(range(main_end), returns=[], depth=0)
        self.defs = self._reaching_definitions()

    def _target(self, ins):
        target = TARGET.search(" ".join(ins.operands))
        return self.labels.get(target.group(1)) if target else None

    def _body(self, start):
        end = min([s for s in self.subroutines if s > start] + [len(self.parsed)])
        return range(start, end)

    def _copy(self, span, returns, depth):
        """Append a copy of the instructions in `span`; RETs go on to `returns`."""
        where = {orig: len(self.ins) + k for k, orig in enumerate(span)}
        for orig in span:
            self.ins.append(replace(self.parsed[orig], index=where[orig]))
            self.succ.append([])
        for orig in span:
            ins, here = self.parsed[orig], where[orig]
            nxt = [where[orig + 1]] if orig + 1 in where else []
            target = self._target(ins)
            jump = [where[target]] if target in where else []
            if ins.opcode.startswith("CALL") and target is not None and depth < 4:
                self.succ[here] = [len(self.ins)]
                self._copy(self._body(target), nxt, depth + 1)
            elif ins.opcode.startswith("RET"):
                self.succ[here] = returns + (nxt if ins.guard else [])
            elif ins.opcode.startswith("BRA"):
                self.succ[here] = jump + nxt if ins.guard else jump
            elif ins.opcode.startswith("EXIT"):
                self.succ[here] = nxt if ins.guard else []
            else:
                self.succ[here] = nxt

    def _reaching_definitions(self):
        """For each instruction, register -> the instructions whose write of it may reach it."""
        reach = [dict() for _ in self.ins]
        work = list(range(len(self.ins)))
        while work:
            a = work.pop()
            out = dict(reach[a])
            for r in self.ins[a].writes:
                out[r] = frozenset([a]) if not self.ins[a].guard else out.get(r, frozenset()) | {a}
            for b in self.succ[a]:
                merged, grew = reach[b], False
                for r, ds in out.items():
                    if not ds <= merged.get(r, frozenset()):
                        merged[r] = merged.get(r, frozenset()) | ds
                        grew = True
                if grew:
                    work.append(b)
        return reach

    def reaching(self, at, reg):
        return self.defs[at].get(reg, frozenset())


def is_uniform_register(reg):
    return reg.startswith("U")


class Divergence:
    """Which instructions compute values that may differ between the lanes of a warp, and
    which branches therefore diverge (a fixed point: a value defined under a divergent branch,
    before its post-dominator, varies where it is read after it)."""

    def __init__(self, prog: Program):
        self.prog = prog
        self.postdom = self._post_dominators()
        self.varying = {i.index for i in prog.ins if self._varying_source(i)}
        self.divergent, self.regions = set(), []
        while True:
            self._propagate()
            divergent = {i.index for i in prog.ins if self._branches_on_varying(i)}
            if divergent <= self.divergent:
                return
            self.regions += [self.influence(b) for b in divergent - self.divergent]
            self.divergent |= divergent

    @staticmethod
    def _varying_source(ins):
        base = ins.opcode.split(".")[0]
        return base.startswith(VARYING_SOURCES) and base != "LDC"

    def _reads_varying(self, ins):
        return any(self._varies_at(d, ins.index) for r in ins.reads if not is_uniform_register(r)
                   for d in self.prog.reaching(ins.index, r))

    def _varies_at(self, d, use):
        """A value varies where it is read if it was computed from varying values, or if it
        was defined where lanes run apart and is read after they meet again (the lanes that
        went the other way, or left a loop sooner, hold other values)."""
        return d in self.varying or any(d in region and use not in region
                                        for region in self.regions)

    def _propagate(self):
        grew = True
        while grew:
            grew = False
            for ins in self.prog.ins:
                if ins.index not in self.varying and ins.writes and self._reads_varying(ins):
                    self.varying.add(ins.index)
                    grew = True

    def _branches_on_varying(self, ins):
        if not ins.guard or not ins.opcode.startswith(("BRA", "EXIT")) or ".DIV" in ins.opcode \
                or ".CONV" in ins.opcode or "UP" in ins.guard:
            return False
        return self._reads_varying(ins)

    def _post_dominators(self):
        n = len(self.prog.ins)
        everything = (1 << n) - 1
        pdom = [everything] * n
        changed = True
        while changed:
            changed = False
            for a in reversed(range(n)):
                succs = self.prog.succ[a]
                meet = everything
                for b in succs:
                    meet &= pdom[b]
                new = (1 << a) | (meet if succs else 0)
                if new != pdom[a]:
                    pdom[a], changed = new, True
        return pdom

    def join(self, b):
        """The immediate post-dominator of b (None if only the end post-dominates it)."""
        strict = self.postdom[b] & ~(1 << b)
        candidates = [n for n in range(len(self.prog.ins)) if strict >> n & 1]
        for n in candidates:
            if all(self.postdom[n] >> m & 1 for m in candidates):
                return n
        return None

    def influence(self, b):
        """What lanes may run apart after branch b: reached from its successors without
        passing a strict post-dominator of b."""
        stop = self.postdom[b] & ~(1 << b)
        return reach(self.prog, self.prog.succ[b], lambda n: stop >> n & 1)


def reach(prog, starts, stops):
    seen, work = set(), [s for s in starts if not stops(s)]
    while work:
        n = work.pop()
        if n in seen:
            continue
        seen.add(n)
        work += [m for m in prog.succ[n] if m not in seen and not stops(m)]
    return seen


def open_barriers(prog):
    """For each instruction, the convergence barriers (`BSSY Bk`) every path to it opened and
    did not yet close (`BSYNC Bk`)."""
    everything = frozenset(f"B{k}" for k in range(16))
    opened = [everything] * len(prog.ins)
    opened[0] = frozenset()
    work = [0]
    while work:
        a = work.pop()
        ins = prog.ins[a]
        out = opened[a]
        if ins.opcode.startswith("BSSY"):
            out = out | {ins.operands[0]}
        elif ins.opcode.startswith("BSYNC"):
            out = out - {ins.operands[0]}
        for b in prog.succ[a]:
            meet = opened[b] & out
            if meet != opened[b]:
                opened[b] = meet
                work.append(b)
    return opened


def value_key(prog, d):
    """What a definition loads when it only reads constants (the same key: the same value)."""
    ins = prog.ins[d]
    if ins.reads:
        return ("defined at", d)
    return (ins.opcode, tuple(ins.operands[1:]))


@dataclass
class Hazard:
    branch: Ins
    register: str
    write: Ins
    read: Ins

    def __str__(self):
        return (f"branch {self.branch} (line {self.branch.line}): {self.write} (line "
                f"{self.write.line}) on one side writes {self.register}, which "
                f"{self.read} (line {self.read.line}) on the other side reads from before")


def side(prog, start, stop_barriers, join):
    def stops(n):
        ins = prog.ins[n]
        if n == join:
            return True
        if ins.opcode.startswith("BSYNC"):
            return STOP_AT_BSYNC and ins.operands[0] in stop_barriers
        return ins.opcode.startswith(CONVERGENCE) and not (ins.guard and ins.opcode == "EXIT")
    return reach(prog, [start], stops)


def yields(prog, nodes):
    return any(prog.ins[n].opcode.startswith("YIELD") for n in nodes)


def hazards(sass):
    prog = Program(sass)
    divergence = Divergence(prog)
    opened = open_barriers(prog)
    found = []
    for b in sorted(divergence.divergent):
        if not prog.ins[b].opcode.startswith("BRA"):
            continue
        join = divergence.join(b)
        sides = [side(prog, s, opened[b], join) for s in prog.succ[b]]
        if len(sides) == 2:
            sides = [side(prog, s, opened[b], join) if not yields(prog, other)
                     else side(prog, s, (), None)
                     for s, other in zip(prog.succ[b], reversed(sides))]
            found += side_hazards(prog, prog.ins[b], sides[0], sides[1])
            found += side_hazards(prog, prog.ins[b], sides[1], sides[0])
    unique = {(h.branch.address, h.register, h.write.address, h.read.address): h for h in found}
    return list(unique.values())


def side_hazards(prog, branch, writer, reader):
    writes = {}
    for w in sorted(writer):
        for r in prog.ins[w].writes:
            if is_uniform_register(r):
                writes.setdefault(r, []).append(w)
    found = []
    for i in sorted(reader):
        ins = prog.ins[i]
        for r in ins.reads:
            before = [d for d in prog.reaching(i, r) if d not in reader]
            keys = {value_key(prog, d) for d in before}
            for w in writes.get(r, []):
                if before and (keys != {value_key(prog, w)}) and w != i:
                    found.append(Hazard(branch, r, prog.ins[w], ins))
                    break
    return found


def sass_of(ptx, arch="sm_90", options=(), ptxas=None):
    """nvdisasm's text of the cubin that `ptxas` (default PTXAS) makes of `ptx`."""
    with tempfile.TemporaryDirectory() as tmp:
        src, cubin = os.path.join(tmp, "k.ptx"), os.path.join(tmp, "k.cubin")
        with open(src, "w") as f:
            f.write(ptx)
        subprocess.run([ptxas or PTXAS, f"-arch={arch}", *PTXAS_OPTIONS, *options, src, "-o", cubin], check=True,
                       capture_output=True)
        return subprocess.run([NVDISASM, "-c", "-g", cubin], check=True, capture_output=True,
                              text=True).stdout


def kernels(sass):
    """The SASS of each kernel: its `.text` section (with the subroutines it calls)."""
    parts = re.split(r"^//-+ \.text\.(\S+)\s+-+$", sass, flags=re.M)
    return dict(zip(parts[1::2], parts[2::2]))


def program_hazards(job):
    """(number, hazards as text) of random program `number` (or the error that stopped it)."""
    seed, number, flags = job
    from kernel_harness import compile_source
    from replay import program

    source = program(seed, number, flags)[0]
    try:
        sass = sass_of(compile_source(source, "kern", arch="sm_90").ptx)
    except Exception as e:  # a program the compiler or ptxas refuses: say so, go on
        return number, [f"not compiled: {type(e).__name__}: {str(e)[:200]}"]
    return number, [str(h) for h in hazards(kernels(sass)["kern"])]


def random_programs(seed, count, flags, jobs=os.cpu_count()):
    from multiprocessing import Pool

    flagged = 0
    with Pool(jobs) as pool:
        work = [(seed, n, flags) for n in range(count)]
        for number, found in pool.imap(program_hazards, work, chunksize=4):
            if found:
                flagged += 1
                print(f"--- program {number} of seed {seed}: {len(found)} hazard(s)")
                for text in found:
                    print("  " + text)
    print(f"{count} programs of seed {seed} {' '.join(flags)}: {flagged} with hazards")


def source_hazards(source):
    """The hazards in the SASS of a program's kernel `kern` (None if it does not compile)."""
    from kernel_harness import compile_source

    try:
        return hazards(kernels(sass_of(compile_source(source, "kern", arch="sm_90").ptx))["kern"])
    except Exception:    # a candidate the compiler or ptxas refuses: not smaller
        return None


def reduce(source):
    """Cut a program down (reduce_gpu.py's candidates) while its SASS keeps a hazard."""
    import libcst as cst
    import reduce_gpu
    from reduce_gpu import candidates, undefined_reads

    # nothing runs, so barriers, thread 0's blocks and stores may go too
    reduce_gpu.synchronises = reduce_gpu.fills = lambda statement: False
    undefined = undefined_reads(source)
    position = 0
    while True:
        module = cst.parse_module(source)
        for offset, change in enumerate(list(candidates(module))[position:]):
            try:
                smaller = change(module).code
            except Exception:
                continue
            if len(smaller) >= len(source) or undefined_reads(smaller) > undefined:
                continue
            if source_hazards(smaller):
                source, position = smaller, position + offset
                break
        else:
            if position == 0:
                return source
            position = 0        # one more pass from the start


def main(argv):
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path[:0] = [os.path.join(here, "..", "..", "tests"), here]
    if argv and argv[0] == "--random":
        random_programs(argv[1], int(argv[2]), argv[3:])
        return
    if argv and argv[0] == "--reduce":
        if len(argv) == 2:
            with open(argv[1]) as f:
                source = f.read()
        else:
            from replay import program
            source = program(argv[1], int(argv[2]), argv[3:])[0]
        source = reduce(source)
        print(source)
        for h in source_hazards(source):
            print(f"# {h}")
        return
    for path in argv:
        with open(path) as f:
            sass = sass_of(f.read())
        for name, text in kernels(sass).items():
            found = hazards(text)
            print(f"{path} {name}: {len(found)} hazard(s)")
            for h in found:
                print("  " + str(h))


if __name__ == "__main__":
    main(sys.argv[1:])
