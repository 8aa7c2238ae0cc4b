"""Runs a probe's worker in a new process and reads back the JSON it writes: `cmd` plus
`--out FILE`; the worker's stderr tail, as {"error": ...}, where it fails."""
import json
import os
import subprocess
import tempfile


def run_json(cmd: list, env: dict, timeout: int = 300) -> dict:
    with tempfile.NamedTemporaryFile("r", suffix=".json") as out:
        proc = subprocess.run([*cmd, "--out", out.name], env=dict(os.environ, **env),
                              capture_output=True, text=True, timeout=timeout)
        if proc.returncode != 0:
            return {"error": proc.stderr[-3000:]}
        return json.load(open(out.name))
