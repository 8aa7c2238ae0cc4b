"""`ptxpy transpile` as SPEC 3 fixes it: files written, stages printed, exit statuses, errors."""
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import ptxpy
from ptxpy.cli import main
from ptxpy.transpiler import ptxas

KERNELS = '''
import ptxpy
from ptxpy import Array, Const, f32

raise RuntimeError("the CLI must never run this file")

@ptxpy.jit(out_shape=lambda x: x, grid=lambda x: 1, block=256)
def scale(x: Array[f32], out: Array[f32], K: Const[int] = 3):
    i = ptxpy.global_id(0)
    if i < len(x):
        out[i] = x[i] * K

@ptxpy.jit
def copy(x: Array[f32], out: Array[f32]):
    i = ptxpy.global_id(0)
    if i < len(x):
        out[i] = x[i]
'''

BROKEN = '''
import ptxpy
from ptxpy import Array, f32

@ptxpy.jit
def bad(x: Array[f32], out: Array[f32]):
    i = ptxpy.global_id(0)
    out[i] = undefined_name + 1.0
'''


@pytest.fixture
def kernels_file(tmp_path):
    path = tmp_path / "kernels.py"
    path.write_text(KERNELS)
    return path


def test_writes_one_ptx_per_kernel_beside_the_file_without_running_it(kernels_file, capsys):
    assert main(["transpile", str(kernels_file)]) == 0
    for name in ("scale", "copy"):
        text = (kernels_file.parent / f"{name}.ptx").read_text()
        assert f".visible .entry {name}(" in text
        assert ".address_size 64" in text and ".target sm_90" in text


def test_output_dir_kernel_selection_arch_and_defines(kernels_file, tmp_path):
    out = tmp_path / "out"
    assert main(["transpile", str(kernels_file), "-o", str(out), "--kernel", "scale",
                 "--arch", "sm_80", "-D", "K=5"]) == 0
    assert sorted(os.listdir(out)) == ["scale.ptx"]
    text = (out / "scale.ptx").read_text()
    assert ".target sm_80" in text and ".version 7.0" in text
    default = ptxpy_transpile(kernels_file, {})["scale"]
    assert default != text.replace("sm_80", "sm_90")  # K=5 differs from the default K=3


def ptxpy_transpile(path, defines):
    import ptxpy

    return ptxpy.transpile(path.read_text(), str(path), defines=defines)


@pytest.mark.parametrize("stage,marker", [("ssa", "func scale("), ("typed", "kernel scale(")])
def test_emit_prints_a_stage_instead_of_writing(kernels_file, capsys, stage, marker):
    assert main(["transpile", str(kernels_file), "--emit", stage, "--kernel", "scale"]) == 0
    assert marker in capsys.readouterr().out
    assert not (kernels_file.parent / "scale.ptx").exists()


@pytest.mark.skipif(ptxas.find_ptxas() is None, reason="ptxas not installed")
def test_check_reports_registers(kernels_file, capsys, tmp_path):
    assert main(["transpile", str(kernels_file), "-o", str(tmp_path), "--check"]) == 0
    out = capsys.readouterr().out
    assert "scale: ptxas sm_90:" in out and "registers" in out


def test_check_says_when_ptxas_crashed(kernels_file, capsys, tmp_path, monkeypatch):
    """A ptxas killed by a signal prints nothing; `--check` says what happened."""
    fake = tmp_path / "ptxas"
    fake.write_text("#!/bin/sh\nkill -SEGV $$\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PTXAS", str(fake))
    assert main(["transpile", str(kernels_file), "-o", str(tmp_path), "--check"]) == 1
    err = capsys.readouterr().err
    assert "scale: ptxas rejected the PTX:" in err and "ptxas crashed (SIGSEGV)" in err


