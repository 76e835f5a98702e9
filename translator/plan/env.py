"""Environment: literal `export`s before the launch line become TrainJob env.

* Only exports whose value needs no shell (`export NCCL_DEBUG=INFO`, quoted text) are carried as env;
  values that need the shell (`$(hostname)`, `$OTHER`) stay with the command (the launcher's preamble
  defines them when the command refers to them) or are reported.
* Names the runtimes reserve (PET_*, OMPI_MCA_*, and for the JAX/XGBoost policies JAX_*/DMLC_*) are never
  set: the webhook rejects them and the controller provides them.
* Rendezvous variables (MASTER_ADDR, MASTER_PORT, WORLD_SIZE, RANK, …) computed from Slurm are provided
  by the launcher; SLURM_* variables are never exported to pods (a partial Slurm environment makes
  frameworks such as Lightning detect Slurm and fail) — the launchers define them where needed.
"""

from __future__ import annotations

import re

from translator.diagnostics import Finding, INFO, WARNING
from translator.plan.model import EnvVar, SourceMap

RESERVED_PREFIXES = ("PET_", "OMPI_MCA_")
RESERVED_BY_POLICY = {
    "jax": ("JAX_COORDINATOR_ADDRESS", "JAX_NUM_PROCESSES", "JAX_PROCESS_ID"),
    "xgboost": ("DMLC_TRACKER_URI", "DMLC_TRACKER_PORT", "DMLC_TASK_ID", "DMLC_NUM_WORKER"),
}
RENDEZVOUS = (
    "MASTER_ADDR",
    "MASTER_PORT",
    "WORLD_SIZE",
    "RANK",
    "LOCAL_RANK",
    "NODE_RANK",
    "LOCAL_WORLD_SIZE",
    "GROUP_RANK",
    "NNODES",
    "NPROC_PER_NODE",
)
_RENDEZVOUS = frozenset(RENDEZVOUS)
CLUSTER_SPECIFIC = re.compile(
    r"^(NCCL_SOCKET_IFNAME|NCCL_IB_HCA|NCCL_IB_GID_INDEX|NCCL_NET|NCCL_TOPO_FILE|"
    r"GLOO_SOCKET_IFNAME|FI_PROVIDER|FI_EFA_.*|UCX_NET_DEVICES|UCX_TLS|LD_LIBRARY_PATH|"
    r"LD_PRELOAD|PATH|PYTHONPATH|CUDA_HOME|HF_HOME|TRANSFORMERS_CACHE|TMPDIR)$"
)


_CLUSTER_MEMO: dict[str, bool] = {}  # name -> CLUSTER_SPECIFIC matches it: names recur across scripts


def _cluster_specific(name: str) -> bool:
    known = _CLUSTER_MEMO.get(name)
    if known is None:
        known = CLUSTER_SPECIFIC.match(name) is not None
        if len(_CLUSTER_MEMO) < 16384 and len(name) <= 100:
            _CLUSTER_MEMO[name] = known
    return known


_BODY_MEMO: list = [None, (), ()]  # (body, its commands, its assignments) of the last call


def script_assignments(script) -> tuple:
    """The script's assignments in order, as translator.read.ast.iter_assignments gives them (and
    translator/read/walk.py lists them), listed once per script (body_lists)."""
    return body_lists(script.body)[1]


def body_lists(body) -> tuple[tuple, tuple]:
    """(commands, assignments) of a script body, in order: what translator.read.ast.iter_commands and
    iter_assignments give, listed once per body, in one pass.

    Read off the launch analysis's entries of the body, which detect has just listed (its walk visits the
    statements in the same order, blocks' own commands included): the commands; the assignment statements
    and the prefix assignments (`VAR=x cmd`) of the commands, except those of a here-document's own command,
    which iter_assignments does not visit. Such a command is told apart only at the top level (its entry is
    marked "here-document"); a command with prefix assignments inside a block takes the plain walk."""
    memo = _BODY_MEMO
    if memo[0] is body:
        return memo[1], memo[2]
    from translator.launchers.launchline import entries
    from translator.read.ast import Assignment, Command

    commands: list = []
    assignments: list = []
    walk = False  # the plain walk is needed for the assignments
    for st, block in entries(body):
        cls = st.__class__
        if cls is Assignment:
            assignments.append(st)
        elif cls is Command:
            commands.append(st)
            if st.prefix_assignments:
                if block is None:
                    assignments.extend(st.prefix_assignments)
                elif block != "here-document":
                    walk = True
    if walk:
        from translator.read.walk import assignments_in

        assignments = list(assignments_in(body))
    found = (tuple(commands), tuple(assignments))
    if type(body) is tuple:  # (a list could change between calls)
        memo[:] = [body, found[0], found[1]]
    return found


