"""MPI programs: `mpirun`/`mpiexec …`, or `srun --mpi=… prog` / `srun prog` for a compiled program.

Runtime: an MPI-policy runtime (`deepspeed-distributed` is the only shipped one; `--runtime` picks
another). Its launcher pod gets /etc/mpi/hostfile (one line per pod, `slots=` the runtime's
numProcPerNode, or the GPU count when that is 1 and nodes have several GPUs) and the OMPI_MCA_*
variables; the command must call `mpirun` itself. Slurm's placement options (-np, -npernode,
--hostfile, -H) are replaced by the hostfile and the job's tasks per node.
"""

from __future__ import annotations


from translator.diagnostics import INFO, WARNING
from translator.launchers import common
from translator.launchers.common import LaunchContext, SrunCall, Tok
from translator.launchers.intent import MPI, LaunchIntent
from translator.slurm.values import to_int

HOSTFILE = "/etc/mpi/hostfile"
MPI_TOOLS = ("mpirun", "mpiexec", "orterun")

# Open MPI options with one value / two values; everything else starting with '-' is a flag.
_ONE = {
    "-np",
    "-n",
    "-c",
    "--np",
    "-N",
    "-npernode",
    "--npernode",
    "-npersocket",
    "--npersocket",
    "--hostfile",
    "-hostfile",
    "--machinefile",
    "-machinefile",
    "-H",
    "--host",
    "-host",
    "-x",
    "--map-by",
    "-map-by",
    "--bind-to",
    "-bind-to",
    "--rank-by",
    "-rank-by",
    "-wdir",
    "--wdir",
    "-wd",
    "--prefix",
    "-prefix",
    "--output-filename",
    "-output-filename",
    "--cpus-per-proc",
    "-cpus-per-proc",
    "--cpus-per-rank",
    "-cpus-per-rank",
    "--timeout",
    "-timeout",
    "--app",
    "-app",
    "-am",
    "--am",
    "--launch-agent",
    "-launch-agent",
    "--default-hostfile",
    "-default-hostfile",
    "--rankfile",
    "-rf",
    "--merge-stderr-to-stdout",
}
_ONE.discard("--merge-stderr-to-stdout")
_TWO = {"--mca", "-mca", "--gmca", "-gmca"}
_NP = {"-np", "-n", "-c", "--np"}
_NPERNODE = {"-N", "-npernode", "--npernode"}
_PLACEMENT = {
    "-np",
    "-n",
    "-c",
    "--np",
    "-N",
    "-npernode",
    "--npernode",
    "-npersocket",
    "--npersocket",
    "--hostfile",
    "-hostfile",
    "--machinefile",
    "-machinefile",
    "-H",
    "--host",
    "-host",
    "--default-hostfile",
    "-default-hostfile",
    "--rankfile",
    "-rf",
}


def runtime_slots(gpus_per_node: int) -> int:
    """Slots per host in the MPI runtime's hostfile when numProcPerNode is not set (SDK 0.5 cannot)."""
    return gpus_per_node if gpus_per_node > 1 else 1


def mpirun_head(tool: str, nodes: int, tpn: int, gpus: int) -> list[str]:
    words = [tool, "--hostfile", HOSTFILE, "-np", str(nodes * tpn), "-npernode", str(tpn)]
    if tpn > runtime_slots(gpus):
        words.append("--oversubscribe")
    return words


def matches(ctx: LaunchContext, toks: list[Tok], srun: SrunCall | None) -> bool:
    """mpirun/mpiexec; `srun --mpi=pmix prog` (the program talks to Slurm's PMI); `srun -n N python -m mpi4py`;
    and srun of several tasks of a program that is neither python nor a shell script (a compiled program)."""
    w0 = common.basename(toks[0].value)
    if w0 in MPI_TOOLS or common.srun_mpi(srun):
        return True
    if common.is_python(w0):
        return (
            len(toks) > 2
            and toks[1].value == "-m"
            and toks[2].value.split(".")[0] == "mpi4py"
            and srun is not None
            and common.step_shape(ctx.shape, srun).total_tasks > 1
        )
    return common.multi_task_step(ctx, srun) and not common.is_shell(w0)


