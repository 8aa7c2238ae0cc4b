"""program 398, thread 0, inputs {'a': '-87', 'b': '-inf', 'c': '-66'}
output 5 [0, 1]: simulator np.True_, card np.False_
(110 candidates tried)
compiled by ptxas 13.5.37 (PTXPY_PTXAS); the driver's JIT (ptxas 13.0) runs it right: see known_bits_probe.py
"""
import ptxpy
from ptxpy import Array, i8, i16, i32, i64, u8, u16, u32, u64, f16, bf16, f32, f64

@ptxpy.jit
def kern(a: Array[i32], b: Array[f32], c: Array[i8], o_i8: Array[i8, 2], o_i32: Array[i32, 2], o_u32: Array[u32, 2], o_i16: Array[i16, 2], o_f64: Array[f64, 2], o_mem: Array[bool, 2]):
    i = 0
    v2: i32 = (a[i] | 1)
    v3: u32 = (u32(v2) ** 4)
    v4: i16 = (i16(v3) | 3)
    o_mem[i, 0] = 0
    o_mem[i, 1] = 1
    o_mem[i, 2] = 0
    o_mem[i, 3] = 0
    o_mem[i, ((v3 ^ i64(v4))) & 3] = 0
