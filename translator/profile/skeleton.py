"""Write the commented profile skeleton that `slurm2kf profile init` prints.

The skeleton is a valid profile as written (every value to fill in is `null`, which means "not set"),
so `slurm2kf profile check` accepts it at once and `convert --profile` reports each unfilled entry.
"""

from __future__ import annotations

import re

from translator.launchers.registry import NAMES as LAUNCHER_FAMILIES
from translator.profile.model import API_VERSION, KIND
from translator.profile.scan import RepoUsage, Tally
from translator.yaml_text import yaml_quote

_PLAIN = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_./+-]*")
_GLOB = set("*?[")


def _q(text: str) -> str:
    """A YAML scalar for `text` that reads back as the same string."""
    import yaml

    if _PLAIN.fullmatch(text) and not text.startswith("re:"):
        try:
            if yaml.safe_load(text) == text:
                return text
        except yaml.YAMLError:
            pass
    return yaml_quote(text)  # every control or line-break character escaped (json.dumps leaves DEL)


def _name_key(name: str) -> str:
    """A profile key matching exactly `name` (names with glob characters become an escaped regex)."""
    if any(c in _GLOB for c in name) or name.startswith("re:"):
        return _q("re:" + re.escape(name))
    return _q(name)


def _clean(text: str) -> str:
    return "".join(c if c.isprintable() else "?" for c in text)


def _used(t: Tally) -> str:
    n = t.count
    text = f"{n} script{'s' if n != 1 else ''} (e.g. {', '.join(_clean(e) for e in t.examples)})"
    if t.notes:
        text += "; " + ", ".join(f"{_clean(str(k))}: {v}" for k, v in sorted(t.notes.items()))
    return text


def _sorted(table: dict) -> list:
    return sorted(table.items(), key=lambda kv: (-kv[1].count, str(kv[0])))


def _guess_resource(gpu_type: str) -> str:
    low = gpu_type.lower()
    if low.startswith(("mi", "amd", "radeon", "instinct")):
        return "amd.com/gpu"
    m = re.fullmatch(r"(?:[a-z0-9]+_)?(\d+g\.\d+gb)", low)
    if m:
        return f"nvidia.com/mig-{m.group(1)}"
    return "nvidia.com/gpu"


