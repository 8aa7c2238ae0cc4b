"""The C fast path of the FFI handler (runtime/native_handler.c), driven on the CPU with call
frames built as XLA lays them out, a fake XLA API table and fake CUDA driver functions.

Each test loads its own copy of the library (a separate file, so separate globals): the one a
GPU process registered with XLA is never re-pointed at the fakes. tests/test_tma.py runs a TMA
kernel through the real C handler (sm_90 GPUs only)."""
import ctypes
import shutil
import struct

import pytest

from ptxpy.runtime import ffi, native, tensor_map
from ptxpy.runtime.launch import TensorSlot
from ptxpy.runtime.tensor_map import TensorMapLayout

pytestmark = pytest.mark.skipif(native.compiler() is None, reason="no C compiler")

KEY = 0x1234_5678_9ABC


EncodeTiled = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_int, ctypes.c_uint32,
                               ctypes.c_void_p, ctypes.POINTER(ctypes.c_uint64),
                               ctypes.POINTER(ctypes.c_uint64), ctypes.POINTER(ctypes.c_uint32),
                               ctypes.POINTER(ctypes.c_uint32), ctypes.c_int, ctypes.c_int,
                               ctypes.c_int, ctypes.c_int)


def fake_map(address):
    """The 128 bytes the fake cuTensorMapEncodeTiled writes for `address`."""
    return b"TMAP" + struct.pack("<Q", address) + bytes(range(116))


class Fakes:
    """XLA's API table (Stream_Get, InvokeContext_FindExtension), the record API, the driver's
    cuStreamGetCtx / cuLaunchKernel / cuTensorMapEncodeTiled (returning `encode_result`; none
    without `with_encode`) and the Python fallback, each recording its calls. `param_sizes`
    are the bytes of each parameter a launch records."""

    def __init__(self, tmp_path, record_action=1, with_encode=True, encode_result=0):
        path = native.build(tmp_path)
        self.lib = ctypes.CDLL(str(shutil.copy(path, tmp_path / "copy.so")))
        self.lib.ptxpy_native_add_plan.argtypes = [ctypes.POINTER(native.NativePlan)]
        self.lib.ptxpy_native_set_function.argtypes = [ctypes.POINTER(native.NativePlan),
                                                       ctypes.c_void_p, ctypes.c_void_p]
        self.lib.ptxpy_native_handler.argtypes = [ctypes.c_void_p]
        self.lib.ptxpy_native_handler.restype = ctypes.c_void_p
        self.launches, self.updates, self.fallbacks, self.encodes = [], [], [], []
        self.param_sizes = [8, 8, 4]
        self.encode_result = encode_result
        self.encode = EncodeTiled(self._encode)
        self.keep = []
        self.fallback = native._Handler(lambda frame: self.fallbacks.append(frame) or 0xE0)
        launch_type = ctypes.CFUNCTYPE(ctypes.c_int, *[ctypes.c_void_p] + [ctypes.c_uint] * 7
                                       + [ctypes.c_void_p] * 3)
        self.launch = launch_type(self._launch)
        self.get_ctx = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p,
                                        ctypes.POINTER(ctypes.c_void_p))(self._get_ctx)
        self.lib.ptxpy_native_init.argtypes = [ctypes.c_void_p] * 4
        self.lib.ptxpy_native_init(*(ctypes.cast(f, ctypes.c_void_p) if f else None for f in (
            self.fallback, self.launch, self.get_ctx, with_encode and self.encode)))
        self.plan_params = b""
        self.record = ffi.RecordApi()
        self.record.update_launch = ffi._UpdateLaunch(self._update)
        self.commands = (ctypes.c_void_p * 2)(0xC0)
        self.count = ctypes.c_int64(1)
        self.record_frame = ffi.RecordFrame(0xAB, ctypes.pointer(self.record), record_action,
                                            self.commands, ctypes.pointer(self.count), 2)
        self.api = self._api_table()

    def _api_table(self):
        size = ffi._API_FIRST_FUNCTION + 8 * len(ffi._API_FUNCTIONS)
        table = ctypes.create_string_buffer(size)
        struct.pack_into("<Q", table, 0, size)
        self.stream_get = ffi._StreamGet(self._stream_get)
        self.find = ffi._FindExtension(self._find_extension)
        for name, fn in (("Stream_Get", self.stream_get), ("InvokeContext_FindExtension", self.find)):
            slot = ffi._API_FIRST_FUNCTION + 8 * ffi._API_FUNCTIONS.index(name)
            struct.pack_into("<Q", table, slot, ctypes.cast(fn, ctypes.c_void_p).value)
        return table

    def _stream_get(self, args):
        args.contents.stream = 0x5700
        return None

    def _find_extension(self, args):
        extension = ffi.RecordExtension(record_frame=ctypes.pointer(self.record_frame))
        self.keep.append(extension)
        args.contents.extension = ctypes.pointer(extension)
        return None

    def _get_ctx(self, stream, out):
        out[0] = 0xC7C7 if stream == 0x5700 else 0
        return 0

    def _launch(self, fn, gx, gy, gz, bx, by, bz, shared, stream, params, extra):
        words = ctypes.cast(params, ctypes.POINTER(ctypes.c_void_p))
        self.launch_addresses = [words[i] for i in range(len(self.param_sizes))]
        self.launches.append((fn, (gx, gy, gz), (bx, by, bz), shared, stream,
                              [ctypes.string_at(words[i], size)
                               for i, size in enumerate(self.param_sizes)]))
        return 0

    def _encode(self, out, data_type, rank, address, dims, strides, box, element_strides,
                interleave, swizzle, l2_promotion, oob_fill):
        self.encodes.append((out % 64, address, (data_type, rank, tuple(dims[:rank]),
                                                 tuple(strides[:rank - 1]), tuple(box[:rank]),
                                                 tuple(element_strides[:rank]), interleave,
                                                 swizzle, l2_promotion, oob_fill)))
        if self.encode_result == 0:
            ctypes.memmove(out, fake_map(address), 128)
        return self.encode_result

    def _update(self, ctx, command, args):
        a = args.contents
        self.updates.append((ctx, command, [(ctypes.string_at(a.args[i].arg_address, a.args[i].size),
                                             a.args[i].type) for i in range(a.num_args)]))
        return None

    def handle(self, frame):
        return self.lib.ptxpy_native_handler(ctypes.addressof(frame))


