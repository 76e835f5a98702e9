"""`slurm2kf migrate` on a repository of hostile files (all generated here; nothing binary committed).

Issue 6: "A test repository of hostile files migrates with exit code 1, a complete report, and no
traceback"; a worker crash or an unreadable/vanishing file is recorded against that file and the run
goes on; Ctrl-C leaves no half-written file and a re-run completes.
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import threading
import time
from pathlib import Path


import strategies as S

EXE = S.REPO / ".venv" / "bin" / "slurm2kf"

GOOD = """#!/bin/bash
#SBATCH --job-name={name}
#SBATCH --nodes=2
#SBATCH --ntasks-per-node=1
#SBATCH --gres=gpu:4
#SBATCH --time=02:00:00
export NCCL_DEBUG=INFO
srun torchrun --nnodes $SLURM_NNODES --nproc-per-node=4 train.py --epochs {n}
"""


def snapshot(root: Path):
    """path -> sha256 of every regular file under root (symlinks and special files by their kind)."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        for name in dirnames + filenames:
            p = Path(dirpath) / name
            if p.is_symlink():
                out[str(p)] = "symlink:" + os.readlink(p)
            elif p.is_fifo():
                out[str(p)] = "fifo"
            elif p.is_file():
                try:
                    out[str(p)] = hashlib.sha256(p.read_bytes()).hexdigest()
                except PermissionError:
                    out[str(p)] = "unreadable"
    return out


def build_hostile_repo(src: Path):
    (src / "good" / "nested" / "deep").mkdir(parents=True)
    (src / "bad").mkdir()
    (src / ".git" / "hooks").mkdir(parents=True)
    (src / "good" / "train.sbatch").write_text(GOOD.format(name="train", n=1))
    (src / "good" / "nested" / "deep" / "job.sh").write_text(GOOD.format(name="deep-job", n=2))
    (src / ".git" / "hooks" / "job.sbatch").write_text(GOOD.format(name="vcs", n=3))  # must be skipped
    bad = src / "bad"
    (bad / "nul.sbatch").write_bytes(b"#!/bin/bash\n#SBATCH -N 2\x00\nsrun python t.py\n")
    (bad / "latin1.sbatch").write_bytes(b"#!/bin/bash\n#SBATCH -J caf\xe9\n#SBATCH -N 1\nsrun python t.py\n")
    (bad / "utf16.sbatch").write_bytes("#!/bin/bash\n#SBATCH -N 2\nsrun python t.py\n".encode("utf-16"))
    (bad / "crlf.sbatch").write_bytes(b"#!/bin/bash\r\n#SBATCH -N 2\r\nsrun python t.py\r\n")
    (bad / "quote.sbatch").write_text("#!/bin/bash\n#SBATCH --job-name='oops\n#SBATCH -N 1\nsrun python t.py\n")
    (bad / "unknown.sbatch").write_text("#!/bin/bash\n#SBATCH --nodez=2\nsrun python t.py\n")
    (bad / "deep.sbatch").write_text(
        "#!/bin/bash\n#SBATCH -N 1\n" + "if true; then\n" * 10000 + "srun python t.py\n" + "fi\n" * 10000
    )
    (bad / "heredoc.sbatch").write_text("#!/bin/bash\n#SBATCH -N 1\ncat > x <<EOF\n#SBATCH -N 9\nsrun python t.py\n")
    (bad / "longline.sbatch").write_bytes(
        b"#!/bin/bash\n#SBATCH -N 1\nsrun python t.py --x " + b"y" * (2 * 1024 * 1024) + b"\n"
    )
    (bad / "model.bin").write_bytes(bytes(range(256)) * 256)
    (bad / "job.sbatch").mkdir()  # a directory named like a script
    os.symlink(bad / "loop_b.sbatch", bad / "loop_a.sbatch")  # symlink loop
    os.symlink(bad / "loop_a.sbatch", bad / "loop_b.sbatch")
    os.symlink(src / "gone" / "vanished.sbatch", bad / "dangling.sbatch")  # target vanished
    os.mkfifo(bad / "pipe.sbatch")  # would block a plain read
    os.symlink("/dev/zero", bad / "zero.sbatch")  # endless device


def find_report(out: Path):
    for p in sorted(out.rglob("*.json")):
        try:
            data = json.loads(p.read_text(encoding="utf-8"))
        except (ValueError, UnicodeDecodeError):
            continue
        if isinstance(data, dict) and data.get("format") == "slurm2kf-report":
            return data
    return None


def run(args, timeout):
    assert EXE.exists(), "the slurm2kf console script is not installed in .venv"
    return subprocess.run([str(EXE), *map(str, args)], capture_output=True, timeout=timeout, stdin=subprocess.DEVNULL)


def reported_paths(report):
    paths = {s["path"] for s in report.get("scripts", [])}
    paths |= {s["path"] for s in report.get("skipped", [])}
    return paths


