"""Rules beyond the CRD schema: ObjectMeta as the apiserver checks it, and the Trainer webhook.

Each check returns ``(code, severity, path, message)`` tuples; the caller adds file lines.
The webhook rules are those of Kubeflow Trainer v2.3.0's TrainJob validating webhook that can be
decided from the document and the runtime's shape (policy, jobs, containers); rules about the pods
the controller will build (resource names and quantities, env names) are included because a TrainJob
that breaks them is accepted but never starts.
"""

from __future__ import annotations

import re
from typing import Any

from translator.jsondata import as_dict, as_list
from translator.validate.quantity import parse_quantity
from translator.validate.runtimes import CONTROLLER_ENV, RESERVED_ENV, RuntimeInfo

Problem = tuple[str, str, tuple, str]

_DNS1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_DNS1123_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_QUALIFIED_NAME = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
_LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
_PATH_SEGMENT = re.compile(r"^[A-Za-z0-9/\-._~%!$&'()*+,;=:]+$")

_OBJECT_META_FIELDS = {
    "name",
    "generateName",
    "namespace",
    "labels",
    "annotations",
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "ownerReferences",
    "finalizers",
    "managedFields",
    "selfLink",
}
_SERVER_SET = (
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "managedFields",
    "selfLink",
)
_STANDARD_RESOURCES = ("cpu", "memory", "ephemeral-storage", "storage")
_NO_ENV_PATCH_CONTAINERS = ("node", "dataset-initializer", "model-initializer")


def dns_subdomain_problem(value: str) -> str | None:
    if len(value) > 253:
        return "must be no more than 253 characters"
    if not _DNS1123_SUBDOMAIN.match(value):
        return "must be a lowercase RFC 1123 subdomain (a-z, 0-9, '-', '.'; start and end alphanumeric)"
    return None


def qualified_name_problem(key: str) -> str | None:
    """Kubernetes 'qualified name': optional DNS-subdomain prefix + '/' + name of <= 63 chars."""
    prefix, slash, name = key.rpartition("/")
    if slash:
        if not prefix:
            return "prefix before '/' must not be empty"
        p = dns_subdomain_problem(prefix)
        if p:
            return f"prefix {prefix!r} {p}"
    if not name:
        return "name part must not be empty"
    if len(name) > 63:
        return "name part must be no more than 63 characters"
    if not _QUALIFIED_NAME.match(name):
        return "name part must be alphanumeric, '-', '_' or '.', starting and ending alphanumeric"
    return None


def domain_prefixed_path_problem(value: str) -> str | None:
    host, slash, path = value.partition("/")
    if not slash:
        return "must be a domain-prefixed path such as example.com/my-tool"
    p = dns_subdomain_problem(host)
    if p:
        return f"domain {host!r} {p}"
    if not path or not _PATH_SEGMENT.match(path):
        return "path after the domain must be non-empty and use only URL path characters"
    return None


