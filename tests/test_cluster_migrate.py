"""`migrate --server-dry-run` / `migrate --apply` against the real kube-apiserver."""

from __future__ import annotations

from pathlib import Path

import pytest

from kube_cluster import list_trainjobs, new_namespace

pytestmark = pytest.mark.cluster

REPO = Path(__file__).resolve().parent / "fixtures" / "repo"
# tests/fixtures/repo holds 10 job scripts; team-b/bad_option.sbatch has an sbatch error (--nodez), so
# the apply set (what `kubectl apply -k OUT` sends) holds the other 9 TrainJobs.
RUNNABLE = 9


def test_migrate_server_dry_run_then_apply_then_reapply(cli, kube, tmp_path):
    ns = new_namespace(kube)
    out = tmp_path / "out"
    base = ["migrate", REPO, "-o", out, "-j", "1", "--namespace", ns, "--kubeconfig", kube.kubeconfig]
    r = cli(*base, "--server-dry-run")
    assert r.exit_code == 1  # the script with an sbatch error keeps migrate's exit 1
    assert f"server-side dry run: {RUNNABLE} TrainJobs from {RUNNABLE} files ({RUNNABLE} validated)" in r.stderr
    assert list_trainjobs(kube, ns) == []
    r = cli(*base, "--apply")
    assert f"server-side apply: {RUNNABLE} TrainJobs from {RUNNABLE} files ({RUNNABLE} created)" in r.stderr
    stored = list_trainjobs(kube, ns)
    assert len(stored) == RUNNABLE
    assert all(o["metadata"]["labels"]["app.kubernetes.io/managed-by"] == "slurm2kf" for o in stored)
    r = cli(*base, "--apply")
    assert f"({RUNNABLE} unchanged)" in r.stderr
    # what jobs lists is exactly the apply set
    j = cli("jobs", "--kubeconfig", kube.kubeconfig, "-n", ns)
    assert len(j.stdout.splitlines()) == RUNNABLE + 1


def test_migrate_apply_usage_errors(cli, tmp_path):
    r = cli("migrate", REPO, "-o", tmp_path / "o", "--check", "--apply")
    assert r.exit_code == 2 and "--check" in r.stderr
    r = cli("migrate", REPO, "-o", tmp_path / "o", "--context", "x")
    assert r.exit_code == 2 and "need --apply" in r.stderr
