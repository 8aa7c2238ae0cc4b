"""A copy of an example with other module constants and text, imported as a module: how the
probes time variants of an example (scan_probe.py, sort_probe.py)."""
import importlib.util
import re
from pathlib import Path


def load_variant(source: Path, name: str, constants: dict, replacements: dict, folder: Path):
    """The module of `source` with `NAME = <int>` lines set from `constants` and each text of
    `replacements` replaced, written to `folder` under a name made from `name`."""
    text = Path(source).read_text()
    for key, value in constants.items():
        text, count = re.subn(rf"^{key} = \d+", f"{key} = {value}", text, flags=re.M)
        assert count == 1, key
    for old, new in replacements.items():
        assert old in text, old
        text = text.replace(old, new)
    path = Path(folder) / f"variant_{abs(hash((str(source), name)))}.py"
    path.write_text(text)
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
