"""Create TrainJobs: plain create, server-side dry run, or server-side apply; many over one client.

Every request asks for strict field validation (an unknown or duplicated field is an error, as with
`kubectl`) and names the field manager `slurm2kf`. The first request goes alone, so an unreachable
cluster is reported once; the rest go over a few threads sharing the client's connection pool.
"""

from __future__ import annotations

import copy
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from translator.cluster import FIELD_MANAGER, GROUP, VERSION, ClusterError
from translator.cluster.answers import TRAINING_RUNTIME, TRAINJOB
from translator.cluster.client import Cluster, HttpError
from translator.cluster.errors import Cause, Rejection, path_segment_problem, rejection
from translator.cluster.objects import Item

MAX_GENERATED_BASE = 58  # the apiserver keeps at most 58 characters of generateName, then adds 5


@dataclass
class Outcome:
    item: Item
    namespace: str
    name: str | None = None  # the stored (or generated) name
    action: str = ""  # created | configured | unchanged | validated
    rejection: Rejection | None = None
    warnings: list[str] = field(default_factory=list)
    body: dict | None = None  # the server's answer (the object as stored / would be stored)

    @property
    def ok(self) -> bool:
        return self.rejection is None


def generate_name_base(name: str, body: dict | None = None) -> str:
    """`train-a` -> `train-a-` (the server appends 5 random characters: a unique name per submit).
    With the TrainJob ``body``, short enough that JobSet accepts its pod names (translator/naming.py)."""
    limit = MAX_GENERATED_BASE
    if body is not None:
        from translator.jsondata import as_dict
        from translator.naming import name_room
        from translator.validate.runtimes import SHIPPED, pods_per_job

        spec = as_dict(body.get("spec"))
        nodes = as_dict(spec.get("trainer")).get("numNodes")
        info = SHIPPED.get(str(as_dict(spec.get("runtimeRef")).get("name")))
        pods = pods_per_job(info, nodes if isinstance(nodes, int) and not isinstance(nodes, bool) else None)
        limit = min(limit, name_room(pods, generated=True))
    base = name[: max(limit, 2) - 1].rstrip("-")
    return base + "-"


def _query(dry_run: bool) -> list:
    q = [("fieldManager", FIELD_MANAGER), ("fieldValidation", "Strict")]
    if dry_run:
        q.append(("dryRun", "All"))
    return q


def submit_one(
    cluster: Cluster,
    item: Item,
    *,
    dry_run: bool = False,
    apply: bool = False,
    generate_name: bool = False,
    namespace: str | None = None,
) -> Outcome:
    """One item; HttpError -> Outcome.rejection; ClusterError propagates (the cluster is unusable)."""
    ns = item.namespace or namespace or cluster.namespace
    body = copy.deepcopy(item.body)
    meta = body.setdefault("metadata", {})
    name = item.name
    if namespace and item.namespace and namespace != item.namespace:
        return Outcome(
            item,
            ns,
            name,
            rejection=Rejection(
                "K916",
                0,
                f"the TrainJob's metadata.namespace {item.namespace!r} differs from --namespace "
                f"{namespace!r}; drop one of them",
            ),
        )
    for what, value in (("metadata.name", name), ("metadata.namespace", ns)):
        bad = path_segment_problem(value) if isinstance(value, str) else None
        if bad:  # refused here, as the server refuses it: it could not even be addressed in a URL
            return Outcome(
                item,
                ns,
                name,
                rejection=Rejection(
                    "K907",
                    0,
                    f"{what} {value!r} {bad}",
                    [Cause(what, f"Invalid value: {value!r}: {bad}", *item.locate(what))],
                ),
            )
    meta["namespace"] = ns
    if generate_name and name:
        meta.pop("name", None)
        meta["generateName"] = generate_name_base(name, body)
    out = Outcome(item, ns, name)
    if item.runtime is not None:  # batch mode: the TrainJob's own TrainingRuntime, created first
        refused = _ensure_runtime(cluster, item, ns, dry_run=dry_run, apply=apply)
        if refused is not None:
            out.rejection = refused
            return out
    try:
        if apply:
            before = _get_rv(cluster, ns, name)
            resp = cluster.request(
                "PATCH",
                cluster.trainjobs_path(ns, name),
                query=_query(dry_run),
                body=body,
                content_type="application/apply-patch+yaml",
                expect=TRAINJOB,
            )
            rv = resp.body["metadata"].get("resourceVersion")
            out.action = (
                ("validated" if dry_run else "created")
                if before is None
                else ("unchanged" if rv == before else ("validated" if dry_run else "configured"))
            )
        else:
            resp = cluster.request(
                "POST", cluster.trainjobs_path(ns), query=_query(dry_run), body=body, expect=TRAINJOB
            )
            out.action = "validated" if dry_run else "created"
        # TRAINJOB: the server's answer is the stored (or, dry run, the checked) TrainJob with its name
        out.warnings = resp.warnings
        out.body = resp.body
        out.name = resp.body["metadata"]["name"]
    except HttpError as err:
        verb = "patch" if apply else "create"
        out.rejection = rejection(err, verb=verb, namespace=ns, name=name, cluster=cluster, locate=item.locate)
    return out