@pytest.mark.parametrize("script, error", [
    ("not a program\n", "cannot run ptxas '{ptxas}': Exec format error"),
    ("#!/bin/sh\nexit 0\n", "ptxas '{ptxas}' exited with status 0 but wrote no output"),
    ("#!/bin/sh\nexit 1\n", "ptxas '{ptxas}' exited with status 1 and printed nothing"),
])
def test_check_with_a_broken_ptxas_is_one_line_of_bad_usage(kernels_file, capsys, tmp_path,
                                                           monkeypatch, script, error):
    fake = tmp_path / "ptxas"
    fake.write_text(script)
    fake.chmod(0o755)
    monkeypatch.setenv("PTXAS", str(fake))
    assert main(["transpile", str(kernels_file), "-o", str(tmp_path), "--check"]) == 2
    assert capsys.readouterr().err == f"ptxpy: error: {error.format(ptxas=fake)}\n"
    with pytest.raises(OSError):        # what runtime/compiler.py got from such a ptxas before
        ptxas.run_ptxas(str(fake), "", [])


def test_error_in_input_exits_1_with_located_message(tmp_path, capsys):
    path = tmp_path / "broken.py"
    path.write_text(BROKEN)
    assert main(["transpile", str(path)]) == 1
    err = capsys.readouterr().err.splitlines()
    assert err[0].startswith(f"{path}:8:14: error: ")
    assert "undefined_name" in err[0]
    assert err[1] == "    out[i] = undefined_name + 1.0"
    assert err[2] == " " * 13 + "^"


@pytest.mark.parametrize("argv", [["transpile"], ["transpile", "missing.py"], ["frobnicate"],
                                  ["transpile", "x.py", "--emit", "llvm"], [],
                                  ["transpile", "x.py", "-D", "noequals"], ["-V"], ["--bogus"],
                                  ["--version", "extra"], ["--version", "transpile", "x.py"]])
def test_bad_usage_exits_2(argv, capsys):
    try:
        status = main(argv)
    except SystemExit as exit:
        status = exit.code
    assert status == 2


@pytest.mark.parametrize("argv, usage, error", [
    (["-V"], "usage: ptxpy [-h]", "unrecognized arguments: -V"),
    (["--bogus"], "usage: ptxpy [-h]", "unrecognized arguments: --bogus"),
    ([], "usage: ptxpy [-h]", "a command is required (ptxpy transpile FILE.py)"),
    (["--version", "transpile", "x.py"], "usage: ptxpy [-h]", "--version takes no other arguments"),
    (["--version", "extra"], "usage: ptxpy [-h]", "argument COMMAND: invalid choice: 'extra'"),
    (["transpile"], "usage: ptxpy transpile", "the following arguments are required: FILE.py"),
    (["transpile", "x.py", "--emit", "llvm"], "usage: ptxpy transpile",
     "argument --emit: invalid choice: 'llvm'"),
    (["transpile", "x.py", "--bogus"], "usage: ptxpy transpile", "unrecognized arguments: --bogus"),
])
def test_malformed_command_line_prints_usage_then_ptxpy_error(argv, usage, error, capsys):
    with pytest.raises(SystemExit) as exit:
        main(argv)
    assert exit.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith(usage)
    assert err.splitlines()[-1].startswith(f"ptxpy: error: {error}")


