"""`jobs` and `cancel`: the TrainJobs that slurm2kf submitted, and their state.

State comes from `status.conditions` as the Trainer controller writes them (condition types
`Created`, `Suspended`, `Complete`, `Failed`; trainer pkg/apis/trainer/v1alpha1/trainjob_types.go):
Failed=True wins, then Complete=True, then Suspended=True; Created=True means the controller made the
JobSet (RUNNING when `status.jobsStatus` counts an active job, CREATED otherwise). No condition yet is
PENDING (the controller has not picked the job up), like squeue's PD.
"""

from __future__ import annotations

import datetime as _dt
import os
from dataclasses import dataclass

from translator.cluster import LABEL_HASH, LABEL_SCRIPT, SELECTOR
from translator.cluster.client import Cluster, HttpError
from translator.cluster.errors import Rejection, rejection
from translator.jsondata import as_dict
from translator.plan.naming import ANNOTATION_SOURCE


@dataclass
class JobRow:
    namespace: str
    name: str
    script: str  # source path (annotation), else the script label
    nodes: int | None  # spec.trainer.numNodes (None: the runtime's default)
    gpus: int | None  # GPUs in all (per node x nodes), None when none requested
    runtime: str
    created: str | None  # metadata.creationTimestamp (RFC 3339)
    state: str
    reason: str = ""  # reason of the condition that decided the state
    source_hash: str = ""  # the slurm2kf.io/source-hash label (first 12 hex of the file's SHA-256)
    why: str = ""  # why it has no running pods (cluster/logs.py short_reason): the REASON column

    def age(self, now: _dt.datetime | None = None) -> str:
        return age_text(self.created, now)

    def to_json(self, now=None) -> dict:
        return {
            "namespace": self.namespace,
            "name": self.name,
            "script": self.script,
            "nodes": self.nodes,
            "gpus": self.gpus,
            "runtime": self.runtime,
            "created": self.created,
            "age": self.age(now),
            "state": self.state,
            "reason": self.reason,
            "why": self.why,
        }


def _true(cond: dict) -> bool:
    return str(cond.get("status", "")).lower() == "true"


def state_of(obj: dict) -> tuple:
    """(STATE, reason) from status.conditions (see module doc)."""
    status = as_dict(obj.get("status"))
    conds = [c for c in status.get("conditions") or () if isinstance(c, dict)]
    by_type = {c.get("type"): c for c in conds}
    for ctype, state in (("Failed", "FAILED"), ("Complete", "COMPLETE"), ("Suspended", "SUSPENDED")):
        c = by_type.get(ctype)
        if c is not None and _true(c):
            return state, str(c.get("reason") or "")
    c = by_type.get("Created")
    if c is not None and _true(c):
        active = sum(int(j.get("active") or 0) for j in status.get("jobsStatus") or () if isinstance(j, dict))
        return ("RUNNING" if active else "CREATED"), str(c.get("reason") or "")
    return "PENDING", ""


def _gpu_count(qty) -> int | None:
    try:
        return int(str(qty))
    except ValueError:
        return None


def row_of(obj: dict) -> JobRow:
    meta = obj.get("metadata") or {}
    spec = obj.get("spec") or {}
    trainer = spec.get("trainer") or {}
    ann = meta.get("annotations") or {}
    labels = meta.get("labels") or {}
    nodes = trainer.get("numNodes")
    nodes = nodes if isinstance(nodes, int) else None
    per_node = None
    limits = (trainer.get("resourcesPerNode") or {}).get("limits") or {}
    requests = (trainer.get("resourcesPerNode") or {}).get("requests") or {}
    for key, qty in list(limits.items()) + list(requests.items()):
        if key.endswith("/gpu"):
            per_node = _gpu_count(qty)
            break
    gpus = per_node * (nodes or 1) if per_node is not None else None
    state, reason = state_of(obj)
    script = ann.get(ANNOTATION_SOURCE) or labels.get(LABEL_SCRIPT) or ""
    return JobRow(
        namespace=str(meta.get("namespace") or ""),
        name=str(meta.get("name") or ""),
        script=str(script),
        nodes=nodes,
        gpus=gpus,
        runtime=str((spec.get("runtimeRef") or {}).get("name") or ""),
        created=meta.get("creationTimestamp"),
        state=state,
        reason=reason,
        source_hash=str(labels.get(LABEL_HASH) or ""),
    )