def check_metadata(meta: Any) -> list[Problem]:
    out: list[Problem] = []
    base = ("metadata",)
    if not isinstance(meta, dict):
        return [("V730", "error", base, "metadata must be a mapping with at least a name")]
    for key in meta:
        if key not in _OBJECT_META_FIELDS:
            out.append(("V710", "error", base + (key,), f"unknown field metadata.{key}"))
        elif key == "resourceVersion":
            out.append(
                ("V730", "error", base + (key,), "metadata.resourceVersion must not be set on an object to be created")
            )
        elif key in _SERVER_SET:
            out.append(("V730", "warning", base + (key,), f"metadata.{key} is set by the server; leave it out"))
    name, gen = meta.get("name"), meta.get("generateName")
    if name is None and gen is None:
        out.append(("V730", "error", base, "metadata.name (or generateName) is required"))
    for key in ("name", "generateName"):
        v = meta.get(key)
        if v is None:
            continue
        if not isinstance(v, str):
            out.append(("V730", "error", base + (key,), f"metadata.{key} must be a string"))
            continue
        check = v if key == "name" else (v[:58] + "abcde")
        p = dns_subdomain_problem(check)
        if p:
            out.append(("V730", "error", base + (key,), f"metadata.{key} {v!r} {p}"))
    ns = meta.get("namespace")
    if ns is not None:
        if not isinstance(ns, str) or len(ns) > 63 or not _DNS1123_LABEL.match(ns):
            out.append(
                (
                    "V730",
                    "error",
                    base + ("namespace",),
                    f"metadata.namespace {ns!r} must be a lowercase RFC 1123 label of at most 63 characters",
                )
            )
    for kind in ("labels", "annotations"):
        m = meta.get(kind)
        if m is None:
            continue
        if not isinstance(m, dict):
            out.append(("V730", "error", base + (kind,), f"metadata.{kind} must be a mapping of strings"))
            continue
        total = 0
        for k, v in m.items():
            path = base + (kind, k)
            # annotation keys are checked lower-cased (apimachinery ValidateAnnotations:
            # IsQualifiedName(strings.ToLower(k))); label keys as written (ValidateLabels)
            p = qualified_name_problem(str(k).lower() if kind == "annotations" else str(k))
            if p:
                out.append(("V730", "error", path, f"{kind[:-1]} key {k!r}: {p}"))
            if not isinstance(v, str):
                out.append(
                    (
                        "V730",
                        "error",
                        path,
                        f"{kind[:-1]} {k!r}: value must be a string, not {type(v).__name__} (quote it)",
                    )
                )
                continue
            total += len(str(k)) + len(v)
            if kind == "labels" and (len(v) > 63 or not _LABEL_VALUE.match(v)):
                out.append(
                    (
                        "V730",
                        "error",
                        path,
                        f"label {k!r}: value {v!r} must be at most 63 characters, "
                        "alphanumeric, '-', '_' or '.', starting and ending alphanumeric",
                    )
                )
        if kind == "annotations" and total > 256 * 1024:
            out.append(("V730", "error", base + (kind,), "annotations total size must be at most 256 KiB"))
    return out


def _env_list(value) -> list[tuple[int, dict]]:
    return [(i, e) for i, e in enumerate(value) if isinstance(e, dict)] if isinstance(value, list) else []


def check_trainer(spec: dict, runtime: RuntimeInfo | None, version: str = "2.3") -> list[Problem]:
    from translator.validate.versions import reserved_env

    out: list[Problem] = []
    trainer = spec.get("trainer")
    if not isinstance(trainer, dict):
        return out
    base = ("spec", "trainer")
    for i, env in _env_list(trainer.get("env")):
        name = env.get("name")
        path = base + ("env", i, "name")
        if not isinstance(name, str):
            continue
        if not name or "=" in name or not all(ch.isprintable() for ch in name):
            out.append(
                ("V747", "error", path, f"env name {name!r} is not valid for a container (empty, '=' or non-printable)")
            )
        policies = [runtime.policy] if runtime else list(RESERVED_ENV)
        for policy in policies:
            if name in reserved_env(policy, version):
                sev = "error" if runtime else "warning"
                why = f"runtime {runtime.name} ({policy} policy)" if runtime else f"{policy} runtimes (runtime unknown)"
                if name not in RESERVED_ENV.get(policy, ()):
                    why += f" from Trainer {version} on"
                out.append(("V740", sev, path, f"env {name} is reserved: the controller sets it for {why}"))
            if name in CONTROLLER_ENV.get(policy, ()):
                out.append(
                    (
                        "V740",
                        "warning",
                        path,
                        f"env {name} is set by the controller for the {policy} policy; this value conflicts with it",
                    )
                )
        if "value" in env and "valueFrom" in env:
            out.append(("V747", "error", base + ("env", i), f"env {name}: set either value or valueFrom, not both"))
    res = trainer.get("resourcesPerNode")
    if isinstance(res, dict):
        out += check_resources(res, base + ("resourcesPerNode",))
    return out + _unbounded_counts(trainer, version)


