"""`composer [options] train.py …` (MosaicML Composer's launcher), usually under `srun` one per node.

Composer's launcher (composer/cli/launcher.py) starts `-n/--nproc` processes on its node and gives
each RANK, LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE, NODE_RANK, MASTER_ADDR and MASTER_PORT, like
torchrun. Its node-set options are --world_size (all processes), --node_rank / --base_rank,
--master_addr and --master_port (each defaults to the variable of the same name, not to PET_*); it
trains across nodes when --world_size is larger than --nproc. Without -n it starts one process per
visible GPU (at least one).

Runtime `torch-distributed`; the tool is kept. On one node the command is kept without its node-set
options (Composer then uses 127.0.0.1 and a free port). On several nodes those options are dropped
and fed from what the controller sets on every node, through `bash -c` (Kubernetes does not expand
`$VAR` in args): `composer -n N --world_size NODES*N --node_rank "$PET_NODE_RANK" --master_addr
"$PET_MASTER_ADDR" --master_port "$PET_MASTER_PORT"`; the user's own words follow as "$@".
"""

from __future__ import annotations


from translator.diagnostics import INFO, WARNING
from translator.launchers import common
from translator.launchers.common import LaunchContext, SrunCall, Tok
from translator.launchers.intent import COMPOSER, LaunchIntent
from translator.launchers.registry import PHP_COMPOSER, accepts

# composer/cli/launcher.py _get_parser: store_true options; every other option takes one value.
_FLAGS = {"-v", "--verbose", "-m", "--module_mode", "-c", "--command_mode", "--version", "-h", "--help"}
_NPROC = {"-n", "--nproc"}
_NODESET = {"--world_size", "--base_rank", "--node_rank", "--master_addr", "--master_port"}
PET_FLAGS = '--node_rank "$PET_NODE_RANK" --master_addr "$PET_MASTER_ADDR" --master_port "$PET_MASTER_PORT"'


def matches(ctx: LaunchContext, toks: list[Tok], srun: SrunCall | None) -> bool:
    """`composer …`, but not PHP's `composer install` and its other commands."""
    return common.basename(toks[0].value) == "composer" and accepts(
        PHP_COMPOSER, toks[1].value if len(toks) > 1 else ""
    )


def build(ctx: LaunchContext, toks: list[Tok], srun: SrunCall | None, line: int) -> LaunchIntent:
    common.not_mpi(ctx, srun, "composer", line)
    step = common.step_shape(ctx.shape, srun)
    # argparse compares the spellings as written (`--world_size`, not `--world-size`)
    options, j = common.scan_options(toks[1:], lambda key: 0 if key in _FLAGS else 1, key=str)
    kept: list[Tok] = []
    dropped: list[str] = []
    nproc_tok: Tok | None = None
    world: str | None = None
    for o in options:
        value = Tok(o.inline, o.tok.raw, o.tok.literal) if o.inline is not None else o.value
        if o.key in _NPROC:
            nproc_tok = value
        elif o.key in _NODESET:
            dropped.append(" ".join(t.raw for t in o.group))
            if o.key == "--world_size" and value is not None:
                world = common.static_value(ctx, value)
        else:
            kept += o.group
    kept = common.resolve_static(ctx, kept)
    program = common.resolve_static(ctx, toks[1 + j :])
    nproc = common.static_value(ctx, nproc_tok) if nproc_tok is not None else None
    if nproc is not None and not (nproc.isascii() and nproc.isdigit()):
        nproc = None
    if srun is None and step.nodes > 1:
        # the batch step runs on node 0 only: composer there starts node 0's processes
        if world is not None and world.isascii() and world.isdigit() and nproc is not None and int(world) > int(nproc):
            ctx.add(
                WARNING,
                "L350",
                f"`composer --world_size {world}` runs in the batch step, on node 0 only: on Slurm "
                "the other nodes never joined; the TrainJob starts it on every node and trains "
                "across them",
                line,
                "start it on every node with `srun composer …`",
            )
        else:
            ctx.add(
                WARNING,
                "L318",
                f"the job asks for {step.nodes} nodes but `composer` runs in the batch step, on the "
                "first node only; the TrainJob uses one node",
                line,
                "start it on every node with `srun composer …`, or ask for one node",
            )
            step = step.batch_node_only()
    if srun is not None:
        common.check_batch_expansion(ctx, toks, line)
        if step.tasks_per_node > 1:
            ctx.add(
                WARNING,
                "L303",
                f"srun starts {step.tasks_per_node} copies of `composer` on each node; it is a per-node launcher, "
                "so the TrainJob runs one per node",
                line,
                "on Slurm use `srun --ntasks-per-node=1 composer …`",
            )
    if dropped:
        ctx.add(
            INFO,
            "L355",
            "composer node-set options dropped"
            + (
                ", the runtime's PET_NODE_RANK, PET_MASTER_ADDR and PET_MASTER_PORT feed them: "
                if step.nodes > 1
                else " (on one node Composer uses 127.0.0.1 and a free port): "
            )
            + ", ".join(dropped),
            line,
        )
    ctx.add(
        INFO,
        "L357",
        "the image must provide the `composer` command (the runtime's default image does not)",
        line,
        "pass --image with mosaicml (Composer) installed, or keep `pip install mosaicml` in the script",
    )
    if step.nodes > 1:
        if nproc is None:
            nproc = str(ctx.shape.gpus_per_node or 1)
            ctx.add(
                INFO,
                "L356",
                (
                    f"composer `-n {nproc_tok.raw}` is not known at conversion time"
                    if nproc_tok is not None
                    else "composer had no -n (it starts one process per visible GPU)"
                )
                + f"; `-n {nproc}` (the job's GPUs per node, at least 1) is written out so the world size "
                f"{step.nodes} × {nproc} can be given",
                line,
                "give -n a number if the processes per node differ",
            )
        head = f"composer -n {nproc} --world_size {step.nodes * int(nproc)} {PET_FLAGS}"
        user = kept + program
        command, args = common.shell_launch(ctx, head, user, "composer")
        shell = not common.all_literal(user)
    else:
        n = [Tok.gen("-n"), Tok.gen(nproc) if nproc is not None else nproc_tok] if nproc_tok is not None else []
        command, args, shell = common.plain_or_shell(ctx, [Tok.gen("composer")] + n + kept + program)
    per_node = int(nproc) if nproc is not None else (ctx.shape.gpus_per_node or None)
    return LaunchIntent(
        family=COMPOSER,
        framework="torch",
        command=command,
        args=args,
        line=line,
        proc_per_node=per_node,
        runtime="torch-distributed",
        num_nodes=step.nodes,
        uses_shell=shell,
    )
