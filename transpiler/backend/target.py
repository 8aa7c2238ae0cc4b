"""The PTX target: which `.version` an `sm_XX` needs, and what its instructions allow."""
from __future__ import annotations

from .errors import BackendError

#: lowest PTX ISA version of each target (docs/ptx-dialect.md)
BASE_VERSION = {"sm_80": (7, 0), "sm_86": (7, 1), "sm_87": (7, 4), "sm_89": (7, 8),
                "sm_90": (7, 8), "sm_90a": (8, 0), "sm_100": (8, 6), "sm_100a": (8, 6),
                "sm_120": (8, 7), "sm_120a": (8, 7)}


def sm_number(arch: str) -> int:
    """90 for `sm_90` and `sm_90a`."""
    return int("".join(c for c in arch[3:] if c.isdigit()))


class Target:
    def __init__(self, arch: str):
        if arch not in BASE_VERSION:
            raise BackendError(f"unsupported target {arch!r} (supported: {', '.join(BASE_VERSION)})")
        self.arch = arch
        self.sm = sm_number(arch)
        self.version = BASE_VERSION[arch]

    def require(self, version: tuple, sm: int = 0, what: str = "") -> None:
        """Note that an instruction needs PTX `version` (raising `.version`) and `sm_{sm}`."""
        if self.sm < sm:
            raise BackendError(f"{what} needs sm_{sm} or newer, the target is {self.arch}")
        self.version = max(self.version, version)

    def require_wgmma(self, what: str) -> None:
        """wgmma is sm_90a's alone (PTX 8.0): an `sm_90` target becomes `sm_90a`, whose PTX
        only Hopper runs; other targets are an error (Blackwell has no wgmma)."""
        if self.sm != 90:
            raise BackendError(f"{what} needs sm_90a (Hopper), the target is {self.arch}")
        self.arch = "sm_90a"
        self.version = max(self.version, BASE_VERSION["sm_90a"])

    @property
    def bf16_arith(self) -> bool:
        """add/sub/mul/setp/cvt on .bf16 beyond f32<->bf16 (sm_90, PTX 7.8)."""
        return self.sm >= 90

    @property
    def version_text(self) -> str:
        return f"{self.version[0]}.{self.version[1]}"


# --- shared memory ------------------------------------------------------------------------------
#: shared memory a kernel may declare as `.shared` variables (CUDA's static limit, every arch)
STATIC_SHARED_LIMIT = 48 * 1024
#: the most shared memory one block may have on each target (CUDA's opt-in limit per block)
SHARED_LIMIT = {80: 163 * 1024, 86: 99 * 1024, 87: 163 * 1024, 89: 99 * 1024, 90: 227 * 1024,
                100: 227 * 1024, 120: 99 * 1024}
#: the `.extern .shared` array holding a kernel's shared arrays when they pass the static limit
EXTERN_SHARED = "smem"


def extern_shared_name(kernel: str) -> str:
    """EXTERN_SHARED, unless the kernel itself is named so (`$` is in no Python name)."""
    return EXTERN_SHARED if kernel != EXTERN_SHARED else EXTERN_SHARED + "$"


def shared_limit(arch: str) -> int:
    return SHARED_LIMIT.get(sm_number(arch), STATIC_SHARED_LIMIT)


def shared_layout(arrays: list) -> dict:
    """{symbol: byte offset} of the shared arrays inside one `.extern .shared` array, when
    together they take more than the static limit (the launch then asks for that many bytes
    of dynamic shared memory, as CUDA's `extern __shared__`) or some are sized at launch; {}
    when each is a `.shared` variable of its own. Arrays sized at launch all map to the
    16-byte boundary after the static ones, where the region holding them begins (the kernel
    adds each one's place in it: transpiler/launch_shape.py)."""
    static = [decl for decl in arrays if decl.space == "shared" and not decl.launch]
    sized_at_launch = [decl for decl in arrays if decl.space == "shared" and decl.launch]
    offsets, end = {}, 0
    for decl in static:
        end = -(-end // decl.align) * decl.align
        offsets[decl.name] = end
        end += decl.nbytes
    if not sized_at_launch:
        return offsets if end > STATIC_SHARED_LIMIT else {}
    region = -(-end // 16) * 16
    offsets.update((decl.name, region) for decl in sized_at_launch)
    return offsets


def shared_bytes(arrays: list) -> tuple[int, int]:
    """(static, dynamic) shared memory bytes of a kernel's arrays: one of them is 0. With
    arrays sized at launch, dynamic is what precedes them (a launch adds their bytes)."""
    offsets = shared_layout(arrays)
    static = [decl for decl in arrays if decl.space == "shared" and not decl.launch]
    if not offsets:
        return sum(decl.nbytes for decl in static), 0
    if any(decl.launch for decl in arrays if decl.space == "shared"):
        return 0, max(offsets.values())
    return 0, offsets[static[-1].name] + static[-1].nbytes
