"""The trainer plan: CommandTrainer's parameters plus what a TrainJob needs, and the findings.

Emitters (translator/emit/*) render a TrainerPlan and nothing else; they never re-read the script.
All Kubernetes values are kept in API (camelCase) form so YAML and SDK code render them the same way.
"""

from __future__ import annotations

from dataclasses import dataclass

from translator.diagnostics import Finding

# The records below are frozen dataclasses whose `__init__` is written out (a class's own `__init__` is
# kept by @dataclass): it fills the instance's __dict__ in one update, where the generated one calls
# object.__setattr__ once per field. Same parameters, defaults and errors; tests/test_plan_fast_paths.py
# compares each with the generated one.


@dataclass(frozen=True)
class EnvVar:
    name: str
    value: str
    line: int | None = None  # source line of the export, if any
    # a secret (by name or by shape): never written in clear text; the pods read it from this Secret key
    # (spec.trainer.env valueFrom.secretKeyRef) and `value` is empty
    secret_name: str | None = None
    secret_key: str | None = None

    def __init__(
        self,
        name: str,
        value: str,
        line: int | None = None,
        secret_name: str | None = None,
        secret_key: str | None = None,
    ):
        self.__dict__.update(name=name, value=value, line=line, secret_name=secret_name, secret_key=secret_key)


@dataclass(frozen=True)
class PodPatch:
    """What one replicated job of the runtime gets through `spec.runtimePatches` (SDK: RuntimePatch).

    Only fields that both the CRD's PodSpecPatch and SDK 0.5's PodSpecPatch/ContainerPatch carry.
    """

    job: str = "node"  # replicatedJob name in the runtime
    container: str = "node"  # container receiving volume mounts
    node_selector: tuple[tuple[str, str], ...] = ()
    tolerations: tuple[dict, ...] = ()  # core/v1 Toleration dicts (camelCase)
    affinity: dict | None = None  # core/v1 Affinity dict (camelCase)
    volumes: tuple[dict, ...] = ()  # core/v1 Volume dicts (camelCase)
    volume_mounts: tuple[dict, ...] = ()  # core/v1 VolumeMount dicts for `container`
    image_pull_secrets: tuple[str, ...] = ()
    service_account_name: str | None = None
    # pod template metadata.annotations (e.g. Kueue's podset topology annotations, translator/plan/topology.py)
    annotations: tuple[tuple[str, str], ...] = ()

    def __init__(
        self,
        job: str = "node",
        container: str = "node",
        node_selector: tuple[tuple[str, str], ...] = (),
        tolerations: tuple[dict, ...] = (),
        affinity: dict | None = None,
        volumes: tuple[dict, ...] = (),
        volume_mounts: tuple[dict, ...] = (),
        image_pull_secrets: tuple[str, ...] = (),
        service_account_name: str | None = None,
        annotations: tuple[tuple[str, str], ...] = (),
    ):
        self.__dict__.update(
            job=job,
            container=container,
            node_selector=node_selector,
            tolerations=tolerations,
            affinity=affinity,
            volumes=volumes,
            volume_mounts=volume_mounts,
            image_pull_secrets=image_pull_secrets,
            service_account_name=service_account_name,
            annotations=annotations,
        )

    def is_empty(self) -> bool:
        return not (
            self.node_selector
            or self.tolerations
            or self.affinity
            or self.volumes
            or self.volume_mounts
            or self.image_pull_secrets
            or self.service_account_name
            or self.annotations
        )


@dataclass(frozen=True)
class SourceMap:
    """Which script lines a plan field came from (for the report's side-by-side view)."""

    field: str  # e.g. "spec.trainer.numNodes", "spec.trainer.command"
    lines: tuple[int, ...]
    status: str  # "mapped" | "approximated" | "dropped" | "unsupported"

    def __init__(self, field: str, lines: tuple[int, ...], status: str):
        self.__dict__.update(field=field, lines=lines, status=status)


