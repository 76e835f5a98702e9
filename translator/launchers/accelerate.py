"""`accelerate launch [options] train.py …` (Hugging Face Accelerate), usually under `srun` one per node.

Runtime `torch-distributed`; the tool is kept. Its machine flags are fed from what the controller sets
on every node: `--num_machines "$PET_NNODES" --machine_rank "$PET_NODE_RANK" --main_process_ip
"$PET_MASTER_ADDR" --main_process_port "$PET_MASTER_PORT"`, through `bash -c` (Kubernetes does not
expand `$VAR` in args). The user's own arguments follow as positional parameters ("$@"), never as
shell code. Slurm-fed values of those flags (and --rdzv_backend, which with c10d would ignore the
machine rank) are dropped; --num_processes (total processes) is recomputed when it was an expression.
"""

from __future__ import annotations


from translator.diagnostics import INFO, WARNING
from translator.launchers import common
from translator.launchers.common import LaunchContext, SrunCall, Tok
from translator.launchers.intent import ACCELERATE, LaunchIntent

_FLAGS = {
    "--multi-gpu",
    "--cpu",
    "--use-deepspeed",
    "--use-fsdp",
    "--use-megatron-lm",
    "--use-xpu",
    "--tpu",
    "-m",
    "--module",
    "--no-python",
    "--debug",
    "-q",
    "--quiet",
    "--same-network",
    "--mps",
    "--enable-cpu-affinity",
    "--tpu-use-cluster",
    "--tpu-use-sudo",
    "--downcast-bf16",
    "--ipex",
    "--dynamo-use-fullgraph",
    "--dynamo-use-dynamic",
    "--dynamo-use-regional-compilation",
    "-h",
    "--help",
}
_MACHINE = {"--num-machines", "--machine-rank", "--main-process-ip", "--main-process-port", "--rdzv-backend"}
PET_FLAGS = (
    '--num_machines "$PET_NNODES" --machine_rank "$PET_NODE_RANK" '
    '--main_process_ip "$PET_MASTER_ADDR" --main_process_port "$PET_MASTER_PORT"'
)


def matches(ctx: LaunchContext, toks: list[Tok], srun: SrunCall | None) -> bool:
    return common.basename(toks[0].value) == "accelerate" and len(toks) > 1 and toks[1].value == "launch"


def build(ctx: LaunchContext, toks: list[Tok], srun: SrunCall | None, line: int) -> LaunchIntent:
    common.not_mpi(ctx, srun, "accelerate launch", line)
    step = common.step_shape(ctx.shape, srun)
    rest = toks[2:]  # after `accelerate launch`
    kept: list[Tok] = []
    dropped: list[str] = []
    machines: str | None = None
    options, j = common.scan_options(rest, lambda key: 0 if key in _FLAGS else 1)
    for o in options:
        t, inline, key, group = o.tok, o.inline, o.key, list(o.group)
        if key in _MACHINE:
            dropped.append(" ".join(g.raw for g in group))
            if key == "--num-machines":
                vt = Tok(inline, t.raw, t.literal) if inline is not None else (group[1] if len(group) > 1 else None)
                machines = (common.static_value(ctx, vt) if vt is not None else None) or "?"
        elif key == "--num-processes":
            vt = Tok(inline, t.raw, t.literal) if inline is not None else (group[1] if len(group) > 1 else None)
            v = common.static_value(ctx, vt) if vt is not None else None
            if v is None:
                per_node = ctx.shape.gpus_per_node or step.tasks_per_node
                v = str(step.nodes * per_node)
                ctx.add(
                    INFO,
                    "L314",
                    f"--num_processes `{vt.raw if vt else ''}` computed as {step.nodes} node(s) × "
                    f"{per_node} process(es) = {v}",
                    line,
                )
            kept += [Tok.gen("--num_processes"), Tok.gen(v)]
        else:
            kept += group
    kept = common.resolve_static(ctx, kept)
    program = common.resolve_static(ctx, rest[j:])
    if srun is None and step.nodes > 1:
        # the batch step runs on node 0 only: `accelerate launch` there starts node 0's processes
        if machines is None or machines == "1":
            if any(common.norm(common.split_option(t)[0]) == "--config-file" for t in kept):
                ctx.add(
                    WARNING,
                    "L350",
                    "`accelerate launch` runs in the batch step, on node 0 only; if its config "
                    "file asks for several machines, on Slurm the others never joined",
                    line,
                    "start it on every node with `srun accelerate launch …`",
                )
            step = step.batch_node_only()
        else:
            ctx.add(
                WARNING,
                "L350",
                f"`accelerate launch --num_machines {machines}` runs in the batch step, on node 0 "
                "only: on Slurm the other machines never joined; the TrainJob starts it on every "
                "node and trains across them",
                line,
                "start it on every node with `srun accelerate launch …`",
            )
    if srun is not None:
        common.check_batch_expansion(ctx, toks, line)
        if step.tasks_per_node > 1:
            ctx.add(
                WARNING,
                "L303",
                f"srun starts {step.tasks_per_node} copies of `accelerate launch` on each node; it is a "
                "per-node launcher, so the TrainJob runs one per node",
                line,
                "on Slurm use `srun --ntasks-per-node=1 accelerate launch …`",
            )
    if dropped:
        ctx.add(
            INFO,
            "L317",
            "accelerate machine options replaced by the runtime's PET_NNODES, PET_NODE_RANK, "
            "PET_MASTER_ADDR and PET_MASTER_PORT: " + ", ".join(dropped),
            line,
        )
    ctx.add(
        INFO,
        "L319",
        "the image must provide the `accelerate` command (the runtime's default image does not)",
        line,
        "pass --image with accelerate installed, or keep `pip install accelerate` in the script",
    )
    user = kept + program
    if step.nodes > 1:
        command, args = common.shell_launch(ctx, "accelerate launch " + PET_FLAGS, user, "accelerate")
        shell = not common.all_literal(user)
    else:
        command, args, shell = common.plain_or_shell(ctx, [Tok.gen("accelerate"), Tok.gen("launch")] + user)
    return LaunchIntent(
        family=ACCELERATE,
        framework="torch",
        command=command,
        args=args,
        line=line,
        proc_per_node=ctx.shape.gpus_per_node or None,
        runtime="torch-distributed",
        num_nodes=step.nodes,
        uses_shell=shell,
    )