def make_plan(key=KEY, shared=0):
    """A plan of three parameters: two pointers (operand 0 and result 0) and an int32 7."""
    params = bytes(16) + struct.pack("<i", 7)
    plan = ffi.LaunchPlan("k", None, (3, 2, 1), (128, 1, 1), shared, params, [0, 8, 16],
                          [(0, 0), (8, 1)])
    plan.key = key
    plan.make_native()
    return plan


def buffers(*pointers):
    """An XLA_FFI_Args table of buffers whose data pointers are `pointers`."""
    raw = [ctypes.create_string_buffer(32) for _ in pointers]
    for buffer, pointer in zip(raw, pointers):
        struct.pack_into("<Q", buffer, ffi._BUFFER_DATA_OFFSET, pointer)
    table = (ctypes.c_void_p * max(len(raw), 1))(*(ctypes.addressof(b) for b in raw))
    args = ffi.Args(ctypes.sizeof(ffi.Args), None, len(raw), None,
                    ctypes.cast(table, ctypes.c_void_p).value)
    return args, (raw, table)


def call_frame(fakes, stage, key=KEY, name=b"plan", dtype=ffi._DTYPE_S64, operand=0xA000,
               result=0xB000):
    operands, keep1 = buffers(operand)
    results, keep2 = buffers(result)
    value = ctypes.c_int64(key)
    scalar = ffi.ScalarAttr(dtype, ctypes.pointer(value))
    span = ffi.ByteSpan(name, len(name))
    names = (ctypes.POINTER(ffi.ByteSpan) * 1)(ctypes.pointer(span))
    types = (ctypes.c_int * 1)(ffi._ATTR_SCALAR)
    values = (ctypes.c_void_p * 1)(ctypes.addressof(scalar))
    attrs = ffi.Attrs(ctypes.sizeof(ffi.Attrs), None, 1, types,
                      ctypes.cast(names, ctypes.c_void_p).value, values)
    frame = ffi.CallFrame(ctypes.sizeof(ffi.CallFrame), None, ctypes.addressof(fakes.api), 0xCC,
                          stage, operands, results, attrs, None)
    frame._keep = (keep1, keep2, value, scalar, span, names, types, values)
    return frame


