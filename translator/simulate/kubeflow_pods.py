"""The pods Kubeflow Trainer v2.3 and the kubelet start for a TrainJob, as :class:`PodLaunch` records.

Pure data emulation; nothing runs here.  What it reproduces, with the source of each fact (``trainer:``
paths are files of github.com/kubeflow/trainer at the v2.3 line, notes in shared/docs/kubeflow-trainer.md
section b "Plugin behaviour"):

Runtime and TrainJob merge (``trainer:pkg/runtime/core/trainingruntime.go`` newRuntimeInfo,
``trainer:pkg/runtime/framework/plugins/jobset/builder.go`` Trainer):

* the JobSet is the runtime's ``template``; ``spec.runtimePatches`` are merged in list order
  (containers matched by name; a patch naming a replicatedJob or container the runtime lacks, or
  setting ``env`` on a ``node``/initializer container, is rejected by the webhook -> ``TrainJobError``);
* the replicatedJob labelled ``trainer.kubeflow.org/trainjob-ancestor-step: trainer`` is the trainer
  job; ``trainer.image/command/args`` replace those of its container ``node``; ``trainer.env`` is
  upserted (same name: replaced in place, new name: appended) and ``trainer.resourcesPerNode`` is
  merged per resource name into that container.  On MPI runtimes ``env`` and resources also go to the
  ``node`` workers, which keep the runtime's image and command (sshd) under v2.3;
* pod count of the trainer job: ``mlPolicy.numNodes`` (default 1), ``trainer.numNodes`` overriding
  it for torch, JAX, XGBoost and plain runtimes (each plugin's EnforceMLPolicy).  MPI
  (``trainer:.../plugins/mpi/mpi.go``): the ``node`` job gets ``trainer.numNodes`` pods, or
  ``max(numNodes - 1, 1)`` when ``runLauncherAsNode`` (so ``numNodes`` COUNTS the launcher, and
  ``numNodes: 1`` still gives launcher + 1 node); without ``trainer.numNodes`` it keeps its own
  parallelism (1 in the shipped runtimes); the launcher job always has 1 pod;
* pods of a replicatedJob ``R`` are ``<trainjob>-<R>-0-<i>`` (hostname; subdomain ``<trainjob>``,
  so the FQDN is ``<trainjob>-<R>-0-<i>.<trainjob>``; JobSet naming, ``jobset.go`` syncPodNetwork),
  ``i`` = the Job completion index.

Plugin env (appended after the runtime's own env, in this order):

* Torch (``plugins/torch/torch.go``), only when ``spec.trainer`` is set: ``trainer.env`` first, then
  ``PET_NNODES`` (trainer pod count), ``PET_NPROC_PER_NODE`` (``trainer.numProcPerNode``; unset ->
  ``auto`` when the node resources name a GPU (any resource name containing "gpu", requests before
  limits; ``runtime.go`` GetNumGPUPerNode), else ``max(1, CPU request, else CPU limit)`` rounded up),
  ``PET_NODE_RANK`` (completion index), ``PET_MASTER_ADDR`` (``<trainjob>-node-0-0.<trainjob>``),
  ``PET_MASTER_PORT`` (``29500``, constants.ContainerTrainerPort).  The command is not touched.
  The resources used for the process count are ``trainer.resourcesPerNode`` when set, else the
  runtime container's (trainer #3974: a TrainJob that sets only memory loses the runtime's GPUs).
* MPI/OpenMPI: launcher container gets ``OMPI_MCA_orte_default_hostfile=/etc/mpi/hostfile``,
  ``OMPI_MCA_orte_keep_fqdn_hostnames=true``, ``OMPI_MCA_orte_set_default_slots=<slots>``,
  ``OMPI_MCA_plm_rsh_args=-o ConnectionAttempts=10``, then ``trainer.env``; slots =
  ``trainer.numProcPerNode``, else ``mlPolicy.mpi.numProcPerNode`` (default 1), raised to the GPU
  count per node when it is 1 and the node has more than one GPU.  Hostfile ConfigMap mounted on the
  launcher only at ``/etc/mpi/hostfile``: one ``<pod FQDN> slots=<slots>`` line per pod of the
  ``node`` job and, with ``runLauncherAsNode``, the launcher, in the runtime's replicatedJob order
  (the shipped deepspeed/mlx runtimes list ``node`` before ``launcher``, so the launcher is LAST).
  The SSH key Secret is not emulated.
* JAX (``plugins/jax/jax.go``), when ``spec.trainer`` is set: ``trainer.env``, then
  ``JAX_NUM_PROCESSES`` (pod count), ``JAX_PROCESS_ID`` (completion index),
  ``JAX_COORDINATOR_ADDRESS`` (``<trainjob>-node-0-0.<trainjob>:29500``).
* XGBoost (``plugins/xgboost/xgboost.go``): ``DMLC_TRACKER_URI``, ``DMLC_TRACKER_PORT`` (29500),
  ``DMLC_TASK_ID`` (completion index), ``DMLC_NUM_WORKER`` (pods x GPUs per node, or pods), then
  ``trainer.env``.
* Plain runtimes (no framework policy, ``plugins/plainml``): ``trainer.env`` only.

Last, the Job controller appends ``JOB_COMPLETION_INDEX`` (the completion index) to every container that
does not define it (Indexed Jobs; kubernetes.io/docs/tasks/job/indexed-parallel-processing-static/).

Then the kubelet resolves each container's env in order and expands ``$(VAR)`` in command and args
(:mod:`translator.simulate.kubelet`).  ``valueFrom`` entries are resolved from the pod (fieldRef of the
completion index, pod name, namespace, JobSet labels) or to a visible placeholder
(``<secret NAME/KEY>``, ``<configmap NAME/KEY>``, ``<resource ...>``), since their values are not known.

Not emulated (``TrainJobError``): flux and torchtune runtimes, non-OpenMPI MPI.  Initializer jobs
(dataset/model) run no training and are left out of the result.
"""

