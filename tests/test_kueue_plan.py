"""Kueue fields beyond the queue label: `--time` also as `kueue.x-k8s.io/max-exec-time-seconds` when a
queue applies, `--dependency` kept in an annotation.

Sources: Kueue "Labels and Annotations" (`kueue.x-k8s.io/max-exec-time-seconds`, a label on the job whose
value becomes the Workload's `spec.maximumExecutionTimeSeconds`, e.g. "120"); Kubeflow Trainer
`activeDeadlineSeconds` (seconds from the start, reset on resume); Slurm `--time=HH:MM:SS`.
"""

from __future__ import annotations

import pytest
import yaml

PROFILE = "apiVersion: slurm2kf/v1\nkind: SiteProfile\npartitions:\n  gpu:\n    queue: gpu-queue\n  cpu: {}\n"


def _files(tmp_path, partition="gpu", extra=""):
    prof = tmp_path / "slurm2kf.yaml"
    prof.write_text(PROFILE)
    script = tmp_path / "job.sbatch"
    script.write_text(
        f"#!/bin/bash\n#SBATCH -J kq\n#SBATCH -p {partition}\n#SBATCH -N 2\n#SBATCH --time=01:30:00\n{extra}"
        "srun python train.py\n"
    )
    return prof, script


def test_time_under_a_queue_is_both_limits(cli, tmp_path):
    prof, script = _files(tmp_path)
    r = cli("convert", "--profile", prof, script)
    assert r.exit_code == 0, r.stderr
    doc = yaml.safe_load(r.stdout)
    labels = doc["metadata"]["labels"]
    assert labels["kueue.x-k8s.io/queue-name"] == "gpu-queue"
    assert labels["kueue.x-k8s.io/max-exec-time-seconds"] == "5400"  # 1:30:00 = 5400 s
    assert doc["spec"]["activeDeadlineSeconds"] == 5400
    assert f"{script}:5: info P468" in r.stderr
    out = tmp_path / "kq.yaml"
    out.write_text(r.stdout)
    assert cli("validate", out).exit_code == 0


def test_no_queue_no_kueue_label(cli, tmp_path):
    prof, script = _files(tmp_path, partition="cpu")
    doc = yaml.safe_load(cli("convert", "--profile", prof, script).stdout)
    assert "kueue.x-k8s.io/max-exec-time-seconds" not in (doc["metadata"].get("labels") or {})
    assert doc["spec"]["activeDeadlineSeconds"] == 5400


def test_dependency_kept_as_annotation(cli, tmp_path):
    prof, script = _files(tmp_path, extra="#SBATCH --dependency=afterok:1234:1235,singleton\n")
    r = cli("convert", script)  # no profile needed
    doc = yaml.safe_load(r.stdout)
    assert doc["metadata"]["annotations"]["slurm2kf.io/dependency"] == "afterok:1234:1235,singleton"
    assert f"{script}:6: warning P407" in r.stderr and f"{script}:6: info P469" in r.stderr
    py = cli("convert", "--to", "python", script).stdout
    assert "'slurm2kf.io/dependency': 'afterok:1234:1235,singleton'" in py


@pytest.mark.cluster
def test_the_server_accepts_the_labels(cli, kube, tmp_path):
    prof, script = _files(tmp_path, extra="#SBATCH --dependency=afterany:7\n")
    r = cli("submit", "--kubeconfig", kube.kubeconfig, "-n", kube.ns, "--profile", prof, "--dry-run", script)
    assert r.exit_code == 0, r.stderr
