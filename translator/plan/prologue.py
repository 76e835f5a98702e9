"""The Slurm-compatibility prologue of the native launcher families: bash defining the SLURM_* variables a
launch preamble uses, on every pod of a torch/JAX/MPI TrainJob.

A native family's command runs on every node (torchrun, accelerate, ... start one launcher per node), so a
preamble that reads Slurm's variables gets them from what the runtime provides:

* node rank: `PET_NODE_RANK` (torch runtimes), else `JOB_COMPLETION_INDEX` (every Indexed Job pod);
* node count: `PET_NNODES`; node host names: derived from `PET_MASTER_ADDR`
  (`<trainjob>-node-0-0.<trainjob>`; node i is `<trainjob>-node-0-i.<trainjob>`);
* everything that follows from the job's options (CPUs, GPUs, memory, job name) as constants;
* what the batch shell computed once on node 0 (`$(hostname)`, `$RANDOM`) as node 0's value (batch_once).

`scontrol show hostnames` is a bash function when the preamble calls it. Batch mode, where the script runs
once and `srun` starts steps, has its own prologue (translator/plan/batch_prologue.py). Nothing here contains
text from the script except the (shell-quoted) job name and option values.
"""

from __future__ import annotations

import hashlib
import re
import shlex
from collections.abc import Iterable, Sequence

#: bash expressions evaluated on each node (defined first by `_BASE`).
_BASE = [
    '_s2k_node="${PET_NODE_RANK:-${JOB_COMPLETION_INDEX:-0}}"',
    '_s2k_nnodes="${PET_NNODES:-1}"',
    "_s2k_hosts() {",
    '  local h="${PET_MASTER_ADDR:-}" n="${PET_NNODES:-1}" i base dom=""',
    '  if [ -z "$h" ]; then hostname; return; fi',
    '  base="${h%%.*}"; [ "$base" = "$h" ] || dom=".${h#*.}"; base="${base%-0}"',
    '  for ((i = 0; i < n; i++)); do echo "${base}-${i}${dom}"; done',
    "}",
]

_DYNAMIC = {
    "SLURM_NODEID": '"$_s2k_node"',
    "SLURM_PROCID": '"$(( _s2k_node * _s2k_tpn ))"',
    "SLURM_LOCALID": "0",
    "SLURM_JOB_NODELIST": '"$(_s2k_hosts | paste -sd, -)"',
    "SLURM_NODELIST": '"$(_s2k_hosts | paste -sd, -)"',
    "SLURM_STEP_NODELIST": '"$(_s2k_hosts | paste -sd, -)"',
    "SLURM_SUBMIT_DIR": '"$PWD"',
    "SLURM_SUBMIT_HOST": '"$(hostname)"',
    "SLURMD_NODENAME": '"$(hostname)"',
    "SLURM_TOPOLOGY_ADDR": '"$(hostname)"',
    "SLURM_LAUNCH_NODE_IPADDR": '"$(hostname -i 2>/dev/null | cut -d" " -f1)"',
    "SLURM_JOB_START_TIME": '"$(date +%s)"',
}

# Values that come from the TrainJob env (set by the plan), never redefined here.
_FROM_ENV = (
    "SLURM_ARRAY_TASK_ID",
    "SLURM_ARRAY_JOB_ID",
    "SLURM_ARRAY_TASK_COUNT",
    "SLURM_ARRAY_TASK_MIN",
    "SLURM_ARRAY_TASK_MAX",
    "SLURM_ARRAY_TASK_STEP",
)


def from_env(name: str) -> bool:
    """True for variables the TrainJob env provides (array indices), which the prologue leaves alone."""
    return name in _FROM_ENV


_JOB_ID_MEMO: list = [None, ""]  # (job, number) of the last call: the launchers and the plan all ask


def job_id_number(job) -> str:
    """A stable stand-in for SLURM_JOB_ID (numeric, as scripts do arithmetic on it)."""
    if _JOB_ID_MEMO[0] is job:
        return _JOB_ID_MEMO[1]
    seed = f"{job.path}\0{job.fields.job_name}".encode("utf-8", "surrogatepass")
    number = str(100000 + int(hashlib.sha256(seed).hexdigest()[:8], 16) % 900000)
    _JOB_ID_MEMO[:] = [job, number]
    return number


def _same_job(memo: list, job, shape) -> bool:
    """Whether `memo` was filled for this job and shape: the same job object, and the same shape object or
    an equal one (the launchers build the job's Shape afresh each time; a Shape is a frozen record of ints)."""
    return memo[0] is job and (memo[1] is shape or memo[1] == shape)


def _per_node(value: int, nodes: int) -> str:
    return f"{value}(x{nodes})" if nodes > 1 else str(value)


_TABLE_MEMO: list = [None, None, None]  # (job, shape, table) of the last call: callers ask for many names in turn