from __future__ import annotations

import copy
import math
import os
import re
from decimal import Decimal, InvalidOperation
from collections.abc import Mapping, Sequence

from translator.jsondata import as_list
from translator.plan.batch_runtime import is_batch_runtime
from translator.simulate.kubelet import expand_argv, resolve_env
from translator.simulate.model import PodLaunch

ANCESTOR_LABEL = "trainer.kubeflow.org/trainjob-ancestor-step"
FRAMEWORK_LABEL = "trainer.kubeflow.org/framework"
COMPLETION_INDEX_FIELD = "metadata.annotations['batch.kubernetes.io/job-completion-index']"
TRAINER_PORT = 29500  # trainer:pkg/constants ContainerTrainerPort
MPI_HOSTFILE = "/etc/mpi/hostfile"  # constants MPIHostfileDir + MPIHostfileName
NODE = "node"
LAUNCHER = "launcher"

TORCH_RESERVED = ("PET_NNODES", "PET_NPROC_PER_NODE", "PET_NODE_RANK", "PET_MASTER_ADDR", "PET_MASTER_PORT")
MPI_RESERVED = (
    "OMPI_MCA_orte_default_hostfile",
    "OMPI_MCA_orte_keep_fqdn_hostnames",
    "OMPI_MCA_orte_set_default_slots",
    "OMPI_MCA_plm_rsh_args",
)
XGBOOST_RESERVED = ("DMLC_TRACKER_URI", "DMLC_TRACKER_PORT", "DMLC_TASK_ID", "DMLC_NUM_WORKER")
# containers whose env a runtimePatch may not set (jobset plugin Validate)
_ENV_PATCH_FORBIDDEN = ("node", "dataset-initializer", "model-initializer")
_INITIALIZERS = ("dataset-initializer", "model-initializer")

_DATA_DIR = os.path.join(os.path.dirname(__file__), "data", "runtimes")


class TrainJobError(ValueError):
    """The TrainJob cannot become pods: the Trainer's webhook would reject it, or it uses something the
    simulation does not emulate.  The message says which field and why."""


class TooManyPods(TrainJobError):
    """The TrainJob starts more pods than the simulation runs (`pods_from_trainjob(max_pods=...)`)."""

    def __init__(self, count: int) -> None:
        super().__init__(f"the TrainJob starts {count} pods")
        self.count = count


# ---------------------------------------------------------------------------------------------- runtimes


def load_runtimes(paths: Sequence[str] | None = None) -> dict[str, dict]:
    """The ClusterTrainingRuntimes by name: the shipped ones bundled with slurm2kf (copies of
    kubeflow/trainer manifests/base/runtimes), or the YAML files/folders in ``paths``."""
    import yaml

    files: list[str] = []
    for p in paths if paths is not None else [_DATA_DIR]:
        if os.path.isdir(p):
            files += sorted(os.path.join(p, f) for f in os.listdir(p) if f.endswith((".yaml", ".yml")))
        else:
            files.append(p)
    out: dict[str, dict] = {}
    for path in files:
        try:
            with open(path, encoding="utf-8") as fh:
                docs = list(yaml.safe_load_all(fh))
        except OSError as exc:
            raise TrainJobError(f"{path}: cannot read the runtime file: {exc.strerror or exc}") from None
        except (yaml.YAMLError, UnicodeDecodeError) as exc:
            mark = getattr(exc, "problem_mark", None)
            where = f"{path}:{mark.line + 1}" if mark is not None else path
            raise TrainJobError(
                f"{where}: not a valid runtime YAML file ({getattr(exc, 'problem', None) or exc})"
            ) from None
        for doc in docs:
            if isinstance(doc, dict) and doc.get("kind") in ("ClusterTrainingRuntime", "TrainingRuntime"):
                rname = (doc.get("metadata") or {}).get("name")
                if not isinstance(rname, str) or not rname:
                    raise TrainJobError(f"{path}: a {doc.get('kind')} without metadata.name")
                out[rname] = doc
    return out


_CACHE: dict[str, dict[str, dict]] = {}


def _shipped() -> dict[str, dict]:
    if "shipped" not in _CACHE:
        _CACHE["shipped"] = load_runtimes()
    return _CACHE["shipped"]


# ---------------------------------------------------------------------------------------------- quantities

