"""`slurm2kf logs` and the REASON column of `jobs`, against the real kube-apiserver.

That server runs no controller, no scheduler and no kubelet. So the tests write what those would:
TrainJob `status.conditions` (types and reasons from trainer pkg/apis/trainer/v1alpha1/trainjob_types.go),
and Pod objects with the labels JobSet and the Job controller put on a TrainJob's pods
(`jobset.sigs.k8s.io/jobset-name`, `jobset.sigs.k8s.io/replicatedjob-name`,
`batch.kubernetes.io/job-completion-index`) and the pod status a kubelet reports (a container
`waiting` with reason `ImagePullBackOff`, core/v1 ContainerStateWaiting). The logs endpoint itself needs
the node's kubelet: with a pod bound to a node that does not exist, the API server answers an error,
which `logs` reports as K931.
"""

from __future__ import annotations

import pytest

from kube_cluster import new_namespace

pytestmark = pytest.mark.cluster

NOW = "2026-01-02T03:04:05Z"


def _trainjob(name, *, suspend=False, queue=None, nodes=2):
    meta = {"name": name, "labels": {"app.kubernetes.io/managed-by": "slurm2kf"}}
    if queue:
        meta["labels"]["kueue.x-k8s.io/queue-name"] = queue
    return {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainJob",
        "metadata": meta,
        "spec": {"runtimeRef": {"name": "torch-distributed"}, "suspend": suspend, "trainer": {"numNodes": nodes}},
    }


def _create_job(kube, ns, obj, status=None):
    kube.cluster.request("POST", kube.cluster.trainjobs_path(ns), body=obj)
    if status:
        kube.cluster.request(
            "PATCH",
            kube.cluster.trainjobs_path(ns, obj["metadata"]["name"]) + "/status",
            body={"status": status},
            content_type="application/merge-patch+json",
        )


def _pod(kube, ns, job, rjob, index, *, node_name=None, waiting=None, restart=0):
    name = f"{job}-{rjob}-0-{index}-x{restart}"
    labels = {
        "jobset.sigs.k8s.io/jobset-name": job,
        "jobset.sigs.k8s.io/replicatedjob-name": rjob,
        "jobset.sigs.k8s.io/restart-attempt": str(restart),
        "batch.kubernetes.io/job-completion-index": str(index),
    }
    spec = {"containers": [{"name": "node", "image": "example.invalid/train:1"}]}
    if node_name:
        spec["nodeName"] = node_name
    body = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "labels": labels}, "spec": spec}
    kube.cluster.request("POST", f"/api/v1/namespaces/{ns}/pods", body=body)
    if waiting:
        status = {
            "phase": "Pending",
            "containerStatuses": [
                {
                    "name": "node",
                    "image": "example.invalid/train:1",
                    "imageID": "",
                    "ready": False,
                    "restartCount": 0,
                    "state": {"waiting": {"reason": waiting, "message": "Back-off pulling image"}},
                }
            ],
        }
        kube.cluster.request(
            "PATCH",
            f"/api/v1/namespaces/{ns}/pods/{name}/status",
            body={"status": status},
            content_type="application/merge-patch+json",
        )
    return name


def _cond(ctype, reason, status="True", message=""):
    return {"type": ctype, "status": status, "reason": reason, "message": message, "lastTransitionTime": NOW}


@pytest.fixture(scope="module")
def scene(kube):
    ns = new_namespace(kube)
    _create_job(kube, ns, _trainjob("queued", suspend=True, queue="gpu-queue"))
    _create_job(kube, ns, _trainjob("held", suspend=True))
    _create_job(kube, ns, _trainjob("nostatus"))
    _create_job(
        kube,
        ns,
        _trainjob("broken"),
        {"conditions": [_cond("Created", "JobsCreationFailed", "False", "jobset webhook denied the request")]},
    )
    _create_job(kube, ns, _trainjob("pulling"), {"conditions": [_cond("Created", "JobsCreationSucceeded")]})
    _pod(kube, ns, "pulling", "node", 0)  # not scheduled
    _pod(kube, ns, "pulling", "node", 1, node_name="k21-no-such-node", waiting="ImagePullBackOff")
    _create_job(kube, ns, _trainjob("placed"), {"conditions": [_cond("Created", "JobsCreationSucceeded")]})
    _pod(kube, ns, "placed", "node", 0, node_name="k21-no-such-node")
    _pod(kube, ns, "placed", "node", 1, node_name="k21-no-such-node")
    return ns


