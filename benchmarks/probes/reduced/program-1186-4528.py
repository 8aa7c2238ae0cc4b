"""program 1186, thread 0, inputs {'a': '-68', 'b': '5.5', 'c': '4', 'd': '-2.5'}
output 6 [0, 1]: simulator np.int16(767), card np.int16(774)
(97 candidates tried)
compiled by ptxas 13.5.37 (PTXPY_PTXAS); the driver's JIT (ptxas 13.0) runs it right: see known_bits_probe.py
"""
import ptxpy
from ptxpy import Array, i8, i16, i32, i64, u8, u16, u32, u64, f16, bf16, f32, f64

@ptxpy.jit
def kern(a: Array[i32], b: Array[f32], c: Array[u32], d: Array[f32], o_u16: Array[u16, 2], o_u64: Array[u64, 2], o_u32: Array[u32, 2], o_bool: Array[bool, 2], o_f32: Array[f32, 2], o_i32: Array[i32, 2], o_mem: Array[i16, 2]):
    i = 0
    v3: u32 = ((c[(u8(b[((c[i] if (bf16(d[(i32((a[i] & c[i]))) & 63]) <= bf16(16842753)) else u32(32767))) & 63])) & 63] | 255) ** 3)
    o_mem[i, 0] = 0
    o_mem[i, 1] = (v3 | 7)
    o_mem[i, 2] = 0
    o_mem[i, 3] = 0