_SUFFIX: dict[str, int | Decimal] = {
    "": 1,
    "m": Decimal("0.001"),
    "k": 10**3,
    "M": 10**6,
    "G": 10**9,
    "T": 10**12,
    "P": 10**15,
    "E": 10**18,
    "Ki": 2**10,
    "Mi": 2**20,
    "Gi": 2**30,
    "Ti": 2**40,
    "Pi": 2**50,
    "Ei": 2**60,
}
_QTY = re.compile(r"^\s*([+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)\s*(Ki|Mi|Gi|Ti|Pi|Ei|m|k|M|G|T|P|E)?\s*$")


def quantity_value(q) -> int:
    """``resource.Quantity.Value()``: the quantity rounded UP to an integer ("500m" -> 1, "1.5" -> 2)."""
    if isinstance(q, bool):
        raise TrainJobError(f"resource quantity {q!r} is not a number")
    if isinstance(q, (int, float)):
        return int(math.ceil(q))
    m = _QTY.match(str(q))
    if not m:
        raise TrainJobError(f"resource quantity {q!r} is not a Kubernetes quantity")
    try:
        value = Decimal(m.group(1)) * Decimal(_SUFFIX[m.group(2) or ""])
    except InvalidOperation:
        raise TrainJobError(f"resource quantity {q!r} is not a Kubernetes quantity") from None
    return int(value.to_integral_value(rounding="ROUND_CEILING"))


def _gpu_in(resources: Mapping) -> int:
    for name, qty in (resources or {}).items():
        if "gpu" in str(name).lower():
            return quantity_value(qty)
    return 0


def gpus_per_node(requirements: Mapping | None) -> int:
    """runtime.go GetNumGPUPerNode: a "gpu" resource in requests, else in limits."""
    req = requirements or {}
    gpus = _gpu_in(req.get("requests") or {})
    if gpus == 0:
        gpus = _gpu_in(req.get("limits") or {})
    return gpus


def visible_gpus(requirements: Mapping | None) -> int:
    """GPU devices the container sees: every extended resource whose name contains "gpu"
    (nvidia.com/gpu, amd.com/gpu, gpu.intel.com/...) plus NVIDIA MIG slices (nvidia.com/mig-<profile>,
    each one a CUDA device), from the limits (extended resources have requests == limits).  This is the
    device count, not the Trainer's own GPU detection (:func:`gpus_per_node`), which ignores MIG."""
    req = requirements or {}
    part = req.get("limits") or req.get("requests") or {}
    total = 0
    for name, qty in part.items():
        low = str(name).lower()
        if "gpu" in low or low.startswith("nvidia.com/mig-"):
            total += quantity_value(qty)
    return total


def _cpus_per_node(requirements: Mapping | None) -> int:
    """torch.go getNumCPUPerNode: the CPU request when non-zero, else the CPU limit, else 0."""
    req = requirements or {}
    request = (req.get("requests") or {}).get("cpu")
    if request is not None and quantity_value(request) != 0:
        return quantity_value(request)
    limit = (req.get("limits") or {}).get("cpu")
    return quantity_value(limit) if limit is not None else 0


def _merge_resources(base: Mapping | None, override: Mapping | None) -> dict:
    out = {"limits": dict((base or {}).get("limits") or {}), "requests": dict((base or {}).get("requests") or {})}
    for part in ("limits", "requests"):
        out[part].update((override or {}).get(part) or {})
    return out


# ---------------------------------------------------------------------------------------------- helpers


def _env_list(items, where: str) -> list[dict]:
    if items is None:
        return []
    if not isinstance(items, list):
        raise TrainJobError(f"{where} must be a list of {{name, value}} entries")
    out = []
    for i, e in enumerate(items):
        if not isinstance(e, dict) or not isinstance(e.get("name"), str) or not e["name"]:
            raise TrainJobError(f"{where}[{i}] has no name")
        out.append(copy.deepcopy(e))
    return out


def _upsert(env: list[dict], new: Sequence[dict]) -> None:
    """apply.UpsertEnvVars: same name replaced in place, new names appended."""
    for e in new:
        for i, old in enumerate(env):
            if old.get("name") == e["name"]:
                env[i] = copy.deepcopy(e)
                break
        else:
            env.append(copy.deepcopy(e))


def _dig(obj, *keys):
    """obj[k1][k2]... with a missing or non-mapping level giving {}."""
    for k in keys:
        obj = obj.get(k) if isinstance(obj, dict) else None
        if obj is None:
            return {}
    return obj if isinstance(obj, dict) else {}


def _items(value, where: str) -> list:
    """A list field (None -> []); anything else is a schema error."""
    if value is None:
        return []
    if not isinstance(value, list):
        raise TrainJobError(f"{where} must be a list (CRD schema)")
    return value


def _container(job: dict, name: str) -> dict | None:
    for c in _dig(job, "template", "spec", "template", "spec").get("containers") or []:
        if isinstance(c, dict) and c.get("name") == name:
            return c
    return None


def _pod_spec(job: dict) -> dict:
    return _dig(job, "template", "spec", "template", "spec")


def _ancestor(job: dict) -> str | None:
    return _dig(job, "template", "metadata", "labels").get(ANCESTOR_LABEL)


def _policy(ml: Mapping) -> str:
    for kind in ("torch", "mpi", "jax", "xgboost", "flux"):
        if ml.get(kind) is not None:
            return kind
    return "plain"