def age_text(created: str | None, now: _dt.datetime | None = None) -> str:
    """kubectl's AGE style: 45s, 12m, 5h, 3d."""
    if not created:
        return "?"
    try:
        t = _dt.datetime.strptime(created, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=_dt.timezone.utc)
    except ValueError:
        return "?"
    now = now or _dt.datetime.now(_dt.timezone.utc)
    s = max(0, int((now - t).total_seconds()))
    if s < 120:
        return f"{s}s"
    if s < 7200:
        return f"{s // 60}m"
    if s < 172800:
        return f"{s // 3600}h"
    return f"{s // 86400}d"


def list_jobs(cluster: Cluster, namespace: str | None, *, all_namespaces: bool = False) -> list[JobRow]:
    """TrainJobs labelled by slurm2kf. Raises HttpError-derived Rejection via ListError."""
    ns = None if all_namespaces else (namespace or cluster.namespace)
    items: list[dict] = []
    cont = None
    while True:
        query = [("labelSelector", SELECTOR), ("limit", "500")]
        if cont:
            query.append(("continue", cont))
        try:
            resp = cluster.request("GET", cluster.trainjobs_path(ns), query=query)
        except HttpError as err:
            raise ListError(rejection(err, verb="list", namespace=ns, name=None, cluster=cluster)) from None
        body = resp.body if isinstance(resp.body, dict) else {}
        items.extend(i for i in body.get("items") or () if isinstance(i, dict))
        cont = (body.get("metadata") or {}).get("continue")
        if not cont:
            break
    rows = [row_of(i) for i in items]
    _add_reasons(cluster, ns, items, rows)
    rows.sort(key=lambda r: (r.namespace, r.created or "", r.name))
    return rows


def _add_reasons(cluster: Cluster, ns: str | None, items: list[dict], rows: list[JobRow]) -> None:
    """REASON from each TrainJob and its pods (one list of the JobSet pods; without the right to list
    pods, from the TrainJobs alone)."""
    from translator.cluster.logs import list_pods, pods_by_job, short_reason

    try:
        pods = pods_by_job(list_pods(cluster, ns)) if items else {}
    except HttpError:
        pods = {}
    for obj, row in zip(items, rows):
        row.why = short_reason(obj, pods.get((row.namespace, row.name), []))


def from_sources(rows: list[JobRow], paths) -> list[JobRow]:
    """The rows submitted from these files: same content (hash label) or same path (annotation)."""
    import hashlib

    hashes, absolute = set(), set()
    for p in paths:
        absolute.add(os.path.abspath(p))
        try:
            with open(p, "rb") as fh:
                hashes.add(hashlib.sha256(fh.read()).hexdigest()[:12])
        except OSError:
            pass
    return [r for r in rows if r.source_hash in hashes or r.script in absolute]


class ListError(Exception):
    def __init__(self, rej: Rejection) -> None:
        super().__init__(rej.message)
        self.rejection = rej


def cancel(cluster: Cluster, namespace: str | None, name: str) -> Rejection | None:
    """Delete one TrainJob (background propagation: it goes at once, the garbage collector then removes
    its JobSet and pods). None when deleted."""
    ns = namespace or cluster.namespace
    try:
        cluster.request(
            "DELETE",
            cluster.trainjobs_path(ns, name),
            body={"kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": "Background"},
        )
    except HttpError as err:
        return rejection(err, verb="delete", namespace=ns, name=name, cluster=cluster)
    return None


def get_job(cluster: Cluster, namespace: str | None, name: str):
    """(object, None) or (None, Rejection)."""
    ns = namespace or cluster.namespace
    try:
        return cluster.request("GET", cluster.trainjobs_path(ns, name)).body, None
    except HttpError as err:
        return None, rejection(err, verb="get", namespace=ns, name=name, cluster=cluster)


def table(rows: list[JobRow], *, all_namespaces: bool, now=None) -> str:
    head = (["NAMESPACE"] if all_namespaces else []) + [
        *("NAME", "STATE", "NODES", "GPUS", "RUNTIME", "AGE", "SCRIPT", "REASON")
    ]
    data = []
    for r in rows:
        script = r.script
        if script and os.path.isabs(script):
            try:
                rel = os.path.relpath(script)
                script = rel if not rel.startswith("..") else script
            except ValueError:
                pass
        data.append(
            ([r.namespace] if all_namespaces else [])
            + [
                r.name,
                r.state,
                "-" if r.nodes is None else str(r.nodes),
                "-" if r.gpus is None else str(r.gpus),
                r.runtime,
                r.age(now),
                script or "-",
                r.why,
            ]
        )
    widths = [max(len(h), *(len(d[i]) for d in data)) if data else len(h) for i, h in enumerate(head)]
    lines = []
    for row in [head] + data:
        cells = [c.ljust(widths[i]) for i, c in enumerate(row[:-1])] + [row[-1]]
        lines.append("  ".join(cells).rstrip())
    return "\n".join(lines) + "\n"
