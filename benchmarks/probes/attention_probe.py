"""Flash attention (examples/attention.py on mma.sync, examples/attention_wgmma.py on wgmma) in a
few tile shapes, beside XLA's and cuDNN's `jax.nn.dot_product_attention` and Pallas's
Triton-based `mha`: TFLOP/s (4 seq^2 d per head, half of it causal) on bf16 (batch, seq, heads,
d) inputs, d 64 and 128, causal or not.

Each variant is the example with other module constants (a temporary module of its own name);
every result is first compared with cuDNN's (else XLA's) output. On a GPU only:

    python benchmarks/probes/attention_probe.py [--json FILE] [--only NAME ...] [--head-dims 64 128]
"""
import argparse
import json
import math
import os
import sys
import tempfile
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from matmul_async_probe import variant  # noqa: E402

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
sys.path.insert(0, str(EXAMPLES))
from attention import attention_tflops  # noqa: E402

FTZ = {"ex2.approx.f32": "ex2.approx.ftz.f32"}
# (name, {constant: value}, {PTX text: replacement}): the example's own constants first
# examples/attention.py (mma.sync) and examples/attention_wgmma.py ("wgmma ...")
VARIANTS = [("example", {}, {}), ("ftz", {}, FTZ), ("BM 64", {"BM": 64}, {}),
            ("BN 128", {"BN": 128}, {}), ("BM 64, BN 128", {"BM": 64, "BN": 128}, {}),
            ("BN 32", {"BN": 32}, {}),
            ("wgmma example", {}, {}), ("wgmma BN 128", {"BN": 128}, {}),
            ("wgmma BM 64", {"BM": 64}, {}), ("wgmma BM 64, BN 128", {"BM": 64, "BN": 128}, {})]
SUBSTITUTIONS = {}     # a variant module's file name: its replacements in the PTX it compiles
SHAPES = [(4, 4096, 16), (16, 1024, 16)]      # (batch, seq, heads)


def peers(causal: bool, d: int) -> list:
    scale = 1.0 / math.sqrt(d)
    systems = []
    for impl in ("cudnn", "xla"):
        systems.append((impl, jax.jit(lambda q, k, v, i=impl: jax.nn.dot_product_attention(
            q, k, v, is_causal=causal, implementation=i))))
    try:
        from jax.experimental.pallas.ops.gpu import attention as pallas_attention
        systems.append(("pallas mha", jax.jit(lambda q, k, v: pallas_attention.mha(
            q, k, v, segment_ids=None, sm_scale=scale, causal=causal))))
    except Exception as err:   # (not in every JAX)
        print(f"pallas mha unavailable: {type(err).__name__}: {err}")
    return systems


def ours(name: str, constants: dict, subs: dict, folder: Path, causal: bool):
    """The example's `attention` with other constants (and PTX text replaced, where `subs`)."""
    wgmma = name.startswith("wgmma")
    example = EXAMPLES / ("attention_wgmma.py" if wgmma else "attention.py")
    function = "attention_wgmma" if wgmma else "attention"
    before = set(folder.iterdir())
    variant(name, constants, folder, example, kernel=function)
    path, = set(folder.iterdir()) - before
    if subs:
        SUBSTITUTIONS[path.name] = subs
    module = _load(path)
    return jax.jit(lambda q, k, v: getattr(module, function)(q, k, v, causal))


def _load(path: Path):
    import importlib.util
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _patch_assembler():
    """The runtime's ptxas step, replacing text in the PTX of the variants that ask for it
    (with PTXPY_CACHE=0 set by main, nothing assembled before is reused)."""
    from ptxpy.runtime import compiler
    assemble = compiler.assemble

    def patched(ptxas, ptx, sm):
        for file_name, subs in SUBSTITUTIONS.items():
            if file_name in ptx:
                for old, new in subs.items():
                    assert old in ptx, old
                    ptx = ptx.replace(old, new)
        return assemble(ptxas, ptx, sm)
    compiler.assemble = patched


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--json", default=None)
    parser.add_argument("--only", nargs="*", default=None, help="variant names to time")
    parser.add_argument("--head-dims", nargs="*", type=int, default=[64, 128])
    args = parser.parse_args()
    os.environ["PTXPY_CACHE"] = "0"
    _patch_assembler()
    results = {"device": jax.devices()[0].device_kind, "rows": []}
    with tempfile.TemporaryDirectory() as folder:
        for d in args.head_dims:
            for causal in (False, True):
                systems = [(f"ptxpy {name}", ours(f"{name} {d} {causal}", c, subs, Path(folder), causal))
                           for name, c, subs in VARIANTS if args.only is None or name in args.only]
                systems += peers(causal, d)
                for batch, seq, heads in SHAPES:
                    keys = jax.random.split(jax.random.key(seq + d), 3)
                    q, k, v = (jax.random.normal(key, (batch, seq, heads, d)).astype(jnp.bfloat16)
                               for key in keys)
                    for name, fn in systems:
                        row = {"name": name, "d": d, "causal": causal, "shape": [batch, seq, heads]}
                        try:
                            out = np.asarray(fn(q, k, v)).astype(np.float32)
                            row["tflops"] = round(attention_tflops(fn, q, k, v, causal), 1)
                            row["out"] = out
                        except Exception as err:
                            row["failed"] = f"{type(err).__name__}: {str(err)[:200]}"
                        results["rows"].append(row)
                    # every output beside the first peer's (cuDNN's, else XLA's)
                    reference = next((r["out"] for r in results["rows"][-len(systems):]
                                      if "out" in r and not r["name"].startswith("ptxpy")), None)
                    for row in results["rows"][-len(systems):]:
                        out = row.pop("out", None)
                        if out is not None and reference is not None:
                            row["max_diff"] = float(np.max(np.abs(out - reference)))
                        print(f"d {d} causal {causal!s:5} {batch}x{seq}x{heads} {row['name']:22s} "
                              + (f"{row['tflops']:6.1f} TFLOP/s  max diff {row.get('max_diff', -1):.1e}"
                                 if "tflops" in row else row.get("failed", "")), flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
