"""The TrainJob object of a plan, as plain dicts/lists/str/int: what both emitters render.

The YAML emitter dumps :func:`trainjob_dict`; the SDK emitter writes Python that makes
``kubeflow==0.5.0`` build the same object.  Everything that could differ between the two is decided
here once:

* command/args: :func:`translator.emit.command.container_command`;
* env: a ``dict`` (SDK ``env: dict[str, str]``), so a name exported twice keeps its first position
  and its last value, as the SDK's dict does; values are strings; a secret is a ``secretKeyRef`` in
  the YAML, which SDK 0.5 cannot express (the SDK code reads it from the submitting shell instead);
* resources: the SDK's key normalisation (standard names lower-cased, ``gpu`` -> ``nvidia.com/gpu``),
  ``requests`` = ``limits`` = the same map, quantities as strings;
* values the SDK drops by truthiness (``num_nodes=0``, empty env/labels/annotations/patches) are
  omitted from the YAML as well;
* ``runtimeRef`` carries ``name`` and ``kind`` (never ``apiGroup``), like the SDK;
* all pod patches go into ONE ``runtimePatches`` entry with the SDK's fixed manager (two SDK
  ``RuntimePatch`` options would both get that manager and collide on the list-map key).
"""

from __future__ import annotations

from typing import NamedTuple

from translator.plan.model import PodPatch

from translator.emit.command import container_command
from translator.tables import keep

API_VERSION = "trainer.kubeflow.org/v1alpha1"
KIND = "TrainJob"
#: `RuntimePatch.manager` as SDK 0.5 always sets it (kubeflow/trainer/options/kubernetes.py).
SDK_PATCH_MANAGER = "trainer.kubeflow.org/kubeflow-sdk"

_STANDARD_RESOURCES = {"cpu", "memory", "gpu", "storage", "ephemeral-storage"}
_RESOURCE_ALIASES = {"gpu": "nvidia.com/gpu", "storage": "ephemeral-storage"}
_CONTAINER_NODE = "node"


_RESOURCE_NAMES: dict[str, str] = {}  # key -> resource_name(key): a handful of keys recur in every plan


def resource_name(key: str) -> str:
    """The resource name SDK 0.5's ``get_resources_per_node`` turns ``key`` into."""
    name = _RESOURCE_NAMES.get(key)
    if name is None:
        name = _resource_name(key)
        keep(_RESOURCE_NAMES, key, name, 1024)
    return name


def _resource_name(key: str) -> str:
    low = key.lower()
    name = low if (low in _STANDARD_RESOURCES or low.startswith("mig-")) else key
    name = _RESOURCE_ALIASES.get(name, name)
    if name.startswith("mig-"):
        name = "nvidia.com/" + name
    return name


def resources_map(plan) -> dict[str, str]:
    out: dict[str, str] = {}
    for key, qty in plan.resources_per_node:
        out[resource_name(str(key))] = str(qty)
    return out


def env_map(plan) -> dict[str, str]:
    out: dict[str, str] = {}
    for var in plan.env:
        if getattr(var, "secret_name", None):
            out.pop(str(var.name), None)  # a Secret reference (env_entries); never a value
            continue
        out[str(var.name)] = str(var.value)
    return out


def env_entries(plan) -> list[dict]:
    """spec.trainer.env in the SDK's dict order (first position, last value of a name); a secret variable
    refers to its Secret key (valueFrom.secretKeyRef), never to a value."""
    entries: dict[str, dict] = {}
    for var in plan.env:
        if getattr(var, "secret_name", None):
            entry = {
                "name": str(var.name),
                "valueFrom": {"secretKeyRef": {"name": str(var.secret_name), "key": str(var.secret_key)}},
            }
        else:
            entry = {"name": str(var.name), "value": str(var.value)}
        entries[str(var.name)] = entry
    return list(entries.values())


def _pairs(pairs) -> dict[str, str]:
    return {str(k): str(v) for k, v in pairs}


