"""PTX text -> a small module tree for the simulator (`ptxpy.runtime.simulator`).

The parser understands the PTX that ptxpy's backend emits (docs/ptx-dialect.md) and what
`nvcc -ptx` produces for ordinary kernels: module directives, `.entry`/`.func` with their
`.param`s, `.reg` declarations, `.global/.const/.shared/.local` variables with initializers,
labels, guarded instructions with their operands, and `.file`/`.loc` line information, which
every instruction keeps for error messages. It does not check types; the simulator does that
when it compiles each instruction.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field


class SimulatorError(RuntimeError):
    """A PTX program the simulator cannot parse or run, or a fault while running it."""


# ---- operands -----------------------------------------------------------------------------

@dataclass(frozen=True)
class Reg:
    """A register or special register (`%r1`, `%tid.x`); `neg` is a `!` on a predicate."""
    name: str
    neg: bool = False


@dataclass(frozen=True)
class Imm:
    """An immediate. kind: 'int', 'float' (decimal literal), 'f32' / 'f64' (0f / 0d bit pattern)."""
    value: int | float
    kind: str


@dataclass(frozen=True)
class Sym:
    """A variable, label or function name, optionally `name+offset`."""
    name: str
    offset: int = 0


@dataclass(frozen=True)
class Addr:
    """A memory operand `[base+offset]`; base is a Reg, a Sym or None (absolute address)."""
    base: Reg | Sym | None
    offset: int = 0


@dataclass(frozen=True)
class TensorAddr:
    """A tensor operand `[tensorMap, {c0, c1, ...}]` (cp.async.bulk.tensor): the map's address
    and the coordinates, innermost dimension first."""
    addr: Addr
    coords: tuple


@dataclass(frozen=True)
class Vec:
    items: tuple


@dataclass(frozen=True)
class Pair:
    """Two destinations `%p1|%p2` (setp) or `%r1|%p1` (shfl)."""
    first: object
    second: object


@dataclass(frozen=True)
class Paren:
    items: tuple


@dataclass(frozen=True)
class SinkOperand:
    """The `_` operand: a result nobody reads."""


SINK = SinkOperand()


# ---- module tree --------------------------------------------------------------------------

@dataclass
class Instr:
    opcode: str                 # 'ld.global.nc.f32'
    operands: list
    guard: Reg | None           # `@%p1` / `@!%p1`
    line: int                   # line in the PTX text
    loc: tuple | None           # (file index, line, column) of the latest .loc before it
    text: str                   # the PTX source line, for messages

    @property
    def parts(self) -> list[str]:
        return self.opcode.split(".")


@dataclass
class VarDecl:
    space: str                  # 'global' 'const' 'shared' 'local' 'param'
    name: str
    type: str                   # 'b8', 'f32', ...
    align: int | None
    count: int | None           # elements for `name[N]`; None for a scalar; 0 for `name[]`
    vec: int = 1
    init: list | None = None
    extern: bool = False
    line: int = 0


@dataclass
class Function:
    name: str
    kind: str                   # 'entry' | 'func'
    params: list[VarDecl]
    returns: list[VarDecl]
    regs: dict[str, str] = field(default_factory=dict)        # register name -> type
    vars: list[VarDecl] = field(default_factory=list)         # shared/local/param in the body
    body: list[Instr] = field(default_factory=list)
    labels: dict[str, int] = field(default_factory=dict)      # label -> index into body
    directives: dict[str, list] = field(default_factory=dict)
    defined: bool = False
    line: int = 0


@dataclass
class PtxModule:
    version: str | None = None
    target: list[str] = field(default_factory=list)
    address_size: int = 64
    files: dict[int, str] = field(default_factory=dict)
    globals: list[VarDecl] = field(default_factory=list)
    functions: dict[str, Function] = field(default_factory=dict)


# ---- tokens -------------------------------------------------------------------------------

_TOKEN = re.compile(r"""
    (?P<ws>[ \t\r\f\v]+) | (?P<nl>\n) | (?P<lcomment>//[^\n]*) | (?P<bcomment>/\*.*?\*/)
  | (?P<string>"(?:[^"\\\n]|\\.)*")
  | (?P<num>0[fF][0-9a-fA-F]{8}(?![\w$]) | 0[dD][0-9a-fA-F]{16}(?![\w$]) | 0[xX][0-9a-fA-F]+U?
      | 0[bB][01]+U? | (?:\d+\.\d*|\.\d+)(?:[eE][+-]?\d+)? | \d+[eE][+-]?\d+ | \d+U?)
  | (?P<ident>[%$.A-Za-z_](?:[\w$.]|::)*)
  | (?P<punct>[{}()\[\],;:|!@+\-<>=*])
