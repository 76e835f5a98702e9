"""The CLI on generated input: `inspect`, `convert` and `migrate` exit 0, 1 or 2 and never crash.

Most examples run in-process through click's CliRunner (fast); a few run as real subprocesses of the
installed `slurm2kf` to check that nothing prints a Python traceback on stderr.
"""

from __future__ import annotations

import json
import os
import subprocess

from hypothesis import given
from hypothesis import strategies as st

import strategies as S

INSPECT_KEYS = {"path", "sbatch_accepts", "diagnostics", "options", "job"}


def write(tmp_dir, name: str, data: bytes):
    path = tmp_dir / name
    path.write_bytes(data)
    return path


@S.fuzz_settings(100)
@given(data=S.any_script_bytes())
def test_inspect_json_exit_codes_and_contract(data, tmp_path_factory):
    path = write(tmp_path_factory.mktemp("inspect"), "job.sbatch", data)
    result = S.run_cli(["inspect", "--json", str(path)])
    assert S.cli_result_problem(result) == ""
    if result.exit_code == 2:
        assert str(path) in result.output, "an unreadable file must be named in the message"
        return
    lines = [line for line in result.stdout.split("\n") if line.strip()]
    assert len(lines) == 1, result.stdout
    obj = json.loads(lines[0])
    assert INSPECT_KEYS <= set(obj), obj.keys()
    assert (result.exit_code == 0) == obj["sbatch_accepts"], (result.exit_code, obj["sbatch_accepts"])
    for d in obj["diagnostics"]:
        assert set(d) == {"severity", "line", "code", "message"}, d


@S.fuzz_settings(80)
@given(data=S.any_script_bytes(), to=st.sampled_from(["yaml", "python", "json"]))
def test_convert_exit_codes(data, to, tmp_path_factory):
    path = write(tmp_path_factory.mktemp("convert"), "job.sbatch", data)
    result = S.run_cli(["convert", str(path), "--to", to, "-o", "-"])
    assert S.cli_result_problem(result) == ""
    if result.exit_code == 0 and to == "yaml":
        assert S.load_yaml_docs(result.stdout), "exit 0 but no TrainJob on stdout"
    if result.exit_code == 0 and to == "json":
        json.loads(result.stdout)
    if result.exit_code == 0 and to == "python":
        assert S.python_problems(result.stdout) == []


@S.fuzz_settings(12)
@given(files=st.lists(S.any_script_bytes(), min_size=1, max_size=6))
def test_migrate_exit_codes(files, tmp_path_factory):
    root = tmp_path_factory.mktemp("migrate")
    src = root / "src"
    (src / "sub").mkdir(parents=True)
    for i, data in enumerate(files):
        write(src if i % 2 else src / "sub", f"job{i}.sbatch", data)
    result = S.run_cli(["migrate", str(src), "-o", str(root / "out"), "--jobs", "1"])
    assert S.cli_result_problem(result) == ""


def test_real_processes_print_no_traceback(tmp_path):
    """A few generated and broken files through the installed console script, as a user runs it."""
    exe = S.REPO / ".venv" / "bin" / "slurm2kf"
    assert exe.exists(), "the slurm2kf console script is not installed in .venv"
    samples = []

    @S.fuzz_settings(6, database=None)
    @given(S.any_script_bytes())
    def collect(data):
        samples.append(data)

    collect()
    samples += [
        b"",
        b"\x00\x01\x02",
        b"\xff\xfe#\x00!\x00",
        b"#!/bin/bash\n#SBATCH --job-name='unterminated\n",
        b"#!/bin/bash\r\n#SBATCH -N 2\r\nsrun python t.py\r\n",
    ]
    paths = [write(tmp_path, f"s{i}.sbatch", d) for i, d in enumerate(samples)]
    env = dict(os.environ, PYTHONIOENCODING="utf-8")
    runs = [["inspect", "--json", *map(str, paths)], ["inspect", *map(str, paths)]]
    runs += [["convert", str(p), "--to", to] for p in paths[-3:] for to in ("yaml", "python")]
    runs.append(["migrate", str(tmp_path), "-o", str(tmp_path.parent / (tmp_path.name + "-out")), "--jobs", "1"])
    for args in runs:
        proc = subprocess.run([str(exe), *args], capture_output=True, timeout=120, env=env)
        assert proc.returncode in (0, 1, 2), (args, proc.returncode, proc.stderr[-3000:])
        assert b"Traceback" not in proc.stderr and b"Traceback" not in proc.stdout, (args, proc.stderr[-3000:])