def _apply_patches(trainjob_spec: Mapping, jobs: list[dict]) -> None:
    """Merge spec.runtimePatches into the runtime's replicatedJobs (the subset PodSpecPatch allows that
    changes what runs: container env; other fields don't change the process and are ignored)."""
    by_name = {j.get("name"): j for j in jobs}
    for pi, patch in enumerate(trainjob_spec.get("runtimePatches") or []):
        where = f"spec.runtimePatches[{pi}]"
        rjobs = _items(
            _dig(patch, "trainingRuntimeSpec", "template", "spec").get("replicatedJobs"),
            f"{where}.trainingRuntimeSpec.template.spec.replicatedJobs",
        )
        for ri, rjob in enumerate(rjobs):
            rwhere = f"{where}.trainingRuntimeSpec.template.spec.replicatedJobs[{ri}]"
            if not isinstance(rjob, dict):
                raise TrainJobError(f"{rwhere} is not a mapping")
            if not isinstance(rjob.get("name"), str):
                raise TrainJobError(f"{rwhere}.name must be a string (CRD schema)")
            job = by_name.get(rjob.get("name"))
            if job is None:
                raise TrainJobError(
                    f"{rwhere}: the runtime has no replicatedJob {rjob.get('name')!r} "
                    "(the Trainer webhook rejects the TrainJob)"
                )
            pod = _dig(rjob, "template", "spec", "template", "spec")
            for field in ("containers", "initContainers"):
                for ci, cpatch in enumerate(_items(pod.get(field), f"{rwhere}...{field}")):
                    if not isinstance(cpatch, dict):
                        raise TrainJobError(f"{rwhere}...{field}[{ci}] is not a mapping")
                    cname = cpatch.get("name")
                    target = None
                    for c in _pod_spec(job).get(field) or []:
                        if c.get("name") == cname:
                            target = c
                    if target is None:
                        raise TrainJobError(
                            f"{rwhere}...{field}[{ci}]: the runtime's {rjob.get('name')!r} job has no "
                            f"container {cname!r} (the Trainer webhook rejects the TrainJob)"
                        )
                    if cpatch.get("env"):
                        if cname in _ENV_PATCH_FORBIDDEN:
                            raise TrainJobError(
                                f"{rwhere}...{field}[{ci}]: env of container {cname!r} cannot be set by "
                                "a runtimePatch (the Trainer webhook rejects it; use spec.trainer.env)"
                            )
                        env = as_list(target.get("env"))
                        target["env"] = env
                        _upsert(env, _env_list(cpatch["env"], f"{rwhere}...{field}[{ci}].env"))


def _check_shapes(spec: Mapping, trainer: Mapping | None) -> None:
    """The TrainJob fields this emulation reads have the CRD's types (the API server's schema check)."""

    def fail(path, what):
        raise TrainJobError(f"{path} must be {what} (CRD schema)")

    if not isinstance(spec.get("runtimePatches") or [], list):
        fail("spec.runtimePatches", "a list")
    for i, patch in enumerate(spec.get("runtimePatches") or []):
        if not isinstance(patch, dict):
            fail(f"spec.runtimePatches[{i}]", "a mapping")
    if trainer is None:
        return
    if trainer.get("image") is not None and not isinstance(trainer["image"], str):
        fail("spec.trainer.image", "a string")
    res = trainer.get("resourcesPerNode")
    if res is not None:
        if not isinstance(res, dict):
            fail("spec.trainer.resourcesPerNode", "a mapping")
        for part in ("limits", "requests"):
            values = res.get(part)
            if values is None:
                continue
            if not isinstance(values, dict):
                fail(f"spec.trainer.resourcesPerNode.{part}", "a mapping of resource name to quantity")
            for k, v in values.items():
                if not isinstance(k, str) or isinstance(v, bool) or not isinstance(v, (str, int, float)):
                    fail(f"spec.trainer.resourcesPerNode.{part}", "a mapping of resource name to quantity")
                quantity_value(v)
    for i, e in enumerate(_items(trainer.get("env"), "spec.trainer.env")):
        if not isinstance(e, dict):
            continue  # _env_list names it
        if e.get("value") is not None and not isinstance(e["value"], str):
            fail(f"spec.trainer.env[{i}].value", "a string")
        if e.get("valueFrom") is not None and not isinstance(e["valueFrom"], dict):
            fail(f"spec.trainer.env[{i}].valueFrom", "a mapping")


