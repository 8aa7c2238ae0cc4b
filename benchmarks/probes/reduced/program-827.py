"""program 827, thread 0, inputs {'a': '-94', 'b': '-12.5', 'c': '25', 'd': '16309'}
output 5 [0, 0]: simulator 1, card 9.18355e-41
(94 candidates tried)
"""
import ptxpy
from ptxpy import Array, i8, i16, i32, i64, u8, u16, u32, u64, f16, bf16, f32, f64

@ptxpy.jit
def kern(a: Array[i32], b: Array[f32], c: Array[i32], d: Array[u16], o_i32: Array[i32, 2], o_u8: Array[u8, 2], o_u64: Array[u64, 2], o_bf16: Array[bf16, 2], o_i64: Array[i64, 2], o_mem: Array[bf16, 2]):
    i = 0
    v4: bf16 = 1
    v5: i64 = 0
    m = ptxpy.local_array(4, bf16)
    m[0] = 0
    m[1] = 0
    m[2] = 0
    m[3] = 0
    w6 = 0
    while w6 < 1:
        w6 += 1
        m[(v5) & 3] = (bool(v4) + 0)
        v4 = 0
    o_mem[i, 0] = m[0]
    o_mem[i, 1] = 0
    o_mem[i, 2] = 0
    o_mem[i, 3] = 0