def _unbounded_counts(trainer: dict, version: str) -> list[Problem]:
    """V750: Trainer 2.3 has no lower bound on numNodes / numProcPerNode (kubeflow/trainer #3805; the
    rules came with #3809, released with 2.4), so the API server stores a value the pods cannot use."""
    if version != "2.3":
        return []
    out: list[Problem] = []
    for key, low in (("numNodes", 0), ("numProcPerNode", 1)):
        value = trainer.get(key)
        if isinstance(value, int) and not isinstance(value, bool) and value < low:
            out.append(
                (
                    "V750",
                    "warning",
                    ("spec", "trainer", key),
                    f"{key} {value}: Trainer 2.3 accepts it (no lower bound before trainer #3809, released "
                    f"with 2.4, which requires >= {low}), but the controller passes it to the pods and the "
                    "job fails when it starts (trainer #3805)",
                )
            )
    return out


def namespace_problem(ns: str) -> str | None:
    """Why `ns` is not a namespace the API server accepts (V730), or None."""
    if len(ns) > 63 or not _DNS1123_LABEL.match(ns):
        return f"{ns!r} must be a lowercase RFC 1123 label of at most 63 characters"
    return None


def resource_name_problem(k: str) -> str | None:
    """Why `k` is not a resource name the API server accepts in resources (V743), or None."""
    if k in _STANDARD_RESOURCES or k.startswith("hugepages-") or k.startswith("requests."):
        return None
    if "/" not in k:
        return (
            f"resource name {k!r} is neither a standard resource (cpu, memory, ephemeral-storage, "
            "hugepages-*) nor domain-qualified like nvidia.com/gpu"
        )
    p = qualified_name_problem(k)
    return f"resource name {k!r}: {p}" if p else None


def check_resources(res: dict, base: tuple) -> list[Problem]:
    out: list[Problem] = []
    requests = as_dict(res.get("requests"))
    limits = as_dict(res.get("limits"))
    for part, m in (("requests", requests), ("limits", limits)):
        for key, qty in m.items():
            path = base + (part, key)
            k = str(key)
            standard = k in _STANDARD_RESOURCES or k.startswith("hugepages-") or k.startswith("requests.")
            if not standard:
                if "/" not in k:
                    out.append(
                        (
                            "V743",
                            "error",
                            path,
                            f"resource name {k!r} is neither a standard resource "
                            "(cpu, memory, ephemeral-storage, hugepages-*) nor "
                            "domain-qualified like nvidia.com/gpu",
                        )
                    )
                    continue
                p = qualified_name_problem(k)
                if p:
                    out.append(("V743", "error", path, f"resource name {k!r}: {p}"))
                    continue
            amount = parse_quantity(qty)
            if amount is None:
                continue  # the schema's Quantity pattern reports it
            if amount < 0:
                out.append(("V743", "error", path, f"{k}: quantity {qty!r} must not be negative"))
            if not standard and not k.startswith("kubernetes.io/") and amount != amount.to_integral_value():
                out.append(("V743", "error", path, f"{k}: extended resources must be whole numbers, not {qty!r}"))
    for k, lim in limits.items():
        if k in requests:
            r, lm = parse_quantity(requests[k]), parse_quantity(lim)
            if r is not None and lm is not None:
                extended = str(k) not in _STANDARD_RESOURCES and not str(k).startswith("hugepages-")
                if extended and r != lm:
                    out.append(
                        (
                            "V743",
                            "error",
                            base + ("requests", k),
                            f"{k}: extended resources need requests == limits ({requests[k]!r} vs {lim!r})",
                        )
                    )
                elif r > lm:
                    out.append(
                        (
                            "V743",
                            "error",
                            base + ("requests", k),
                            f"{k}: request {requests[k]!r} is more than the limit {lim!r}",
                        )
                    )
    for k in requests:
        ks = str(k)
        if "/" in ks and not ks.startswith("kubernetes.io/") and k not in limits and not ks.startswith("hugepages-"):
            out.append(
                (
                    "V743",
                    "error",
                    base + ("requests", k),
                    f"{k}: an extended resource needs a limit equal to its request",
                )
            )
    return out