def _check_runtime(rt, rname: str) -> None:
    """The runtime fields this emulation reads have the (Cluster)TrainingRuntime CRD's types, so a
    malformed site runtime is an error naming the field, not a crash."""

    def need(value, types, path, what):
        if value is not None and (
            not isinstance(value, types)
            or (isinstance(value, bool) and bool not in (types if isinstance(types, tuple) else (types,)))
        ):
            raise TrainJobError(f"runtime {rname!r}: {path} must be {what}")
        return value

    def strings(value, path):
        for i, w in enumerate(need(value, list, path, "a list of strings") or []):
            need(w, str, f"{path}[{i}]", "a string")

    need(rt, dict, "the document", "a mapping")
    need(rt.get("metadata"), dict, "metadata", "a mapping")
    need(_dig(rt, "metadata").get("labels"), dict, "metadata.labels", "a mapping")
    spec = need(rt.get("spec"), dict, "spec", "a mapping") or {}
    ml = need(spec.get("mlPolicy"), dict, "spec.mlPolicy", "a mapping") or {}
    need(ml.get("numNodes"), int, "spec.mlPolicy.numNodes", "an integer")
    for kind in ("torch", "mpi", "jax", "xgboost", "flux"):
        need(ml.get(kind), dict, f"spec.mlPolicy.{kind}", "a mapping")
    mpi = ml.get("mpi") or {}
    need(mpi.get("numProcPerNode"), int, "spec.mlPolicy.mpi.numProcPerNode", "an integer")
    need(mpi.get("runLauncherAsNode"), bool, "spec.mlPolicy.mpi.runLauncherAsNode", "a boolean")
    need(mpi.get("mpiImplementation"), str, "spec.mlPolicy.mpi.mpiImplementation", "a string")
    tmpl = need(spec.get("template"), dict, "spec.template", "a mapping") or {}
    tspec = need(tmpl.get("spec"), dict, "spec.template.spec", "a mapping") or {}
    jobs = need(tspec.get("replicatedJobs"), list, "spec.template.spec.replicatedJobs", "a list") or []
    for ji, job in enumerate(jobs):
        jp = f"spec.template.spec.replicatedJobs[{ji}]"
        if not isinstance(job, dict):
            raise TrainJobError(f"runtime {rname!r}: {jp} must be a mapping")
        if not isinstance(job.get("name"), str):
            raise TrainJobError(f"runtime {rname!r}: {jp}.name must be a string")
        jt = need(job.get("template"), dict, f"{jp}.template", "a mapping") or {}
        meta = need(jt.get("metadata"), dict, f"{jp}.template.metadata", "a mapping") or {}
        need(meta.get("labels"), dict, f"{jp}.template.metadata.labels", "a mapping")
        js = need(jt.get("spec"), dict, f"{jp}.template.spec", "a mapping") or {}
        need(js.get("parallelism"), int, f"{jp}.template.spec.parallelism", "an integer")
        pt = need(js.get("template"), dict, f"{jp}.template.spec.template", "a mapping") or {}
        ps = need(pt.get("spec"), dict, f"{jp}.template.spec.template.spec", "a mapping") or {}
        for field in ("containers", "initContainers"):
            for ci, c in enumerate(need(ps.get(field), list, f"{jp}...{field}", "a list") or []):
                cp = f"{jp}...{field}[{ci}]"
                if not isinstance(c, dict):
                    raise TrainJobError(f"runtime {rname!r}: {cp} must be a mapping")
                need(c.get("name"), str, f"{cp}.name", "a string")
                need(c.get("image"), str, f"{cp}.image", "a string")
                need(c.get("workingDir"), str, f"{cp}.workingDir", "a string")
                strings(c.get("command"), f"{cp}.command")
                strings(c.get("args"), f"{cp}.args")
                res = need(c.get("resources"), dict, f"{cp}.resources", "a mapping") or {}
                for part in ("limits", "requests"):
                    for k, v in (need(res.get(part), dict, f"{cp}.resources.{part}", "a mapping") or {}).items():
                        if not isinstance(k, str) or isinstance(v, bool) or not isinstance(v, (str, int, float)):
                            raise TrainJobError(
                                f"runtime {rname!r}: {cp}.resources.{part} must map names to quantities"
                            )
                        quantity_value(v)
                for ei, e in enumerate(need(c.get("env"), list, f"{cp}.env", "a list") or []):
                    if not isinstance(e, dict) or not isinstance(e.get("name"), str) or not e["name"]:
                        raise TrainJobError(f"runtime {rname!r}: {cp}.env[{ei}] has no name")
                    need(e.get("value"), str, f"{cp}.env[{ei}].value", "a string")
                    need(e.get("valueFrom"), dict, f"{cp}.env[{ei}].valueFrom", "a mapping")


def _check_reserved(env: Sequence[dict], reserved: Sequence[str], what: str) -> None:
    bad = sorted({e["name"] for e in env if e["name"] in reserved})
    if bad:
        raise TrainJobError(
            f"spec.trainer.env sets {', '.join(bad)}, reserved by the {what} runtime "
            "(the Trainer webhook rejects the TrainJob)"
        )


def _int_field(trainer: Mapping, key: str, minimum: int) -> int | None:
    v = trainer.get(key)
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, int):
        raise TrainJobError(f"spec.trainer.{key} must be an integer, not {v!r} (CRD schema)")
    if v < minimum:
        raise TrainJobError(f"spec.trainer.{key} must be >= {minimum}, not {v} (CRD validation)")
    return v


# ---------------------------------------------------------------------------------------------- main