def pod_spec_patch(patches) -> dict[str, object]:
    """The PodSpecPatch dict (API camelCase) for all PodPatch entries of one replicated job."""
    spec: dict[str, object] = {}
    volumes: list[dict] = []
    mounts: dict[str, list[dict]] = {}
    node_selector: dict[str, str] = {}
    tolerations: list[dict] = []
    pull_secrets: list[dict] = []
    for p in patches:  # each field only when set (most patches carry a volume and its mount only)
        if p.service_account_name:
            spec["serviceAccountName"] = str(p.service_account_name)
        if p.volumes:
            volumes.extend([dict(v) for v in p.volumes])
        if p.volume_mounts:
            mounts.setdefault(p.container or _CONTAINER_NODE, []).extend([dict(m) for m in p.volume_mounts])
        if p.node_selector:
            node_selector.update(_pairs(p.node_selector))
        if p.tolerations:
            tolerations.extend([dict(t) for t in p.tolerations])
        if p.affinity:
            spec["affinity"] = dict(p.affinity)
        if p.image_pull_secrets:
            pull_secrets.extend([{"name": str(s)} for s in p.image_pull_secrets])
    if volumes:
        spec["volumes"] = volumes
    if mounts:
        spec["containers"] = [{"name": c, "volumeMounts": m} for c, m in mounts.items()]
    if pull_secrets:
        spec["imagePullSecrets"] = pull_secrets
    if node_selector:
        spec["nodeSelector"] = node_selector
    if tolerations:
        spec["tolerations"] = tolerations
    return spec


def patches_by_job(plan) -> dict[str, dict[str, object]]:
    """replicatedJob name -> PodSpecPatch dict, in first-seen order, empty ones left out."""
    grouped: dict[str, list] = {}
    for p in plan.patches:
        if not p.is_empty():
            grouped.setdefault(p.job or _CONTAINER_NODE, []).append(p)
    out = {}
    for job, group in grouped.items():
        spec = pod_spec_patch(group)
        if spec:
            out[job] = spec
    return out


def pod_metadata_by_job(plan) -> dict[str, dict[str, dict[str, str]]]:
    """replicatedJob name -> pod template metadata patch (``{"annotations": {...}}``), in first-seen order.
    The CRD's PodTemplatePatch and SDK 0.5's ``PodTemplatePatch.metadata`` both carry labels and annotations."""
    out: dict[str, dict[str, dict[str, str]]] = {}
    for p in plan.patches:
        if getattr(p, "annotations", None):
            meta = out.setdefault(p.job or _CONTAINER_NODE, {"annotations": {}})
            meta["annotations"].update(_pairs(p.annotations))
    return out


def patch_job_order(jobs: dict, meta: dict) -> list[str]:
    """The replicatedJob entries of the runtime patch: jobs with a pod spec patch, then those with metadata only."""
    return list(dict.fromkeys([*jobs, *meta]))


def runtime_patch(plan) -> dict | None:
    jobs = patches_by_job(plan)
    meta = pod_metadata_by_job(plan)
    if not jobs and not meta:
        return None
    replicated = []
    for job in patch_job_order(jobs, meta):
        template: dict[str, object] = {}
        if job in meta:
            template["metadata"] = meta[job]
        if job in jobs:
            template["spec"] = jobs[job]
        replicated.append({"name": job, "template": {"spec": {"template": template}}})
    return {"manager": SDK_PATCH_MANAGER, "trainingRuntimeSpec": {"template": {"spec": {"replicatedJobs": replicated}}}}


class Parts(NamedTuple):
    """What both emitters write for one plan (see `plan_parts`)."""

    command: list[str]
    args: list[str]
    env: dict  # name -> the last variable of that name, in first-seen order (what env_entries writes)
    resources: dict[str, str]  # resources_map
    jobs: dict[str, dict[str, object]]  # patches_by_job
    # `patches_key(plan.patches)`: equal keys, equal jobs, equal text (None: no key, render from jobs)
    patch_key: tuple | None = None


_LAST_PARTS: list = [None, None]  # [the plan last asked about, its Parts], read at once