def _logs(cli, kube, ns, *args):
    return cli("logs", "--kubeconfig", kube.kubeconfig, "-n", ns, *args)


def test_not_found(cli, kube, scene):
    r = _logs(cli, kube, scene, "nosuch")
    assert r.exit_code == 1 and f"error K914 TrainJob {scene}/nosuch not found" in r.stderr


def test_kueue_admission_pending(cli, kube, scene):
    r = _logs(cli, kube, scene, "queued")
    assert r.exit_code == 1
    assert (
        f"K930 TrainJob {scene}/queued has no pods yet: Kueue admission pending: suspended until Kueue admits "
        "it from queue gpu-queue"
    ) in r.stderr
    r = _logs(cli, kube, scene, "held")
    assert r.exit_code == 1 and "suspended (spec.suspend is true)" in r.stderr


def test_jobset_creation_failed_and_no_status(cli, kube, scene):
    r = _logs(cli, kube, scene, "broken")
    assert r.exit_code == 1
    assert "JobSet creation failed (JobsCreationFailed): jobset webhook denied the request" in r.stderr
    r = _logs(cli, kube, scene, "nostatus")
    assert r.exit_code == 1 and "the Trainer controller has not created its JobSet yet" in r.stderr


def test_pod_selection_and_reasons(cli, kube, scene):
    # node 0 (the default on a torch runtime) is not scheduled: no logs request is made
    r = _logs(cli, kube, scene, "pulling")
    assert r.exit_code == 1
    assert "no logs yet: pod pulling-node-0-0-x0 is Pending: no node has been assigned" in r.stderr
    r = _logs(cli, kube, scene, "pulling", "--node", "1")
    assert r.exit_code == 1
    assert "container node is waiting: ImagePullBackOff: Back-off pulling image" in r.stderr
    r = _logs(cli, kube, scene, "pulling", "--node", "5")
    assert r.exit_code == 1 and "error K932" in r.stderr and "has 2 pod(s)" in r.stderr


def test_logs_endpoint_without_kubelet_is_a_clear_error(cli, kube, scene):
    r = _logs(cli, kube, scene, "placed", "--all-nodes", "--tail", "10")
    assert r.exit_code == 1
    lines = [ln for ln in r.stderr.splitlines() if "K931" in ln]
    assert len(lines) == 2  # one per pod, each naming the pod and its node
    assert "placed-node-0-0-x0" in r.stderr and "placed-node-0-1-x0" in r.stderr
    assert all("from the kubelet of node k21-no-such-node (HTTP " in ln for ln in lines)
    assert "Traceback" not in r.stderr
    r = _logs(cli, kube, scene, "placed", "-f", "--node", "1", "--since", "5m")  # following: the same answer
    assert r.exit_code == 1 and "K931" in r.stderr and "placed-node-0-1-x0" in r.stderr


def test_jobs_reason_column(cli, kube, scene):
    import json

    r = cli("jobs", "--kubeconfig", kube.kubeconfig, "-n", scene, "--json")
    assert r.exit_code == 0, r.stderr
    why = {row["name"]: row["why"] for row in map(json.loads, r.stdout.splitlines())}
    assert why == {
        "queued": "Kueue admission pending (queue gpu-queue)",
        "held": "suspended",
        "nostatus": "no JobSet yet",
        "broken": "JobSet creation failed (JobsCreationFailed)",
        "pulling": "ImagePullBackOff (node-1)",  # before node 0's "not scheduled": it needs a fix
        "placed": "",
    }
    r = cli("jobs", "--kubeconfig", kube.kubeconfig, "-n", scene)
    head, *rows = r.stdout.splitlines()
    assert head.split()[-1] == "REASON"
    assert any(row.startswith("queued") and row.endswith("Kueue admission pending (queue gpu-queue)") for row in rows)


def test_usage_errors(cli, kube, scene):
    assert _logs(cli, kube, scene, "placed", "--node", "0", "--all-nodes").exit_code == 2
    assert _logs(cli, kube, scene, "placed", "--since", "soon").exit_code == 2


