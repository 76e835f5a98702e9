"""`torchrun …` / `python -m torch.distributed.run|launch …`, alone or under `srun` (one task per node).

Runtime `torch-distributed`. The controller sets PET_NNODES, PET_NODE_RANK, PET_MASTER_ADDR and
PET_MASTER_PORT, which torchrun reads as defaults for --nnodes, --node-rank, --master-addr and
--master-port; so every rendezvous flag the Slurm script fed (from SLURM_* variables, `scontrol show
hostnames`, a hard-coded head node) is dropped and the static rendezvous on rank-0's pod is used.
--nproc-per-node is kept (SDK 0.5 cannot set numProcPerNode, so the command carries it).
"""

from __future__ import annotations

from collections.abc import Sequence

from translator.diagnostics import INFO, WARNING
from translator.launchers import common
from translator.launchers.common import LaunchContext, SrunCall, Tok
from translator.launchers.intent import TORCHRUN, LaunchIntent
from translator.slurm.values import to_int

# torchrun options that take no value (torch/distributed/run.py get_args_parser).
_FLAGS = {
    "--standalone",
    "-m",
    "--module",
    "--no-python",
    "--run-path",
    "--use-env",
    "--virtual-local-rank",
    "--no-local-rank",
}
# Rendezvous options whose values PET_* provide on Kubeflow.
_DROP = {"--nnodes", "--node-rank", "--rdzv-endpoint", "--rdzv-id", "--rdzv-backend", "--master-addr", "--master-port"}
_NPROC = "--nproc-per-node"
RUNTIME_PORT = "29500"  # PET_MASTER_PORT of the torch plugin


def is_torchrun(toks: Sequence[Tok]) -> int:
    """Number of words naming the launcher (1 for `torchrun`, 3 for `python -m torch.distributed.run`), or 0."""
    if not toks:
        return 0
    if common.basename(toks[0].value) == "torchrun":
        return 1
    if (
        common.is_python(toks[0].value)
        and len(toks) >= 3
        and toks[1].value == "-m"
        and toks[2].value in ("torch.distributed.run", "torch.distributed.launch")
    ):
        return 3
    return 0


def matches(ctx: LaunchContext, toks: list[Tok], srun: SrunCall | None) -> bool:
    return bool(is_torchrun(toks))


def build(ctx: LaunchContext, toks: list[Tok], srun: SrunCall | None, line: int) -> LaunchIntent:
    common.not_mpi(ctx, srun, "torchrun", line)
    head = is_torchrun(toks)
    step = common.step_shape(ctx.shape, srun)
    legacy = head == 3 and toks[2].value == "torch.distributed.launch"
    if srun is not None:
        common.check_batch_expansion(ctx, toks, line)
        if step.tasks_per_node > 1:
            ctx.add(
                WARNING,
                "L303",
                f"srun starts {step.tasks_per_node} copies of torchrun on each node (tasks per node = "
                f"{step.tasks_per_node}); torchrun is a per-node launcher, so the TrainJob runs one per node",
                line,
                "on Slurm use `srun --ntasks-per-node=1 torchrun …`",
            )
    kept: list[Tok] = []
    dropped: list[str] = []
    seen = {}
    nproc: str | None = None
    rest = toks[head:]
    options, j = common.scan_options(rest, lambda key: 0 if key in _FLAGS else 1)
    for o in options:
        t, inline, key, value_tok = o.tok, o.inline, o.key, o.value
        if key in _DROP or key == "--standalone":
            seen[key] = Tok(inline, t.raw.split("=", 1)[1], t.literal) if inline is not None else value_tok
        if key in _DROP or (key == "--standalone" and step.nodes > 1):
            dropped.append(t.raw + (" " + value_tok.raw if value_tok is not None else ""))
        elif key == _NPROC:
            vt = (
                Tok(inline, t.raw.split("=", 1)[1] if "=" in t.raw else inline, t.literal)
                if inline is not None
                else value_tok
            )
            if vt is not None:
                v = common.static_value(ctx, vt)
                nproc = v if v is not None else None
                if v is None:
                    kept += [Tok.gen(_NPROC), vt]
                else:
                    kept += [Tok.gen(_NPROC), Tok.gen(v)]
        else:
            kept.append(t)
            if value_tok is not None:
                kept.append(value_tok)
    program = common.resolve_static(ctx, rest[j:])
    findings_line = line
    num_nodes = _rendezvous(ctx, seen, srun, step, line)
    port = _port(ctx, seen)
    if port is not None and port != RUNTIME_PORT:
        # the processes saw MASTER_PORT=port on Slurm; PET_MASTER_PORT would make it 29500
        kept += [Tok.gen("--master-port"), Tok.gen(port)]
    if dropped:
        ctx.add(
            INFO,
            "L301",
            "rendezvous options dropped, the Kubeflow torch runtime provides them through PET_NNODES, "
            "PET_NODE_RANK, PET_MASTER_ADDR and PET_MASTER_PORT: " + ", ".join(dropped),
            findings_line,
        )
    if not any(t.value == _NPROC for t in kept):
        # torchrun's own default is one process per node; the runtime would otherwise say "auto" on GPU nodes.
        kept = [Tok.gen(_NPROC), Tok.gen("1")] + kept
        nproc = "1"
        ctx.add(
            INFO,
            "L320",
            "torchrun had no --nproc-per-node, so Slurm ran one process per node; `--nproc-per-node 1` is "
            "written out because the runtime's PET_NPROC_PER_NODE would start one process per GPU",
            line,
            "set --nproc-per-node to the GPUs per node if one process per GPU was intended",
        )
    gpus = ctx.shape.gpus_per_node
    if nproc is not None and nproc.isascii() and nproc.isdigit() and gpus and to_int(nproc) > gpus:
        ctx.add(
            WARNING,
            "L337",
            f"torchrun starts {nproc} processes per node but the job has {gpus} GPU(s) per "
            "node; the TrainJob starts the same number, so processes share GPUs as on Slurm",
            line,
            f"set --nproc-per-node {gpus} (one process per GPU) or request {nproc} GPUs per node",
        )
    elif nproc in ("gpu", "cuda") and not gpus:
        ctx.add(
            WARNING,
            "L337",
            f"`--nproc-per-node {nproc}` counts GPUs, but the job requests none: torchrun "
            "fails on a node without GPUs (on Slurm too)",
            line,
            "request GPUs (--gpus-per-node) or give a number of processes",
        )
    elif nproc == "auto" and not gpus:
        ctx.add(
            WARNING,
            "L337",
            "`--nproc-per-node auto` without GPUs starts one process per CPU the node shows; a "
            "pod shows the host's CPUs, not the Slurm allocation's",
            line,
            "give a number of processes",
        )
    if legacy:
        ctx.add(
            INFO,
            "L321",
            "torch.distributed.launch is deprecated; it is kept (it reads the same PET_* "
            "variables as torchrun) and still passes --local-rank to the script",
            line,
        )
        launcher = [Tok.gen(t.value) for t in toks[:3]]
    else:
        launcher = [Tok.gen("torchrun")]
    words = launcher + kept + program
    command, args, shell = common.plain_or_shell(ctx, words)
    ppn = to_int(nproc) if nproc and nproc.isascii() and nproc.isdigit() else None
    return LaunchIntent(
        family=TORCHRUN,
        framework="torch",
        command=command,
        args=args,
        line=line,
        proc_per_node=ppn,
        runtime="torch-distributed",
        num_nodes=num_nodes,
        uses_shell=shell,
    )


