"""`slurm2kf convert` with site profiles: --profile, $SLURM2KF_PROFILE, slurm2kf.yaml found upward,
and a bad profile stopping the conversion with exit 2 and line-numbered messages."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import yaml

FIX = Path(__file__).parent / "fixtures" / "profiles"
SCRIPT = FIX / "university" / "scripts" / "resnet_torchrun.sbatch"
PROFILE = FIX / "university" / "slurm2kf.yaml"


def _run(*args, env=None, cwd=None):
    full_env = {k: v for k, v in os.environ.items() if k != "SLURM2KF_PROFILE"}
    full_env.update(env or {})
    return subprocess.run(
        [sys.executable, "-m", "translator", *args], capture_output=True, text=True, env=full_env, cwd=cwd, timeout=120
    )


def _labels(stdout: str) -> dict:
    (doc,) = [d for d in yaml.safe_load_all(stdout) if d]
    return doc["metadata"].get("labels", {}), doc["metadata"].get("namespace")


def test_explicit_profile():
    proc = _run("convert", str(SCRIPT), "--profile", str(PROFILE))
    assert proc.returncode == 0, proc.stderr
    labels, ns = _labels(proc.stdout)
    assert labels["kueue.x-k8s.io/queue-name"] == "gpu-queue" and ns == "chemistry"
    assert "info F500 site profile `uni-hpc`" in proc.stderr


def test_profile_from_environment_and_from_parent_directory(tmp_path):
    proc = _run("convert", str(SCRIPT), env={"SLURM2KF_PROFILE": str(PROFILE)})
    assert proc.returncode == 0, proc.stderr
    assert _labels(proc.stdout)[1] == "chemistry"

    repo = tmp_path / "repo"
    (repo / "jobs" / "vision").mkdir(parents=True)
    shutil.copy(SCRIPT, repo / "jobs" / "vision" / "train.sbatch")
    proc = _run("convert", str(repo / "jobs" / "vision" / "train.sbatch"))
    assert proc.returncode == 0, proc.stderr
    assert "kueue.x-k8s.io/queue-name" not in _labels(proc.stdout)[0]  # no profile anywhere
    shutil.copy(PROFILE, repo / "slurm2kf.yaml")
    proc = _run("convert", str(repo / "jobs" / "vision" / "train.sbatch"))
    assert proc.returncode == 0, proc.stderr
    assert _labels(proc.stdout)[0]["kueue.x-k8s.io/queue-name"] == "gpu-queue"


def test_bad_profile_stops_the_conversion_with_exit_2():
    bad = FIX / "bad" / "unknown_key.yaml"
    proc = _run("convert", str(SCRIPT), "--profile", str(bad))
    assert proc.returncode == 2
    assert proc.stdout == ""
    assert f"{bad}:5: error F551 partitions.gpu.queu: unknown key `queu`" in proc.stderr
    assert "Traceback" not in proc.stderr