def build(ctx: LaunchContext, toks: list[Tok], srun: SrunCall | None, line: int) -> LaunchIntent:
    step = common.step_shape(ctx.shape, srun)
    tool = "mpirun"
    kept: list[Tok] = []
    replaced: list[str] = []
    program = toks
    given_np: int | None = None
    given_ppn: int | None = None
    if toks and common.basename(toks[0].value) in MPI_TOOLS:
        tool = common.basename(toks[0].value)
        rest = toks[1:]
        options, j = common.scan_options(rest, lambda name: 2 if name in _TWO else 1 if name in _ONE else 0, key=str)
        for o in options:
            t, name, inline, group = o.tok, o.name, o.inline, list(o.group)
            if name in _PLACEMENT:
                replaced.append(" ".join(g.raw for g in group))
                vt = Tok(inline, t.raw, t.literal) if inline is not None else (group[1] if len(group) > 1 else None)
                v = common.static_value(ctx, vt) if vt is not None else None
                if name in _NP and v is not None and v.isascii() and v.isdigit():
                    given_np = to_int(v)
                elif name in _NPERNODE and v is not None and v.isascii() and v.isdigit():
                    given_ppn = to_int(v)
            else:
                kept += group
        program = rest[j:]
    elif srun is not None:
        mpi = srun.options.get("mpi")
        ctx.add(
            WARNING,
            "L308",
            f"`srun{' --mpi=' + mpi if mpi else ''}` started {step.total_tasks} MPI tasks through Slurm's PMI; "
            "on Kubeflow they are started by mpirun from the MPI runtime's launcher pod",
            line,
            "make sure the program is built against Open MPI",
        )
    if srun is not None:
        common.check_batch_expansion(ctx, toks, line)
    program = common.resolve_static(ctx, program)
    tpn, nodes = step.tasks_per_node, step.nodes
    if given_ppn is not None and given_ppn != tpn:
        # mpirun -npernode K inside the allocation: K ranks per node whatever Slurm's tasks per node
        ctx.add(
            WARNING,
            "L335",
            f"`-npernode {given_ppn}` differs from the job's {tpn} task(s) per node; the "
            f"TrainJob keeps {given_ppn} rank(s) per node as mpirun did",
            line,
            "make --ntasks-per-node match the ranks per node",
        )
        tpn = given_ppn
    head = [Tok.gen(w) for w in mpirun_head(tool, nodes, tpn, ctx.shape.gpus_per_node)]
    if given_np is not None and given_np != nodes * tpn:
        # Open MPI maps -np N ranks by slot over the allocation's nodes (tpn slots each), filling node 0
        # first; -npernode keeps that cap per node, so the same N with the same cap places them the same way.
        head[4] = Tok.gen(str(given_np))
        ctx.add(
            WARNING,
            "L335",
            f"`mpirun -np {given_np}` differs from the job's layout ({nodes} node(s) x {tpn} "
            f"task(s) = {nodes * tpn}); the TrainJob keeps -np {given_np} "
            + (
                "(more ranks than slots: Open MPI refuses this without --oversubscribe, on Slurm too)"
                if given_np > nodes * tpn
                else "(the ranks fill the first nodes, as on Slurm)"
            ),
            line,
            "make -np match --nodes x --ntasks-per-node, or drop -np (Open MPI then uses every slot)",
        )
    words = head + kept + program
    command, args, shell = common.plain_or_shell(ctx, words)
    if replaced:
        ctx.add(
            INFO,
            "L307",
            "MPI placement options replaced by the runtime's hostfile and the job's "
            f"{step.tasks_per_node} task(s) per node: " + ", ".join(replaced),
            line,
        )
    if tpn > runtime_slots(ctx.shape.gpus_per_node):
        ctx.add(
            INFO,
            "L309",
            f"the MPI runtime's hostfile offers {runtime_slots(ctx.shape.gpus_per_node)} slot(s) per node; "
            f"{tpn} ranks per node need --oversubscribe",
            line,
        )
    ctx.add(
        WARNING,
        "L306",
        "MPI runtimes start worker pods from the runtime's own image (sshd, user mpiuser), not from "
        "spec.trainer.image, and support Open MPI only; the program and its libraries must exist in the "
        "runtime image at the same path",
        line,
        "build a custom MPI (Cluster)TrainingRuntime from your image, or use a shared volume for the program",
    )
    return LaunchIntent(
        family=MPI,
        framework="mpi",
        command=command,
        args=args,
        line=line,
        proc_per_node=tpn,
        runtime="deepspeed-distributed",
        num_nodes=step.nodes,
        uses_shell=shell,
    )


def l306_for_version(findings, version: str) -> tuple:
    """L306 describes Trainer 2.3, where the worker pods keep the runtime's image. From 2.4 the TrainJob
    image runs on the MPI workers too (trainer #4301): L306 is replaced by P466, what that image then
    needs (the runtime's worker command starts sshd from it)."""
    from translator.diagnostics import Finding
    from translator.validate.versions import MPI_WORKERS_GET_IMAGE

    if version not in MPI_WORKERS_GET_IMAGE:
        return tuple(findings)
    return tuple(
        f
        if f.code != "L306"
        else Finding(
            WARNING,
            "P466",
            f"Trainer {version} starts the MPI worker pods from spec.trainer.image too (trainer #4301), with "
            "the runtime's worker command: that image must start sshd as the runtime image does (user "
            "mpiuser, /home/mpiuser/.sshd_config) and bring Open MPI (the only MPI the runtime supports)",
            f.line,
            "build the image from the runtime's image (FROM ghcr.io/kubeflow/trainer/deepspeed-runtime), "
            "or keep the runtime's image with --image",
        )
        for f in findings
    )