def collect(
    script, launch_line, policy: str, escape, consumed=(), resolve=None
) -> tuple[tuple[EnvVar, ...], list[Finding], list[SourceMap]]:
    """Env from top-level exports before `launch_line`; `consumed` are lines folded into the command."""
    env: dict[str, EnvVar] = {}  # by name; a later export moves the name to the end (last one wins)
    consumed = frozenset(consumed)
    findings: list[Finding] = []
    lines_mapped: list[int] = []
    lines_dropped: list[int] = []
    reserved = RESERVED_BY_POLICY.get(policy, ())
    cluster: list[str] = []
    for a in script_assignments(script):
        if not a.exported or (launch_line is not None and a.line >= launch_line):
            continue
        name = a.name
        word = a.value
        if name.startswith(RESERVED_PREFIXES) or name in reserved:
            findings.append(
                Finding(
                    WARNING,
                    "P420",
                    f"`export {name}=…` is not carried: the Kubeflow runtime sets "
                    f"{name} itself and rejects it in spec.trainer.env",
                    a.line,
                )
            )
            lines_dropped.append(a.line)
            continue
        if name.startswith("SLURM") or name in _RENDEZVOUS:
            findings.append(
                Finding(
                    INFO,
                    "P421",
                    f"`export {name}=…` is not carried: "
                    + (
                        "Slurm variables are defined by the converted command where it reads them"
                        if name.startswith("SLURM")
                        else "the launcher provides rendezvous variables on every node"
                    ),
                    a.line,
                )
            )
            lines_dropped.append(a.line)
            continue
        value = word.value
        if not word.literal:
            if a.line in consumed:
                continue  # the launch command is built from it (launchers/indirect.py)
            # `export OMP_NUM_THREADS=$SLURM_CPUS_PER_TASK`, `export OUT=$BASE/run`: known at conversion time
            value = resolve(value) if resolve is not None and "'" not in word.raw else None
        if value is None:
            findings.append(
                Finding(
                    WARNING,
                    "P422",
                    f"`export {name}={word.raw}` needs the shell; it is not TrainJob "
                    "env, so a program reading it finds it unset (the command defines it only where "
                    "the launch line itself uses it)",
                    a.line,
                    f"give {name} a literal value if the program reads it",
                )
            )
            lines_dropped.append(a.line)
            continue
        if name in env:
            del env[name]
        env[name] = EnvVar(name, escape(value), a.line)
        lines_mapped.append(a.line)
        if _cluster_specific(name):
            cluster.append(name)
    if cluster:
        findings.append(
            Finding(
                WARNING,
                "P423",
                "cluster-specific settings copied as env, check them on the Kubernetes nodes: " + ", ".join(cluster),
                env[cluster[0]].line if cluster[0] in env else None,
            )
        )
    smap = []
    if lines_mapped:
        smap.append(SourceMap("spec.trainer.env", tuple(lines_mapped), "mapped"))
    if lines_dropped:
        smap.append(SourceMap("spec.trainer.env", tuple(lines_dropped), "dropped"))
    return tuple(env.values()), findings, smap


def launch_env(pairs, line, policy: str, escape) -> tuple[tuple[EnvVar, ...], list[Finding]]:
    """Variables set on the launch command itself (`VAR=x srun …`, `env VAR=x …`), same rules as exports."""
    out: list[EnvVar] = []
    findings: list[Finding] = []
    reserved = RESERVED_BY_POLICY.get(policy, ())
    for name, value in pairs:
        if name.startswith(RESERVED_PREFIXES) or name in reserved:
            findings.append(
                Finding(
                    WARNING,
                    "P420",
                    f"`{name}=…` on the launch line is not carried: the Kubeflow "
                    f"runtime sets {name} itself and rejects it in spec.trainer.env",
                    line,
                )
            )
        elif name.startswith("SLURM") or name in _RENDEZVOUS:
            findings.append(
                Finding(
                    INFO,
                    "P421",
                    f"`{name}=…` on the launch line is not carried: Slurm and "
                    "rendezvous variables are provided on Kubernetes",
                    line,
                )
            )
        else:
            out.append(EnvVar(name=name, value=escape(value), line=line))
            if _cluster_specific(name):
                findings.append(
                    Finding(
                        WARNING,
                        "P423",
                        "cluster-specific settings copied as env, check them on the Kubernetes nodes: " + name,
                        line,
                    )
                )
    return tuple(out), findings