def test_execute_launches_natively_once_the_context_is_known(tmp_path):
    fakes = Fakes(tmp_path)
    plan = make_plan()
    assert fakes.lib.ptxpy_native_add_plan(ctypes.byref(plan.native))
    frame = call_frame(fakes, ffi._STAGE_EXECUTE)
    assert fakes.handle(frame) == 0xE0 and len(fakes.fallbacks) == 1    # no function yet
    assert fakes.lib.ptxpy_native_set_function(ctypes.byref(plan.native), 0xC7C7, 0xF00)
    assert fakes.handle(frame) is None
    assert fakes.launches == [(0xF00, (3, 2, 1), (128, 1, 1), 0, 0x5700,
                               [(0xA000).to_bytes(8, "little"), (0xB000).to_bytes(8, "little"),
                                struct.pack("<i", 7)])]
    assert len(fakes.fallbacks) == 1 and not fakes.encodes
    assert plan.params == bytes(16) + struct.pack("<i", 7)     # the template is untouched


def test_record_update_sets_the_new_pointers_natively(tmp_path):
    fakes = Fakes(tmp_path, record_action=1)
    plan = make_plan()
    fakes.lib.ptxpy_native_add_plan(ctypes.byref(plan.native))
    assert fakes.handle(call_frame(fakes, ffi._STAGE_RECORD)) is None
    assert fakes.updates == [(0xAB, 0xC0, [((0xA000).to_bytes(8, "little"), 1),
                                           ((0xB000).to_bytes(8, "little"), 1),
                                           (struct.pack("<i", 7), 1)])]
    assert not fakes.fallbacks and not fakes.launches


@pytest.mark.parametrize("case", ["create", "unknown plan", "not a plan attribute", "not s64",
                                  "stream capture", "other stage"])
def test_everything_else_goes_to_python(tmp_path, case):
    fakes = Fakes(tmp_path, record_action=ffi._RECORD_CREATE if case == "create" else 1)
    plan = make_plan(shared=64 * 1024 if case == "stream capture" else 0)
    fakes.lib.ptxpy_native_add_plan(ctypes.byref(plan.native))
    fakes.lib.ptxpy_native_set_function(ctypes.byref(plan.native), 0xC7C7, 0xF00)
    frame = call_frame(fakes, 1 if case == "other stage" else ffi._STAGE_RECORD,
                       key=KEY + 1 if case == "unknown plan" else KEY,
                       name=b"plam" if case == "not a plan attribute" else b"plan",
                       dtype=4 if case == "not s64" else ffi._DTYPE_S64)
    assert fakes.handle(frame) == 0xE0
    assert len(fakes.fallbacks) == 1 and not fakes.updates and not fakes.launches


def test_metadata_query_is_answered_natively(tmp_path):
    fakes = Fakes(tmp_path)
    meta = ffi.Metadata(ctypes.sizeof(ffi.Metadata))
    ext = ffi.MetadataExtension(ffi.ExtensionBase(ctypes.sizeof(ffi.MetadataExtension),
                                                  ffi._EXTENSION_METADATA, None), ctypes.pointer(meta))
    frame = ffi.CallFrame(ctypes.sizeof(ffi.CallFrame),
                          ctypes.cast(ctypes.pointer(ext), ctypes.POINTER(ffi.ExtensionBase)))
    assert fakes.handle(frame) is None
    assert meta.traits == ffi._TRAIT_COMMAND_BUFFER_COMPATIBLE
    assert (meta.api_version.major_version, meta.api_version.minor_version) == (0, 1)
    assert not fakes.fallbacks


