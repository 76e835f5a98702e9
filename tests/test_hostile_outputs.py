"""`-o` targets under attack (issue 10, severe 2): `convert -o`, `report -o` and `profile init -o
--force` write only over a regular file that is not one of their inputs, through a temporary file in
the target's folder and a rename; anything else (a symlink, a FIFO, a device, a folder, the input
script itself) is refused with exit 2 and a message naming it, and is left exactly as it was."""

from __future__ import annotations

import os
import stat
import subprocess
from pathlib import Path

import pytest

import strategies as S

EXE = S.REPO / ".venv" / "bin" / "slurm2kf"
SCRIPT = "#!/bin/bash\n#SBATCH --job-name=t\n#SBATCH -N 1\n#SBATCH -t 10\nsrun python train.py\n"


def run(args, **kw):
    return subprocess.run(
        [str(EXE), *map(str, args)], capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL, **kw
    )


@pytest.fixture
def work(tmp_path):
    (tmp_path / "jobs").mkdir()
    (tmp_path / "jobs" / "train.sbatch").write_text(SCRIPT)
    (tmp_path / "victim.txt").write_text("precious\n")
    return tmp_path


def writers(work: Path):
    """(name, argv builder taking the -o target): every command with an -o FILE."""
    script = work / "jobs" / "train.sbatch"
    return [
        ("convert", lambda t: ["convert", script, "-o", t]),
        ("convert-python", lambda t: ["convert", script, "--to", "python", "-o", t]),
        ("report-file", lambda t: ["report", script, "-o", t, "--format", "md"]),
        ("report-folder", lambda t: ["report", work / "jobs", "-o", t, "--format", "json", "-j", "1"]),
        ("profile-init", lambda t: ["profile", "init", work / "jobs", "-o", t, "--force"]),
    ]


def _make(kind: str, target: Path, work: Path) -> None:
    if kind == "symlink":
        target.symlink_to(work / "victim.txt")
    elif kind == "dangling-symlink":
        target.symlink_to(work / "created-through-link.txt")
    elif kind == "fifo":
        os.mkfifo(target)
    elif kind == "device":
        os.mknod(target, stat.S_IFCHR | 0o666, os.makedev(1, 3))  # /dev/null's numbers (root in tests)
    elif kind == "directory":
        target.mkdir()
        (target / "keep").write_text("x")


def _state(p: Path):
    st = os.lstat(p)
    return (stat.S_IFMT(st.st_mode), st.st_ino, os.readlink(p) if p.is_symlink() else None)


@pytest.mark.parametrize("kind", ["symlink", "dangling-symlink", "fifo", "device", "directory"])
@pytest.mark.parametrize("writer", range(5))
def test_non_regular_targets_are_refused_and_untouched(work, kind, writer):
    name, argv = writers(work)[writer]
    target = work / f"out-{kind}"
    if kind == "device" and os.geteuid() != 0:
        pytest.fail("the device case needs root (mknod) — the test container runs as root")
    _make(kind, target, work)
    before = _state(target)
    proc = run(argv(target))
    assert proc.returncode == 2, (name, kind, proc.returncode, proc.stderr)
    assert "Traceback" not in proc.stderr
    assert str(target) in proc.stderr and ("not a regular file" in proc.stderr or "refusing" in proc.stderr), (
        proc.stderr
    )
    assert _state(target) == before
    assert (work / "victim.txt").read_text() == "precious\n"
    assert not (work / "created-through-link.txt").exists()
    assert not [p for p in work.iterdir() if p.name.endswith(".slurm2kf-tmp")]


@pytest.mark.parametrize("writer", ["convert", "convert-python", "report-file"])
def test_the_input_script_is_never_overwritten(work, writer):
    argv = dict(writers(work))[writer]
    script = work / "jobs" / "train.sbatch"
    proc = run(argv(script))
    assert proc.returncode == 2 and "input" in proc.stderr, proc.stderr
    assert script.read_text() == SCRIPT
    # also through another name of the same file (a hard link)
    os.link(script, work / "alias.sbatch")
    proc = run(argv(work / "alias.sbatch"))
    assert proc.returncode == 2 and script.read_text() == SCRIPT


def test_report_and_profile_init_never_overwrite_a_job_script_of_the_folder(work):
    other = work / "jobs" / "other.sbatch"
    other.write_text(SCRIPT.replace("=t", "=o"))
    for argv in (
        ["report", work / "jobs", "-o", other, "--format", "md", "-j", "1"],
        ["profile", "init", work / "jobs", "-o", other, "--force"],
    ):
        proc = run(argv)
        assert proc.returncode == 2 and "input" in proc.stderr, (argv, proc.stderr)
        assert other.read_text() == SCRIPT.replace("=t", "=o")
    # a non-script file in the folder (a previous report, the profile) may be replaced
    notes = work / "jobs" / "slurm2kf.yaml"
    notes.write_text("# old\n")
    proc = run(["profile", "init", work / "jobs", "-o", notes, "--force"])
    assert proc.returncode == 0, proc.stderr
    assert "apiVersion: slurm2kf/v1" in notes.read_text()


@pytest.mark.parametrize("writer", range(5))
def test_regular_targets_are_replaced_atomically_and_dash_is_stdout(work, writer):
    name, argv = writers(work)[writer]
    target = work / "result.out"
    target.write_text("old\n")
    inode = os.stat(target).st_ino
    proc = run(argv(target))
    assert proc.returncode in (0, 1), (name, proc.stderr)
    assert target.read_text() != "old\n"
    assert os.stat(target).st_ino != inode  # a new file renamed over the old one, not rewritten in place
    assert sorted(p.name for p in work.iterdir()) == sorted(["jobs", "victim.txt", "result.out"])
    out = run(argv("-"))
    assert out.returncode in (0, 1) and out.stdout and not (work / "-").exists()


def test_profile_init_without_force_refuses_any_existing_target(work):
    target = work / "p.yaml"
    target.symlink_to(work / "victim.txt")
    proc = run(["profile", "init", work / "jobs", "-o", target])
    assert proc.returncode == 2 and "exists" in proc.stderr
    assert (work / "victim.txt").read_text() == "precious\n"


def test_missing_folder_of_the_target_is_a_clear_error(work):
    proc = run(["convert", work / "jobs" / "train.sbatch", "-o", work / "nope" / "x.yaml"])
    assert proc.returncode == 2 and "no such directory" in proc.stderr and "Traceback" not in proc.stderr