def pods_from_trainjob(
    trainjob: dict, runtimes: Mapping[str, dict] | None = None, max_pods: int | None = None
) -> list[PodLaunch]:
    """The containers Kubeflow Trainer v2.3 + the kubelet start for ``trainjob`` (a TrainJob as a dict),
    in JobSet order (replicatedJobs of the runtime, pods by completion index). TooManyPods when they
    would be more than ``max_pods`` (checked before any pod is built)."""
    if not isinstance(trainjob, dict):
        raise TrainJobError("the TrainJob is not a mapping")
    if not isinstance(trainjob.get("metadata") or {}, dict):
        raise TrainJobError("metadata must be a mapping")
    name = str(((trainjob.get("metadata") or {}).get("name")) or "")
    if not name:
        raise TrainJobError("metadata.name is missing")
    namespace = str((trainjob.get("metadata") or {}).get("namespace") or "default")
    spec = trainjob.get("spec") or {}
    if not isinstance(spec, dict) or not isinstance(spec.get("runtimeRef") or {}, dict):
        raise TrainJobError("spec and spec.runtimeRef must be mappings")
    ref = spec.get("runtimeRef") or {}
    rname = ref.get("name")
    if runtimes is None:
        runtimes = _shipped()
    if not isinstance(rname, str) or (runtime := runtimes.get(rname)) is None:
        raise TrainJobError(
            f"spec.runtimeRef.name {rname!r} is not a runtime the simulation knows ({', '.join(sorted(runtimes))})"
        )
    _check_runtime(runtime, rname)
    batch = is_batch_runtime(runtime)
    rspec = runtime.get("spec") or {}
    ml = rspec.get("mlPolicy") or {}
    policy = _policy(ml)
    if policy == "flux":
        raise TrainJobError(f"runtime {rname!r} uses the Flux policy, which the simulation does not emulate")
    trainer = spec.get("trainer")
    if trainer is not None and not isinstance(trainer, dict):
        raise TrainJobError("spec.trainer must be a mapping")
    tr = trainer or {}
    if tr.get("command") == ["tune", "run"] or _dig(runtime, "metadata", "labels").get(FRAMEWORK_LABEL) == "torchtune":
        raise TrainJobError(
            f"runtime {rname!r} is a torchtune (BuiltinTrainer) runtime, which the simulation does not emulate"
        )
    _check_shapes(spec, trainer)
    num_nodes = _int_field(tr, "numNodes", 0)
    nppn = _int_field(tr, "numProcPerNode", 1)
    trainer_env = _env_list(tr.get("env"), "spec.trainer.env")
    for key in ("command", "args"):
        if tr.get(key) is not None and (not isinstance(tr[key], list) or not all(isinstance(w, str) for w in tr[key])):
            raise TrainJobError(f"spec.trainer.{key} must be a list of strings")
    if policy == "torch":
        _check_reserved(trainer_env, TORCH_RESERVED, "torch")
    elif policy == "mpi":
        _check_reserved(trainer_env, MPI_RESERVED, "MPI")
    elif policy == "xgboost":
        _check_reserved(trainer_env, XGBOOST_RESERVED, "XGBoost")

    jobs: list[dict] = copy.deepcopy(_dig(rspec, "template", "spec").get("replicatedJobs") or [])
    if not isinstance(jobs, list) or not all(isinstance(j, dict) for j in jobs):
        raise TrainJobError(f"runtime {rname!r}: spec.template.spec.replicatedJobs is not a list of mappings")
    _apply_patches(spec, jobs)
    trainer_job = next((j for j in jobs if _ancestor(j) == "trainer"), None)
    trainer_node = _container(trainer_job, NODE) if trainer_job is not None else None
    if trainer_job is None or trainer_node is None:
        raise TrainJobError(
            f"runtime {rname!r} has no replicatedJob labelled {ANCESTOR_LABEL}: trainer with a container named node"
        )

    # resources the plugins read: trainer.resourcesPerNode if set, else the runtime's trainer container
    runtime_res = copy.deepcopy(trainer_node.get("resources") or {})
    res_for_plugins = tr.get("resourcesPerNode") if tr.get("resourcesPerNode") is not None else runtime_res
    gpus_plugin = gpus_per_node(res_for_plugins)

    # --- pod counts
    counts: dict[str | None, int] = {}  # replicatedJob name (as written; None if missing) -> pods
    for j in jobs:
        if j is trainer_job:
            n_pods = int(ml.get("numNodes", 1) or 1)
            if policy in ("torch", "jax", "xgboost", "plain") and num_nodes is not None:
                n_pods = num_nodes
        else:
            n_pods = int(((j.get("template") or {}).get("spec") or {}).get("parallelism", 1) or 1)
        counts[j.get("name")] = n_pods
    mpi = ml.get("mpi") or {}
    launcher_as_node = bool(mpi.get("runLauncherAsNode", False))
    if policy == "mpi":
        impl = mpi.get("mpiImplementation") or "OpenMPI"
        if impl != "OpenMPI":
            raise TrainJobError(
                f"runtime {rname!r} uses mpiImplementation {impl!r}; Trainer v2.3 supports OpenMPI only"
            )
        if num_nodes is not None and NODE in counts:
            counts[NODE] = max(num_nodes - 1, 1) if launcher_as_node else num_nodes

    if max_pods is not None and sum(counts.values()) > max_pods:
        raise TooManyPods(sum(counts.values()))

    # --- per-container env lists (before the kubelet) and command/image
    trainer_count = counts[trainer_job.get("name")]
    slots = None
    if policy == "mpi":
        slots = nppn if nppn is not None else int(mpi.get("numProcPerNode", 1) or 1)
        if nppn is None and slots == 1 and gpus_plugin > 1:
            slots = gpus_plugin

    def plugin_env_for(job: dict) -> tuple[list[dict], list[dict]]:
        """(env before trainer.env, env after trainer.env) the ML plugin adds to this job's node container."""
        is_trainer = job is trainer_job
        if policy == "torch" and is_trainer and trainer is not None:
            if nppn is not None:
                npp = str(nppn)
            elif gpus_plugin > 0:
                npp = "auto"
            else:
                npp = str(max(1, _cpus_per_node(res_for_plugins)))
            return [], [
                {"name": "PET_NNODES", "value": str(trainer_count)},
                {"name": "PET_NPROC_PER_NODE", "value": npp},
                {"name": "PET_NODE_RANK", "valueFrom": {"fieldRef": {"fieldPath": COMPLETION_INDEX_FIELD}}},
                {"name": "PET_MASTER_ADDR", "value": f"{name}-{NODE}-0-0.{name}"},
                {"name": "PET_MASTER_PORT", "value": str(TRAINER_PORT)},
            ]
        if policy == "jax" and is_trainer and trainer is not None:
            return [], [
                {"name": "JAX_NUM_PROCESSES", "value": str(trainer_count)},
                {"name": "JAX_PROCESS_ID", "valueFrom": {"fieldRef": {"fieldPath": COMPLETION_INDEX_FIELD}}},
                {"name": "JAX_COORDINATOR_ADDRESS", "value": f"{name}-{NODE}-0-0.{name}:{TRAINER_PORT}"},
            ]
        if policy == "xgboost" and is_trainer and trainer is not None:
            return [
                {"name": "DMLC_TRACKER_URI", "value": f"{name}-{NODE}-0-0.{name}"},
                {"name": "DMLC_TRACKER_PORT", "value": str(TRAINER_PORT)},
                {"name": "DMLC_TASK_ID", "valueFrom": {"fieldRef": {"fieldPath": COMPLETION_INDEX_FIELD}}},
                {"name": "DMLC_NUM_WORKER", "value": str(trainer_count * (gpus_plugin if gpus_plugin > 0 else 1))},
            ], []
        if policy == "mpi" and job.get("name") == LAUNCHER:
            return [
                {"name": "OMPI_MCA_orte_default_hostfile", "value": MPI_HOSTFILE},
                {"name": "OMPI_MCA_orte_keep_fqdn_hostnames", "value": "true"},
                {"name": "OMPI_MCA_orte_set_default_slots", "value": str(slots)},
                {"name": "OMPI_MCA_plm_rsh_args", "value": "-o ConnectionAttempts=10"},
            ], []
        return [], []

    hostfile = ""
    if policy == "mpi":
        lines = []
        for j in jobs:  # PodSets follow the runtime's replicatedJob order
            jname = j.get("name")
            if jname == NODE or (launcher_as_node and jname == LAUNCHER):
                for i in range(counts[jname]):
                    lines.append(f"{name}-{jname}-0-{i}.{name} slots={slots}\n")
        hostfile = "".join(lines)

    pods: list[PodLaunch] = []
    for j in jobs:
        jname = str(j.get("name"))
        if _ancestor(j) in _INITIALIZERS or jname in _INITIALIZERS:
            continue
        c = _container(j, NODE)
        if c is None:
            containers = _pod_spec(j).get("containers") or []
            if not containers:
                continue
            c = containers[0]
        is_trainer = j is trainer_job
        gets_trainer_env = is_trainer or (policy == "mpi" and jname == NODE)
        image = str(c.get("image") or "")
        command = [str(w) for w in (c.get("command") or [])]
        args = [str(w) for w in (c.get("args") or [])]
        resources = copy.deepcopy(c.get("resources") or {})
        if is_trainer and c.get("name") == NODE:
            if tr.get("image"):
                image = str(tr["image"])
            if tr.get("command") is not None:
                command = list(tr["command"])
            if tr.get("args") is not None:
                args = list(tr["args"])
        if gets_trainer_env and c.get("name") == NODE and tr.get("resourcesPerNode") is not None:
            resources = _merge_resources(resources, tr.get("resourcesPerNode"))
        before, after = plugin_env_for(j) if c.get("name") == NODE else ([], [])
        env = _env_list(c.get("env"), f"runtime {rname!r} {jname} container env")
        _upsert(env, before)
        if gets_trainer_env and c.get("name") == NODE:
            _upsert(env, trainer_env)
        _upsert(env, after)
        # The Job controller adds JOB_COMPLETION_INDEX (downward API of the completion-index annotation)
        # to every container of an Indexed Job's pods unless the container already defines it
        # (kubernetes.io/docs/tasks/job/indexed-parallel-processing-static/); JobSet's Jobs are Indexed.
        if not any(e.get("name") == "JOB_COMPLETION_INDEX" for e in env):
            env.append(
                {"name": "JOB_COMPLETION_INDEX", "valueFrom": {"fieldRef": {"fieldPath": COMPLETION_INDEX_FIELD}}}
            )
        gpus = visible_gpus(resources)
        for i in range(counts.get(jname, 1)):
            host = f"{name}-{jname}-0-{i}"
            pod_ctx = {"index": i, "name": host, "namespace": namespace, "jobset": name, "rjob": jname, "gpus": gpus}
            entries = [_entry(e, pod_ctx, rname) for e in env]
            final_env = tuple(resolve_env(entries))
            files: tuple[tuple[str, str], ...] = ()
            if policy == "mpi" and jname == LAUNCHER:
                files = ((MPI_HOSTFILE, hostfile),)
            pods.append(
                PodLaunch(
                    name=host,
                    role=LAUNCHER if jname == LAUNCHER else "node",
                    node=i,
                    hostname=host,
                    argv=expand_argv(command + args, final_env),
                    env=final_env,
                    gpus=gpus,
                    files=files,
                    workdir=str(c.get("workingDir") or ""),
                    image=image,
                    fqdn=f"{host}.{name}",
                    image_entrypoint=not command,
                    batch=batch,
                )
            )
    return pods