def test_hostile_repository_migrates_with_exit_1_and_a_complete_report(tmp_path):
    src, out = tmp_path / "src", tmp_path / "out"
    build_hostile_repo(src)
    before = snapshot(src)
    proc = run(["migrate", src, "-o", out, "--jobs", "2"], timeout=300)
    assert b"Traceback" not in proc.stderr and b"Traceback" not in proc.stdout, proc.stderr[-4000:]
    assert proc.returncode == 1, (proc.returncode, proc.stderr[-3000:])
    assert snapshot(src) == before, "migrate touched the source tree"

    report = find_report(out)
    assert report is not None, f"no JSON report under {out}: {sorted(p.name for p in out.rglob('*'))[:50]}"
    paths = reported_paths(report)
    for rel in (
        "good/train.sbatch",
        "good/nested/deep/job.sh",
        "bad/nul.sbatch",
        "bad/latin1.sbatch",
        "bad/crlf.sbatch",
        "bad/quote.sbatch",
        "bad/unknown.sbatch",
        "bad/deep.sbatch",
        "bad/heredoc.sbatch",
        "bad/longline.sbatch",
    ):
        assert rel in paths, f"{rel} missing from the report: {sorted(paths)}"
    assert not any(p.startswith(".git/") for p in paths), "a VCS folder was migrated"
    for special in ("bad/loop_a.sbatch", "bad/dangling.sbatch", "bad/pipe.sbatch"):
        # never migrated as scripts; when reported, with a code and a message naming the problem
        for s in report.get("scripts", []):
            assert s["path"] != special or s["outcome"] == "errors", s
    by_path = {s["path"]: s for s in report.get("scripts", [])}
    for rel in ("bad/nul.sbatch", "bad/quote.sbatch", "bad/unknown.sbatch"):
        if rel in by_path:
            assert by_path[rel]["outcome"] == "errors", by_path[rel]
            assert any(i.get("line") for i in by_path[rel]["issues"]), by_path[rel]["issues"]
    for rel in ("good/train.sbatch", "good/nested/deep/job.sh"):
        assert by_path[rel]["outcome"] in ("clean", "warnings"), by_path[rel]
    # outputs are complete documents: every YAML parses, every Python file compiles
    yamls = list(out.rglob("*.yaml"))
    assert len([y for y in yamls if y.name != "kustomization.yaml"]) >= 2
    for y in yamls:
        S.load_yaml_docs(y.read_text(encoding="utf-8"))
    for py in out.rglob("*.py"):
        assert S.python_problems(py.read_text(encoding="utf-8")) == [], py
    leftovers = [p for p in out.rglob("*") if p.name.endswith((".tmp", ".part", "~")) or p.name.startswith(".tmp")]
    assert not leftovers, f"temporary files left behind: {leftovers}"


def test_files_vanishing_mid_run_are_recorded_and_the_run_goes_on(tmp_path):
    src, out = tmp_path / "src", tmp_path / "out"
    names = []
    for d in range(10):
        (src / f"d{d}").mkdir(parents=True)
        for i in range(40):
            p = src / f"d{d}" / f"job{i}.sbatch"
            p.write_text(GOOD.format(name=f"job-{d}-{i}", n=i) + "#" * 2000 + "\n")
            names.append(p)
    victims = names[::3]
    stop = threading.Event()

    def vandal():
        # remove, replace by a directory, or truncate files while migrate walks and reads them
        for k, p in enumerate(reversed(victims)):
            if stop.is_set():
                return
            try:
                if k % 3 == 0:
                    p.unlink()
                elif k % 3 == 1:
                    p.unlink()
                    p.mkdir()
                else:
                    p.write_bytes(b"")
            except OSError:
                pass
            time.sleep(0.002)

    thread = threading.Thread(target=vandal)
    proc = subprocess.Popen(
        [str(EXE), "migrate", str(src), "-o", str(out), "--jobs", "2"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
    )
    time.sleep(0.3)
    thread.start()
    try:
        stdout, stderr = proc.communicate(timeout=300)
    finally:
        stop.set()
        thread.join()
    assert b"Traceback" not in stderr and b"Traceback" not in stdout, stderr[-4000:]
    assert proc.returncode in (0, 1, 2), (proc.returncode, stderr[-3000:])
    report = find_report(out)
    assert report is not None, "a run with vanishing files still writes its report"
    paths = reported_paths(report)
    survivors = [p for p in names if p.is_file() and p.stat().st_size > 0]
    for p in survivors[:50]:
        assert str(p.relative_to(src)) in paths, f"{p} lost from the report"
    for y in out.rglob("*.yaml"):
        S.load_yaml_docs(y.read_text(encoding="utf-8"))


def test_ctrl_c_leaves_no_half_written_file_and_a_rerun_completes(tmp_path):
    src, out = tmp_path / "src", tmp_path / "out"
    for d in range(20):
        (src / f"team{d}").mkdir(parents=True)
        for i in range(50):
            (src / f"team{d}" / f"job{i}.sbatch").write_text(GOOD.format(name=f"t{d}-{i}", n=i))
    proc = subprocess.Popen(
        [str(EXE), "migrate", str(src), "-o", str(out), "--jobs", "2"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not list(out.rglob("*.yaml")) and proc.poll() is None:
        time.sleep(0.05)
    if proc.poll() is None:
        proc.send_signal(signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=120)
    assert b"Traceback" not in stderr, stderr[-4000:]
    assert proc.returncode in (0, 1, 2, 130), proc.returncode
    for y in out.rglob("*.yaml"):  # atomic writes: every file complete or absent
        S.load_yaml_docs(y.read_text(encoding="utf-8"))
    for py in out.rglob("*.py"):
        assert S.python_problems(py.read_text(encoding="utf-8")) == [], py
    rerun = run(["migrate", src, "-o", out, "--jobs", "2"], timeout=300)
    assert rerun.returncode == 0, rerun.stderr[-3000:]
    report = find_report(out)
    assert report is not None and len(report["scripts"]) == 1000