def test_plan_table_keeps_many_plans_and_colliding_keys(tmp_path):
    fakes = Fakes(tmp_path)
    plans = [make_plan(key=KEY + (k << 14)) for k in range(5)]     # same slot of the table
    for plan in plans:
        assert fakes.lib.ptxpy_native_add_plan(ctypes.byref(plan.native))
    for k, plan in enumerate(plans):
        fakes.lib.ptxpy_native_set_function(ctypes.byref(plan.native), 0xC7C7, 0xF00 + k)
        fakes.handle(call_frame(fakes, ffi._STAGE_EXECUTE, key=plan.key))
    assert [launch[0] for launch in fakes.launches] == [0xF00 + k for k in range(5)]


def test_build_is_cached_and_needs_a_compiler(tmp_path, monkeypatch):
    first = native.build(tmp_path)
    stamp = first.stat().st_mtime_ns
    assert native.build(tmp_path) == first and first.stat().st_mtime_ns == stamp
    monkeypatch.setenv("CC", "no-such-compiler-ptxpy")
    assert native.build(tmp_path / "other") is None


def test_reading_the_counters_never_builds_the_library(monkeypatch):
    monkeypatch.setattr(native, "_library", None)
    monkeypatch.setattr(native, "_tried", False)
    monkeypatch.setattr(native, "build", lambda folder: pytest.fail("built the C handler"))
    assert native.counters() == (0, 0, 0)
    assert ffi.calls >= 0 and ffi.records >= 0


# --- tensor maps (ptxpy.tma_load / tma_store) ----------------------------------------------------

X_MAP = TensorMapLayout("f32", 4, (100, 72), (64, 32), 128)
OUT_MAP = TensorMapLayout("bf16", 2, (4, 100, 72), (1, 16, 64), 0)
#: what cuTensorMapEncodeTiled must be asked for each: innermost dimension first
X_ARGUMENTS = (7, 2, (72, 100), (288,), (32, 64), (1, 1), 0, 3, 2, 0)
OUT_ARGUMENTS = (9, 3, (72, 100, 4), (144, 14400), (64, 16, 1), (1, 1, 1), 0, 0, 2, 0)
MAP_PARAM_SIZES = [8, 4, 4, 128, 8, 4, 4, 128, 4]


def make_map_plan(key=KEY):
    """A plan of x (operand 0: pointer, 2 extents, its map at 64), out (result 0: the same, its
    map at 256) and an int32 7."""
    params = bytearray(388)
    struct.pack_into("<II", params, 8, 100, 72)
    struct.pack_into("<II", params, 200, 100, 72)
    struct.pack_into("<i", params, 384, 7)
    plan = ffi.LaunchPlan("k", None, (3, 2, 1), (128, 1, 1), 0, bytes(params),
                          [0, 8, 12, 64, 192, 200, 204, 256, 384], [(0, 0), (192, 1)],
                          tensor_slots=[TensorSlot(64, 0, X_MAP), TensorSlot(256, 1, OUT_MAP)])
    plan.key = key
    plan.make_native()
    return plan


def map_fakes(tmp_path, **options):
    fakes = Fakes(tmp_path, **options)
    fakes.param_sizes = MAP_PARAM_SIZES
    plan = make_map_plan()
    assert fakes.lib.ptxpy_native_add_plan(ctypes.byref(plan.native))
    assert fakes.lib.ptxpy_native_set_function(ctypes.byref(plan.native), 0xC7C7, 0xF00)
    return fakes, plan


def test_layouts_ask_the_driver_for_what_the_native_plan_holds(monkeypatch):
    assert X_MAP.arguments() == X_ARGUMENTS and OUT_MAP.arguments() == OUT_ARGUMENTS
    calls = []

    def driver(out, *arguments):
        calls.append(arguments)
        return 0

    monkeypatch.setattr(tensor_map, "_function", driver)
    OUT_MAP.encode(0xB000)
    data_type, rank, address, dims, strides, box, element_strides, *rest = calls[0]
    assert (data_type, rank, address.value) == (9, 3, 0xB000)
    assert (tuple(dims), tuple(strides), tuple(box), tuple(element_strides), *rest) == \
        OUT_ARGUMENTS[2:]
    slot = make_map_plan().native.maps[1]
    assert (slot.offset, slot.index, slot.data_type, slot.rank, tuple(slot.dims[:3]),
            tuple(slot.strides[:2]), tuple(slot.box[:3]), tuple(slot.element_strides[:3]),
            slot.interleave, slot.swizzle, slot.l2_promotion, slot.oob_fill) == \
        (256, 1) + OUT_ARGUMENTS


