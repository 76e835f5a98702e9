"""`slurm2kf jobs` / `cancel` against the real kube-apiserver.

No Trainer controller runs there, so the tests write `status.conditions` through the status
subresource as the controller would: condition types Created / Suspended / Complete / Failed and
reasons JobsCreationSucceeded, Suspended, AllJobsCompleted, DeadlineExceeded (trainer
pkg/apis/trainer/v1alpha1/trainjob_types.go and the JobSet reasons it copies).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from kube_cluster import get_trainjob, new_namespace

pytestmark = pytest.mark.cluster

FIX = Path(__file__).resolve().parent / "fixtures" / "convert"
NOW = "2026-01-02T03:04:05Z"


def cond(ctype, reason, status="True"):
    return {
        "type": ctype,
        "status": status,
        "reason": reason,
        "message": f"{ctype} ({reason})",
        "lastTransitionTime": NOW,
    }


def write_status(kube, ns, name, status):
    kube.cluster.request(
        "PATCH",
        kube.cluster.trainjobs_path(ns, name) + "/status",
        body={"status": status},
        content_type="application/merge-patch+json",
    )


@pytest.fixture(scope="module")
def listed(kube, tmp_path_factory):
    """Five submitted copies of one script in a namespace, each given another status, one TrainJob
    there that slurm2kf did not create, and one submitted job in a second namespace."""
    from click.testing import CliRunner

    from translator.cli import cli as group

    d = tmp_path_factory.mktemp("jobs")
    script = d / "train.sbatch"
    # 2 nodes x 4 GPUs (gres per node), job name from -J below
    script.write_text("#!/bin/bash\n#SBATCH --nodes=2\n#SBATCH --gres=gpu:4\n#SBATCH --time=10\nsrun python train.py\n")
    runner = CliRunner()
    ns = kube.ns
    names = ["pending", "running", "suspended", "complete", "failed"]
    for n in names:
        r = runner.invoke(group, ["submit", "--kubeconfig", kube.kubeconfig, "-n", ns, str(script), "--", "-J", n])
        assert r.exit_code == 0, r.output
    write_status(
        kube,
        ns,
        "running",
        {
            "conditions": [cond("Created", "JobsCreationSucceeded")],
            "jobsStatus": [{"name": "node", "active": 2, "ready": 2, "succeeded": 0, "failed": 0, "suspended": 0}],
        },
    )
    write_status(
        kube,
        ns,
        "suspended",
        {"conditions": [cond("Suspended", "Suspended"), cond("Created", "JobsCreationSucceeded")]},
    )
    write_status(
        kube,
        ns,
        "complete",
        {"conditions": [cond("Created", "JobsCreationSucceeded"), cond("Complete", "AllJobsCompleted")]},
    )
    write_status(
        kube,
        ns,
        "failed",
        {"conditions": [cond("Created", "JobsCreationSucceeded"), cond("Failed", "DeadlineExceeded")]},
    )
    kube.cluster.request(
        "POST",
        kube.cluster.trainjobs_path(ns),
        body={
            "apiVersion": "trainer.kubeflow.org/v1alpha1",
            "kind": "TrainJob",
            "metadata": {"name": "not-ours"},
            "spec": {"runtimeRef": {"name": "torch-distributed"}},
        },
    )
    other = new_namespace(kube)
    r = runner.invoke(
        group, ["submit", "--kubeconfig", kube.kubeconfig, "-n", other, str(script), "--", "-J", "elsewhere"]
    )
    assert r.exit_code == 0, r.output
    return {"ns": ns, "other": other, "script": str(script)}


def test_jobs_json_rows_have_state_from_conditions(cli, kube, listed):
    r = cli("jobs", "--kubeconfig", kube.kubeconfig, "-n", listed["ns"], "--json")
    assert r.exit_code == 0, r.stderr
    rows = {row["name"]: row for row in map(json.loads, r.stdout.splitlines())}
    assert set(rows) == {"pending", "running", "suspended", "complete", "failed"}  # not "not-ours"
    assert {n: rows[n]["state"] for n in rows} == {
        "pending": "PENDING",
        "running": "RUNNING",
        "suspended": "SUSPENDED",
        "complete": "COMPLETE",
        "failed": "FAILED",
    }
    assert rows["failed"]["reason"] == "DeadlineExceeded"
    for row in rows.values():
        assert row["nodes"] == 2 and row["gpus"] == 8  # 2 nodes x gpu:4
        assert row["runtime"] == "torch-distributed"
        assert row["script"] == os.path.abspath(listed["script"])
        assert row["namespace"] == listed["ns"]
        assert row["age"].endswith("s") or row["age"].endswith("m")


def test_jobs_table_and_all_namespaces(cli, kube, listed):
    r = cli("jobs", "--kubeconfig", kube.kubeconfig, "-n", listed["ns"])
    assert r.exit_code == 0
    lines = r.stdout.splitlines()
    assert lines[0].split() == ["NAME", "STATE", "NODES", "GPUS", "RUNTIME", "AGE", "SCRIPT", "REASON"]
    by_name = {ln.split()[0]: ln.split() for ln in lines[1:]}
    assert by_name["complete"][1:5] == ["COMPLETE", "2", "8", "torch-distributed"]
    assert len(lines) == 6
    r = cli("jobs", "--kubeconfig", kube.kubeconfig, "-A")
    assert r.exit_code == 0
    lines = r.stdout.splitlines()
    assert lines[0].split()[:2] == ["NAMESPACE", "NAME"]
    pairs = {(ln.split()[0], ln.split()[1]) for ln in lines[1:]}
    assert (listed["other"], "elsewhere") in pairs and (listed["ns"], "failed") in pairs
    assert (listed["ns"], "not-ours") not in pairs


def test_jobs_forbidden_for_alice(cli, kube, listed):
    r = cli("jobs", "--kubeconfig", kube.kubeconfig, "--context", "alice", "-n", listed["ns"])
    assert r.exit_code == 1
    assert 'error K904 forbidden: user "alice"' in r.stderr and "list" in r.stderr


def test_cancel_asks_first_and_deletes(cli, kube, listed):
    ns = listed["other"]
    base = ["cancel", "--kubeconfig", kube.kubeconfig, "-n", ns, "elsewhere"]
    r = cli(*base, input="n\n")
    assert r.exit_code == 1
    assert get_trainjob(kube, ns, "elsewhere") is not None
    r = cli(*base, input="y\n")
    assert r.exit_code == 0, r.stderr
    assert r.stdout == f"Cancelled TrainJob {ns}/elsewhere\n"
    assert get_trainjob(kube, ns, "elsewhere") is None
    r = cli(*base, "-y")
    assert r.exit_code == 1 and f"error K914 TrainJob {ns}/elsewhere not found" in r.stderr


def test_cancel_with_yes_needs_no_answer(cli, kube, listed):
    ns = listed["ns"]
    r = cli("cancel", "--kubeconfig", kube.kubeconfig, "-n", ns, "-y", "complete", "failed")
    assert r.exit_code == 0, r.stderr
    assert r.stdout.splitlines() == [f"Cancelled TrainJob {ns}/complete", f"Cancelled TrainJob {ns}/failed"]
    assert get_trainjob(kube, ns, "complete") is None and get_trainjob(kube, ns, "failed") is None


def test_jobs_of_given_scripts_only(cli, kube, listed, tmp_path):
    other = tmp_path / "other.sbatch"
    other.write_text("#!/bin/bash\n#SBATCH -J unrelated\nsrun python x.py\n")
    r = cli("jobs", "--kubeconfig", kube.kubeconfig, "-A", "--json", listed["script"])
    names = {json.loads(ln)["name"] for ln in r.stdout.splitlines()}
    assert {"pending", "running", "suspended"} <= names and "not-ours" not in names
    r = cli("jobs", "--kubeconfig", kube.kubeconfig, "-A", "--json", other)
    assert r.exit_code == 0 and r.stdout == ""