def check_patches(spec: dict, runtime: RuntimeInfo | None) -> list[Problem]:
    out: list[Problem] = []
    patches = spec.get("runtimePatches")
    if not isinstance(patches, list):
        return out
    patch_volumes: dict[Any, set] = {}  # job -> volume names all patches add
    mounts: list[tuple[Any, tuple, str]] = []  # (job, path, volume name)
    for i, patch in enumerate(patches):
        if not isinstance(patch, dict):
            continue
        base = ("spec", "runtimePatches", i)
        manager = patch.get("manager")
        if isinstance(manager, str):
            p = domain_prefixed_path_problem(manager)
            if p:
                out.append(("V742", "error", base + ("manager",), f"manager {manager!r} {p}"))
        jobs = (
            (((patch.get("trainingRuntimeSpec") or {}).get("template") or {}).get("spec") or {}).get("replicatedJobs")
            if isinstance(patch.get("trainingRuntimeSpec"), dict)
            else None
        )
        if not isinstance(jobs, list):
            continue
        for j, rj in enumerate(jobs):
            if not isinstance(rj, dict):
                continue
            jpath = base + ("trainingRuntimeSpec", "template", "spec", "replicatedJobs", j)
            jname = rj.get("name") if isinstance(rj.get("name"), str) else None
            if runtime is not None and runtime.jobs and jname not in runtime.jobs:
                out.append(
                    (
                        "V744",
                        "error",
                        jpath + ("name",),
                        f"replicated job {jname!r} does not exist in runtime {runtime.name} "
                        f"(it has: {', '.join(runtime.jobs)})",
                    )
                )
            try:
                pod = rj["template"]["spec"]["template"]["spec"]
            except (KeyError, TypeError):
                continue
            if not isinstance(pod, dict):
                continue
            ppath = jpath + ("template", "spec", "template", "spec")
            for vol in as_list(pod.get("volumes")):
                if isinstance(vol, dict) and isinstance(vol.get("name"), str):
                    patch_volumes.setdefault(jname, set()).add(vol["name"])
            known_names: tuple[tuple[str, ...] | None, tuple[str, ...] | None] = (None, None)
            if runtime is not None and jname is not None:  # the runtime's container names for this job
                known_names = (runtime.jobs.get(jname), runtime.init_containers.get(jname))
            for field, known in zip(("containers", "initContainers"), known_names):
                for c, cont in enumerate(as_list(pod.get(field))):
                    if not isinstance(cont, dict):
                        continue
                    cname = cont.get("name") if isinstance(cont.get("name"), str) else None
                    mounts_list = as_list(cont.get("volumeMounts"))
                    for m, mount in enumerate(mounts_list):
                        if isinstance(mount, dict) and isinstance(mount.get("name"), str):
                            mounts.append((jname, ppath + (field, c, "volumeMounts", m, "name"), mount["name"]))
                    if field == "containers" and cname in _NO_ENV_PATCH_CONTAINERS and cont.get("env"):
                        out.append(
                            (
                                "V741",
                                "error",
                                ppath + (field, c, "env"),
                                f"env in a runtime patch of container {cname!r} is rejected by the "
                                "webhook; use spec.trainer.env",
                            )
                        )
                    if runtime is not None and known is not None and runtime.jobs and cname not in known:
                        out.append(
                            (
                                "V744",
                                "error",
                                ppath + (field, c, "name"),
                                f"{field[:-1]} {cname!r} does not exist in job {jname!r} of runtime {runtime.name}",
                            )
                        )
    for jname, path, vol in mounts:
        if vol in patch_volumes.get(jname, set()):
            continue
        if runtime is not None and runtime.volumes is not None:
            if vol in runtime.volumes.get(jname, ()):
                continue
            out.append(
                (
                    "V746",
                    "error",
                    path,
                    f"volumeMount {vol!r}: no volume of that name in job {jname!r} "
                    f"of runtime {runtime.name} or in the runtime patches",
                )
            )
        else:
            out.append(
                (
                    "V746",
                    "warning",
                    path,
                    f"volumeMount {vol!r}: no volume of that name in the runtime "
                    "patches; it must come from the runtime",
                )
            )
    return out


