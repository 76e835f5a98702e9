"""The real kube-apiserver for the cluster tests (started by ./test.sh from shared/kube-apiserver).

``kube`` (module scope): one client for the module and a fresh namespace of its own, removed at the
end. The kubeconfig is ``$SLURM2KF_KUBECONFIG``, else ``$KUBE_ORACLE_STATE/kubeconfig`` (default state
folder /tmp/slurm2kf-kube-state). A missing or dead server FAILS the tests (never skips them).
"""

from __future__ import annotations

import os
import socket
import types
import uuid

import pytest
import yaml

DEFAULT_STATE = "/tmp/slurm2kf-kube-state"


def kubeconfig_path() -> str:
    return os.environ.get("SLURM2KF_KUBECONFIG") or os.path.join(
        os.environ.get("KUBE_ORACLE_STATE") or DEFAULT_STATE, "kubeconfig"
    )


def _fail(msg: str):
    pytest.fail(
        msg + " — run ./test.sh (it starts shared/kube-apiserver), or "
        "KUBE_ORACLE_STATE=/tmp/slurm2kf-kube-state bash ../shared/kube-apiserver/setup.sh",
        pytrace=False,
    )


def make_kube(module_name: str):
    from translator.cluster import ClusterError
    from translator.cluster.client import HttpError, connect

    path = kubeconfig_path()
    if not os.path.isfile(path):
        _fail(f"kube-apiserver kubeconfig {path} not found")
    try:
        cluster = connect(path)
        cluster.request("GET", "/readyz")
        cluster.request("GET", "/apis/trainer.kubeflow.org/v1alpha1")
    except (ClusterError, HttpError) as exc:
        _fail(f"kube-apiserver at {path} is not usable: {exc}")
    ns = f"t-{module_name.replace('_', '-')[-30:].strip('-')}-{uuid.uuid4().hex[:6]}"
    cluster.request(
        "POST", "/api/v1/namespaces", body={"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}
    )
    return types.SimpleNamespace(cluster=cluster, kubeconfig=path, ns=ns, created_ns=[ns])


def drop_kube(kube) -> None:
    from translator.cluster.client import HttpError

    for ns in kube.created_ns:
        try:
            kube.cluster.request("DELETE", kube.cluster.trainjobs_path(ns))  # the collection
            kube.cluster.request("DELETE", f"/api/v1/namespaces/{ns}")
        except HttpError:
            pass


@pytest.fixture(scope="module")
def kube(request):
    k = make_kube(request.module.__name__.rsplit(".", 1)[-1])
    yield k
    drop_kube(k)


def new_namespace(kube) -> str:
    ns = f"{kube.ns[:40]}-{uuid.uuid4().hex[:4]}"
    kube.cluster.request(
        "POST", "/api/v1/namespaces", body={"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}
    )
    kube.created_ns.append(ns)
    return ns


def get_trainjob(kube, ns: str, name: str):
    """The stored object, or None (404)."""
    from translator.cluster.client import HttpError

    try:
        return kube.cluster.request("GET", kube.cluster.trainjobs_path(ns, name)).body
    except HttpError as err:
        if err.status == 404:
            return None
        raise


def list_trainjobs(kube, ns: str) -> list:
    return kube.cluster.request("GET", kube.cluster.trainjobs_path(ns)).body["items"]


def variant_kubeconfig(kube, tmp_path, *, server=None, ca=None, token=None, name="variant") -> str:
    """A copy of the test kubeconfig with the admin context's server, CA file or token replaced."""
    with open(kube.kubeconfig, encoding="utf-8") as fh:
        cfg = yaml.safe_load(fh)
    for c in cfg["clusters"]:
        if server:
            c["cluster"]["server"] = server
        if ca:
            c["cluster"]["certificate-authority"] = ca
    for u in cfg["users"]:
        if token and u["name"] == "admin":
            u["user"]["token"] = token
    out = tmp_path / f"{name}.kubeconfig"
    out.write_text(yaml.safe_dump(cfg), encoding="utf-8")
    return str(out)


def unused_port() -> int:
    """A loopback port nothing listens on (bound, then released)."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port