def _rendezvous(ctx: LaunchContext, seen, srun: SrunCall | None, step, line: int) -> int:
    """The node count the Slurm job really trained on, and findings where torchrun's rendezvous on Slurm
    did not make one training across the nodes (torch/distributed/run.py defaults: --nnodes 1,
    --rdzv-backend static, --master-addr 127.0.0.1, --node-rank 0)."""

    def value(key):
        tok = seen.get(key)
        return common.static_value(ctx, tok) if tok is not None else None

    nnodes = value("--nnodes")
    standalone = "--standalone" in seen
    single = standalone or "--nnodes" not in seen or (nnodes is not None and nnodes.split(":")[-1] == "1")
    if srun is None:
        if ctx.shape.nodes > 1 and single:
            # the batch step runs on node 0 only: one single-node training (P443 reports the node count)
            return 1
        if ctx.shape.nodes > 1:
            ctx.add(
                WARNING,
                "L350",
                f"torchrun runs in the batch step, on node 0 only, with --nnodes {nnodes or '…'}: "
                "on Slurm it waited for nodes that never joined; the TrainJob starts it on every "
                "node and trains across them",
                line,
                "start it on every node with `srun torchrun …`",
            )
        return step.nodes
    if step.nodes <= 1:
        return step.nodes
    if single:
        ctx.add(
            WARNING,
            "L349",
            f"srun starts torchrun on {step.nodes} nodes without a multi-node rendezvous "
            f"({'--standalone' if standalone else 'no --nnodes'}): on Slurm each node ran its own "
            f"training; the TrainJob trains across the {step.nodes} nodes (PET_NNODES)",
            line,
            "add `--nnodes $SLURM_NNODES --rdzv-backend c10d --rdzv-endpoint $head:29500` on Slurm, or keep one node",
        )
    elif nnodes is not None and nnodes.split(":")[-1].isdigit() and to_int(nnodes.split(":")[-1]) != step.nodes:
        ctx.add(
            WARNING,
            "L349",
            f"--nnodes {nnodes} differs from the {step.nodes} nodes srun starts torchrun on; the "
            f"TrainJob trains across {step.nodes} nodes",
            line,
            "make --nnodes the node count",
        )
    elif "--rdzv-endpoint" not in seen and "--master-addr" not in seen:
        ctx.add(
            WARNING,
            "L350",
            "torchrun on several nodes without --rdzv-endpoint or --master-addr rendezvoused at "
            "127.0.0.1 on every node: the Slurm job could not form one training; the TrainJob "
            "does (PET_MASTER_ADDR)",
            line,
            "give --rdzv-endpoint $head:29500 on Slurm",
        )
    elif (
        "--rdzv-endpoint" not in seen
        and "--node-rank" not in seen
        and (value("--rdzv-backend") or "static") == "static"
    ):
        ctx.add(
            WARNING,
            "L350",
            "static rendezvous (--master-addr) without --node-rank: every node was rank 0 on "
            "Slurm, so no training formed; the TrainJob gives each pod its rank (PET_NODE_RANK)",
            line,
            "pass --node-rank $SLURM_NODEID inside `srun bash -c '…'`, or use --rdzv-backend c10d",
        )
    return step.nodes


def _port(ctx: LaunchContext, seen) -> str | None:
    """The rendezvous port the Slurm job used (`--master-port N`, or the port of `--rdzv-endpoint H:N`)."""
    for key in ("--master-port", "--rdzv-endpoint"):
        tok = seen.get(key)
        if tok is None:
            continue
        value = common.static_value(ctx, tok)
        if value is None:
            tail = tok.value.rsplit(":", 1)[-1]
            if key == "--rdzv-endpoint" and ":" in tok.value and tail.isascii() and tail.isdigit():
                return tail  # `$head:29400`: the host is computed
            continue
        value = value.rsplit(":", 1)[-1] if key == "--rdzv-endpoint" else value
        if value.isascii() and value.isdigit():
            return value
    return None
