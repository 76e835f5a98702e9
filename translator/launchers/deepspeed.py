"""`deepspeed [launcher options] train.py …` (DeepSpeed's runner).

Choice (see README): DeepSpeed's runner discovers its nodes from a hostfile and starts the ranks
itself. On one node it needs nothing from Kubernetes: runtime `torch-distributed`, the command is kept
as written. On several nodes (or with `--hostfile`) the TrainJob uses the MPI runtime
`deepspeed-distributed` — Kubeflow's runtime built for DeepSpeed, whose image ships DeepSpeed, Open
MPI and sshd — and the runner is pointed at the runtime's hostfile with its Open MPI launcher:
`deepspeed --hostfile /etc/mpi/hostfile --launcher openmpi …`. The runner then runs mpirun from the
launcher pod over the runtime's ssh keys; node count, ranks and master address come from the hostfile.
Options that described the Slurm nodes (--num_nodes, --node_rank, --master_addr, --include, …) are
dropped.
"""

from __future__ import annotations


from translator.diagnostics import INFO, WARNING
from translator.launchers import common
from translator.launchers.common import LaunchContext, SrunCall, Tok
from translator.launchers.intent import DEEPSPEED, LaunchIntent
from translator.launchers.mpi import HOSTFILE
from translator.slurm.values import to_int

_FLAGS = {
    "--module",
    "-m",
    "--no-python",
    "--no-local-rank",
    "--no-ssh",
    "--no-ssh-check",
    "--force-multi",
    "--save-pid",
    "--elastic-training",
    "--bind-cores-to-rank",
    "--enable-each-rank-log-dummy",
}
# Options that describe the Slurm node set, replaced by the runtime's hostfile (multi-node) or
# meaningless on one pod.
_NODESET = {
    "-H",
    "--hostfile",
    "-i",
    "--include",
    "-e",
    "--exclude",
    "--num-nodes",
    "--node-rank",
    "--master-addr",
    "--master-port",
    "--launcher",
    "--launcher-args",
    "--no-ssh",
    "--no-ssh-check",
    "--force-multi",
    "--min-elastic-nodes",
    "--max-elastic-nodes",
    "--ssh-port",
}


def matches(ctx: LaunchContext, toks: list[Tok], srun: SrunCall | None) -> bool:
    return common.basename(toks[0].value) == "deepspeed"


def build(ctx: LaunchContext, toks: list[Tok], srun: SrunCall | None, line: int) -> LaunchIntent:
    common.not_mpi(ctx, srun, "deepspeed", line)
    step = common.step_shape(ctx.shape, srun)
    rest = toks[1:]
    kept: list[Tok] = []
    dropped: list[str] = []
    had_hostfile = False
    options, j = common.scan_options(rest, lambda key: 0 if key in _FLAGS else 1, key=common.norm_long)
    for o in options:
        key, group = o.key, list(o.group)
        if key in ("-H", "--hostfile"):
            had_hostfile = True
        if key in _NODESET:
            dropped.append(" ".join(g.raw for g in group))
        else:
            kept += group
    program = common.resolve_static(ctx, rest[j:])
    kept = common.resolve_static(ctx, kept)
    if srun is not None:
        common.check_batch_expansion(ctx, toks, line)
        if step.nodes > 1 and step.tasks_per_node >= 1:
            ctx.add(
                WARNING,
                "L303",
                f"srun starts the DeepSpeed runner on each of {step.nodes} node(s); the runner is started once "
                "on Kubeflow and reaches the other nodes itself",
                line,
            )
    if step.nodes > 1 and not had_hostfile and srun is None:
        # DeepSpeed's runner (deepspeed/launcher/runner.py fetch_hostfile/main): no hostfile -> "will proceed
        # with training with local resources only", master 127.0.0.1: the batch node's GPUs, one node
        # (multi_node_exec is false, so --launcher slurm/openmpi/pdsh is never used).
        ctx.add(
            WARNING,
            "L343",
            f"`deepspeed` without --hostfile ran on the batch node only (DeepSpeed's runner "
            "uses local resources when it finds no hostfile), not on the job's "
            f"{step.nodes} nodes; the TrainJob uses 1 node as Slurm did",
            line,
            "to train on every node, write a hostfile from the node list and pass --hostfile",
        )
        step = step.batch_node_only()
    multi = step.nodes > 1 or had_hostfile
    if multi:
        head = [Tok.gen(w) for w in ("deepspeed", "--hostfile", HOSTFILE, "--launcher", "openmpi")]
        slots = _script_slots(ctx)
        from translator.launchers.mpi import runtime_slots

        if (
            had_hostfile
            and slots is not None
            and slots != runtime_slots(ctx.shape.gpus_per_node)
            and not any(common.norm(common.split_option(t)[0]) in ("--num-gpus", "--num-accelerators") for t in kept)
        ):
            # the runner starts `slots` ranks per host of its hostfile; the runtime's hostfile has its own slots
            kept = [Tok.gen("--num_gpus"), Tok.gen(str(slots))] + kept
            ctx.add(
                INFO,
                "L313",
                f"the script's hostfile gave {slots} slot(s) per node; `--num_gpus {slots}` keeps "
                "that many ranks per node with the runtime's hostfile",
                line,
            )
        runtime, framework = "deepspeed-distributed", "mpi"
        ctx.add(
            INFO,
            "L311",
            "multi-node DeepSpeed runs on the MPI runtime deepspeed-distributed: the runner reads the "
            f"runtime's hostfile {HOSTFILE} and starts the ranks with Open MPI from the launcher pod",
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
        if not ctx.shape.gpus_per_node:
            ctx.add(
                WARNING,
                "L338",
                "the job requests no GPUs, so the runtime's hostfile offers 1 slot per node and "
                "the DeepSpeed runner starts one rank per node",
                line,
                "request the GPUs the program uses (--gpus-per-node)",
            )
    else:
        head = [Tok.gen("deepspeed")]
        runtime, framework = "torch-distributed", "torch"
        ctx.add(
            INFO,
            "L312",
            "single-node DeepSpeed keeps its runner on the torch-distributed runtime; the image "
            "must provide the `deepspeed` command",
            line,
            "pass --image with DeepSpeed installed",
        )
    if dropped:
        ctx.add(INFO, "L313", "DeepSpeed options describing the Slurm nodes dropped: " + ", ".join(dropped), line)
    command, args, shell = common.plain_or_shell(ctx, head + kept + program)
    gpus = ctx.shape.gpus_per_node
    return LaunchIntent(
        family=DEEPSPEED,
        framework=framework,
        command=command,
        args=args,
        line=line,
        proc_per_node=gpus or None,
        runtime=runtime,
        num_nodes=step.nodes,
        uses_shell=shell,
    )


def _script_slots(ctx: LaunchContext):
    """`slots=N` written into a hostfile by the script (`echo "$h slots=4"`), when it is one number."""
    import re

    found = set(re.findall(r"slots=(\d+)", getattr(ctx.script, "text", "") or ""))
    return to_int(found.pop()) if len(found) == 1 else None