@dataclass(frozen=True)
class TrainerPlan:
    # --- identity ---
    name: str  # metadata.name (RFC 1035 label, <= 63)
    source_path: str
    job_name: str  # Slurm job name as sbatch resolved it
    namespace: str | None = None
    labels: tuple[tuple[str, str], ...] = ()
    annotations: tuple[tuple[str, str], ...] = ()
    # --- runtime ---
    runtime: str = "torch-distributed"  # runtimeRef.name (ClusterTrainingRuntime)
    runtime_kind: str = "ClusterTrainingRuntime"
    # the runtime object to create beside the TrainJob (batch mode's TrainingRuntime, API form), or None
    runtime_document: dict | None = None
    framework: str = "torch"  # torch | mpi | jax | plain (runtime's ML policy)
    launcher: str = "python"  # launcher family that produced the command
    # --- CommandTrainer parameters ---
    image: str | None = None  # None = the runtime's own image (emitters resolve it)
    command: tuple[str, ...] = ()  # the launcher command, before package installs are added
    args: tuple[str, ...] = ()
    packages: tuple[str, ...] = ()  # pip requirement specs (or `-r FILE`) to install first
    pip_index_urls: tuple[str, ...] = ()
    pip_extra_args: tuple[str, ...] = ()
    env: tuple[EnvVar, ...] = ()
    num_nodes: int = 1
    proc_per_node: int | None = None  # rendered into the command (SDK 0.5 cannot set numProcPerNode)
    resources_per_node: tuple[tuple[str, str], ...] = ()  # (k8s resource name, quantity string)
    # --- job-level ---
    active_deadline_seconds: int | None = None
    patches: tuple[PodPatch, ...] = ()
    array_index: int | None = None  # set when --array-mode=expand produced this plan
    # --- review ---
    findings: tuple[Finding, ...] = ()
    source_map: tuple[SourceMap, ...] = ()

    def __init__(
        self,
        name: str,
        source_path: str,
        job_name: str,
        namespace: str | None = None,
        labels: tuple[tuple[str, str], ...] = (),
        annotations: tuple[tuple[str, str], ...] = (),
        runtime: str = "torch-distributed",
        runtime_kind: str = "ClusterTrainingRuntime",
        runtime_document: dict | None = None,
        framework: str = "torch",
        launcher: str = "python",
        image: str | None = None,
        command: tuple[str, ...] = (),
        args: tuple[str, ...] = (),
        packages: tuple[str, ...] = (),
        pip_index_urls: tuple[str, ...] = (),
        pip_extra_args: tuple[str, ...] = (),
        env: tuple[EnvVar, ...] = (),
        num_nodes: int = 1,
        proc_per_node: int | None = None,
        resources_per_node: tuple[tuple[str, str], ...] = (),
        active_deadline_seconds: int | None = None,
        patches: tuple[PodPatch, ...] = (),
        array_index: int | None = None,
        findings: tuple[Finding, ...] = (),
        source_map: tuple[SourceMap, ...] = (),
    ):
        self.__dict__.update(
            name=name,
            source_path=source_path,
            job_name=job_name,
            namespace=namespace,
            labels=labels,
            annotations=annotations,
            runtime=runtime,
            runtime_kind=runtime_kind,
            runtime_document=runtime_document,
            framework=framework,
            launcher=launcher,
            image=image,
            command=command,
            args=args,
            packages=packages,
            pip_index_urls=pip_index_urls,
            pip_extra_args=pip_extra_args,
            env=env,
            num_nodes=num_nodes,
            proc_per_node=proc_per_node,
            resources_per_node=resources_per_node,
            active_deadline_seconds=active_deadline_seconds,
            patches=patches,
            array_index=array_index,
            findings=findings,
            source_map=source_map,
        )

    @property
    def can_run(self) -> bool:
        """False when an error-level finding means the job cannot run as converted."""
        return not any(f.severity == "error" for f in self.findings)
