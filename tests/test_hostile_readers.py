"""Every user file is read through one guard (issue 10, medium): `validate FILE`, `--crd`,
`--runtimes`, `inspect -`, `convert -` and scripts given by name. A FIFO, a device (`/dev/zero`) or a
huge file gets the command's diagnostic (R10x, V70x) and exit 2 within seconds: nothing blocks, nothing
reads without limit, nothing prints a traceback."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest

import strategies as S
from translator import fsio

EXE = S.REPO / ".venv" / "bin" / "slurm2kf"
TRAINJOB = """apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainJob
metadata:
  name: ok
spec:
  runtimeRef:
    name: torch-distributed
"""


def run(args, stdin=subprocess.DEVNULL, timeout=60):
    t0 = time.monotonic()
    proc = subprocess.run([str(EXE), *map(str, args)], capture_output=True, text=True, timeout=timeout, stdin=stdin)
    assert time.monotonic() - t0 < timeout - 10
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc


def make(kind: str, path: Path, huge_bytes: int) -> Path:
    if kind == "fifo":
        os.mkfifo(path)  # nobody ever writes: a plain open() would block forever
    elif kind == "devzero":
        path.symlink_to("/dev/zero")  # endless
    elif kind == "huge":
        with open(path, "wb") as fh:
            fh.truncate(huge_bytes)  # sparse: costs no disk
    elif kind == "directory":
        path.mkdir()
    return path


KINDS = ["fifo", "devzero", "huge", "directory"]


@pytest.mark.parametrize("kind", KINDS)
def test_validate_file(tmp_path, kind):
    f = make(kind, tmp_path / "tj.yaml", 65 << 20)
    proc = run(["validate", f])
    assert proc.returncode == 2 and "V701" in proc.stderr + proc.stdout, proc.stderr


@pytest.mark.parametrize("kind", KINDS)
def test_validate_crd(tmp_path, kind):
    good = tmp_path / "tj.yaml"
    good.write_text(TRAINJOB)
    crd = make(kind, tmp_path / "crd.yaml", 17 << 20)
    proc = run(["validate", good, "--crd", crd])
    assert proc.returncode == 2 and "V700" in proc.stderr, proc.stderr


@pytest.mark.parametrize("kind", ["fifo", "devzero", "huge"])
def test_validate_runtimes(tmp_path, kind):
    good = tmp_path / "tj.yaml"
    good.write_text(TRAINJOB)
    rt = make(kind, tmp_path / "rt.yaml", 65 << 20)
    proc = run(["validate", good, "--runtimes", rt])
    assert proc.returncode == 2 and "--runtimes" in proc.stderr and str(rt) in proc.stderr, proc.stderr
    # inside a runtimes folder a link is not followed and a special file is refused, never opened
    d = tmp_path / "rts"
    d.mkdir()
    (d / "zero.yaml").symlink_to("/dev/zero")
    proc = run(["validate", good, "--runtimes", d])
    assert proc.returncode == 0, proc.stderr


@pytest.mark.parametrize("kind", ["fifo", "devzero", "huge", "directory"])
@pytest.mark.parametrize("command", ["inspect", "convert"])
def test_scripts_by_name(tmp_path, kind, command):
    f = make(kind, tmp_path / "job.sbatch", 17 << 20)
    proc = run([command, f])
    code = {"fifo": "R102", "devzero": "R102", "huge": "R103", "directory": "R101"}[kind]
    assert proc.returncode == 2 and code in proc.stderr, proc.stderr


@pytest.mark.parametrize("command", ["inspect", "convert"])
def test_endless_standard_input_is_refused_after_the_cap(command):
    with open("/dev/zero", "rb") as zero:
        proc = run([command, "-"], stdin=zero)
    assert proc.returncode == 2 and "R103" in proc.stderr, proc.stderr


def test_guard_never_opens_a_fifo_for_blocking_and_reads_at_most_the_cap(tmp_path):
    os.mkfifo(tmp_path / "p")
    with pytest.raises(fsio.UserFileError) as exc:
        fsio.read_user_file(str(tmp_path / "p"), 100)
    assert exc.value.kind == fsio.SPECIAL and "FIFO" in exc.value.message
    (tmp_path / "f").write_bytes(b"x" * 101)
    with pytest.raises(fsio.UserFileError) as exc:
        fsio.read_user_file(str(tmp_path / "f"), 100)
    assert exc.value.kind == fsio.TOO_LARGE
    assert fsio.read_user_file(str(tmp_path / "f"), 101) == b"x" * 101
    (tmp_path / "l").symlink_to(tmp_path / "f")
    with pytest.raises(fsio.UserFileError) as exc:
        fsio.read_user_file(str(tmp_path / "l"), 1000, follow_symlinks=False)
    assert exc.value.kind == fsio.SYMLINK