def _entry(e: dict, pod: Mapping, rname: str) -> tuple[str, str, bool]:
    """(name, text, is_literal) for kubelet.resolve_env; valueFrom resolved from the pod's facts."""
    if "valueFrom" not in e or e.get("value") not in (None, ""):
        return e["name"], str(e.get("value") if e.get("value") is not None else ""), True
    src = e.get("valueFrom") or {}
    for key in ("fieldRef", "secretKeyRef", "configMapKeyRef", "resourceFieldRef"):
        if key in src and not isinstance(src[key] or {}, dict):
            raise TrainJobError(f"env {e['name']}: valueFrom.{key} must be a mapping (CRD schema)")
    if "fieldRef" in src:
        path = str((src["fieldRef"] or {}).get("fieldPath", ""))
        fields = {
            COMPLETION_INDEX_FIELD: str(pod["index"]),
            "metadata.name": str(pod["name"]),
            "metadata.namespace": str(pod["namespace"]),
            "metadata.labels['jobset.sigs.k8s.io/jobset-name']": str(pod["jobset"]),
            "metadata.labels['jobset.sigs.k8s.io/replicatedjob-name']": str(pod["rjob"]),
            "metadata.labels['jobset.sigs.k8s.io/job-index']": "0",
            "metadata.labels['batch.kubernetes.io/job-completion-index']": str(pod["index"]),
            "spec.nodeName": f"<node of {pod['name']}>",
            "status.podIP": f"<IP of {pod['name']}>",
            "status.hostIP": f"<host IP of {pod['name']}>",
            "spec.serviceAccountName": "default",
        }
        if path not in fields:
            raise TrainJobError(f"env {e['name']}: fieldRef {path!r} is not one the simulation resolves")
        return e["name"], fields[path], False
    if "secretKeyRef" in src:
        ref = src["secretKeyRef"] or {}
        return e["name"], f"<secret {ref.get('name')}/{ref.get('key')}>", False
    if "configMapKeyRef" in src:
        ref = src["configMapKeyRef"] or {}
        return e["name"], f"<configmap {ref.get('name')}/{ref.get('key')}>", False
    if "resourceFieldRef" in src:
        ref = src["resourceFieldRef"] or {}
        return e["name"], f"<resource {ref.get('resource')}>", False
    raise TrainJobError(f"env {e['name']}: valueFrom {sorted(src)} is not one the simulation resolves")