def static_value(name: str, job, shape) -> str | None:
    """The value Slurm gives `name` in this job when it follows from the options alone, else None."""
    if _same_job(_TABLE_MEMO, job, shape):
        value = _TABLE_MEMO[2].get(name)
        return None if value is None else str(value)
    table = _static_table(job, shape)
    _TABLE_MEMO[:] = [job, shape, table]
    value = table.get(name)
    return None if value is None else str(value)


def _static_table(job, shape) -> dict:
    f = job.fields
    job_id = job_id_number(job)
    tpn = shape.tasks_per_node
    cpus_node = (shape.cpus_per_task or 1) * tpn
    return {
        "SLURM_JOB_NAME": f.job_name or None,
        "SLURM_JOB_ID": job_id,
        "SLURM_JOBID": job_id,
        "SLURM_NNODES": str(shape.nodes),
        "SLURM_JOB_NUM_NODES": str(shape.nodes),
        "SLURM_STEP_NUM_NODES": str(shape.nodes),
        "SLURM_NTASKS": str(shape.total_tasks) if shape.tasks_given else None,
        "SLURM_NPROCS": str(shape.total_tasks) if shape.tasks_given else None,
        "SLURM_STEP_NUM_TASKS": str(shape.total_tasks),
        "SLURM_NTASKS_PER_NODE": str(f.ntasks_per_node) if f.ntasks_per_node else None,
        "SLURM_TASKS_PER_NODE": _per_node(tpn, shape.nodes),
        "SLURM_STEP_TASKS_PER_NODE": _per_node(tpn, shape.nodes),
        "SLURM_CPUS_PER_TASK": str(f.cpus_per_task) if f.cpus_per_task else None,
        "SLURM_CPUS_ON_NODE": str(cpus_node),
        "SLURM_JOB_CPUS_PER_NODE": _per_node(cpus_node, shape.nodes),
        "SLURM_GPUS_ON_NODE": str(shape.gpus_per_node) if shape.gpus_per_node else None,
        "SLURM_GPUS_PER_NODE": str(f.gpus_per_node) if f.gpus_per_node else None,
        "SLURM_GPUS_PER_TASK": str(f.gpus_per_task) if f.gpus_per_task else None,
        "SLURM_GPUS": str(f.gpus_total) if f.gpus_total else None,
        "SLURM_MEM_PER_NODE": str(f.mem_per_node_mb) if f.mem_per_node_mb else None,
        "SLURM_MEM_PER_CPU": str(f.mem_per_cpu_mb) if f.mem_per_cpu_mb else None,
        "SLURM_MEM_PER_GPU": str(f.mem_per_gpu_mb) if f.mem_per_gpu_mb else None,
        "SLURM_JOB_PARTITION": f.partition,
        "SLURM_JOB_ACCOUNT": f.account,
        "SLURM_JOB_QOS": f.qos,
        "SLURM_RESTART_COUNT": "0",
        "SLURM_CLUSTER_NAME": "kubernetes",
        "SLURM_STEP_ID": "0",
        "SLURM_STEPID": "0",
    }


_DEFINITION_MEMO: list = [None, None, {}]  # (job, shape, {name: source}) of the last call


def definition(name: str, job, shape) -> str | None:
    """Shell source for the value of `name` on a node, or None when the job leaves it unset."""
    if _same_job(_DEFINITION_MEMO, job, shape):
        known = _DEFINITION_MEMO[2]
    else:
        known = {}
        _DEFINITION_MEMO[:] = [job, shape, known]
    if name in known:
        return known[name]
    source = known[name] = _definition(name, job, shape)
    return source


def _definition(name: str, job, shape) -> str | None:
    if name in _FROM_ENV:
        return f'"${{{name}:-}}"'
    value = static_value(name, job, shape)
    if value is not None:
        return shlex.quote(value)
    return _DYNAMIC.get(name)


SCONTROL_FUNCTION = [
    "scontrol() {  # slurm2kf: only `scontrol show hostnames` (this job's nodes) exists on Kubernetes",
    '  case "$1 $2" in',
    '    "show hostnames"|"show hostname") _s2k_hosts ;;',
    '    *) echo "slurm2kf: scontrol $* is not available on Kubernetes" >&2; return 1 ;;',
    "  esac",
    "}",
]

# srun options that take a value as the next word (srun.1, pyxis).
_SRUN_VALUE_LONG = (
    "nodelist|exclude|job-name|output|error|input|partition|time|distribution|chdir|account|cpus-per-task|"
    "gpus|gpus-per-node|gpus-per-task|gres|mem|mem-per-cpu|mem-per-gpu|cpu-bind|mem-bind|gpu-bind|mpi|export|"
    "relative|dependency|qos|constraint|het-group|container-image|container-mounts|container-workdir|"
    "container-name|signal|wait|ntasks-per-gpu|cpus-per-gpu|hint|threads-per-core|network|comment|reservation|"
    "begin|deadline|licenses|nice|priority|tres-per-task|switches|core-spec|prolog|epilog|task-prolog|"
    "task-epilog|open-mode|cores-per-socket|sockets-per-node|extra-node-info|clusters|ntasks-per-core|"
    "ntasks-per-socket|gres-flags|cpu-freq|bcast|jobid|mincpus|tmp|uid|gid|accel-bind|profile|"
    "resv-ports|slurmd-debug|thread-spec|tres-bind|wckey"
)
SBATCH_FUNCTION = [
    'sbatch() { echo "slurm2kf: nested sbatch is not available on Kubernetes: $*" >&2; return 1; }',
]