def check_runtime_ref(spec: dict) -> list[Problem]:
    ref = spec.get("runtimeRef")
    if not isinstance(ref, dict):
        return []
    out: list[Problem] = []
    if ref.get("apiGroup") not in (None, "trainer.kubeflow.org"):
        out.append(
            (
                "V744",
                "error",
                ("spec", "runtimeRef", "apiGroup"),
                f"unsupported runtime apiGroup {ref.get('apiGroup')!r} (must be trainer.kubeflow.org)",
            )
        )
    if ref.get("kind") not in (None, "ClusterTrainingRuntime", "TrainingRuntime"):
        out.append(
            (
                "V744",
                "error",
                ("spec", "runtimeRef", "kind"),
                f"unsupported runtime kind {ref.get('kind')!r} (ClusterTrainingRuntime or TrainingRuntime)",
            )
        )
    return out


def check_pod_names(meta: dict, spec: dict, runtime: RuntimeInfo | None) -> list[Problem]:
    """V748: the TrainJob's name (or generateName plus the 5 characters the API server adds) leaves its
    longest pod name over 63 characters, so JobSet's webhook refuses the JobSet and the TrainJob never
    starts (see translator/naming.py for the rule and its source)."""
    from translator.naming import GENERATED, MAX, longest_pod_name, name_room
    from translator.validate.runtimes import pods_per_job

    name, key = meta.get("name"), "name"
    if not isinstance(name, str):
        gen = meta.get("generateName")
        if not isinstance(gen, str):
            return []
        name, key = gen[: MAX - GENERATED] + "x" * GENERATED, "generateName"
    nodes = as_dict(spec.get("trainer")).get("numNodes")
    nodes = nodes if isinstance(nodes, int) and not isinstance(nodes, bool) else None
    pods = pods_per_job(runtime, nodes)
    longest = longest_pod_name(name, pods)
    if len(longest) <= MAX:
        return []
    ref = as_dict(spec.get("runtimeRef")).get("name")
    which = f"runtime {runtime.name}" if runtime else f"runtime {ref!r} (not known: taken as one `node` job)"
    room = name_room(pods, generated=key == "generateName")
    what = "generated name" if key == "generateName" else "name"
    return [
        (
            "V748",
            "error" if runtime else "warning",
            ("metadata", key),
            f"the TrainJob's {what} is too long for its pods on {which}: the longest pod name "
            f"{longest!r} (JobSet's random part written -abcde) has {len(longest)} characters, over 63, so "
            f"JobSet refuses the JobSet and the TrainJob never starts; use a {key} of at most {room} characters",
        )
    ]


def check_runtime_version(spec: dict, runtime: RuntimeInfo | None, version: str) -> list[Problem]:
    """V749: under Trainer 2.4 a runtime's replicatedJob names are at most 20 characters (#4394)."""
    from translator.validate.versions import MAX_REPLICATED_JOB_NAME, long_job_names

    if runtime is None:
        return []
    long = long_job_names(runtime.jobs, version)
    if not long:
        return []
    return [
        (
            "V749",
            "error",
            ("spec", "runtimeRef", "name"),
            f"runtime {runtime.name} has replicatedJob names over {MAX_REPLICATED_JOB_NAME[version]} "
            f"characters ({', '.join(repr(j) for j in long)}), which Trainer {version} refuses (trainer #4394)",
        )
    ]
