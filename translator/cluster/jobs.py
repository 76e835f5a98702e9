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

from translator.cluster import LABEL_HASH, LABEL_SCRIPT, SELECTOR, ClusterError
from translator.cluster.answers import NAMESPACE, TRAINJOB, TRAINJOB_DELETED, TRAINJOB_LIST
from translator.cluster.client import Cluster, HttpError, _seg
from translator.cluster.errors import Rejection, path_segment_problem, rejection
from translator.jsondata import as_dict, as_list
from translator.naming import ANNOTATION_SOURCE


PAGE_SIZE = 500  # TrainJobs per list request (a page of them is a few MiB, under the 16 MiB cap)
MAX_PAGES = 1000  # a list longer than 500,000 TrainJobs is not believed (K920)


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
    conds = [c for c in as_list(status.get("conditions")) if isinstance(c, dict)]
    by_type = {c.get("type"): c for c in conds if isinstance(c.get("type"), str)}
    for ctype, state in (("Failed", "FAILED"), ("Complete", "COMPLETE"), ("Suspended", "SUSPENDED")):
        c = by_type.get(ctype)
        if c is not None and _true(c):
            return state, str(c.get("reason") or "")
    c = by_type.get("Created")
    if c is not None and _true(c):
        active = sum(
            j["active"]
            for j in as_list(status.get("jobsStatus"))
            if isinstance(j, dict) and isinstance(j.get("active"), int) and not isinstance(j.get("active"), bool)
        )
        return ("RUNNING" if active else "CREATED"), str(c.get("reason") or "")
    return "PENDING", ""


def _gpu_count(qty) -> int | None:
    text = str(qty)
    if not (text.isdigit() and len(text) <= 9):  # a whole number of devices; a server's odd value is not shown
        return None
    return int(text)


def row_of(obj: dict) -> JobRow:
    # every level through as_dict: the server's object may have any shape below metadata.name
    meta = as_dict(obj.get("metadata"))
    spec = as_dict(obj.get("spec"))
    trainer = as_dict(spec.get("trainer"))
    ann = as_dict(meta.get("annotations"))
    labels = as_dict(meta.get("labels"))
    nodes = trainer.get("numNodes")
    nodes = nodes if isinstance(nodes, int) and not isinstance(nodes, bool) and 0 <= nodes < 10**9 else None
    per_node = None
    limits = as_dict(as_dict(trainer.get("resourcesPerNode")).get("limits"))
    requests = as_dict(as_dict(trainer.get("resourcesPerNode")).get("requests"))
    for key, qty in list(limits.items()) + list(requests.items()):
        if str(key).endswith("/gpu"):
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
        runtime=str(as_dict(spec.get("runtimeRef")).get("name") or ""),
        created=meta.get("creationTimestamp") if isinstance(meta.get("creationTimestamp"), str) else None,
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
    """TrainJobs labelled by slurm2kf. A refused list raises ListError (its Rejection); so does an empty
    list of a namespace that does not exist (K905: the API server lists an unknown namespace as empty)."""
    ns = None if all_namespaces else (namespace or cluster.namespace)
    if ns and path_segment_problem(ns):
        raise ListError(namespace_missing(cluster, ns) or Rejection("K905", 0, ns))
    items: list[dict] = []
    cont = None
    tokens: set[str] = set()
    path = cluster.trainjobs_path(ns)
    for _page in range(MAX_PAGES):
        query = [("labelSelector", SELECTOR), ("limit", str(PAGE_SIZE))]
        if cont:
            query.append(("continue", cont))
        try:
            resp = cluster.request("GET", path, query=query, expect=TRAINJOB_LIST)
        except HttpError as err:
            raise ListError(rejection(err, verb="list", namespace=ns, name=None, cluster=cluster)) from None
        items.extend(resp.body["items"])  # TRAINJOB_LIST: a list of objects with metadata.name
        cont = resp.body["metadata"].get("continue")
        if not cont:
            break
        if cont in tokens:  # the API server's tokens move on: a repeated one would be an endless list
            raise ClusterError("K919", f"{cluster.where} answered GET {path} with a list whose continue token repeats")
        tokens.add(cont)
    else:
        raise ClusterError(
            "K920",
            f"{cluster.where} answered GET {path} with a list that did not end after {MAX_PAGES:,} pages of "
            f"{PAGE_SIZE} TrainJobs; slurm2kf reads at most that many",
        )
    if ns and not items:
        missing = namespace_missing(cluster, ns)
        if missing is not None:
            raise ListError(missing)
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


def namespace_missing(cluster: Cluster, ns: str) -> Rejection | None:
    """K905 when the namespace does not exist; None when it does or cannot be told (e.g. a user who
    may list TrainJobs but not get namespaces)."""
    bad = path_segment_problem(ns)
    if bad:  # no namespace has such a name (and the URL would not address one: the server's 404 is no Status)
        return Rejection("K905", 0, f"namespace {ns!r} does not exist on {cluster.server}: a namespace name {bad}")
    try:
        cluster.request("GET", f"/api/v1/namespaces/{_seg(ns)}", expect=NAMESPACE)
    except HttpError as err:
        if err.status == 404:
            return rejection(err, verb="get", namespace=ns, name=None, cluster=cluster)
    return None


def cancel(cluster: Cluster, namespace: str | None, name: str) -> Rejection | None:
    """Delete one TrainJob (background propagation: it goes at once, the garbage collector then removes
    its JobSet and pods). None when deleted."""
    ns = namespace or cluster.namespace
    try:
        cluster.request(
            "DELETE",
            cluster.trainjobs_path(ns, name),
            body={"kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": "Background"},
            expect=TRAINJOB_DELETED,
        )
    except HttpError as err:
        return rejection(err, verb="delete", namespace=ns, name=name, cluster=cluster)
    return None


def get_job(cluster: Cluster, namespace: str | None, name: str):
    """(object, None) or (None, Rejection)."""
    ns = namespace or cluster.namespace
    if path_segment_problem(ns):
        return None, namespace_missing(cluster, ns)
    bad = path_segment_problem(name)
    if bad:  # no TrainJob has such a name; asking for it would address another URL
        return None, Rejection("K914", 0, f"TrainJob {ns}/{name} not found: a TrainJob name {bad}")
    try:
        return cluster.request("GET", cluster.trainjobs_path(ns, name), expect=TRAINJOB).body, None
    except HttpError as err:
        rej = rejection(err, verb="get", namespace=ns, name=name, cluster=cluster)
        if rej.code == "K914":  # not found: say so when it is the namespace that is missing
            rej = namespace_missing(cluster, ns) or rej
        return None, rej


def table(rows: list[JobRow], *, all_namespaces: bool, now=None) -> str:
    """The `squeue`-like table. Every cell comes from the server, so each is made terminal-safe (control
    sequences shown as escapes) before the columns are measured."""
    from translator.fsio import terminal_safe

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
        cells = ([r.namespace] if all_namespaces else []) + [
            r.name,
            r.state,
            "-" if r.nodes is None else str(r.nodes),
            "-" if r.gpus is None else str(r.gpus),
            r.runtime,
            r.age(now),
            script or "-",
            r.why,
        ]
        data.append([" ".join(terminal_safe(c).split()) for c in cells])  # newlines and tabs too
    widths = [max(len(h), *(len(d[i]) for d in data)) if data else len(h) for i, h in enumerate(head)]
    lines = []
    for row in [head] + data:
        cells = [c.ljust(widths[i]) for i, c in enumerate(row[:-1])] + [row[-1]]
        lines.append("  ".join(cells).rstrip())
    return "\n".join(lines) + "\n"