# ---- values the batch shell computes once, on node 0 --------------------------------------------

_HOST_FORMS = [
    (re.compile(r"\$\(\s*hostname\s*\)|`\s*hostname\s*`|\$\{HOSTNAME\}|\$HOSTNAME\b"), "$(_s2k_batch_host)"),
    (re.compile(r"\$\(\s*hostname\s+(-s|--short)\s*\)|`\s*hostname\s+(-s|--short)\s*`"), "$(_s2k_batch_host -s)"),
    (
        re.compile(r"\$\(\s*hostname\s+(-f|--fqdn|--long)\s*\)|`\s*hostname\s+(-f|--fqdn|--long)\s*`"),
        "$(_s2k_batch_host)",
    ),
    (
        re.compile(
            r"\$\(\s*hostname\s+(-i|-I|--ip-address|--all-ip-addresses)\s*\)"
            r"|`\s*hostname\s+(-i|-I|--ip-address|--all-ip-addresses)\s*`"
        ),
        "$(_s2k_batch_host -i)",
    ),
]
_RANDOM = re.compile(r"\$\{?S?RANDOM\}?(?![A-Za-z0-9_])")
_BARE_RANDOM = re.compile(r"(?<![A-Za-z0-9_${])S?RANDOM(?![A-Za-z0-9_])")
_PER_RUN = re.compile(
    r"\$\(\s*(date|uuidgen|mktemp|od|openssl\s+rand)\b|`\s*(date|uuidgen|mktemp)\b|\$\$|"
    r"\$\{?BASHPID\}?"
)

BATCH_HOST_FUNCTION = [
    "_s2k_batch_host() {  # slurm2kf: the batch script ran on node 0; its host is the rank-0 pod",
    '  local h; h="$(_s2k_hosts | head -n 1)"',
    '  case "${1:-}" in',
    '    -s) echo "${h%%.*}" ;;',
    "    -i) getent hosts \"$h\" | awk '{print $1; exit}' ;;",
    '    *) echo "$h" ;;',
    "  esac",
    "}",
]


def batch_once(text: str):
    """Rewrite what the batch shell evaluated once on node 0 so that every pod gets the same value.

    Returns (text, helpers needed: subset of {"batch_host", "random"}, [what cannot be made the same]).
    `$(hostname)` -> the rank-0 pod's name; `$RANDOM` -> one fixed number for the job; `$(date …)`, `$$`,
    `$(mktemp)`, `$(uuidgen)` differ per pod and are reported."""
    helpers = set()
    if "hostname" in text or "HOSTNAME" in text:  # every host form names it
        for pattern, repl in _HOST_FORMS:
            new = pattern.sub(repl.replace("\\", "\\\\"), text)
            if new != text:
                helpers.add("batch_host")
                text = new
    if "RANDOM" in text:  # both RANDOM forms name it
        new = _RANDOM.sub("${_s2k_random}", text)
        if "((" in new:  # arithmetic reads RANDOM without `$`
            new = _BARE_RANDOM.sub("_s2k_random", new)
        if new != text:
            helpers.add("random")
            text = new
    if "$" not in text and "`" not in text:  # every per-run form starts with one of them
        return text, helpers, []
    unfixable = sorted({m.group(0).strip() for m in _PER_RUN.finditer(text)})
    return text, helpers, unfixable


def batch_once_lines(helpers, job) -> list[str]:
    lines: list[str] = []
    if "batch_host" in helpers:
        lines += BATCH_HOST_FUNCTION
    if "random" in helpers:
        lines.append(f"_s2k_random={int(job_id_number(job)) % 32768}  # slurm2kf: $RANDOM drawn once for the job")
    return lines


def prologue_lines(names: Sequence[str], job, shape, export: bool = False, functions: Iterable[str] = ()) -> list[str]:
    """Bash lines defining `names` (Slurm variables) and the requested helper functions."""
    functions = tuple(functions)
    lines = ["# slurm2kf: Slurm compatibility prologue (values from the Kubeflow runtime and the job's options)"]
    lines += _BASE
    lines.append(f"_s2k_tpn={shape.tasks_per_node}")
    keyword = "export " if export else ""
    for name in names:
        expr = definition(name, job, shape)
        if expr is None or name in _FROM_ENV:
            continue
        lines.append(f"{keyword}{name}={expr}")
    if "scontrol" in functions:
        lines += SCONTROL_FUNCTION
    return lines
