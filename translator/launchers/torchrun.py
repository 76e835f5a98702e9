"""`torchrun …` / `python -m torch.distributed.run|launch …`, alone or under `srun` (one task per node).

Runtime `torch-distributed`. The controller sets PET_NNODES, PET_NODE_RANK, PET_MASTER_ADDR and
PET_MASTER_PORT, which torchrun reads as defaults for --nnodes, --node-rank, --master-addr and
--master-port; so every rendezvous flag the Slurm script fed (from SLURM_* variables, `scontrol show
hostnames`, a hard-coded head node) is dropped and the static rendezvous on rank-0's pod is used.
--nproc-per-node is kept (SDK 0.5 cannot set numProcPerNode, so the command carries it).
"""
from __future__ import annotations

from typing import List, Optional, Sequence

from translator.diagnostics import INFO, WARNING
from translator.launchers import common
from translator.launchers.common import LaunchContext, SrunCall, Tok
from translator.launchers.intent import TORCHRUN, LaunchIntent
from translator.slurm.values import to_int

# torchrun options that take no value (torch/distributed/run.py get_args_parser).
_FLAGS = {"--standalone", "-m", "--module", "--no-python", "--run-path", "--use-env", "--virtual-local-rank",
          "--no-local-rank"}
# Rendezvous options whose values PET_* provide on Kubeflow.
_DROP = {"--nnodes", "--node-rank", "--rdzv-endpoint", "--rdzv-id", "--rdzv-backend", "--master-addr",
         "--master-port"}
_NPROC = "--nproc-per-node"


def is_torchrun(toks: Sequence[Tok]) -> int:
    """Number of words naming the launcher (1 for `torchrun`, 3 for `python -m torch.distributed.run`), or 0."""
    if not toks:
        return 0
    if common.basename(toks[0].value) == "torchrun":
        return 1
    if (common.is_python(toks[0].value) and len(toks) >= 3 and toks[1].value == "-m"
            and toks[2].value in ("torch.distributed.run", "torch.distributed.launch")):
        return 3
    return 0


def build(ctx: LaunchContext, toks: List[Tok], srun: Optional[SrunCall], line: int) -> LaunchIntent:
    head = is_torchrun(toks)
    step = common.step_shape(ctx.shape, srun)
    legacy = head == 3 and toks[2].value == "torch.distributed.launch"
    if srun is not None:
        common.check_batch_expansion(ctx, toks, line)
        if step.tasks_per_node > 1:
            ctx.add(WARNING, "L303",
                    f"srun starts {step.tasks_per_node} copies of torchrun on each node (tasks per node = "
                    f"{step.tasks_per_node}); torchrun is a per-node launcher, so the TrainJob runs one per node",
                    line, "on Slurm use `srun --ntasks-per-node=1 torchrun …`")
    kept: List[Tok] = []
    dropped: List[str] = []
    nproc: Optional[str] = None
    rest = toks[head:]
    j = 0
    while j < len(rest):
        t = rest[j]
        if not t.value.startswith("-") or t.value == "-":
            break
        name, inline = common.split_option(t)
        key = common.norm(name)
        if key == "--nproc-per-node" or key == "--nproc_per_node":
            key = _NPROC
        takes_value = key not in _FLAGS and inline is None
        value_tok = rest[j + 1] if takes_value and j + 1 < len(rest) else None
        if key in _DROP or (key == "--standalone" and step.nodes > 1):
            dropped.append(t.raw + (" " + value_tok.raw if value_tok is not None else ""))
        elif key == _NPROC:
            vt = Tok(inline, t.raw, t.literal) if inline is not None else value_tok
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
        j += 2 if value_tok is not None else 1
    program = common.resolve_static(ctx, rest[j:])
    findings_line = line
    if dropped:
        ctx.add(INFO, "L301",
                "rendezvous options dropped, the Kubeflow torch runtime provides them through PET_NNODES, "
                "PET_NODE_RANK, PET_MASTER_ADDR and PET_MASTER_PORT: " + ", ".join(dropped), findings_line)
    if not any(t.value == _NPROC for t in kept):
        # torchrun's own default is one process per node; the runtime would otherwise say "auto" on GPU nodes.
        kept = [Tok.gen(_NPROC), Tok.gen("1")] + kept
        nproc = "1"
        ctx.add(INFO, "L320",
                "torchrun had no --nproc-per-node, so Slurm ran one process per node; `--nproc-per-node 1` is "
                "written out because the runtime's PET_NPROC_PER_NODE would start one process per GPU",
                line, "set --nproc-per-node to the GPUs per node if one process per GPU was intended")
    if legacy:
        ctx.add(INFO, "L321", "torch.distributed.launch is deprecated; it is kept (it reads the same PET_* "
                              "variables as torchrun) and still passes --local-rank to the script", line)
        launcher = [Tok.gen(t.value) for t in toks[:3]]
    else:
        launcher = [Tok.gen("torchrun")]
    words = launcher + kept + program
    command, args, shell = common.plain_or_shell(ctx, words)
    ppn = to_int(nproc) if nproc and nproc.isascii() and nproc.isdigit() else None
    return LaunchIntent(family=TORCHRUN, framework="torch", command=command, args=args, line=line,
                        proc_per_node=ppn, runtime="torch-distributed", num_nodes=step.nodes,
                        uses_shell=shell)