def _ensure_runtime(cluster: Cluster, item: Item, ns: str, *, dry_run: bool, apply: bool) -> Rejection | None:
    """Create (or, with --apply, apply) the TrainingRuntime a batch-mode TrainJob refers to; one that exists
    already is kept on create (another submission of the same script made it). A refusal names the runtime."""
    body = copy.deepcopy(item.runtime or {})
    meta = body.setdefault("metadata", {})
    meta["namespace"] = ns
    rname = str(meta.get("name") or "")
    path = runtimes_path(ns, rname if apply else None)
    try:
        if apply:
            cluster.request(
                "PATCH",
                path,
                query=_query(dry_run),
                body=body,
                content_type="application/apply-patch+yaml",
                expect=TRAINING_RUNTIME,
            )
        else:
            cluster.request("POST", path, query=_query(dry_run), body=body, expect=TRAINING_RUNTIME)
    except HttpError as err:
        if err.status == 409 and not apply:
            return None  # AlreadyExists: the same runtime from an earlier submission
        rej = rejection(err, verb="patch" if apply else "create", namespace=ns, name=rname, cluster=cluster)
        return Rejection(rej.code, rej.status, f"TrainingRuntime {rname}: {rej.message}", rej.causes)
    return None


def runtimes_path(ns: str, name: str | None = None) -> str:
    from urllib.parse import quote

    path = f"/apis/{GROUP}/{VERSION}/namespaces/{quote(ns, safe='')}/trainingruntimes"
    return f"{path}/{quote(name, safe='')}" if name else path


def _get_rv(cluster: Cluster, ns: str, name: str | None) -> str | None:
    """resourceVersion of the stored TrainJob, None when there is none (apply will create it)."""
    if not name:
        return None
    try:
        resp = cluster.request("GET", cluster.trainjobs_path(ns, name), expect=TRAINJOB)
    except HttpError as err:
        if err.status == 404:
            return None
        raise
    return resp.body["metadata"].get("resourceVersion")


def submit_all(
    cluster: Cluster,
    items: list[Item],
    *,
    dry_run: bool = False,
    apply: bool = False,
    generate_name: bool = False,
    namespace: str | None = None,
    workers: int = 8,
    done: list[Outcome] | None = None,
) -> list[Outcome]:
    """All items in input order. Raises ClusterError when the cluster cannot be used at all; the
    outcomes the server did answer are then in ``done`` (when given), so what was created can still
    be reported."""
    results: list[Outcome] = done if done is not None else []
    if not items:
        return results

    def one(item):
        return submit_one(cluster, item, dry_run=dry_run, apply=apply, generate_name=generate_name, namespace=namespace)

    results.append(one(items[0]))  # alone: a dead cluster is one error, not a hundred
    rest = items[1:]
    if workers <= 1 or len(rest) <= 1:
        for i in rest:
            results.append(one(i))
        return results
    with ThreadPoolExecutor(max_workers=min(workers, len(rest))) as pool:
        futures = [pool.submit(one, i) for i in rest]
        error: ClusterError | None = None
        for f in futures:
            try:
                results.append(f.result())
            except ClusterError as exc:
                error = error or exc
        if error is not None:
            raise error
        return results