def test_execute_encodes_the_maps_into_the_launched_parameters(tmp_path):
    fakes, plan = map_fakes(tmp_path)
    assert fakes.handle(call_frame(fakes, ffi._STAGE_EXECUTE)) is None
    assert not fakes.fallbacks
    assert fakes.encodes == [(0, 0xA000, X_ARGUMENTS), (0, 0xB000, OUT_ARGUMENTS)]
    (launch,) = fakes.launches
    assert launch[:5] == (0xF00, (3, 2, 1), (128, 1, 1), 0, 0x5700)
    assert launch[5] == [struct.pack("<Q", 0xA000), struct.pack("<I", 100), struct.pack("<I", 72),
                         fake_map(0xA000), struct.pack("<Q", 0xB000), struct.pack("<I", 100),
                         struct.pack("<I", 72), fake_map(0xB000), struct.pack("<i", 7)]
    assert fakes.launch_addresses[3] % 64 == 0 and fakes.launch_addresses[7] % 64 == 0
    assert bytes(plan.params[64:192]) == bytes(128)        # the template is untouched


def test_record_update_encodes_the_maps_of_the_new_pointers(tmp_path):
    fakes, _ = map_fakes(tmp_path, record_action=1)
    for operand, result in ((0xA000, 0xB000), (0xA400, 0xB800)):
        assert fakes.handle(call_frame(fakes, ffi._STAGE_RECORD, operand=operand,
                                       result=result)) is None
    assert not fakes.fallbacks and not fakes.launches
    assert [address for _, address, _ in fakes.encodes] == [0xA000, 0xB000, 0xA400, 0xB800]
    assert all(aligned == 0 for aligned, _, _ in fakes.encodes)
    values = [value for value, kind in fakes.updates[1][2]]
    assert values[0] == struct.pack("<Q", 0xA400) and values[4][:8] == struct.pack("<Q", 0xB800)
    assert values[3][:128] == fake_map(0xA400) and values[7][:128] == fake_map(0xB800)


@pytest.mark.parametrize("stage", [ffi._STAGE_EXECUTE, ffi._STAGE_RECORD])
def test_a_map_the_driver_refuses_goes_to_python(tmp_path, stage):
    fakes, _ = map_fakes(tmp_path, encode_result=1)     # CUDA_ERROR_INVALID_VALUE
    assert fakes.handle(call_frame(fakes, stage)) == 0xE0
    assert len(fakes.fallbacks) == 1 and len(fakes.encodes) == 1
    assert not fakes.launches and not fakes.updates


@pytest.mark.parametrize("stage", [ffi._STAGE_EXECUTE, ffi._STAGE_RECORD])
def test_without_the_driver_s_encoder_plans_with_maps_go_to_python(tmp_path, stage):
    fakes, _ = map_fakes(tmp_path, with_encode=False)
    assert fakes.handle(call_frame(fakes, stage)) == 0xE0
    assert len(fakes.fallbacks) == 1 and not fakes.launches and not fakes.updates
    fakes.param_sizes = [8, 8, 4]
    plain = make_plan(key=KEY + 1)                        # plans without maps still run in C
    fakes.lib.ptxpy_native_add_plan(ctypes.byref(plain.native))
    fakes.lib.ptxpy_native_set_function(ctypes.byref(plain.native), 0xC7C7, 0xF01)
    assert fakes.handle(call_frame(fakes, stage, key=KEY + 1)) is None
    assert len(fakes.fallbacks) == 1


def test_a_map_c_cannot_hold_keeps_the_plan_in_python():
    deep = TensorMapLayout("f32", 4, (2,) * 6 + (8,), (1,) * 6 + (8,), 0)
    plan = ffi.LaunchPlan("k", None, (1, 1, 1), (32, 1, 1), 0, bytes(192), [0, 64], [(0, 0)],
                          tensor_slots=[TensorSlot(64, 0, deep)])
    plan.make_native()
    assert plan.native is None