""", re.X | re.S)


@dataclass
class _Tok:
    kind: str
    text: str
    line: int


def _tokenize(text: str) -> list[_Tok]:
    toks, line, pos = [], 1, 0
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None:
            raise SimulatorError(f"PTX line {line}: cannot parse {text[pos:pos + 20]!r}")
        kind, value = m.lastgroup, m.group()
        if kind in ("num", "ident", "punct", "string"):
            toks.append(_Tok(kind, value, line))
        line += value.count("\n")
        pos = m.end()
    return toks


def parse_number(text: str) -> Imm:
    """A PTX numeric literal as an Imm (the 0f and 0d hex forms keep their bit patterns)."""
    low = text.lower()
    if low.startswith("0f") and len(low) == 10:
        return Imm(int(low[2:], 16), "f32")
    if low.startswith("0d") and len(low) == 18:
        return Imm(int(low[2:], 16), "f64")
    low = low.rstrip("u")
    if low.startswith("0x"):
        return Imm(int(low, 16), "int")
    if low.startswith("0b"):
        return Imm(int(low[2:], 2), "int")
    if any(c in low for c in ".e"):
        return Imm(float(low), "float")
    if len(low) > 1 and low.startswith("0"):
        return Imm(int(low, 8), "int")
    return Imm(int(low), "int")


def _negate(imm: Imm) -> Imm:
    if imm.kind == "f32":
        return Imm(imm.value ^ 0x8000_0000, "f32")
    if imm.kind == "f64":
        return Imm(imm.value ^ 0x8000_0000_0000_0000, "f64")
    return Imm(-imm.value, imm.kind)


# ---- parser -------------------------------------------------------------------------------

_SPACES = {".global", ".const", ".shared", ".local", ".param"}
_LINKAGE = {".visible", ".extern", ".weak", ".common"}
_PERF_DIRECTIVES = {".maxntid", ".reqntid", ".minnctapersm", ".maxnctapersm", ".maxnreg",
                    ".noreturn", ".explicitcluster", ".reqnctapercluster", ".maxclusterrank",
                    ".blocksareclusters"}


class _Parser:
    def __init__(self, text: str):
        self.lines = text.splitlines()
        self.toks = _tokenize(text)
        self.i = 0
        self.mod = PtxModule()
        self.loc = None

    # token helpers
    def peek(self, k: int = 0) -> _Tok | None:
        j = self.i + k
        return self.toks[j] if j < len(self.toks) else None

    def next(self) -> _Tok:
        tok = self.peek()
        if tok is None:
            raise SimulatorError("PTX: unexpected end of text")
        self.i += 1
        return tok

    def at(self, text: str) -> bool:
        tok = self.peek()
        return tok is not None and tok.text == text

    def accept(self, text: str) -> bool:
        if self.at(text):
            self.i += 1
            return True
        return False

    def expect(self, text: str) -> _Tok:
        tok = self.next()
        if tok.text != text:
            self.fail(tok, f"expected {text!r}, found {tok.text!r}")
        return tok

    def fail(self, tok: _Tok | None, msg: str):
        line = tok.line if tok else (self.toks[-1].line if self.toks else 0)
        raise SimulatorError(f"PTX line {line}: {msg}")

    def number(self) -> int:
        tok = self.next()
        if tok.kind != "num":
            self.fail(tok, f"expected a number, found {tok.text!r}")
        return int(parse_number(tok.text).value)

    # module level
    def parse(self) -> PtxModule:
        while self.peek() is not None:
            self.module_item()
        return self.mod

    def module_item(self):
        tok = self.next()
        t = tok.text
        if t == ".version":
            self.mod.version = self.next().text
        elif t == ".target":
            self.mod.target = [self.next().text]
            while self.accept(","):
                self.mod.target.append(self.next().text)
        elif t == ".address_size":
            self.mod.address_size = self.number()
        elif t == ".file":
            self.file_directive()
        elif t == ".loc":
            self.loc_directive()
        elif t == ".pragma":
            self.skip_statement()
        elif t == ".section":
            self.skip_section()
        elif t in _LINKAGE or t in (".entry", ".func") or t in _SPACES:
            self.declaration(tok)
        else:
            self.fail(tok, f"unexpected {t!r} at module level")

    def file_directive(self):
        index = self.number()
        name = self.next().text
        self.mod.files[index] = name.strip('"')
        while self.accept(","):
            self.next()

    def loc_directive(self):
        self.loc = tuple(self.number() for _ in range(3))
        while self.accept(","):   # `, function_name $L__info_string0, inlined_at 1 20 3`
            key = self.next()
            if key.text == "function_name":
                self.next()
            elif key.text == "inlined_at":
                for _ in range(3):
                    self.number()
            else:
                self.fail(key, f"unsupported .loc attribute {key.text!r}")

    def skip_statement(self):
        while not self.accept(";"):
            self.next()

    def skip_section(self):
        self.next()
        self.expect("{")
        depth = 1
        while depth:
            t = self.next().text
            depth += (t == "{") - (t == "}")

    def declaration(self, first: _Tok):
        linkage = []
        tok = first
        while tok.text in _LINKAGE:
            linkage.append(tok.text)
            tok = self.next()
        if tok.text in (".entry", ".func"):
            self.function(tok, linkage)
        elif tok.text in _SPACES:
            for decl in self.var_decls(tok, linkage):
                self.mod.globals.append(decl)
        else:
            self.fail(tok, f"unexpected {tok.text!r} after {' '.join(linkage)}")

    # variables
    def var_decls(self, space_tok: _Tok, linkage=()) -> list[VarDecl]:
        align, vec, vtype = None, 1, None
        while True:
            tok = self.next()
            t = tok.text
            if t == ".align":
                align = self.number()
            elif t in (".v2", ".v4", ".v8"):
                vec = int(t[2:])
            elif t == ".ptr" or t in _SPACES:
                continue
            elif t.startswith(".") and vtype is None:
                vtype = t[1:]
            else:
                self.i -= 1
                break
        if vtype is None:
            self.fail(space_tok, "variable declaration without a type")
        decls = []
        while True:
            decls.append(self.one_var(space_tok, vtype, align, vec, ".extern" in linkage))
            if not self.accept(","):
                break
        self.expect(";")
        return decls

    def one_var(self, space_tok, vtype, align, vec, extern) -> VarDecl:
        name_tok = self.next()
        decl = VarDecl(space_tok.text[1:], name_tok.text, vtype, align, None, vec,
                       extern=extern, line=name_tok.line)
        while self.accept("["):
            size = 0 if self.at("]") else self.number()
            decl.count = size if decl.count is None else decl.count * size
            self.expect("]")
        if self.accept("="):
            decl.init = self.initializer()
        return decl

    def initializer(self) -> list:
        if self.accept("{"):
            items = []
            while not self.accept("}"):
                items.extend(self.initializer())
                self.accept(",")
            return items
        neg = self.accept("-")
        tok = self.next()
        if tok.kind != "num":
            self.fail(tok, f"unsupported initializer {tok.text!r}")
        imm = parse_number(tok.text)
        return [_negate(imm) if neg else imm]

    # functions
    def function(self, kind_tok: _Tok, linkage):
        returns = self.param_list() if self.at("(") else []
        name = self.next().text
        params = self.param_list() if self.at("(") else []
        fn = Function(name, kind_tok.text[1:], params, returns, line=kind_tok.line)
        while self.peek() is not None and self.peek().text in _PERF_DIRECTIVES | {".pragma"}:
            self.perf_directive(fn)
        if self.accept(";"):
            self.mod.functions.setdefault(name, fn)
            return
        self.expect("{")
        fn.defined = True
        self.body(fn)
        self.mod.functions[name] = fn

    def perf_directive(self, fn: Function):
        tok = self.next()
        if tok.text == ".pragma":
            self.skip_statement()
            return
        values = []
        while self.peek() is not None and self.peek().kind == "num":
            values.append(self.number())
            if not self.accept(","):
                break
        fn.directives[tok.text] = values

    def param_list(self) -> list[VarDecl]:
        self.expect("(")
        params = []
        while not self.accept(")"):
            tok = self.next()
            if tok.text not in (".param", ".reg"):
                self.fail(tok, f"expected .param, found {tok.text!r}")
            params.append(self.param_decl(tok))
            self.accept(",")
        return params

    def param_decl(self, space_tok: _Tok) -> VarDecl:
        align, vtype = None, None
        while self.peek().text.startswith(".") :
            t = self.next().text
            if t == ".align":
                align = self.number()
            elif t == ".ptr" or t in _SPACES:
                continue
            else:
                vtype = t[1:]
        return self.one_var(space_tok, vtype, align, 1, False)

    def body(self, fn: Function):
        depth = 0
        while True:
            tok = self.peek()
            if tok is None:
                self.fail(None, f"missing '}}' at the end of {fn.name}")
            if tok.text == "{":
                self.next()
                depth += 1
            elif tok.text == "}":
                self.next()
                if depth == 0:
                    return
                depth -= 1
            elif tok.text.startswith(".") and tok.kind == "ident":
                self.body_directive(fn)
            elif self.peek(1) is not None and self.peek(1).text == ":" and tok.text != "@":
                self.next()
                self.next()
                fn.labels[tok.text] = len(fn.body)
            else:
                fn.body.append(self.instruction())

    def body_directive(self, fn: Function):
        tok = self.next()
        t = tok.text
        if t == ".reg":
            self.reg_decl(fn)
        elif t in _SPACES:
            fn.vars.extend(self.var_decls(tok))
        elif t == ".loc":
            self.loc_directive()
        elif t == ".file":
            self.file_directive()
        elif t == ".pragma":
            self.skip_statement()
        elif t in _LINKAGE:
            space = self.next()
            fn.vars.extend(self.var_decls(space, [t]))
        else:
            self.fail(tok, f"unsupported directive {t!r} in a function body")

    def reg_decl(self, fn: Function):
        vtype = None
        while self.peek().text.startswith(".") and self.peek().kind == "ident":
            t = self.next().text
            if t not in (".v2", ".v4"):
                vtype = t[1:]
        while True:
            name = self.next().text
            if self.accept("<"):
                count = self.number()
                self.expect(">")
                for k in range(count):
                    fn.regs[f"{name}{k}"] = vtype
            else:
                fn.regs[name] = vtype
            if not self.accept(","):
                break
        self.expect(";")

    # instructions
    def instruction(self) -> Instr:
        first = self.peek()
        guard = None
        if self.accept("@"):
            neg = self.accept("!")
            guard = Reg(self.next().text, neg)
        op_tok = self.next()
        if op_tok.kind != "ident":
            self.fail(op_tok, f"expected an instruction, found {op_tok.text!r}")
        groups = self.operand_groups()
        operands = [self.operand(g, op_tok) for g in groups]
        text = self.lines[first.line - 1].strip() if first.line <= len(self.lines) else op_tok.text
        return Instr(op_tok.text, operands, guard, op_tok.line, self.loc, text)

    def operand_groups(self) -> list[list[_Tok]]:
        groups, cur, depth = [], [], 0
        while True:
            tok = self.next()
            if tok.text in "([{" and tok.kind == "punct":
                depth += 1
            elif tok.text in ")]}" and tok.kind == "punct":
                depth -= 1
            elif depth == 0 and tok.text == ";":
                break
            if depth == 0 and tok.text == ",":
                groups.append(cur)
                cur = []
            else:
                cur.append(tok)
        if cur:
            groups.append(cur)
        return groups

    def operand(self, toks: list[_Tok], where: _Tok):
        if not toks:
            self.fail(where, "empty operand")
        head = toks[0].text
        if head == "[":
            return self.address(toks[1:-1], where)
        if head in ("{", "("):
            items = tuple(self.operand(g, where) for g in _split_commas(toks[1:-1]))
            return Vec(items) if head == "{" else Paren(items)
        if len(toks) == 3 and toks[1].text == "|":
            return Pair(self.operand(toks[:1], where), self.operand(toks[2:], where))
        if head == "!":
            return Reg(toks[1].text, True)
        if head == "-" and len(toks) == 2 and toks[1].kind == "num":
            return _negate(parse_number(toks[1].text))
        if len(toks) == 1:
            tok = toks[0]
            if tok.kind == "num":
                return parse_number(tok.text)
            if tok.text == "_":
                return SINK
            return Reg(tok.text) if tok.text.startswith("%") else Sym(tok.text)
        if len(toks) >= 3 and toks[1].text in "+-" and toks[0].kind == "ident":
            return Sym(toks[0].text, _offset(toks[1:], self, where))
        self.fail(where, "cannot parse operand " + " ".join(t.text for t in toks))

    def address(self, toks: list[_Tok], where: _Tok) -> Addr | TensorAddr:
        if not toks:
            self.fail(where, "empty address []")
        groups = _split_commas(toks)
        if len(groups) > 1:     # [tensorMap, {c0, c1, ...}]
            coords = groups[1]
            if (len(groups) != 2 or not groups[0] or len(coords) < 2 or coords[0].text != "{"
                    or coords[-1].text != "}"):
                self.fail(where, "cannot parse operand [" + " ".join(t.text for t in toks) + "]")
            items = tuple(self.operand(g, where) for g in _split_commas(coords[1:-1]))
            return TensorAddr(self.address(groups[0], where), items)
        first = toks[0]
        if first.kind == "num":
            return Addr(None, int(parse_number(first.text).value) + _offset(toks[1:], self, where))
        base = Reg(first.text) if first.text.startswith("%") else Sym(first.text)
        return Addr(base, _offset(toks[1:], self, where))


def _offset(toks: list[_Tok], parser: _Parser, where: _Tok) -> int:
    """`+8`, `+-4`, `-4` after an address base."""
    sign, total, seen = 1, 0, False
    for tok in toks:
        if tok.text == "+":
            continue
        if tok.text == "-":
            sign = -sign
        elif tok.kind == "num":
            total += sign * int(parse_number(tok.text).value)
            sign, seen = 1, True
        else:
            parser.fail(where, f"unsupported address offset {tok.text!r}")
    if toks and not seen:
        parser.fail(where, "address offset without a number")
    return total


def _split_commas(toks: list[_Tok]) -> list[list[_Tok]]:
    groups, cur, depth = [], [], 0
    for tok in toks:
        if tok.kind == "punct" and tok.text in "([{":
            depth += 1
        elif tok.kind == "punct" and tok.text in ")]}":
            depth -= 1
        if depth == 0 and tok.text == ",":
            groups.append(cur)
            cur = []
        else:
            cur.append(tok)
    if cur:
        groups.append(cur)
    return groups


def parse(text: str) -> PtxModule:
    """Parse PTX text; raises SimulatorError naming the PTX line on anything malformed."""
    return _Parser(text).parse()
