"""Topology-aware placement: `--switches` as a Kueue TAS annotation; what `--nodelist` and `--exclusive` leave.

Facts used:

* **Kueue Topology Aware Scheduling** (kueue.sigs.k8s.io, "Topology Aware Scheduling" concepts and "Run
  Workloads with Topology-Aware Scheduling"): the cluster's levels are the node labels of a Topology object,
  broadest first (e.g. `cloud.provider.com/topology-block`, `cloud.provider.com/topology-rack`,
  `kubernetes.io/hostname`). The pod template of a PodSet asks for a placement with ONE of the annotations
  `kueue.x-k8s.io/podset-required-topology` (every pod of the PodSet in one domain of that level, or the
  workload is not admitted), `kueue.x-k8s.io/podset-preferred-topology` (one domain of that level if it
  fits, else one domain of the level above, and so on; at the top the pods are spread over as few domains
  as possible) or `kueue.x-k8s.io/podset-unconstrained-topology`; the value of the first two is the node
  label of a level. Kueue's webhook refuses a pod template with more than one of them
  (pkg/controller/jobframework/tas_validation.go).
* **TrainJob PodSets** (Kueue pkg/controller/jobs/trainjob/trainjob_controller.go): Kueue builds the JobSet
  the Trainer would create from the runtime and the TrainJob *with its runtime patches*, and makes one
  PodSet per replicatedJob from that job's pod template. So the annotation goes on the pod template of
  every replicatedJob of the runtime, through `spec.runtimePatches[].trainingRuntimeSpec.template.spec.
  replicatedJobs[].template.spec.template.metadata.annotations` (the CRD's PodTemplatePatch metadata; SDK
  0.5: `PodTemplatePatch(metadata=...)`). Each PodSet is placed on its own: an MPI launcher's PodSet is
  not kept beside the node PodSet.
* **Slurm** (sbatch(1), `--switches=count[@max-time]`): with the tree topology plugin, the job wants an
  allocation under at most `count` leaf switches and waits at most `max-time` for it (capped by
  `SchedulerParameters=max_switch_wait`, 300 s by default); then it starts with whatever it gets. The
  limit is best effort, so it becomes a *preferred* topology unless the site profile says `switches:
  required` (a site whose wait is long enough to mean "always").

Decisions: `--switches=1` -> the profile's leaf-switch level (P470). `--switches=N` with N > 1 -> a
*preferred* leaf level whatever the profile says (a required leaf level would ask for one switch; Kueue
cannot bound the number of domains), with P474 saying the bound is not carried. `--nodelist` names Slurm
nodes, not Kubernetes nodes: never kept (P472). `--exclusive` means no other job on the job's nodes; the
`kubernetes.io/hostname` level means every pod of the PodSet on ONE node, which is not that, so no
annotation (P473): whole nodes come from requesting a node's resources (`partitions.<p>.node`).
"""

from __future__ import annotations

import dataclasses

from translator.diagnostics import INFO, WARNING, Finding
from translator.plan import runtimes
from translator.plan.kueue import QUEUE_LABEL
from translator.plan.model import PodPatch, SourceMap
from translator.profile.usage import option_line

REQUIRED = "kueue.x-k8s.io/podset-required-topology"
PREFERRED = "kueue.x-k8s.io/podset-preferred-topology"
_MPI_JOBS = ("launcher", "node")
_TRAINER_JOBS = ("node",)


def switch_count(value: str | None) -> int | None:
    """The count of `--switches` as sbatch renders it (`N` or `N@HH:MM:SS`); None when unset or not a count."""
    count = str(value or "").partition("@")[0]
    return int(count) if count.isdigit() else None


def replicated_jobs(plan, profile) -> tuple[str, ...]:
    """Every replicatedJob of the plan's runtime: the profile's `runtimes[].replicatedJobs`, batch mode's own
    runtime, a shipped runtime's jobs (translator/plan/runtimes.py), else by framework as the profile does."""
    for rule in getattr(profile, "runtimes", ()) or ():
        if rule.name == plan.runtime and rule.replicated_jobs:
            return tuple(rule.replicated_jobs)
    doc = plan.runtime_document
    if isinstance(doc, dict):
        spec = ((doc.get("spec") or {}).get("template") or {}).get("spec") or {}
        names = tuple(str(j.get("name")) for j in spec.get("replicatedJobs") or () if isinstance(j, dict))
        if names:
            return names
    shipped = runtimes.get(plan.runtime)
    if shipped is not None:
        return shipped.jobs
    return _MPI_JOBS if plan.framework == "mpi" else _TRAINER_JOBS