def hostfile_of(pods: Sequence[PodLaunch]) -> str | None:
    """The MPI hostfile mounted in the launcher pod, if any."""
    for p in pods:
        for path, content in p.files:
            if path == MPI_HOSTFILE:
                return content
    return None


def training_pods(pods: Sequence[PodLaunch]) -> tuple[PodLaunch, ...]:
    """The pods in training-node order: the MPI hostfile's line order when the job has one (OpenMPI
    fills slots host by host in that order, so rank 0 runs on the first line's pod), else the trainer
    pods by completion index. In batch mode the launcher comes first: it is the batch host, Slurm's node 0,
    and the steps' srun numbers the nodes from it (plan/batch_prologue.py)."""
    hostfile = hostfile_of(pods)
    if hostfile is None:
        return tuple(p for p in pods if p.role == "node")
    by_fqdn = {p.fqdn: p for p in pods}
    out = []
    for line in hostfile.splitlines():
        host = line.split()[0] if line.split() else ""
        if host in by_fqdn:
            out.append(by_fqdn[host])
    if any(p.batch for p in out):  # batch mode: the launcher runs the batch script, so it is Slurm's node 0
        out = [p for p in out if p.role == LAUNCHER] + [p for p in out if p.role != LAUNCHER]
    return tuple(out)


def read_trainjobs(text: str, path: str = "<trainjob>") -> list[dict]:
    """The TrainJob documents of a YAML file (``simulate --trainjob FILE``).  Bad YAML or a file with no
    TrainJob raises :class:`TrainJobError` naming the file and, for YAML errors, the line."""
    import yaml

    try:
        docs = [d for d in yaml.safe_load_all(text) if d is not None]
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
        where = f"{path}:{mark.line + 1}" if mark is not None else path
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise TrainJobError(f"{where}: not valid YAML ({problem})") from None
    jobs = [d for d in docs if isinstance(d, dict) and d.get("kind") == "TrainJob"]
    if not jobs:
        raise TrainJobError(f"{path}: no TrainJob document (kind: TrainJob) in the file")
    return jobs
