"""Hostile and broken files, each generated here in a temp dir (nothing binary is committed).

Each must give a diagnostic naming the file and a line (or a clear file-level error naming the file),
exit 0/1/2, never a traceback, and finish in bounded time and memory. Big inputs run as real
subprocesses so that wall time and peak RSS (os.wait4) are those of the command a user runs.
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

import strategies as S

EXE = S.REPO / ".venv" / "bin" / "slurm2kf"
MB = 1024 * 1024


def run_measured(args, timeout: float):
    """Run `slurm2kf ARGS` as a subprocess; returns (rc, stdout, stderr, seconds, peak RSS in MiB)."""
    assert EXE.exists(), "the slurm2kf console script is not installed in .venv"
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        start = time.monotonic()
        proc = subprocess.Popen([str(EXE), *map(str, args)], stdout=out, stderr=err, stdin=subprocess.DEVNULL)
        while True:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            if time.monotonic() - start > timeout:
                proc.kill()
                os.wait4(proc.pid, 0)
                pytest.fail(f"slurm2kf {' '.join(map(str, args))[:200]} still running after {timeout} s")
            time.sleep(0.02)
        seconds = time.monotonic() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        return proc.returncode, out.read(), err.read(), seconds, usage.ru_maxrss / 1024


def inspect_json(path, timeout: float = 60):
    rc, out, err, secs, rss = run_measured(["inspect", "--json", path], timeout)
    assert rc in (0, 1, 2), (rc, err[-2000:])
    assert b"Traceback" not in err and b"Traceback" not in out, err[-3000:]
    objs = [json.loads(line) for line in out.decode("utf-8").split("\n") if line.strip()]
    return rc, objs, err.decode("utf-8", "replace"), secs, rss


def in_process(args):
    result = S.run_cli(args)
    assert S.cli_result_problem(result) == ""
    return result


def diag_lines(obj):
    return [(d["line"], d["code"], d["severity"]) for d in obj["diagnostics"]]


# ---- bytes and encodings ---------------------------------------------------------------------------


def test_nul_byte_is_named_with_its_line(tmp_path):
    path = tmp_path / "nul.sbatch"
    path.write_bytes(b"#!/bin/bash\n#SBATCH -N 2\n#SBATCH -t 10\x00\nsrun python train.py\n")
    result = in_process(["inspect", "--json", str(path)])
    assert result.exit_code == 1, result.output  # sbatch refuses a script containing NUL
    obj = json.loads(result.stdout.split("\n")[0])
    assert obj["sbatch_accepts"] is False
    assert any(line == 3 and sev == "error" for line, _c, sev in diag_lines(obj)), obj["diagnostics"]


def test_invalid_utf8_is_a_line_diagnostic_not_a_crash(tmp_path):
    path = tmp_path / "latin1.sbatch"
    path.write_bytes(b"#!/bin/bash\n#SBATCH --job-name=caf\xe9\n#SBATCH -N 1\necho \xff\xfe\nsrun python t.py\n")
    result = in_process(["inspect", "--json", str(path)])
    obj = json.loads(result.stdout.split("\n")[0])
    lines = [line for line, code, _s in diag_lines(obj) if code.startswith("R")]
    assert 2 in lines, obj["diagnostics"]  # the undecodable line is named
    assert obj["job"]["nodes_min"] == 1  # the rest of the header is still read
    for to in ("yaml", "python"):
        conv = in_process(["convert", str(path), "--to", to])
        assert conv.exit_code in (0, 1)


def test_utf16_with_bom_is_refused_with_a_reason(tmp_path):
    path = tmp_path / "utf16.sbatch"
    path.write_bytes("#!/bin/bash\n#SBATCH -N 2\nsrun python t.py\n".encode("utf-16"))
    result = in_process(["inspect", "--json", str(path)])
    assert result.exit_code == 1, result.output  # sbatch sees no `#!` at byte 0 and NUL bytes
    obj = json.loads(result.stdout.split("\n")[0])
    assert obj["sbatch_accepts"] is False
    errors = [d for d in obj["diagnostics"] if d["severity"] == "error"]
    assert errors and all(d["code"].startswith("R") for d in errors), obj["diagnostics"]
    assert any("16" in d["message"] or "BOM" in d["message"] or "NUL" in d["message"] for d in errors), errors


def test_binary_file_and_empty_file(tmp_path):
    binary = tmp_path / "model.bin"
    binary.write_bytes(bytes(range(256)) * 64)
    empty = tmp_path / "empty.sbatch"
    empty.write_bytes(b"")
    result = in_process(["inspect", "--json", str(binary), str(empty)])
    assert result.exit_code in (1, 2)
    objs = [json.loads(line) for line in result.stdout.split("\n") if line.strip()]
    for obj in objs:
        assert obj["sbatch_accepts"] is False and obj["diagnostics"], obj


# ---- size and shape ----------------------------------------------------------------------------------


def _write_big(path, header_lines: int, body_bytes: int):
    with open(path, "wb") as fh:
        fh.write(b"#!/bin/bash\n")
        chunk = b"#SBATCH --comment=padding-line-for-a-very-long-header\n"
        fh.write(chunk * header_lines)
        fh.write(b"#SBATCH -N 2 --ntasks-per-node=1\n")
        line = b"echo 'body line' $SLURM_JOB_ID >> log.txt\n"
        fh.write(line * (body_bytes // len(line)))
        fh.write(b"srun torchrun --nproc-per-node=4 train.py\n")


def test_50_mb_script_in_bounded_time_and_memory(tmp_path):
    path = tmp_path / "huge.sbatch"
    _write_big(path, 0, 50 * MB)
    rc, objs, err, secs, rss = inspect_json(path, timeout=240)
    assert rc in (0, 1, 2)
    if rc == 2:  # refused as too large: acceptable only with a file-level error naming it
        assert str(path) in err
    else:
        assert objs and objs[0]["job"]["nodes_min"] == 2
    assert rss < 2048, f"peak RSS {rss:.0f} MiB for a 50 MB script"


def test_100000_line_header(tmp_path):
    path = tmp_path / "header.sbatch"
    _write_big(path, 100_000, 0)
    rc, objs, err, secs, rss = inspect_json(path, timeout=120)
    assert rc == 0, err[-2000:]
    assert objs[0]["options"].get("comment") == "padding-line-for-a-very-long-header"
    assert objs[0]["job"]["nodes_min"] == 2  # the last line of the header is still applied
    assert rss < 1024, f"peak RSS {rss:.0f} MiB"


def test_100000_repeated_resource_options_convert_in_linear_time(tmp_path):
    """Last one wins for 100,000 repeated resource directives; converting must not go quadratic."""
    path = tmp_path / "repeated.sbatch"
    lines = ["#SBATCH --gres=gpu:4", "#SBATCH --mem=4G", "#SBATCH --cpus-per-task=2", "#SBATCH -N 2"]
    with open(path, "w") as fh:
        fh.write("#!/bin/bash\n")
        for i in range(100_000):
            fh.write(lines[i % 4] + "\n")
        fh.write("#SBATCH --gres=gpu:8\nsrun torchrun --nproc-per-node=8 train.py\n")
    rc, out, err, secs, rss = run_measured(["convert", path, "--to", "yaml"], timeout=90)
    assert rc in (0, 1) and b"Traceback" not in err, err[-2000:]
    doc = S.load_yaml_docs(out.decode("utf-8"))[0]
    assert doc["spec"]["trainer"]["numNodes"] == 2
    assert doc["spec"]["trainer"]["resourcesPerNode"]["limits"]["nvidia.com/gpu"] == "8"  # the last --gres
    assert rss < 1024, f"peak RSS {rss:.0f} MiB"


def test_10_mb_single_lines(tmp_path):
    head = tmp_path / "longdirective.sbatch"
    head.write_bytes(b"#!/bin/bash\n#SBATCH --comment=" + b"c" * (10 * MB) + b"\n#SBATCH -N 3\nsrun python t.py\n")
    body = tmp_path / "longbody.sbatch"
    body.write_bytes(b"#!/bin/bash\n#SBATCH -N 3\nsrun python t.py --x " + b"'" + b"a b " * (10 * MB // 4) + b"'\n")
    for path in (head, body):
        rc, objs, err, secs, rss = inspect_json(path, timeout=120)
        assert rc in (0, 1), err[-2000:]
        assert objs[0]["job"]["nodes_min"] == 3
        assert rss < 1024, f"peak RSS {rss:.0f} MiB"
        rc, out, err2, secs, rss = run_measured(["convert", path, "--to", "yaml"], timeout=120)
        assert rc in (0, 1, 2) and b"Traceback" not in err2, err2[-2000:]


@pytest.mark.parametrize(
    "opener,closer",
    [
        ("if true; then", "fi"),
        ("while true; do", "done"),
        ("(", ")"),
        ("{", "}"),
        ("f() {", "}"),
        ("for i in 1; do", "done"),
        ("case x in x)", ";; esac"),
    ],
)
def test_10000_levels_of_nesting(tmp_path, opener, closer):
    depth = 10_000
    text = "#!/bin/bash\n#SBATCH -N 2\n" + (opener + "\n") * depth + "srun python train.py\n" + (closer + "\n") * depth
    path = tmp_path / "deep.sbatch"
    path.write_text(text)
    start = time.monotonic()
    result = in_process(["inspect", "--json", str(path)])
    seconds = time.monotonic() - start
    assert result.exit_code == 0, result.output[-2000:]
    # 20,000 lines: a linear reader needs well under a second; allow a busy machine 20x that
    assert seconds < 20, f"{seconds:.1f} s to read {depth} levels of `{opener}` (quadratic nesting?)"
    start = time.monotonic()
    conv = in_process(["convert", str(path), "--to", "python"])
    seconds = time.monotonic() - start
    assert conv.exit_code in (0, 1)
    if conv.exit_code == 0:
        assert S.python_problems(conv.stdout) == []
    assert seconds < 30, f"{seconds:.1f} s to convert {depth} levels of `{opener}` (quadratic somewhere?)"


@pytest.mark.parametrize(
    "text,bad_line",
    [
        ("#!/bin/bash\n#SBATCH -N 1\ncat > gen.sh <<EOF\n#!/bin/bash\n#SBATCH -N 4\nsrun x\n", 3),
        ("#!/bin/bash\n#SBATCH -N 1\npython - <<'PY'\nimport os\nprint('no end')\n", 3),
        ('#!/bin/bash\n#SBATCH -N 1\necho "unterminated\nsrun python t.py\n', 3),
        ("#!/bin/bash\n#SBATCH -N 1\necho 'unterminated\nsrun python t.py\n", 3),
        ("#!/bin/bash\n#SBATCH -N 1\nx=$(echo (\nsrun python t.py\n", 3),
        ("#!/bin/bash\n#SBATCH -N 1\nx=`echo\nsrun python t.py\n", 3),
        ("#!/bin/bash\n#SBATCH -N 1\nif true; then\nsrun python t.py\n", 3),
    ],
)
def test_unterminated_constructs_in_the_body(tmp_path, text, bad_line):
    path = tmp_path / "open.sbatch"
    path.write_text(text)
    result = in_process(["inspect", "--json", str(path)])
    obj = json.loads(result.stdout.split("\n")[0])
    assert obj["job"]["nodes_min"] == 1
    assert any(d["line"] == bad_line and d["code"].startswith("R") for d in obj["diagnostics"]), obj["diagnostics"]
    for to in ("yaml", "python"):
        assert in_process(["convert", str(path), "--to", to]).exit_code in (0, 1, 2)


def test_unmatched_quote_in_a_directive(tmp_path):
    path = tmp_path / "quote.sbatch"
    path.write_text("#!/bin/bash\n#SBATCH -N 1\n#SBATCH --job-name='oops\nsrun python t.py\n")
    result = in_process(["inspect", "--json", str(path)])
    assert result.exit_code == 1  # sbatch: fatal "Unmatched ' in [...]"
    obj = json.loads(result.stdout.split("\n")[0])
    assert any(d["line"] == 3 and d["severity"] == "error" for d in obj["diagnostics"]), obj["diagnostics"]


# ---- files that are not regular, readable files -----------------------------------------------------


def _file_level_error(result, path):
    assert result.exit_code == 2, (result.exit_code, result.output[-2000:])
    assert str(path) in result.output, result.output


def test_symlink_loop(tmp_path):
    a, b = tmp_path / "a.sbatch", tmp_path / "b.sbatch"
    os.symlink(b, a)
    os.symlink(a, b)
    _file_level_error(in_process(["inspect", str(a)]), a)
    _file_level_error(in_process(["convert", str(a)]), a)


def test_missing_file_and_directory_named_like_a_script(tmp_path):
    missing = tmp_path / "missing.sbatch"
    folder = tmp_path / "job.sbatch"
    folder.mkdir()
    _file_level_error(in_process(["inspect", str(missing)]), missing)
    _file_level_error(in_process(["inspect", "--json", str(folder)]), folder)
    _file_level_error(in_process(["convert", str(folder)]), folder)


def test_fifo_does_not_hang(tmp_path):
    """A named pipe with no writer would block a plain open()/read() forever."""
    fifo = tmp_path / "pipe.sbatch"
    os.mkfifo(fifo)
    for args in (["inspect", "--json", fifo], ["convert", fifo, "--to", "yaml"]):
        rc, out, err, secs, rss = run_measured(args, timeout=20)
        assert rc == 2 and str(fifo).encode() in err + out, (rc, err[-1000:])
        assert b"Traceback" not in err


def test_device_file_is_not_read_forever(tmp_path):
    rc, out, err, secs, rss = run_measured(["inspect", "--json", "/dev/zero"], timeout=60)
    assert rc in (1, 2) and b"Traceback" not in err, err[-1000:]
    assert rss < 512, f"peak RSS {rss:.0f} MiB reading /dev/zero"


def test_unreadable_file():
    """Tests run as root, which reads any file: drop the effective uid to `nobody` for the read."""
    if os.geteuid() != 0:
        pytest.fail("this test needs root to switch to the `nobody` user (CI runs as root)")
    import pwd
    import shutil

    base = Path(tempfile.mkdtemp(prefix="slurm2kf-unreadable-", dir="/tmp"))
    try:
        os.chmod(base, 0o755)  # traversable by nobody; only the file itself is closed
        path = base / "secret.sbatch"
        path.write_text("#!/bin/bash\n#SBATCH -N 1\nsrun python t.py\n")
        os.chmod(path, 0)
        ok = base / "ok.sbatch"
        ok.write_text("#!/bin/bash\n#SBATCH -N 1\nsrun python t.py\n")
        in_process(["inspect", str(ok)])  # import everything the commands need while still root
        in_process(["convert", str(ok)])
        os.seteuid(pwd.getpwnam("nobody").pw_uid)
        try:
            inspect_result = S.run_cli(["inspect", "--json", str(path)])
            convert_result = S.run_cli(["convert", str(path)])
        finally:
            os.seteuid(0)
        for result in (inspect_result, convert_result):
            assert S.cli_result_problem(result) == ""
            _file_level_error(result, path)
            assert "permission" in result.output.lower(), result.output
    finally:
        shutil.rmtree(base, ignore_errors=True)


# ---- non-ASCII digits: Python's str.isdigit()/int() accept them, C's isdigit()/strtol() do not -------

UNICODE_DIGIT_LINES = {
    "time": "#SBATCH --time=1\u00b2",  # superscript two: isdigit() True, int() fails
    "signal": "#SBATCH --signal=\u00b2",
    "signal_at": "#SBATCH --signal=USR1@\u00b2",
    "ntasks": "#SBATCH --ntasks=\u0663",  # Arabic-Indic three: int() gives 3
    "nodes": "#SBATCH --nodes=\u0663",
    "mem": "#SBATCH --mem=\u0663G",
    "cpus": "#SBATCH --cpus-per-task=\u0663",
    "array": "#SBATCH --array=\u00b2",
    "gres": "#SBATCH --gres=gpu:\u00b2",
    "output": "#SBATCH --output=%\u00b2j.out",
    "dependency": "#SBATCH --dependency=afterok:\u00b2",
    "pbs_nodes": "#PBS -l nodes=\u00b2:ppn=\u00b2",
    "pbs_select": "#PBS -l select=\u00b2:ncpus=\u00b2:mpiprocs=\u00b2",
}


def test_non_ascii_digits_never_crash_and_match_real_slurm(tmp_path):
    """Each value with a Unicode digit: no exception anywhere in the pipeline, and `sbatch_accepts`
    equals real Slurm's verdict (the oracle), which parses numbers with C's ASCII-only rules."""
    import oracles
    from translator.pipeline import convert

    paths = {}
    for name, line in UNICODE_DIGIT_LINES.items():
        path = tmp_path / f"{name}.sbatch"
        path.write_text("#!/bin/bash\n" + line + "\nsrun python train.py\n", encoding="utf-8")
        paths[name] = path
    launch = tmp_path / "torchrun.sbatch"
    launch.write_text("#!/bin/bash\n#SBATCH -N 1\ntorchrun --nproc-per-node=\u00b2 train.py\n", encoding="utf-8")
    crashes, ours = [], {}
    for name, path in list(paths.items()) + [("torchrun", launch)]:
        try:
            conv = convert(str(path))
            ours[name] = conv.job.sbatch_accepts if conv.job is not None else False
            if conv.plans:
                S.render_yaml(conv.plans)
                S.render_python(conv.plans)
        except Exception as exc:  # noqa: BLE001 - the point of the test
            crashes.append(f"{name}: {type(exc).__name__}: {exc}")
    records = oracles.resolve_scripts(list(paths.values()))
    wrong = []
    for name, path in paths.items():
        rec = records[path]
        if rec.get("rejected_by") == "slurmctld":
            continue  # refused by the controller (cluster state), not by sbatch's own parsing
        slurm = rec["accepted"]
        if name in ours and ours[name] != slurm:
            wrong.append(
                f"{name}: slurm2kf sbatch_accepts={ours[name]}, Slurm 22.05 accepted={slurm} "
                f"({records[path].get('error')})"
            )
    assert not crashes and not wrong, {"crashes": crashes, "verdicts that differ from Slurm": wrong}


# ---- numbers too big for C: strtol saturates, Slurm refuses (or, for --time, means unlimited) ---------

HUGE = "99999999999999999999"
OVERFLOW_LINES = {
    "ntasks": f"#SBATCH --ntasks={HUGE}",
    "cpus": f"#SBATCH --cpus-per-task={HUGE}",
    "tasks_per_node": f"#SBATCH --ntasks-per-node={HUGE}",
    "nodes": f"#SBATCH --nodes={HUGE}",
    "mem": f"#SBATCH --mem={HUGE}T",
    "time": f"#SBATCH --time={HUGE}",
}


def test_numbers_too_big_for_c_match_real_slurm_and_emit_valid_trainjobs(tmp_path):
    import oracles
    from translator.pipeline import convert

    paths = {}
    for name, line in OVERFLOW_LINES.items():
        path = tmp_path / f"{name}.sbatch"
        path.write_text("#!/bin/bash\n" + line + "\nsrun python train.py\n")
        paths[name] = path
    records = oracles.resolve_scripts(list(paths.values()))
    wrong, invalid = [], []
    for name, path in paths.items():
        conv = convert(str(path))
        rec = records[path]
        if conv.job.sbatch_accepts != rec["accepted"]:
            wrong.append(
                f"{name}: slurm2kf sbatch_accepts={conv.job.sbatch_accepts}, Slurm accepted={rec['accepted']} "
                f"({rec.get('error')}); slurm2kf job: { {k: v for k, v in conv.job.fields.to_json().items() if v is not None} }"
            )
        if conv.plans:
            out = tmp_path / f"{name}.yaml"
            out.write_text(S.render_yaml(conv.plans), encoding="utf-8")
            result = S.run_cli(["validate", str(out)])
            if result.exit_code != 0:
                invalid.append(f"{name}: {result.output.strip().splitlines()[0]}")
    assert not wrong and not invalid, {"verdicts that differ from Slurm": wrong, "invalid TrainJobs": invalid}