def topology_fields(plan, job, profile):
    """``plan`` with the TAS annotation for `--switches` and the findings P470-P474."""
    options = job.options
    topology = getattr(profile, "topology", None)
    findings: list = []
    smap: list = []
    patches = tuple(plan.patches)
    if options.get("nodelist"):
        line = option_line(job, "nodelist")
        findings.append(
            Finding(
                WARNING,
                "P472",
                f"--nodelist={_clip(options['nodelist'])}: Slurm node names are not Kubernetes nodes; the "
                "TrainJob goes where Kueue and the scheduler place it",
                line,
                "keep the nodes together with --switches=1 and a site profile `topology`, or select nodes "
                "by label (partitions/constraints in the site profile)",
            )
        )
        smap.append(_source(line, "(nodelist)", "dropped"))
    if job.fields.exclusive and topology is not None:
        line = option_line(job, "exclusive")
        findings.append(
            Finding(
                INFO,
                "P473",
                "--exclusive: no topology annotation (the `kubernetes.io/hostname` level would put every pod on "
                "one node); a whole node per pod comes from requesting the node's resources",
                line,
                "set `partitions.<name>.node` in the site profile",
            )
        )
    count = switch_count(options.get("switches"))
    if count:
        patches = _switches(plan, job, profile, count, findings, smap)
    if not findings and patches == tuple(plan.patches):
        return plan
    return dataclasses.replace(
        plan,
        patches=patches,
        findings=tuple(plan.findings) + tuple(findings),
        source_map=tuple(plan.source_map) + tuple(s for s in smap if s is not None),
    )


def _switches(plan, job, profile, count: int, findings: list, smap: list) -> tuple:
    line = option_line(job, "switches")
    what = f"--switches={job.options['switches']}"
    topology = getattr(profile, "topology", None)
    leaf = topology.leaf_level() if topology is not None else None
    if leaf is None:
        why = "declares no topology" if topology is None else "has no level above `kubernetes.io/hostname`"
        findings.append(
            Finding(
                WARNING,
                "P471",
                f"{what}: the placement is not carried (the site profile {why}); pods go on any nodes",
                line,
                "declare the cluster's Kueue topology levels in the site profile (`topology.levels`)",
            )
        )
        smap.append(_source(line, "(switches)", "dropped"))
        return tuple(plan.patches)
    if plan.num_nodes <= 1:
        findings.append(
            Finding(INFO, "P470", f"{what}: one node is always under one leaf switch; no topology needed", line)
        )
        return tuple(plan.patches)
    key = REQUIRED if count == 1 and getattr(topology, "switches", None) == "required" else PREFERRED
    jobs = replicated_jobs(plan, profile)
    mode = "required" if key == REQUIRED else "preferred"
    queued = any(k == QUEUE_LABEL for k, _ in plan.labels)
    findings.append(
        Finding(
            INFO,
            "P470",
            f"{what} -> Kueue topology {key}={leaf.label} (level `{leaf.name}`, {mode}) on the pods of "
            f"{', '.join(jobs)}"
            + ("" if queued else f"; only a TrainJob Kueue manages is placed by it (no {QUEUE_LABEL} label here)"),
            line,
        )
    )
    if count > 1:
        findings.append(
            Finding(
                WARNING,
                "P474",
                f"{what}: Kueue cannot bound the number of `{leaf.name}` domains; it packs the pods into as "
                f"few as it can, so more than {count} are possible",
                line,
                "use --switches=1 when the job must stay under one leaf switch",
            )
        )
    smap.append(_source(line, "(switches)", "mapped" if count == 1 else "approximated"))
    added = tuple(PodPatch(job=j, annotations=((key, leaf.label),)) for j in jobs)
    return tuple(plan.patches) + added


def _source(line: int | None, field: str, status: str) -> SourceMap | None:
    return SourceMap(field, (line,), status) if line else None


def _clip(text: str, limit: int = 60) -> str:
    text = str(text)
    return text if len(text) <= limit else text[: limit - 3] + "..."
