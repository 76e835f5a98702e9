"""Resources per node: GPUs, CPUs, memory from the job's options (sbatch-semantics §6)."""

from __future__ import annotations


from translator.diagnostics import Finding, INFO, WARNING
from translator.plan.model import SourceMap


def mib_quantity(mib: int) -> str:
    """Slurm sizes are MiB; Kubernetes binary suffixes: 65536 -> "64Gi", 1536 -> "1536Mi"."""
    if mib % (1024 * 1024) == 0:
        return f"{mib // (1024 * 1024)}Ti"
    if mib % 1024 == 0:
        return f"{mib // 1024}Gi"
    return f"{mib}Mi"


# (job, {option name: [(index, line), ...]}, {names: answer}) of the last call: callers ask about one job
# many times in a row, so its settings are indexed once and each answer is kept (a SlurmJob is frozen: the
# same job has the same main component)
_LINES_MEMO: list = [None, {}, {}]


def _lines(job, *names) -> tuple[int, ...]:
    """The lines that set any of `names`, in the order of the settings, each once."""
    memo = _LINES_MEMO
    if memo[0] is job:
        answer = memo[2].get(names)
        if answer is not None:
            return answer
        index = memo[1]
    else:
        index = {}
        for i, s in enumerate(job.main.settings):
            line = s.line
            if line is not None:
                hits = index.get(s.name)
                if hits is None:
                    index[s.name] = [(i, line)]
                else:
                    hits.append((i, line))
        memo[:] = [job, index, {}]
    if len(names) == 1:
        hits = index.get(names[0])
    else:
        found = [index[name] for name in names if name in index]
        # (a name given twice repeats its lines, which the ordered set below drops again)
        hits = found[0] if len(found) == 1 else sorted([h for lines in found for h in lines])
    if not hits:
        answer = ()
    elif len(hits) == 1:
        answer = (hits[0][1],)
    else:
        answer = tuple(dict.fromkeys([line for _, line in hits]))  # an ordered set of lines
    memo[2][names] = answer
    return answer


def _first_line(job, *names) -> int | None:
    lines = _lines(job, *names)
    return lines[0] if lines else None


GPU_OPTIONS = ("gres", "gpus", "gpus-per-node", "gpus-per-task", "tres-per-task")
CPU_OPTIONS = ("cpus-per-task", "ntasks-per-node", "ntasks", "cpus-per-gpu")
MEM_OPTIONS = ("mem", "mem-per-cpu", "mem-per-gpu")


def resources_per_node(job, shape, gpu_resource: str):
    """Returns (resources, findings, source_map entries)."""
    f = job.fields
    res: list[tuple[str, str]] = []
    findings: list[Finding] = []
    smap: list[SourceMap] = []
    cpus = None
    # CPUs: what was asked for explicitly (-c), or one per task when several tasks share a node; a lone
    # task without -c gets the site default on Slurm, so no CPU request is invented for it.
    if f.cpus_per_task or shape.tasks_per_node > 1:
        cpus = (f.cpus_per_task or 1) * shape.tasks_per_node
        res.append(("cpu", str(cpus)))
        smap.append(SourceMap("spec.trainer.resourcesPerNode.cpu", _lines(job, *CPU_OPTIONS), "mapped"))
    if f.mem_per_node_mb == 0:
        findings.append(
            Finding(
                WARNING,
                "P417",
                "--mem=0 asks for all the memory of each node; Kubernetes has no "
                "whole-node request, so no memory is requested",
                _first_line(job, "mem"),
                "set an explicit memory size (e.g. with --sbatch-env or in the script)",
            )
        )
        smap.append(SourceMap("spec.trainer.resourcesPerNode.memory", _lines(job, "mem"), "dropped"))
    elif f.mem_per_node_mb:
        res.append(("memory", mib_quantity(f.mem_per_node_mb)))
        smap.append(SourceMap("spec.trainer.resourcesPerNode.memory", _lines(job, "mem"), "mapped"))
    elif f.mem_per_cpu_mb:
        count = cpus or shape.tasks_per_node
        res.append(("memory", mib_quantity(f.mem_per_cpu_mb * count)))
        findings.append(
            Finding(
                INFO,
                "P419",
                f"--mem-per-cpu={f.mem_per_cpu_mb}M × {count} CPUs per node = "
                f"{mib_quantity(f.mem_per_cpu_mb * count)} per node (Slurm multiplies by the CPUs it "
                "actually allocates, which can be more)",
                _first_line(job, "mem-per-cpu"),
            )
        )
        smap.append(SourceMap("spec.trainer.resourcesPerNode.memory", _lines(job, "mem-per-cpu"), "approximated"))
    elif f.mem_per_gpu_mb and shape.gpus_per_node:
        res.append(("memory", mib_quantity(f.mem_per_gpu_mb * shape.gpus_per_node)))
        findings.append(
            Finding(
                INFO,
                "P419",
                f"--mem-per-gpu={f.mem_per_gpu_mb}M × {shape.gpus_per_node} GPUs per "
                f"node = {mib_quantity(f.mem_per_gpu_mb * shape.gpus_per_node)} per node",
                _first_line(job, "mem-per-gpu"),
            )
        )
        smap.append(SourceMap("spec.trainer.resourcesPerNode.memory", _lines(job, "mem-per-gpu"), "approximated"))
    if shape.gpus_per_node:
        res.append((gpu_resource, str(shape.gpus_per_node)))
        status = "approximated" if shape.gpus_uneven else "mapped"
        smap.append(SourceMap(f"spec.trainer.resourcesPerNode.{gpu_resource}", _lines(job, *GPU_OPTIONS), status))
        if shape.gpus_uneven:
            findings.append(
                Finding(
                    WARNING,
                    "P418",
                    f"--gpus={f.gpus_total} does not divide evenly over "
                    f"{shape.nodes} nodes; every node asks for {shape.gpus_per_node}",
                    _first_line(job, "gpus"),
                    "use --gpus-per-node",
                )
            )
        if f.gpu_type:
            findings.append(
                Finding(
                    INFO,
                    "P430",
                    f"GPU type `{f.gpu_type}` needs a node selector on Kubernetes "
                    "(e.g. nvidia.com/gpu.product); a site profile can map it",
                    _first_line(job, *GPU_OPTIONS),
                    "map GPU types in a site profile",
                )
            )
    return tuple(res), findings, smap
