"""What the validator needs to know about a training runtime: its ML policy and its jobs/containers.

The shipped ClusterTrainingRuntimes of Kubeflow Trainer v2.3.0 are described here by hand (from
their manifests: policy, replicated jobs, container names); more can be read from
(Cluster)TrainingRuntime manifests given on the command line or placed in the same file.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from translator.jsondata import as_dict

# Env names the controller sets for a policy; the trainer webhook rejects them in spec.trainer.env.
RESERVED_ENV = {
    "torch": ("PET_NNODES", "PET_NPROC_PER_NODE", "PET_NODE_RANK", "PET_MASTER_ADDR", "PET_MASTER_PORT"),
    "mpi": (
        "OMPI_MCA_orte_default_hostfile",
        "OMPI_MCA_plm_rsh_args",
        "OMPI_MCA_orte_keep_fqdn_hostnames",
        "OMPI_MCA_orte_set_default_slots",
    ),
    "xgboost": ("DMLC_TRACKER_URI", "DMLC_TRACKER_PORT", "DMLC_TASK_ID", "DMLC_NUM_WORKER"),
}
# Set by the JAX plugin (not webhook-checked, but a value given here would fight the controller).
CONTROLLER_ENV = {
    "jax": ("JAX_NUM_PROCESSES", "JAX_PROCESS_ID", "JAX_COORDINATOR_ADDRESS"),
}


@dataclass(frozen=True)
class RuntimeInfo:
    name: str
    policy: str  # torch | mpi | jax | xgboost | flux | plain
    jobs: dict[str, tuple[str, ...]] = field(default_factory=dict)  # job -> containers
    init_containers: dict[str, tuple[str, ...]] = field(default_factory=dict)
    kind: str = "ClusterTrainingRuntime"
    # job -> volume names the pods get from the runtime; None when the controller or the runtime may add
    # volumes this description does not know (MPI ssh/hostfile, volumeClaimPolicies)
    volumes: dict[str, tuple[str, ...]] | None = None
    num_nodes: int = 1  # mlPolicy.numNodes (the node count when the TrainJob sets none)
    launcher_as_node: bool = False  # mlPolicy.mpi.runLauncherAsNode: the launcher is one of the nodes


_NODE: dict[str, tuple[str, ...]] = {"node": ("node",)}
# volumes the MPI plugin adds: the SSH key Secret on every pod, the hostfile ConfigMap on the launcher
_MPI_VOLUMES: dict[str, tuple[str, ...]] = {"node": ("mpi-ssh-auth",), "launcher": ("mpi-ssh-auth", "mpi-hostfile")}
_MPI: dict[str, tuple[str, ...]] = {"node": ("node",), "launcher": ("node",)}
_TORCHTUNE: dict[str, tuple[str, ...]] = {
    "dataset-initializer": ("dataset-initializer",),
    "model-initializer": ("model-initializer",),
    "node": ("node",),
}

SHIPPED = {
    r.name: r
    for r in (
        RuntimeInfo("torch-distributed", "torch", _NODE, volumes={"node": ()}),
        RuntimeInfo(
            "torch-distributed-with-cache",
            "torch",
            {"dataset-initializer": ("dataset-initializer",), "node": ("node",)},
        ),
        RuntimeInfo("deepspeed-distributed", "mpi", _MPI, volumes=_MPI_VOLUMES, launcher_as_node=True),
        RuntimeInfo("mlx-distributed", "mpi", _MPI, volumes=_MPI_VOLUMES, launcher_as_node=True),
        RuntimeInfo("jax-distributed", "jax", _NODE, volumes={"node": ()}),
        RuntimeInfo("xgboost-distributed", "xgboost", _NODE, volumes={"node": ()}),
        RuntimeInfo("torchtune-llama3.2-1b", "torch", _TORCHTUNE),
        RuntimeInfo("torchtune-llama3.2-3b", "torch", _TORCHTUNE),
        RuntimeInfo("torchtune-qwen2.5-1.5b", "torch", _TORCHTUNE),
    )
}


def runtime_from_manifest(doc) -> RuntimeInfo | None:
    """RuntimeInfo of a (Cluster)TrainingRuntime manifest, or None if ``doc`` is not one."""
    if not isinstance(doc, dict) or doc.get("kind") not in ("ClusterTrainingRuntime", "TrainingRuntime"):
        return None
    name = str((doc.get("metadata") or {}).get("name") or "")
    spec = as_dict(doc.get("spec"))
    ml = as_dict(spec.get("mlPolicy"))
    policy = next((p for p in ("torch", "mpi", "jax", "xgboost", "flux") if p in ml), "plain")
    jobs: dict[str, tuple[str, ...]] = {}
    inits: dict[str, tuple[str, ...]] = {}
    volumes: dict[str, tuple[str, ...]] = {}
    tmpl = as_dict(spec.get("template"))
    for rj in (tmpl.get("spec") or {}).get("replicatedJobs") or []:
        if not isinstance(rj, dict):
            continue
        pod = (((rj.get("template") or {}).get("spec") or {}).get("template") or {}).get("spec") or {}
        jobs[str(rj.get("name"))] = tuple(
            str(c.get("name")) for c in pod.get("containers") or [] if isinstance(c, dict)
        )
        inits[str(rj.get("name"))] = tuple(
            str(c.get("name")) for c in pod.get("initContainers") or [] if isinstance(c, dict)
        )
        volumes[str(rj.get("name"))] = tuple(
            str(v.get("name")) for v in pod.get("volumes") or [] if isinstance(v, dict)
        )
    if policy == "mpi":
        for job, extra in _MPI_VOLUMES.items():
            if job in volumes:
                volumes[job] = volumes[job] + extra
    exact = policy != "flux" and not (tmpl.get("spec") or {}).get("volumeClaimPolicies")
    nodes = ml.get("numNodes")
    return RuntimeInfo(
        name,
        policy,
        jobs,
        inits,
        kind=str(doc.get("kind")),
        volumes=volumes if exact else None,
        num_nodes=nodes if isinstance(nodes, int) and not isinstance(nodes, bool) else 1,
        launcher_as_node=as_dict(ml.get("mpi")).get("runLauncherAsNode") is True,
    )


def pods_per_job(info: RuntimeInfo | None, num_nodes: int | None) -> dict[str, int]:
    """replicatedJob -> pod count of a TrainJob with ``num_nodes`` nodes (None: the runtime's default).

    The job named `node` runs the nodes (trainer pkg/runtime: numNodes is the pod count of the trainer
    job); on an MPI runtime whose launcher is a node (runLauncherAsNode) it runs numNodes - 1 of them,
    at least one (trainer pkg/runtime/framework/plugins/mpi). Every other job (launcher, initializers)
    runs one pod: the Trainer webhook requires `replicas: 1` and the runtimes run one completion.
    A runtime this validator does not know is taken as the one `node` job.
    """
    nodes = num_nodes if num_nodes is not None else (info.num_nodes if info is not None else 1)
    jobs = tuple(info.jobs) if info is not None and info.jobs else ("node",)
    out = {}
    for job in jobs:
        if job != "node":
            out[job] = 1
        elif info is not None and info.policy == "mpi" and info.launcher_as_node and "launcher" in jobs:
            out[job] = max(nodes - 1, 1)
        else:
            out[job] = max(nodes, 1)
    return out