def plan_parts(plan) -> Parts:
    """The container command, env entries, resources and pod patches of ``plan``. The YAML and the SDK
    emitters write the same plan one after the other: the parts of the last plan are kept, so they are
    computed once. Shared objects: the emitters only read them (`trainjob_dict` builds its own)."""
    last, parts = _LAST_PARTS
    if last is plan:
        return parts
    command, args = container_command(plan)
    env: dict = {}
    for var in plan.env:
        env[str(var.name)] = var  # first position, last variable (env_entries)
    jobs: dict = {}
    key = None
    if plan.patches:
        key = patches_key(plan.patches)
        got = _JOBS.get(key) if key is not None else None
        if got is None:
            got = patches_by_job(plan)
            if key is not None:
                keep(_JOBS, key, got, 256)
        jobs = got
    parts = Parts(command, args, env, resources_map(plan), jobs, key)
    _LAST_PARTS[:] = [plan, parts]
    return parts


# Most plans carry the same pod patches (the /dev/shm volume and its mount): patches_by_job of a key, and
# the text each emitter writes for it, are kept. A key holds every input of patches_by_job exactly: strs
# (not subclasses), None, and trees of dicts with str keys and str values (key order kept); anything else
# has no key and is rendered as ever.
_JOBS: dict[tuple, dict] = {}


class _NoKey(Exception):
    pass


def _tree_key(value) -> object:
    t = type(value)
    if t is str:
        return value
    if t is not dict:
        return _no_key()
    out = []
    for k, v in value.items():
        if type(k) is not str:
            return _no_key()
        out.append((k, v if type(v) is str else _tree_key(v)))
    return tuple(out)


def _no_key():
    raise _NoKey


def _text_key(value) -> object:
    if value is None or type(value) is str:
        return value
    return _no_key()


def patches_key(patches) -> tuple | None:
    """A hashable key that determines `patches_by_job` of a plan with these patches, or None."""
    try:
        return tuple(
            [
                (
                    _text_key(p.job),
                    _text_key(p.container),
                    tuple([(_text_key(k), _text_key(v)) for k, v in p.node_selector]) if p.node_selector else (),
                    tuple([_tree_key(t) for t in p.tolerations]) if p.tolerations else (),
                    None if p.affinity is None else _tree_key(p.affinity),
                    tuple([_tree_key(v) for v in p.volumes]) if p.volumes else (),
                    tuple([_tree_key(m) for m in p.volume_mounts]) if p.volume_mounts else (),
                    tuple([_text_key(s) for s in p.image_pull_secrets]) if p.image_pull_secrets else (),
                    _text_key(p.service_account_name),
                    tuple([(_text_key(k), _text_key(v)) for k, v in p.annotations]) if p.annotations else (),
                )
                if type(p) is PodPatch
                else _no_key()
                for p in patches
            ]
        )
    except (_NoKey, TypeError, ValueError, AttributeError):
        return None


def trainer_dict(plan) -> dict[str, object]:
    trainer: dict[str, object] = {}
    if plan.image:
        trainer["image"] = str(plan.image)
    command, args = container_command(plan)
    if command:
        trainer["command"] = command
    if args:
        trainer["args"] = args
    env = env_entries(plan)
    if env:
        trainer["env"] = env
    if plan.num_nodes:
        trainer["numNodes"] = int(plan.num_nodes)
    res = resources_map(plan)
    if res:
        trainer["resourcesPerNode"] = {"requests": dict(res), "limits": dict(res)}
    return trainer


def trainjob_dict(plan) -> dict[str, object]:
    """The TrainJob for ``plan`` (what ``kubectl apply`` gets and what the SDK code submits)."""
    metadata: dict[str, object] = {"name": str(plan.name)}
    if plan.namespace:
        metadata["namespace"] = str(plan.namespace)
    labels = _pairs(plan.labels)
    if labels:
        metadata["labels"] = labels
    annotations = _pairs(plan.annotations)
    if annotations:
        metadata["annotations"] = annotations
    spec: dict[str, object] = {"runtimeRef": {"name": str(plan.runtime), "kind": str(plan.runtime_kind)}}
    trainer = trainer_dict(plan)
    if trainer:
        spec["trainer"] = trainer
    if plan.active_deadline_seconds:
        spec["activeDeadlineSeconds"] = int(plan.active_deadline_seconds)
    patch = runtime_patch(plan)
    if patch:
        spec["runtimePatches"] = [patch]
    return {"apiVersion": API_VERSION, "kind": KIND, "metadata": metadata, "spec": spec}