def render_skeleton(usage: RepoUsage, source: str) -> str:
    out: list[str] = []
    w = out.append
    w("# slurm2kf site profile: skeleton written by `slurm2kf profile init`.")
    w(
        f"# Surveyed {usage.scripts} job script{'s' if usage.scripts != 1 else ''} under {_clean(source)}"
        + (f" ({len(usage.unreadable)} unreadable)" if usage.unreadable else "")
        + "."
    )
    w("# Fill in every `null` marked TODO, delete what your site does not need, then run")
    w("#   slurm2kf profile check slurm2kf.yaml")
    w("#   slurm2kf convert job.sbatch --profile slurm2kf.yaml")
    w("# Keys under partitions/qos/accounts/gpuTypes/constraints are exact names, shell globs (`gpu-*`)")
    w("# or regular expressions (`re:^h100-.*$`); the first matching key wins. `null` means not set.")
    w(f"apiVersion: {API_VERSION}")
    w(f"kind: {KIND}")
    w("metadata:")
    w("  name: my-site                     # TODO a short name for this cluster")
    w("  description: null")
    w("")
    w("defaults:")
    w("  namespace: null                   # TODO namespace for TrainJobs whose account maps to none")
    w(
        "  partition: null                   # Slurm's default partition, for scripts without -p"
        + (f" ({usage.no_partition} script{'s' if usage.no_partition != 1 else ''})" if usage.no_partition else "")
    )
    w("  labels: {}                        # added to every TrainJob, e.g. {team: ml}")
    w("  annotations: {}")
    w("  imagePullSecrets: []              # secrets for a private registry")
    w("  serviceAccountName: null")
    w("  env: {}                           # added to every TrainJob, e.g. {HF_HOME: /scratch/hf-cache}")
    w("  pipIndexUrls: []                  # package index for `pip install` lines that name none")
    w("  gpuResource: nvidia.com/gpu       # extended resource name of a GPU (amd.com/gpu on AMD nodes)")
    w("  shmSize: null                     # e.g. 32Gi: /dev/shm size for NCCL and data loaders")
    w("")

    w("# Slurm partition -> Kueue LocalQueue (label kueue.x-k8s.io/queue-name) and/or node placement;")
    w("# node: allocatable resources of one whole node, used for --exclusive and --mem=0.")
    if usage.partitions:
        w("partitions:")
        for name, t in _sorted(usage.partitions):
            w(f"  # {_used(t)}")
            w(f"  {_name_key(name)}:")
            w("    queue: null                     # TODO Kueue LocalQueue")
            w("    nodeSelector: {}                # e.g. {node.kubernetes.io/instance-type: p5.48xlarge}")
            w("    tolerations: []")
            w("    node: {cpus: null, memory: null, gpus: null}")
            w("    gpuType: null                   # GPU type of its nodes when a script names none")
    else:
        w("partitions: {}                      # no script names a partition")
    w("")

    w("# Slurm QoS -> Kueue WorkloadPriorityClass (label kueue.x-k8s.io/priority-class).")
    if usage.qos:
        w("qos:")
        for name, t in _sorted(usage.qos):
            w(f"  # {_used(t)}")
            w(f"  {_name_key(name)}:")
            w("    priorityClass: null             # TODO")
    else:
        w("qos: {}")
    w("")

    w("# Slurm account -> Kubernetes namespace.")
    if usage.accounts:
        w("accounts:")
        for name, t in _sorted(usage.accounts):
            w(f"  # {_used(t)}")
            w(f"  {_name_key(name)}:")
            w("    namespace: null                 # TODO")
    else:
        w("accounts: {}")
    w("")

    w("# GPU type (--gres=gpu:TYPE:N, --gpus=TYPE:N, -C TYPE) -> GPU resource name and node selector.")
    if usage.gpu_types:
        w("gpuTypes:")
        for name, t in _sorted(usage.gpu_types):
            w(f"  # {_used(t)}")
            w(f"  {_name_key(name)}:")
            w(f"    resource: {_guess_resource(name):<28}# guessed from the name; check it")
            w("    nodeSelector: {}                # TODO e.g. {nvidia.com/gpu.product: NVIDIA-H100-80GB-HBM3}")
    else:
        w("gpuTypes: {}")
    w("")

    gpu_names = set(usage.gpu_types)
    features = [(n, t) for n, t in _sorted(usage.features) if n not in gpu_names]
    w("# --constraint features -> node placement (GPU types above are matched first).")
    if features:
        w("constraints:")
        for name, t in features:
            w(f"  # {_used(t)}")
            w(f"  {_name_key(name)}:")
            w("    nodeSelector: {}                # TODO")
    else:
        w("constraints: {}")
    w("")

    w("# Modules, conda/venv environments and local container images -> a registry image.")
    w("# Rules are tried in order; the first rule matching anything the script loads sets the image.")
    w("# `provided` lists what every image already contains (not reported as missing).")
    envs = _sorted(usage.environments)
    if envs:
        w("images:")
        w("  rules:")
        for (kind, name), t in envs:
            w(f"    # {kind} {_clean(name)}: {_used(t)}")
            w(f"    - {kind}: {_name_key(name)}")
            w("      image: null                   # TODO registry image, e.g. registry.example.org/ml/pytorch:2.4")
        w("  provided:")
        w('    module: []                      # e.g. ["cuda/*", "gcc/*"]')
    else:
        w("images: {rules: [], provided: {}}")
    w("")

    w("# Path prefixes the scripts use -> volumes mounted at the same path (pvc, nfs or hostPath).")
    w("# For a variable ($SCRATCH), set mountPath; the TrainJob then gets that variable in its env.")
    # Only prefixes `profile check` accepts as a filesystems path are proposed: `/..`, `$rundir` and
    # other junk a script can produce never make the skeleton invalid.
    from translator.profile.load import _fs_path_problem

    paths = [(prefix, t) for prefix, t in _sorted(usage.paths) if not _fs_path_problem(prefix)]
    if paths:
        w("filesystems:")
        for prefix, t in paths:
            w(f"  # {_used(t)}")
            w(f"  - path: {_q(prefix)}")
            if prefix.startswith("$"):
                w("    mountPath: null                 # TODO where it points in the pod")
            w("    pvc: null                       # TODO PVC name (or nfs: {server, path} / hostPath: {path})")
    else:
        w("filesystems: []")
    w("")
    w(f"# Runtime per launcher family ({', '.join(LAUNCHER_FAMILIES)})")
    w("# and the image a runtime uses when the script names none. Listed: the runtime slurm2kf picks today;")
    w("# rename it to your site's ClusterTrainingRuntime.")
    by_runtime: dict[str, list] = {}
    for (family, runtime), t in _sorted(usage.launchers):
        by_runtime.setdefault(runtime, []).append((family, t))
    if by_runtime:
        w("runtimes:")
        for runtime, fams in by_runtime.items():
            for family, t in fams:
                w(f"  # {family}: {_used(t)}")
            w(f"  - name: {_q(runtime)}")
            w(f"    launchers: [{', '.join(f for f, _ in fams)}]")
            w("    image: null                     # TODO default image, e.g. registry.example.org/ml/pytorch:2.4")
    else:
        w("runtimes: []")
    return "\n".join(out) + "\n"