def test_unsupported_arch_is_bad_usage(kernels_file, capsys):
    assert main(["transpile", str(kernels_file), "--arch", "sm_10"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("ptxpy: error: unsupported target 'sm_10' (choose from sm_80")


def test_undecodable_byte_is_a_located_input_error(tmp_path, capsys):
    path = tmp_path / "latin.py"
    path.write_bytes(b"import ptxpy\nx = 1  # caf\xe9 au lait\n")
    assert main(["transpile", str(path)]) == 1
    err = capsys.readouterr().err.splitlines()
    assert err[0] == (f"{path}:2:13: error: byte 0xe9 cannot be decoded as utf-8 "
                      "(save the file as UTF-8 or declare its encoding)")
    assert err[1] == "x = 1  # caf\ufffd au lait"
    assert err[2] == " " * 12 + "^"


def test_declared_source_encoding_is_honoured(tmp_path):
    path = tmp_path / "declared.py"
    path.write_bytes(KERNELS.replace("import ptxpy", "# -*- coding: latin-1 -*-\nimport ptxpy # \xe9", 1)
                     .encode("latin-1"))
    assert main(["transpile", str(path), "-o", str(tmp_path / "out")]) == 0
    assert ".visible .entry scale(" in (tmp_path / "out" / "scale.ptx").read_text()


@pytest.mark.parametrize("head, line, column, shown", [
    (b"# -*- coding: nonsense -*-\n", 1, 15, "# -*- coding: nonsense -*-"),
    (b"#!/usr/bin/env python\n# vim: set fileencoding=bogus :\n", 2, 25,
     "# vim: set fileencoding=bogus :"),
    (b"\xef\xbb\xbf# coding: latin-1\n", 1, 11, "# coding: latin-1"),     # a BOM says UTF-8
])
def test_a_bad_coding_declaration_is_located_at_the_name_it_declares(tmp_path, capsys, head, line,
                                                                      column, shown):
    path = tmp_path / "coded.py"
    path.write_bytes(head + KERNELS.encode())
    assert main(["transpile", str(path)]) == 1
    first, source, caret = capsys.readouterr().err.splitlines()[:3]
    assert first.startswith(f"{path}:{line}:{column}: error: ")
    assert source == shown and caret == " " * (column - 1) + "^"


def test_unwritable_output_is_bad_usage_and_leaves_nothing(kernels_file, tmp_path, capsys):
    blocker = tmp_path / "blocker"
    blocker.write_text("a file where the output directory should be")
    assert main(["transpile", str(kernels_file), "-o", str(blocker / "sub")]) == 2
    assert capsys.readouterr().err.startswith(f"ptxpy: error: cannot write '{blocker / 'sub'}")
    (tmp_path / "out" / "copy.ptx").mkdir(parents=True)     # a directory in the file's place
    assert main(["transpile", str(kernels_file), "-o", str(tmp_path / "out"), "--kernel", "copy"]) == 2
    assert "Is a directory" in capsys.readouterr().err
    assert os.listdir(tmp_path / "out") == ["copy.ptx"]


def test_define_that_sets_no_const_warns(kernels_file, tmp_path, capsys):
    assert main(["transpile", str(kernels_file), "-o", str(tmp_path), "-D", "KK=5", "-D", "K=4"]) == 0
    err = capsys.readouterr().err
    assert "ptxpy: warning: -D KK: no kernel compiled has a Const parameter 'KK'" in err
    assert "-D K:" not in err


def test_an_integer_beyond_the_floats_for_a_const_float_is_an_infinity(tmp_path, capsys):
    """As for a float scalar: `-D S=10**400`, a define or a default of that size gives inf
    (before: a traceback from the CLI, an internal error from the API)."""
    path = tmp_path / "k.py"
    path.write_text("import ptxpy\nfrom ptxpy import Array, Const, f32\n\n@ptxpy.jit\n"
                    "def k(out: Array[f32], S: Const[float] = 1.5):\n    out[0] = S\n")
    assert main(["transpile", str(path), "-o", str(tmp_path), "-D", "S=1" + "0" * 400]) == 0
    assert "0f7F800000" in (tmp_path / "k.ptx").read_text()
    ptx = ptxpy.transpile(path.read_text(), defines={"S": -10**400})["k"]
    assert "0fFF800000" in ptx


def test_kernels_named_by_kernel_are_compiled_in_the_file_s_order(tmp_path, capsys):
    """docs/cli.md: the file's order, each .ptx written as it is done, the first error ends
    the command: `--kernel bad good` still writes good.ptx, which comes first in the file."""
    path = tmp_path / "k.py"
    path.write_text("import ptxpy\nfrom ptxpy import Array, Const, f32\n\n@ptxpy.jit\n"
                    "def good(out: Array[f32], S: Const[float] = 1.5):\n    out[0] = S\n\n"
                    "@ptxpy.jit\ndef bad(out: Array[f32]):\n    out[0] = undefined\n")
    assert main(["transpile", str(path), "-o", str(tmp_path / "o"), "--kernel", "bad", "good",
                 "-D", "S=-inf"]) == 1
    assert os.listdir(tmp_path / "o") == ["good.ptx"]
    assert "0fFF800000" in (tmp_path / "o" / "good.ptx").read_text()       # -D S=-inf
    assert "error: name 'undefined' is not defined" in capsys.readouterr().err


def test_unknown_kernel_is_an_input_error_naming_the_file(kernels_file, capsys):
    assert main(["transpile", str(kernels_file), "--kernel", "nope"]) == 1
    assert capsys.readouterr().err == f"{kernels_file}: error: no @ptxpy.jit kernel named 'nope'\n"


@pytest.mark.parametrize("argv, written", [
    (["--kernel", "scale", "FILE"], ["scale.ptx"]),
    (["--kernel=scale", "FILE"], ["scale.ptx"]),
    (["FILE", "--kernel", "scale"], ["scale.ptx"]),
    (["--kernel", "copy", "--kernel", "scale", "FILE"], ["copy.ptx", "scale.ptx"]),
    (["FILE", "--kernel", "copy", "--kernel", "scale"], ["copy.ptx", "scale.ptx"]),
])
def test_kernel_option_before_or_after_the_file(kernels_file, tmp_path, argv, written):
    argv = [str(kernels_file) if a == "FILE" else a for a in argv]
    assert main(["transpile", "-o", str(tmp_path / "out"), *argv]) == 0
    assert sorted(os.listdir(tmp_path / "out")) == written


@pytest.mark.parametrize("argv", [["--kernel", "copy", "scale", "FILE"],
                                  ["FILE", "--kernel", "copy", "scale"],
                                  ["--kernel", "copy", "--kernel", "scale", "copy", "FILE"]])
def test_several_names_after_one_kernel_option(kernels_file, tmp_path, argv):
    """SPEC 3's `[--kernel NAME ...]`: one option may list several names, and a FILE.py after
    them is the file, not a name."""
    argv = [str(kernels_file) if a == "FILE" else a for a in argv]
    assert main(["transpile", "-o", str(tmp_path / "out"), *argv]) == 0
    assert sorted(os.listdir(tmp_path / "out")) == ["copy.ptx", "scale.ptx"]


def test_a_missing_file_after_kernel_names_is_bad_usage(capsys):
    with pytest.raises(SystemExit) as exit:
        main(["transpile", "--kernel", "copy", "scale"])
    assert exit.value.code == 2
    assert "the following arguments are required: FILE.py" in capsys.readouterr().err


def test_a_signature_error_stops_only_its_own_kernel(tmp_path, capsys):
    path = tmp_path / "kernels.py"
    path.write_text(KERNELS + "\n@ptxpy.jit\ndef bad(x: Array[f32] = 1):\n    pass\n")
    assert main(["transpile", str(path), "-o", str(tmp_path / "out"), "--kernel", "copy"]) == 0
    assert main(["transpile", str(path), "-o", str(tmp_path / "out")]) == 1
    line = len(KERNELS.splitlines()) + 3
    err = capsys.readouterr().err.splitlines()
    assert err[0] == (f"{path}:{line}:25: error: parameter 'x' has a default value, which only "
                      "Const parameters may have")
    assert err[1:] == ["def bad(x: Array[f32] = 1):", " " * 24 + "^"]


def test_version_and_console_script(kernels_file):
    import ptxpy

    done = subprocess.run([sys.executable, "-m", "ptxpy", "--version"], capture_output=True, text=True)
    assert done.returncode == 0 and done.stdout.strip() == f"ptxpy {ptxpy.__version__}"


_FREEZE_PROBE = """
import gc, sys
from ptxpy.cli import main
sys.argv = ["ptxpy", "transpile", sys.argv[1], "-o", sys.argv[2]] + sys.argv[3:]
print(main(), gc.get_freeze_count() > 0)
"""


@pytest.mark.parametrize("extra, frozen", [([], True), (["--kernel", "copy"], False)])
def test_the_command_exempts_the_loaded_compiler_from_the_collector(kernels_file, tmp_path,
                                                                    extra, frozen):
    """As the `ptxpy` command with several kernels, the process freezes what is alive after the
    first compile (Python's collector then leaves the compiler's objects alone); with one kernel
    it does not, nor does `main([...])` called from Python (the in-process tests here)."""
    proc = subprocess.run([sys.executable, "-c", _FREEZE_PROBE, str(kernels_file), str(tmp_path),
                           *extra], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split()[-2:] == ["0", str(frozen)]
    written = ["copy.ptx"] if extra else ["copy.ptx", "scale.ptx"]
    assert sorted(os.listdir(tmp_path)) == sorted(written + ["kernels.py"])


def test_main_called_from_python_never_freezes(kernels_file, tmp_path):
    import gc
    before = gc.get_freeze_count()
    assert main(["transpile", str(kernels_file), "-o", str(tmp_path)]) == 0
    assert gc.get_freeze_count() == before


DOCS = Path(__file__).resolve().parent.parent / "docs"


def test_the_error_examples_of_the_docs_are_what_ptxpy_prints(tmp_path, monkeypatch, capsys):
    cli_md = (DOCS / "cli.md").read_text()
    example = re.search(r"For this `acc.py`\n\n```python\n(.*?)```\n\n`ptxpy transpile acc.py` "
                        r"prints\n\n```\n(.*?)```", cli_md, re.S)
    (tmp_path / "acc.py").write_text(example.group(1))
    monkeypatch.chdir(tmp_path)
    assert main(["transpile", "acc.py"]) == 1
    assert capsys.readouterr().err == example.group(2)
    usage = re.search(r"the command at fault,\n`ptxpy` or `ptxpy transpile`:\n\n```\n(.*?)```",
                      cli_md, re.S)
    with pytest.raises(SystemExit):
        main(["-V"])
    assert capsys.readouterr().err == usage.group(1)


def test_version_table_of_the_docs_has_every_target(kernels_file):
    import ptxpy
    from ptxpy.transpiler.driver import SUPPORTED_ARCHS

    rows = re.search(r"^\| target \|(.*)\|\n.*\n\| `\.version` \|(.*)\|$",
                     (DOCS / "ptx-dialect.md").read_text(), re.M)
    table = dict(zip(rows.group(1).split("|"), rows.group(2).split("|")))
    table = {arch.strip(): version.strip() for arch, version in table.items()}
    assert sorted(table) == sorted(SUPPORTED_ARCHS)
    for arch, version in table.items():
        ptx = ptxpy.transpile(KERNELS, str(kernels_file), arch=arch)["copy"]
        assert f"\n.version {version}\n" in ptx, arch


DIRECTORIES = ["plain", 'qu"ote', "back\\slash", "caf\xe9"]


@pytest.mark.parametrize("directory", DIRECTORIES)
def test_file_line_has_the_absolute_path_and_messages_the_typed_one(tmp_path, monkeypatch,
                                                                    capsys, directory):
    (tmp_path / directory).mkdir()
    bad = "\n@ptxpy.jit\ndef bad(x: Array[f32]):\n    x[0] = undefined_name\n"
    (tmp_path / directory / "kernels.py").write_text(KERNELS + bad)
    monkeypatch.chdir(tmp_path)
    typed = f"{directory}/kernels.py"
    assert main(["transpile", typed, "-o", "out", "--kernel", "copy"]) == 0
    absolute = str(tmp_path / typed).replace('"', "'").encode("ascii", "backslashreplace").decode()
    assert f'\n.file 1 "{absolute}"\n' in (tmp_path / "out" / "copy.ptx").read_text()
    assert main(["transpile", typed, "-o", "out", "--kernel", "bad"]) == 1
    assert capsys.readouterr().err.startswith(f"{typed}:")


@pytest.mark.skipif(ptxas.find_ptxas() is None, reason="ptxas not installed")
@pytest.mark.parametrize("directory", DIRECTORIES)
def test_file_line_assembles_whatever_the_directory_name(tmp_path, capsys, directory):
    (tmp_path / directory).mkdir()
    (tmp_path / directory / "kernels.py").write_text(KERNELS)
    assert main(["transpile", str(tmp_path / directory / "kernels.py"), "--check"]) == 0
    assert "copy: ptxas sm_90:" in capsys.readouterr().out


def run_command(*args, **options) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "ptxpy", *args], capture_output=True, text=True,
                          timeout=120, **options)


def test_the_command_never_shows_a_traceback_for_bad_usage():
    done = run_command("-V")
    assert done.returncode == 2
    assert done.stderr.endswith("ptxpy: error: unrecognized arguments: -V\n")


def test_the_command_stops_quietly_when_its_reader_has_gone(kernels_file, tmp_path):
    with open(tmp_path / "stderr", "w") as err:
        proc = subprocess.Popen([sys.executable, "-m", "ptxpy", "transpile", str(kernels_file),
                                 "--emit", "ssa"], stdout=subprocess.PIPE, stderr=err)
        proc.stdout.close()             # long before the compiler has printed anything
        assert proc.wait(timeout=120) == 141
    assert (tmp_path / "stderr").read_text() == ""


_INTERRUPT_PROBE = """
import sys
from ptxpy import cli
from ptxpy.transpiler import driver

def interrupted(*args, **kwargs):
    raise KeyboardInterrupt
driver.compile_kernel = interrupted
sys.argv = ["ptxpy", "transpile", sys.argv[1]]
sys.exit(cli.main())
"""


def test_the_command_stops_quietly_on_ctrl_c(kernels_file):
    proc = subprocess.run([sys.executable, "-c", _INTERRUPT_PROBE, str(kernels_file)],
                          capture_output=True, text=True, timeout=120)
    assert (proc.returncode, proc.stderr) == (130, "")


def test_ctrl_c_while_writing_leaves_no_temporary_file(kernels_file, tmp_path, monkeypatch):
    def interrupted(src, dst):
        raise KeyboardInterrupt
    monkeypatch.setattr(os, "replace", interrupted)
    with pytest.raises(KeyboardInterrupt):
        main(["transpile", str(kernels_file), "-o", str(tmp_path / "out")])
    assert os.listdir(tmp_path / "out") == []


def test_the_command_escapes_a_path_its_output_encoding_cannot_show(kernels_file, tmp_path):
    done = run_command("transpile", str(kernels_file), "-o", str(tmp_path / "ob_\xe4"),
                       env={**os.environ, "PYTHONIOENCODING": "ascii"})
    assert done.returncode == 0, done.stderr
    assert f"{tmp_path}/ob_\\xe4/scale.ptx" in done.stdout


def test_a_ptxas_named_by_PTXAS_that_does_not_exist_is_bad_usage(kernels_file, capsys, tmp_path,
                                                                monkeypatch):
    """It used to be passed over for the ptxas on the PATH."""
    missing = tmp_path / "no-such-ptxas"
    monkeypatch.setenv("PTXAS", str(missing))
    assert main(["transpile", str(kernels_file), "-o", str(tmp_path), "--check"]) == 2
    assert capsys.readouterr().err == (f"ptxpy: error: cannot run ptxas '{missing}': No such file "
                                       "or directory\n")


def test_an_output_directory_that_is_a_file_is_bad_usage(kernels_file, tmp_path, capsys):
    afile = tmp_path / "afile"
    afile.write_text("not a directory")
    assert main(["transpile", str(kernels_file), "-o", str(afile)]) == 2
    assert capsys.readouterr().err == (f"ptxpy: error: -o '{afile}' is not a directory (-o names "
                                       "the directory to write NAME.ptx into)\n")


def test_a_define_of_the_wrong_kind_names_the_option(tmp_path, capsys):
    path = tmp_path / "flags.py"
    path.write_text("import ptxpy\nfrom ptxpy import Array, Const, f32\n\n@ptxpy.jit\n"
                    "def k(x: Array[f32], B: Const[bool] = False):\n    x[0] = 1.0\n")
    assert main(["transpile", str(path), "-o", str(tmp_path), "-D", "B=1"]) == 1
    assert capsys.readouterr().err.splitlines() == [
        f"{path}:5:22: error: -D B=1: Const parameter 'B' is Const[bool] but was given 1; use "
        "-D B=True or -D B=False",
        "def k(x: Array[f32], B: Const[bool] = False):", " " * 21 + "^"]


def test_version_after_the_command_prints_the_version(capsys):
    import ptxpy

    assert main(["transpile", "--version"]) == 0
    assert capsys.readouterr().out == f"ptxpy {ptxpy.__version__}\n"
    # with anything else it is a malformed command line, as `ptxpy --version transpile k.py`
    for argv in (["transpile", "k.py", "--version"], ["transpile", "--version", "-o", "d"]):
        with pytest.raises(SystemExit) as exit:
            main(argv)
        assert exit.value.code == 2
        assert capsys.readouterr().err.endswith("ptxpy: error: --version takes no other arguments\n")


def test_abbreviated_options_are_unknown(capsys):
    with pytest.raises(SystemExit) as exit:
        main(["transpile", "k.py", "--debu"])
    assert exit.value.code == 2
    assert "unrecognized arguments: --debu" in capsys.readouterr().err


def test_check_names_the_target_assembled_and_reports_spills(tmp_path, capsys):
    examples = os.path.join(os.path.dirname(__file__), "..", "examples")
    assert main(["transpile", os.path.join(examples, "matmul.py"), "-o", str(tmp_path),
                 "--max-registers", "32", "--check"]) == 0
    line = capsys.readouterr().out.splitlines()[-1]
    assert re.fullmatch(r"matmul: ptxas sm_90: 32 registers, \d+ bytes spill stores, \d+ bytes "
                        r"spill loads", line), line


def test_a_kernel_named_twice_is_compiled_once(kernels_file, tmp_path, capsys):
    assert main(["transpile", str(kernels_file), "-o", str(tmp_path), "--kernel", "copy",
                 "--kernel", "copy"]) == 0
    assert len(capsys.readouterr().out.splitlines()) == 1


def test_options_that_emit_ignores_are_named_in_a_warning(kernels_file, tmp_path, capsys):
    assert main(["transpile", str(kernels_file), "--emit", "ssa", "--check", "-o", str(tmp_path),
                 "--kernel", "copy"]) == 0
    assert capsys.readouterr().err == ("ptxpy: warning: -o and --check ignored with --emit ssa "
                                       "(it prints instead of writing PTX)\n")
    assert os.listdir(tmp_path) == ["kernels.py"]


def test_a_file_without_kernels_is_a_warning(tmp_path, capsys):
    path = tmp_path / "host.py"
    path.write_text("import ptxpy\n")
    assert main(["transpile", str(path)]) == 0
    assert capsys.readouterr().err == f"{path}: warning: no @ptxpy.jit kernels found\n"


def test_a_kernel_in_a_class_is_an_input_error(tmp_path, capsys):
    """It used to be passed over: 'no @ptxpy.jit kernels found', status 0."""
    path = tmp_path / "classy.py"
    path.write_text("import ptxpy\nfrom ptxpy import Array, f32\n\nclass Kernels:\n"
                    "    @ptxpy.jit\n    def k(x: Array[f32]):\n        x[0] = 1.0\n")
    assert main(["transpile", str(path), "-o", str(tmp_path)]) == 1
    assert capsys.readouterr().err.splitlines() == [
        f"{path}:5:5: error: @ptxpy.jit function 'k' must be defined at the top level of the "
        "module, not inside class 'Kernels'", "    @ptxpy.jit", "    ^"]


def test_transpile_from_python_warns_of_a_define_that_sets_nothing(kernels_file):
    import ptxpy

    with pytest.warns(UserWarning, match=r"defines\['KK'\]: no kernel compiled has a Const "
                                         r"parameter 'KK'"):
        ptxpy.transpile(kernels_file.read_text(), str(kernels_file), defines={"KK": 1, "K": 2})


@pytest.mark.skipif(sys.platform == "win32" or sys.getfilesystemencoding().lower() not in ("utf-8", "utf8"),
                    reason="file names are bytes only on POSIX systems")
@pytest.mark.parametrize("environment", [{"LC_ALL": "C.UTF-8"}, {"PYTHONUTF8": "1"},
                                         {"PYTHONIOENCODING": "utf-8"}])
def test_file_name_bytes_that_are_not_text_come_back_as_given(tmp_path, environment):
    """Both streams print the name's bytes as they came (Python would show `\\udcff` on stderr
    and, in a UTF-8 locale, fail or escape on stdout)."""
    folder = os.fsencode(tmp_path)
    good, bad = folder + b"/ok\xff.py", folder + b"/bad\xfe.py"
    with open(good, "w") as f:
        f.write("import ptxpy\nfrom ptxpy import Array, f32\n@ptxpy.jit\ndef k(x: Array[f32]):\n    x[0] = 1.0\n")
    with open(bad, "w") as f:
        f.write("import ptxpy\n@ptxpy.jit\ndef k(x: f32):\n    y = zz\n")
    out_dir = folder + b"/out\xfd"
    env = {**os.environ, **environment}
    done = subprocess.run([sys.executable, "-m", "ptxpy", "transpile", good, "-o", out_dir],
                          capture_output=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(out_dir + b"/k.ptx  (")
    done = subprocess.run([sys.executable, "-m", "ptxpy", "transpile", bad], capture_output=True,
                          env=env, timeout=120)
    assert done.returncode == 1
    assert done.stderr.startswith(bad + b":3:10: error: 'f32' is not imported")


FLAGGED = """
import math
import ptxpy
from ptxpy import Array, f32

@ptxpy.jit(out_shape=lambda x: x, grid=1, block=32, fast_math=FAST, debug=DEBUG)
def flagged(x: Array[f32], out: Array[f32]):
    i = ptxpy.thread_idx.x
    out[i] = math.exp(x[i])
"""


def test_the_command_line_compiles_as_the_decorator_s_fast_math_and_debug_say(tmp_path):
    """The PTX it writes is the one the decorated kernel runs: `fast_math=True` in the decorator
    gives the hardware exp (ex2.approx), `debug=True` the bounds checks (a trap)."""
    from ptxpy.cli import main

    path = tmp_path / "flagged.py"
    for fast, debug in ((False, False), (True, False), (False, True)):
        path.write_text(FLAGGED.replace("FAST", str(fast)).replace("DEBUG", str(debug)))
        assert main(["transpile", str(path), "-o", str(tmp_path)]) == 0
        ptx = (tmp_path / "flagged.ptx").read_text()
        assert ("ex2.approx" in ptx) == fast and ("trap;" in ptx) == debug, (fast, debug)
    path.write_text(FLAGGED.replace("FAST", "1").replace("DEBUG", "False"))
    assert main(["transpile", str(path), "-o", str(tmp_path)]) == 1   # not a bool: its error
