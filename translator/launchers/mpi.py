"""MPI programs: `mpirun`/`mpiexec …`, or `srun --mpi=… prog` / `srun prog` for a compiled program.

Runtime: an MPI-policy runtime (`deepspeed-distributed` is the only shipped one; `--runtime` picks
another). Its launcher pod gets /etc/mpi/hostfile (one line per pod, `slots=` the runtime's
numProcPerNode, or the GPU count when that is 1 and nodes have several GPUs) and the OMPI_MCA_*
variables; the command must call `mpirun` itself. Slurm's placement options (-np, -npernode,
--hostfile, -H) are replaced by the hostfile and the job's tasks per node.
"""
from __future__ import annotations

from typing import List, Optional

from translator.diagnostics import INFO, WARNING
from translator.launchers import common
from translator.launchers.common import LaunchContext, SrunCall, Tok
from translator.launchers.intent import MPI, LaunchIntent

HOSTFILE = "/etc/mpi/hostfile"
MPI_TOOLS = ("mpirun", "mpiexec", "orterun")

# Open MPI options with one value / two values; everything else starting with '-' is a flag.
_ONE = {"-np", "-n", "-c", "--np", "-N", "-npernode", "--npernode", "-npersocket", "--npersocket",
        "--hostfile", "-hostfile", "--machinefile", "-machinefile", "-H", "--host", "-host", "-x",
        "--map-by", "-map-by", "--bind-to", "-bind-to", "--rank-by", "-rank-by", "-wdir", "--wdir", "-wd",
        "--prefix", "-prefix", "--output-filename", "-output-filename", "--cpus-per-proc", "-cpus-per-proc",
        "--cpus-per-rank", "-cpus-per-rank", "--timeout", "-timeout", "--app", "-app", "-am", "--am",
        "--launch-agent", "-launch-agent", "--default-hostfile", "-default-hostfile", "--rankfile", "-rf",
        "--merge-stderr-to-stdout"}
_ONE.discard("--merge-stderr-to-stdout")
_TWO = {"--mca", "-mca", "--gmca", "-gmca"}
_PLACEMENT = {"-np", "-n", "-c", "--np", "-N", "-npernode", "--npernode", "-npersocket", "--npersocket",
              "--hostfile", "-hostfile", "--machinefile", "-machinefile", "-H", "--host", "-host",
              "--default-hostfile", "-default-hostfile", "--rankfile", "-rf"}


def runtime_slots(gpus_per_node: int) -> int:
    """Slots per host in the MPI runtime's hostfile when numProcPerNode is not set (SDK 0.5 cannot)."""
    return gpus_per_node if gpus_per_node > 1 else 1


def mpirun_head(tool: str, nodes: int, tpn: int, gpus: int) -> List[str]:
    words = [tool, "--hostfile", HOSTFILE, "-np", str(nodes * tpn), "-npernode", str(tpn)]
    if tpn > runtime_slots(gpus):
        words.append("--oversubscribe")
    return words


def build(ctx: LaunchContext, toks: List[Tok], srun: Optional[SrunCall], line: int) -> LaunchIntent:
    step = common.step_shape(ctx.shape, srun)
    tool = "mpirun"
    kept: List[Tok] = []
    replaced: List[str] = []
    program = toks
    if toks and common.basename(toks[0].value) in MPI_TOOLS:
        tool = common.basename(toks[0].value)
        rest = toks[1:]
        j = 0
        while j < len(rest):
            t = rest[j]
            if not t.value.startswith("-") or t.value == "-":
                break
            name, inline = common.split_option(t)
            n = 0 if inline is not None else (2 if name in _TWO else 1 if name in _ONE else 0)
            group = rest[j:j + 1 + n]
            if name in _PLACEMENT:
                replaced.append(" ".join(g.raw for g in group))
            else:
                kept += group
            j += 1 + n
        program = rest[j:]
    elif srun is not None:
        mpi = srun.options.get("mpi")
        ctx.add(WARNING, "L308",
                f"`srun{' --mpi=' + mpi if mpi else ''}` started {step.total_tasks} MPI tasks through Slurm's PMI; "
                "on Kubeflow they are started by mpirun from the MPI runtime's launcher pod", line,
                "make sure the program is built against Open MPI")
    if srun is not None:
        common.check_batch_expansion(ctx, toks, line)
    program = common.resolve_static(ctx, program)
    head = [Tok.gen(w) for w in mpirun_head(tool, step.nodes, step.tasks_per_node, ctx.shape.gpus_per_node)]
    words = head + kept + program
    command, args, shell = common.plain_or_shell(ctx, words)
    if replaced:
        ctx.add(INFO, "L307", "MPI placement options replaced by the runtime's hostfile and the job's "
                              f"{step.tasks_per_node} task(s) per node: " + ", ".join(replaced), line)
    if step.tasks_per_node > runtime_slots(ctx.shape.gpus_per_node):
        ctx.add(INFO, "L309",
                f"the MPI runtime's hostfile offers {runtime_slots(ctx.shape.gpus_per_node)} slot(s) per node; "
                f"{step.tasks_per_node} ranks per node need --oversubscribe", line)
    ctx.add(WARNING, "L306",
            "MPI runtimes start worker pods from the runtime's own image (sshd, user mpiuser), not from "
            "spec.trainer.image, and support Open MPI only; the program and its libraries must exist in the "
            "runtime image at the same path", line,
            "build a custom MPI (Cluster)TrainingRuntime from your image, or use a shared volume for the program")
    return LaunchIntent(family=MPI, framework="mpi", command=command, args=args, line=line,
                        proc_per_node=step.tasks_per_node, runtime="deepspeed-distributed", num_nodes=step.nodes,
                        uses_shell=shell)
