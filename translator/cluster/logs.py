"""`slurm2kf logs`: the pods of a TrainJob, their logs, and why there are none yet.

A TrainJob's pods carry the JobSet labels (the JobSet is named like the TrainJob; kubernetes-sigs/jobset
api/jobset/v1alpha2 constants): `jobset.sigs.k8s.io/jobset-name=<trainjob>`,
`jobset.sigs.k8s.io/replicatedjob-name=<job>` and, from the Job controller of an Indexed Job,
`batch.kubernetes.io/job-completion-index=<i>` (the node rank the Trainer gives PET_NODE_RANK). Node N is
the pod of index N of the `node` replicatedJob; by default `logs` shows the `launcher` pod where there is
one (MPI runtimes: mpirun's output), else node 0 (as the SDK's `get_job_logs(step="node-0")`).

When there is nothing to show, one line says why, from what the API server holds:
  * the TrainJob is suspended: with a `kueue.x-k8s.io/queue-name` label it waits for Kueue's admission
    (Kueue suspends the job until its Workload is admitted), else `spec.suspend` is set;
  * its conditions: Failed (e.g. DeadlineExceeded), Created=False (the JobSet could not be created),
    Complete (the pods are gone); no condition at all: the Trainer controller has not made the JobSet
    (for instance because the name is too long for JobSet's pod names: V748);
  * a pod not placed on a node (condition PodScheduled=False: Unschedulable, or no scheduler yet), or a
    container waiting (ErrImagePull, ImagePullBackOff, CreateContainerConfigError, ...).
The logs themselves come from the node's kubelet through the API server; a server without kubelets
answers with an error, which is reported as K931.
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass, field
from typing import Any

from translator.cluster.client import Cluster
from translator.jsondata import as_dict, as_list

LABEL_JOBSET = "jobset.sigs.k8s.io/jobset-name"
LABEL_REPLICATED_JOB = "jobset.sigs.k8s.io/replicatedjob-name"
LABEL_RESTART = "jobset.sigs.k8s.io/restart-attempt"
LABEL_INDEX = "batch.kubernetes.io/job-completion-index"
LABEL_QUEUE = "kueue.x-k8s.io/queue-name"
NODE_JOB = "node"
LAUNCHER_JOB = "launcher"
_SINCE = re.compile(r"^(\d+)([smhd]?)$")
_UNIT = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}
# container waiting reasons that mean the pod will not start by itself
BAD_WAITING = (
    "ErrImagePull",
    "ImagePullBackOff",
    "InvalidImageName",
    "CreateContainerConfigError",
    "CreateContainerError",
    "CrashLoopBackOff",
    "RunContainerError",
)


class LogsError(Exception):
    """The logs cannot be shown: ``code`` (K9xx), one-line ``message``, exit status ``exit_code``."""

    def __init__(self, code: str, message: str, exit_code: int = 1) -> None:
        super().__init__(message)
        self.code, self.message, self.exit_code = code, " ".join(str(message).split()), exit_code


@dataclass
class PodView:
    name: str
    job: str  # replicatedJob
    index: int | None  # job completion index (node rank for the `node` job)
    restart: int  # JobSet restart attempt
    node_name: str  # spec.nodeName ('' = not scheduled)
    phase: str
    created: str
    waiting: list[tuple[str, str, str]] = field(default_factory=list)  # (container, reason, message)
    unschedulable: str = ""  # PodScheduled=False message
    containers: tuple[str, ...] = ()

    @property
    def container(self) -> str | None:
        """The trainer container `node` (every shipped runtime's), else the only one."""
        return "node" if "node" in self.containers or not self.containers else self.containers[0]

    @property
    def label(self) -> str:
        return f"{self.job}-{self.index}" if self.index is not None else self.job

    def problem(self) -> str:
        """Why this pod has no logs to give (empty when it may have)."""
        for cont, reason, message in self.waiting:
            if reason in BAD_WAITING:
                return f"pod {self.name}: container {cont} is waiting: {reason}" + (f": {message}" if message else "")
        if not self.node_name:
            if self.unschedulable:
                return f"pod {self.name} is not scheduled: {self.unschedulable}"
            return f"pod {self.name} is Pending: no node has been assigned to it yet"
        for cont, reason, message in self.waiting:
            return f"pod {self.name}: container {cont} is waiting: {reason}" + (f": {message}" if message else "")
        return ""


def pod_view(pod: dict) -> PodView:
    meta, spec, status = as_dict(pod.get("metadata")), as_dict(pod.get("spec")), as_dict(pod.get("status"))
    labels = as_dict(meta.get("labels"))
    ann = as_dict(meta.get("annotations"))
    index_text = str(labels.get(LABEL_INDEX, ann.get(LABEL_INDEX, "")))
    restart = str(labels.get(LABEL_RESTART, "0"))
    view = PodView(
        name=str(meta.get("name") or ""),
        job=str(labels.get(LABEL_REPLICATED_JOB) or ""),
        index=int(index_text) if index_text.isdigit() else None,
        restart=int(restart) if restart.isdigit() else 0,
        node_name=str(spec.get("nodeName") or ""),
        phase=str(status.get("phase") or "Pending"),
        created=str(meta.get("creationTimestamp") or ""),
        containers=tuple(str(as_dict(c).get("name")) for c in as_list(spec.get("containers"))),
    )
    for cs in as_list(status.get("initContainerStatuses")) + as_list(status.get("containerStatuses")):
        waiting = as_dict(as_dict(as_dict(cs).get("state")).get("waiting"))
        if waiting.get("reason"):
            view.waiting.append((str(cs.get("name")), str(waiting["reason"]), str(waiting.get("message") or "")))
    for cond in as_list(status.get("conditions")):
        c = as_dict(cond)
        if c.get("type") == "PodScheduled" and str(c.get("status")).lower() == "false":
            view.unschedulable = f"{c.get('reason') or 'Unschedulable'}: {c.get('message') or ''}".rstrip(": ")
    return view


def _true(cond: dict) -> bool:
    return str(cond.get("status", "")).lower() == "true"


def job_reason(obj: dict) -> str:
    """Why a TrainJob has no running pods, from the TrainJob alone ('' when nothing says why)."""
    meta, spec = as_dict(obj.get("metadata")), as_dict(obj.get("spec"))
    conds = {c.get("type"): c for c in as_list(as_dict(obj.get("status")).get("conditions")) if isinstance(c, dict)}
    failed = conds.get("Failed")
    if failed is not None and _true(failed):
        return f"the TrainJob failed ({failed.get('reason') or 'Failed'}): {failed.get('message') or ''}".rstrip(": ")
    done = conds.get("Complete")
    if done is not None and _true(done):
        return "the TrainJob is complete; its pods may have been removed"
    queue = as_dict(meta.get("labels")).get(LABEL_QUEUE)
    suspended = conds.get("Suspended")
    if spec.get("suspend") is True or (suspended is not None and _true(suspended)):
        if queue:
            return f"Kueue admission pending: suspended until Kueue admits it from queue {queue}"
        return "suspended (spec.suspend is true): resume it to start its pods"
    created = conds.get("Created")
    if created is not None and not _true(created):
        return f"JobSet creation failed ({created.get('reason') or 'Created=False'}): {created.get('message') or ''}"
    if created is None:
        why = "the Trainer controller has not created its JobSet yet (no status)"
        too_long = _name_problem(obj)
        return f"{why}; {too_long}" if too_long else why
    return ""


KUEUE_WORKLOADS = ("/apis/kueue.x-k8s.io/v1beta2", "/apis/kueue.x-k8s.io/v1beta1")


def kueue_detail(cluster: Cluster, obj: dict) -> str:
    """What Kueue's Workload of a TrainJob says about its admission ('' when there is none, or Kueue is
    not installed, or it may not be read). Kueue labels the Workload `kueue.x-k8s.io/job-uid=<uid>`
    (kueue.sigs.k8s.io, "Troubleshooting Jobs"); its QuotaReserved condition (False: not admitted yet)
    and Evicted condition carry the reason in words."""
    from translator.cluster.client import HttpError

    meta = as_dict(obj.get("metadata"))
    ns, uid = meta.get("namespace"), meta.get("uid")
    if not ns or not uid:
        return ""
    for base in KUEUE_WORKLOADS:
        try:
            body = cluster.request(
                "GET",
                f"{base}/namespaces/{_seg(ns)}/workloads",
                query=[("labelSelector", f"kueue.x-k8s.io/job-uid={uid}")],
            ).body
        except HttpError:
            continue  # this version is not served, or Kueue is not installed, or not allowed
        for wl in as_list(as_dict(body).get("items")):
            text = workload_text(as_dict(wl))
            if text:
                return text
        return ""
    return ""


def workload_text(wl: dict) -> str:
    """`workload NAME: <why it is not admitted>` from a Kueue Workload, '' when it is admitted."""
    name = as_dict(wl.get("metadata")).get("name") or "?"
    conds = {c.get("type"): c for c in as_list(as_dict(wl.get("status")).get("conditions")) if isinstance(c, dict)}
    evicted = conds.get("Evicted")
    if evicted is not None and _true(evicted):
        return f"workload {name} was evicted ({evicted.get('reason') or 'Evicted'}): {evicted.get('message') or ''}"
    admitted = conds.get("Admitted")
    if admitted is not None and _true(admitted):
        return ""
    quota = conds.get("QuotaReserved")
    if quota is not None and not _true(quota):
        return f"workload {name} is pending: {quota.get('message') or quota.get('reason') or 'no quota reserved'}"
    return f"workload {name} is not admitted yet"


def _name_problem(obj: dict) -> str:
    from translator.validate.rules import check_pod_names
    from translator.validate.runtimes import SHIPPED

    spec = as_dict(obj.get("spec"))
    info = SHIPPED.get(str(as_dict(spec.get("runtimeRef")).get("name")))
    meta = {"name": as_dict(obj.get("metadata")).get("name")}
    found = check_pod_names(meta, spec, info) if info is not None else []
    return f"it never will: {found[0][3]} (V748)" if found else ""


def reason_of(obj: dict, pods: list[PodView]) -> str:
    """The REASON of `jobs` and the line `logs` prints when it has nothing to show."""
    why = job_reason(obj)
    if why or not pods:
        return why
    latest = _latest(pods)
    bad = [p for p in latest if any(reason in BAD_WAITING for _, reason, _ in p.waiting)]
    for p in bad + latest:
        text = p.problem()
        if text:
            return text
    return ""


def short_reason(obj: dict, pods: list[PodView]) -> str:
    """`jobs`'s REASON: a few words of reason_of (the full text is what `logs` prints)."""
    meta, spec = as_dict(obj.get("metadata")), as_dict(obj.get("spec"))
    conds = {c.get("type"): c for c in as_list(as_dict(obj.get("status")).get("conditions")) if isinstance(c, dict)}
    for ctype in ("Failed", "Complete"):
        c = conds.get(ctype)
        if c is not None and _true(c):
            return str(c.get("reason") or ctype)
    queue = as_dict(meta.get("labels")).get(LABEL_QUEUE)
    suspended = conds.get("Suspended")
    if spec.get("suspend") is True or (suspended is not None and _true(suspended)):
        return f"Kueue admission pending (queue {queue})" if queue else "suspended"
    created = conds.get("Created")
    if created is not None and not _true(created):
        return f"JobSet creation failed ({created.get('reason') or 'Created=False'})"
    if created is None:
        return "no JobSet: name too long for its pods (V748)" if _name_problem(obj) else "no JobSet yet"
    latest = _latest(pods)
    for p in latest:  # a container that will not start by itself first: it needs a fix
        for _cont, reason, _ in p.waiting:
            if reason in BAD_WAITING:
                return f"{reason} ({p.label})"
    for p in latest:
        if not p.node_name:
            return f"Unschedulable ({p.label})" if p.unschedulable else f"not scheduled ({p.label})"
    return ""


def _latest(pods: list[PodView]) -> list[PodView]:
    """The pods of the newest JobSet restart attempt (older attempts' pods may linger)."""
    if not pods:
        return []
    top = max(p.restart for p in pods)
    return sorted((p for p in pods if p.restart == top), key=lambda p: (p.job, p.index or 0, p.created))


def list_pods(cluster: Cluster, namespace: str | None, name: str | None = None) -> list[dict]:
    """The pods of one TrainJob (``name``) or of every JobSet (``None``) in ``namespace`` (None: all)."""
    selector = f"{LABEL_JOBSET}={name}" if name else LABEL_JOBSET
    path = f"/api/v1/namespaces/{_seg(namespace)}/pods" if namespace else "/api/v1/pods"
    items: list[dict] = []
    cont = None
    while True:
        query = [("labelSelector", selector), ("limit", "500")]
        if cont:
            query.append(("continue", cont))
        body = cluster.request("GET", path, query=query).body
        body = body if isinstance(body, dict) else {}
        items.extend(i for i in as_list(body.get("items")) if isinstance(i, dict))
        cont = as_dict(body.get("metadata")).get("continue")
        if not cont:
            return items


def _seg(text: str) -> str:
    from translator.cluster.client import _seg as seg

    return seg(text)


def pods_by_job(pods: list[dict]) -> dict[tuple[str, str], list[PodView]]:
    """(namespace, jobset name) -> its pods."""
    out: dict[tuple[str, str], list[PodView]] = {}
    for pod in pods:
        meta = as_dict(pod.get("metadata"))
        key = (str(meta.get("namespace") or ""), str(as_dict(meta.get("labels")).get(LABEL_JOBSET) or ""))
        out.setdefault(key, []).append(pod_view(pod))
    return out


def choose(pods: list[PodView], node: int | None, all_nodes: bool) -> list[PodView]:
    """The pods to show: all of the newest attempt, node ``node``, or the default one (module doc)."""
    latest = _latest(pods)
    if all_nodes:
        return latest
    if node is not None:
        found = [p for p in latest if p.job == NODE_JOB and p.index == node]
        if not found:
            count = sum(1 for p in latest if p.job == NODE_JOB)
            raise LogsError(
                "K932", f"no pod of node {node}: the TrainJob's `node` job has {count} pod(s) (indexes 0-{count - 1})"
            )
        return found[-1:]
    for job, index in ((LAUNCHER_JOB, None), (NODE_JOB, 0)):
        found = [p for p in latest if p.job == job and (index is None or p.index == index)]
        if found:
            return found[-1:]
    return latest[:1]


def parse_since(text: str | None) -> int | None:
    """`--since 90s|15m|2h|1d` (a number alone is seconds) -> seconds."""
    if text is None:
        return None
    m = _SINCE.match(text.strip())
    if not m or int(m.group(1)) <= 0:
        raise ValueError(f"--since {text!r}: give a positive duration such as 30s, 15m, 2h or 1d")
    return int(m.group(1)) * _UNIT[m.group(2)]


@dataclass
class LogRequest:
    namespace: str
    follow: bool = False
    tail: int | None = None
    since: int | None = None
    prefix: bool = False  # `[node-1] ` before every line (several pods)


def stream(cluster: Cluster, pods: list[PodView], req: LogRequest, write) -> list[LogsError]:
    """Write the logs of ``pods`` line by line through ``write(text)``; one thread per pod when
    following several. Returns the pods' problems (K931), each also written as a line."""
    errors: list[LogsError] = []
    lock = threading.Lock()

    def one(p: PodView) -> None:
        problem = p.problem()
        err: LogsError | None
        if problem:
            err = LogsError("K930", f"no logs yet: {problem}")
        else:
            err = _read(cluster, p, req, lock, write)
        if err is not None:
            with lock:
                errors.append(err)

    if req.follow and len(pods) > 1:
        threads = [threading.Thread(target=one, args=(p,), daemon=True) for p in pods]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    else:
        for p in pods:
            one(p)
    return errors


def _read(cluster: Cluster, p: PodView, req: LogRequest, lock, write) -> LogsError | None:
    from kubernetes import client as kclient
    from kubernetes.client.exceptions import ApiException

    from translator.cluster.client import transport_error

    api = kclient.CoreV1Api(cluster.api)
    kwargs: dict[str, Any] = {"follow": req.follow, "_preload_content": False}
    if req.tail is not None:
        kwargs["tail_lines"] = req.tail
    if req.since is not None:
        kwargs["since_seconds"] = req.since
    if not req.follow:
        kwargs["_request_timeout"] = cluster.timeout
    prefix = f"[{p.label}] " if req.prefix else ""
    try:
        resp = api.read_namespaced_pod_log(p.name, req.namespace, container=p.container, **kwargs)
        pending = b""
        for chunk in resp.stream(4096):
            pending += chunk
            *lines, pending = pending.split(b"\n")
            if lines:
                with lock:
                    for line in lines:
                        write(prefix + line.decode("utf-8", "replace"))
        if pending:
            with lock:
                write(prefix + pending.decode("utf-8", "replace"))
    except ApiException as exc:
        if not exc.status:
            raise transport_error(exc, cluster) from None
        return LogsError("K931", _log_refusal(p, exc))
    except Exception as exc:  # noqa: BLE001 - urllib3/socket errors: the cluster is unusable (exit 2)
        raise transport_error(exc, cluster) from None
    return None


def _log_refusal(p: PodView, exc) -> str:
    import json

    text = exc.body.decode("utf-8", "replace") if isinstance(exc.body, bytes) else str(exc.body or "")
    try:
        message = str(json.loads(text).get("message") or text)
    except (ValueError, AttributeError):
        message = text or str(exc.reason or "")
    return (
        f"the API server could not fetch the logs of pod {p.name} from the kubelet of node "
        f"{p.node_name or '?'} (HTTP {exc.status}: {message[:300]}); the logs come from the node, "
        "so a cluster without kubelets (or an unreachable node) has none to give"
    )
