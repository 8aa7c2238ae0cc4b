"""ptxpy/_dataclass_code.py: the methods `dataclasses` generates for libcst's and the compiler's
classes, compiled once and kept on disk for the next process."""
from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys

import pytest

from ptxpy import _dataclass_code as code_cache

SAXPY = os.path.join(os.path.dirname(__file__), "..", "examples", "saxpy.py")

#: a new process: transpiles saxpy, then says what the cache did
PROBE = """
import dataclasses, json, sys
import ptxpy
from ptxpy import _dataclass_code as d
ptx = ptxpy.transpile(open(sys.argv[1]).read(), "saxpy.py")["saxpy"]
print(json.dumps({"hooked": dataclasses.__dict__.get("exec") is d._exec, "used": len(d._used),
                  "compiled": d._new, "ptx": ptx}))
"""


def _process(cache_dir, **env) -> dict:
    settings = {k: v for k, v in os.environ.items() if k != "PTXPY_CACHE"}
    settings.update(PTXPY_CACHE_DIR=str(cache_dir), PTXPY_PRELOAD="0", **env)
    done = subprocess.run([sys.executable, "-c", PROBE, SAXPY], capture_output=True, text=True,
                          env=settings, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def _file(cache_dir) -> str:
    return os.path.join(str(cache_dir), "dataclass-code", os.path.basename(code_cache.path()))


def test_a_second_process_takes_the_compiled_methods_from_the_file(tmp_path):
    first = _process(tmp_path)
    assert first["hooked"] and first["compiled"] and first["used"] > 300
    assert os.path.isfile(_file(tmp_path))
    second = _process(tmp_path)
    assert second["hooked"] and not second["compiled"]    # every text found in the file
    assert second["used"] == first["used"]
    off = _process(tmp_path / "off", PTXPY_CACHE="0")
    assert not off["hooked"] and not (tmp_path / "off").exists()
    assert first["ptx"] == second["ptx"] == off["ptx"]


def test_the_kept_code_is_what_exec_compiles(tmp_path):
    _process(tmp_path)
    codes = code_cache._load(_file(tmp_path))
    assert len(codes) > 300
    for text, code in codes.items():
        assert code == compile(text, "<string>", "exec", dont_inherit=True), text


@pytest.mark.parametrize("damage", ["truncated", "flipped", "garbage", "empty"])
def test_a_damaged_file_is_ignored_and_replaced(tmp_path, damage):
    _process(tmp_path)
    path = _file(tmp_path)
    data = open(path, "rb").read()
    damaged = {"truncated": data[:len(data) // 2],
               "flipped": data[:-100] + bytes([data[-100] ^ 0x40]) + data[-99:],
               "garbage": b"not a cache file\n" * 10, "empty": b""}[damage]
    with open(path, "wb") as f:
        f.write(damaged)
    assert code_cache._load(path) == {}
    again = _process(tmp_path)
    assert again["compiled"]     # nothing taken from the damaged file, and written again
    assert len(code_cache._load(path)) == again["used"]
    assert not _process(tmp_path)["compiled"]


def test_only_libcst_and_the_compilers_texts_are_kept(monkeypatch):
    monkeypatch.setattr(code_cache, "_codes", {})
    monkeypatch.setattr(code_cache, "_used", {})
    monkeypatch.setattr(code_cache, "_new", False)
    text = "def __create_fn__():\n def f(x):\n  return x + 1\n return f"
    for module, kept in (("user_module", False), ("ptxpy.transpiler.ir", True)):
        namespace: dict = {}
        code_cache._exec(text, {"__name__": module}, namespace)
        assert namespace["__create_fn__"]()(41) == 42
        assert (text in code_cache._used) is kept and code_cache._new is kept


def test_a_user_dataclass_behaves_as_without_the_cache():
    assert dataclasses.__dict__.get("exec") in (code_cache._exec, None)

    @dataclasses.dataclass(frozen=True, order=True)
    class Point:
        x: int
        y: int = 2

    assert Point(1) == Point(1, 2) and Point(1) < Point(2) and repr(Point(3)) == \
        "test_a_user_dataclass_behaves_as_without_the_cache.<locals>.Point(x=3, y=2)"
    with pytest.raises(dataclasses.FrozenInstanceError):
        Point(1).x = 5
    # the fields' annotations, as `dataclasses` compiles `__init__` (under the cache module's
    # `from __future__ import annotations` they were the names of its locals, '_type_x')
    fields = Point.__dataclass_fields__
    assert Point.__init__.__annotations__ == {"x": fields["x"].type, "y": fields["y"].type,
                                              "return": None}


def test_libcsts_methods_from_the_cache_are_as_compiled_by_dataclasses():
    import libcst

    assert libcst.Name.__init__.__annotations__["value"] is str
    assert libcst.Name("a").deep_equals(libcst.Name("a"))
    assert libcst.Name("a").with_changes(value="b").value == "b"


def test_an_unwritable_cache_folder_only_skips_the_write(tmp_path, monkeypatch):
    blocked = tmp_path / "file"
    blocked.write_text("a file where the folder should be")
    monkeypatch.setenv("PTXPY_CACHE_DIR", str(blocked))
    monkeypatch.setattr(code_cache, "_codes", {})
    monkeypatch.setattr(code_cache, "_used", {"def f(): pass": compile("def f(): pass", "<s>", "exec")})
    monkeypatch.setattr(code_cache, "_new", True)
    assert code_cache.save() is False
    assert blocked.read_text() == "a file where the folder should be"
