"""Exit statuses keep their meaning under failure (issue 10, "Low"): 1 only ever means "a script has
errors"; Ctrl-C is 130 (128 + SIGINT, as shells report it) and an internal error is 70 (EX_SOFTWARE
in sysexits.h), with one line on stderr and no traceback."""

from __future__ import annotations

import os
import signal
import subprocess
import time

import strategies as S

EXE = S.REPO / ".venv" / "bin" / "slurm2kf"
PY = S.REPO / ".venv" / "bin" / "python"
GOOD = "#!/bin/bash\n#SBATCH --job-name={name}\n#SBATCH -N 1\nsrun python train.py\n"


def test_internal_error_exits_70_with_one_line(tmp_path):
    script = tmp_path / "j.sbatch"
    script.write_text(GOOD.format(name="j"))
    code = (
        "import sys, translator.pipeline as p\n"
        "def boom(*a, **k):\n    raise RuntimeError('simulated bug')\n"
        "p.convert = boom\n"
        "from translator.cli import main\n"
        f"sys.argv = ['slurm2kf', 'convert', {str(script)!r}]\n"
        "main()\n"
    )
    proc = subprocess.run(
        [str(PY), "-c", code], capture_output=True, text=True, timeout=60, env={**os.environ, "SLURM2KF_TRACEBACK": ""}
    )
    assert proc.returncode == 70, (proc.returncode, proc.stderr)
    assert "Traceback" not in proc.stderr
    assert "internal error (RuntimeError: simulated bug)" in proc.stderr


def test_ctrl_c_exits_130(tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    for i in range(3000):
        (src / f"j{i:04d}.sbatch").write_text(GOOD.format(name=f"j{i}"))
    proc = subprocess.Popen(
        [str(EXE), "migrate", str(src), "-o", str(tmp_path / "out"), "-j", "2"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not (tmp_path / "out" / ".slurm2kf-migrate.json").exists():
            time.sleep(0.05)
        time.sleep(1.0)
        assert proc.poll() is None, "migrate finished before it could be interrupted"
        os.killpg(proc.pid, signal.SIGINT)  # what a terminal's Ctrl-C does: the whole group
        _out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == 130, (proc.returncode, err[-2000:])
    assert b"Traceback" not in err and b"interrupted" in err


def test_usage_errors_stay_2_and_success_0(tmp_path):
    script = tmp_path / "j.sbatch"
    script.write_text(GOOD.format(name="j"))
    assert subprocess.run([str(EXE), "convert", str(script)], capture_output=True).returncode == 0
    assert subprocess.run([str(EXE), "convert", "--bogus"], capture_output=True).returncode == 2
    assert subprocess.run([str(EXE), "--version"], capture_output=True).returncode == 0


import pytest  # noqa: E402


@pytest.mark.parametrize(
    "args,code",
    [
        (["--namespace", "ML_Team"], "V730"),
        (["--namespace", "a" * 64], "V730"),
        (["--namespace", "-x"], "V730"),
        (["--gpu-resource", "gpu"], "V743"),
        (["--gpu-resource", "/gpu"], "V743"),
        (["--gpu-resource", "Nvidia.com/gpu!"], "V743"),
    ],
)
def test_convert_refuses_options_that_validate_rejects(tmp_path, args, code):
    script = tmp_path / "j.sbatch"
    script.write_text("#!/bin/bash\n#SBATCH -N 1\n#SBATCH --gpus-per-node=1\nsrun python t.py\n")
    out = tmp_path / "j.yaml"
    for cmd in (
        ["convert", script, "-o", out],
        ["migrate", tmp_path, "-o", tmp_path.parent / "o"],
        ["report", tmp_path],
    ):
        proc = subprocess.run([str(EXE), *map(str, cmd), *args], capture_output=True, text=True, timeout=60)
        assert proc.returncode == 2 and code in proc.stderr, (cmd, proc.stderr)
    assert not out.exists()
    # the same value in a TrainJob is what `validate` rejects with that code (the API server's rule)
    ok = subprocess.run([str(EXE), "convert", str(script)], capture_output=True, text=True)
    text = ok.stdout
    if args[0] == "--namespace":
        text = text.replace("metadata:\n", f"metadata:\n  namespace: '{args[1]}'\n", 1)
    else:
        text = text.replace("nvidia.com/gpu", args[1])
    bad = tmp_path / "bad.yaml"
    bad.write_text(text)
    val = subprocess.run([str(EXE), "validate", str(bad)], capture_output=True, text=True)
    assert val.returncode == 1 and code in val.stdout, val.stdout