def test_units_choose_since_restarts():
    from translator.cluster.logs import LogsError, PodView, choose, parse_since

    assert parse_since("90") == 90 and parse_since("15m") == 900 and parse_since("2h") == 7200
    assert parse_since("1d") == 86400 and parse_since(None) is None
    with pytest.raises(ValueError):
        parse_since("0s")

    def pv(job, index, restart=0):
        return PodView(f"{job}-{index}-{restart}", job, index, restart, "n", "Running", NOW)

    mpi = [pv("node", 0), pv("node", 1), pv("launcher", 0)]
    assert [p.name for p in choose(mpi, None, False)] == ["launcher-0-0"]  # mpirun's output
    assert [p.name for p in choose(mpi, 1, False)] == ["node-1-0"]
    restarted = [pv("node", 0, 0), pv("node", 0, 1), pv("node", 1, 1)]
    assert [p.name for p in choose(restarted, None, True)] == ["node-0-1", "node-1-1"]  # newest attempt only
    with pytest.raises(LogsError):
        choose(restarted, 2, False)


def test_kueue_workload_text():
    """Kueue Workload conditions (kueue.sigs.k8s.io, Workload API: QuotaReserved, Admitted, Evicted)."""
    from translator.cluster.logs import workload_text

    def wl(*conds):
        return {"metadata": {"name": "trainjob-big-1a2b3"}, "status": {"conditions": list(conds)}}

    pending = _cond("QuotaReserved", "Pending", "False", "couldn't assign flavors to pod set node: insufficient quota")
    assert workload_text(wl(pending)) == (
        "workload trainjob-big-1a2b3 is pending: couldn't assign flavors to pod set node: insufficient quota"
    )
    assert workload_text(wl(_cond("QuotaReserved", "QuotaReserved"), _cond("Admitted", "Admitted"))) == ""
    evicted = _cond("Evicted", "Preempted", "True", "Preempted to accommodate a higher priority Workload")
    assert workload_text(wl(evicted)).startswith("workload trainjob-big-1a2b3 was evicted (Preempted)")
    assert workload_text(wl()) == "workload trainjob-big-1a2b3 is not admitted yet"


def test_stream_lines_prefixes_and_parameters(monkeypatch):
    """What `logs` asks the official client for and how it prints the answer (the server side of a real
    log needs a kubelet; here read_namespaced_pod_log is replaced by a stand-in that records the call)."""
    import types

    from kubernetes import client as kclient

    from translator.cluster.logs import LogRequest, PodView, stream

    calls = []

    class Answer:
        def __init__(self, chunks):
            self.chunks = chunks

        def stream(self, _size):
            yield from self.chunks

    def fake(self, name, namespace, **kw):
        calls.append((name, namespace, kw))
        return Answer([b"step 1\nstep", b" 2\n", b"last without newline"])

    monkeypatch.setattr(kclient.CoreV1Api, "read_namespaced_pod_log", fake)
    cluster = types.SimpleNamespace(api=None, timeout=(5.0, 30.0))
    pods = [
        PodView("j-node-0-0-a", "node", 0, 0, "n1", "Running", NOW, containers=("node", "sidecar")),
        PodView("j-node-0-1-b", "node", 1, 0, "n2", "Running", NOW, containers=("node",)),
    ]
    out = []
    errors = stream(cluster, pods, LogRequest("ml", follow=True, tail=5, since=60, prefix=True), out.append)
    assert errors == []
    assert sorted(out) == sorted(
        [f"[node-{i}] {t}" for i in (0, 1) for t in ("step 1", "step 2", "last without newline")]
    )
    assert sorted(c[0] for c in calls) == ["j-node-0-0-a", "j-node-0-1-b"]
    for _name, ns, kw in calls:
        assert ns == "ml" and kw["container"] == "node" and kw["follow"] is True
        assert kw["tail_lines"] == 5 and kw["since_seconds"] == 60 and "_request_timeout" not in kw
    out.clear()
    stream(cluster, pods[:1], LogRequest("ml"), out.append)
    assert out == ["step 1", "step 2", "last without newline"]  # one pod: no prefix
    assert calls[-1][2]["_request_timeout"] == (5.0, 30.0) and "tail_lines" not in calls[-1][2]
