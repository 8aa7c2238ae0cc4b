"""The C fast path of the FFI handler (runtime/native_handler.c), driven on the CPU with call
frames built as XLA lays them out, a fake XLA API table and fake CUDA driver functions.

Each test loads its own copy of the library (a separate file, so separate globals): the one a
GPU process registered with XLA is never re-pointed at the fakes."""
import ctypes
import shutil
import struct

import pytest

from ptxpy.runtime import ffi, native

pytestmark = pytest.mark.skipif(native.compiler() is None, reason="no C compiler")

KEY = 0x1234_5678_9ABC


class Fakes:
    """XLA's API table (Stream_Get, InvokeContext_FindExtension), the record API, the driver's
    cuStreamGetCtx / cuLaunchKernel and the Python fallback, each recording its calls."""

    def __init__(self, tmp_path, record_action=1):
        path = native.build(tmp_path)
        self.lib = ctypes.CDLL(str(shutil.copy(path, tmp_path / "copy.so")))
        self.lib.ptxpy_native_add_plan.argtypes = [ctypes.POINTER(native.NativePlan)]
        self.lib.ptxpy_native_set_function.argtypes = [ctypes.POINTER(native.NativePlan),
                                                       ctypes.c_void_p, ctypes.c_void_p]
        self.lib.ptxpy_native_handler.argtypes = [ctypes.c_void_p]
        self.lib.ptxpy_native_handler.restype = ctypes.c_void_p
        self.launches, self.updates, self.fallbacks = [], [], []
        self.keep = []
        self.fallback = native._Handler(lambda frame: self.fallbacks.append(frame) or 0xE0)
        launch_type = ctypes.CFUNCTYPE(ctypes.c_int, *[ctypes.c_void_p] + [ctypes.c_uint] * 7
                                       + [ctypes.c_void_p] * 3)
        self.launch = launch_type(self._launch)
        self.get_ctx = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p,
                                        ctypes.POINTER(ctypes.c_void_p))(self._get_ctx)
        self.lib.ptxpy_native_init(ctypes.cast(self.fallback, ctypes.c_void_p),
                                   ctypes.cast(self.launch, ctypes.c_void_p),
                                   ctypes.cast(self.get_ctx, ctypes.c_void_p))
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
        self.launches.append((fn, (gx, gy, gz), (bx, by, bz), shared, stream,
                              [ctypes.string_at(words[i], 8) for i in range(2)]
                              + [ctypes.string_at(words[2], 4)]))
        return 0

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


def call_frame(fakes, stage, key=KEY, name=b"plan", dtype=ffi._DTYPE_S64):
    operands, keep1 = buffers(0xA000)
    results, keep2 = buffers(0xB000)
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
    assert len(fakes.fallbacks) == 1
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
