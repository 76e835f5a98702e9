"""`srun python train.py` with one task per GPU/process: the program reads SLURM_PROCID & co.

On Kubeflow, torchrun becomes the per-node process launcher (`--nproc-per-node` = Slurm's tasks per
node, `--no-python`), and each process runs a small bash shim that maps what torchrun gives every
worker (RANK, LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE, GROUP_RANK, MASTER_ADDR/PORT) onto the Slurm
variables the program reads, then `exec`s the program. The shim is fixed text: the program and its
arguments are passed as positional parameters ("$@"), never pasted into shell code (unless a word
needs the shell, in which case it is the script's own text).
"""

from __future__ import annotations


from translator.diagnostics import INFO, WARNING
from translator.launchers import common
from translator.launchers.common import LaunchContext, SrunCall, Tok
from translator.launchers.intent import SRUN_TASKS, LaunchIntent

SHIM_NAME = "slurm2kf-task"

# Per-process values: what torchrun sets for each worker (torch.distributed.elastic agent).
RANK_EXPORTS = [
    'export SLURM_PROCID="$RANK" SLURM_LOCALID="$LOCAL_RANK" SLURM_NODEID="$GROUP_RANK"',
    'export SLURM_NTASKS="$WORLD_SIZE" SLURM_NPROCS="$WORLD_SIZE" SLURM_STEP_NUM_TASKS="$WORLD_SIZE"',
    'export SLURM_NTASKS_PER_NODE="$LOCAL_WORLD_SIZE" SLURM_NNODES="$PET_NNODES" '
    'SLURM_JOB_NUM_NODES="$PET_NNODES" SLURM_STEP_NUM_NODES="$PET_NNODES"',
]
# Job-wide values the shim always defines so that frameworks that detect Slurm (Lightning, submitit)
# see a complete, consistent environment rather than a partial one.
ALWAYS = (
    "SLURM_JOB_ID",
    "SLURM_JOBID",
    "SLURM_JOB_NAME",
    "SLURM_JOB_NODELIST",
    "SLURM_NODELIST",
    "SLURM_STEP_NODELIST",
    "SLURM_TASKS_PER_NODE",
    "SLURM_CPUS_PER_TASK",
    "SLURM_GPUS_ON_NODE",
    "SLURM_SUBMIT_DIR",
    "SLURM_STEP_ID",
)
_SET_BY_RANKS = {
    "SLURM_PROCID",
    "SLURM_LOCALID",
    "SLURM_NODEID",
    "SLURM_NTASKS",
    "SLURM_NPROCS",
    "SLURM_STEP_NUM_TASKS",
    "SLURM_NTASKS_PER_NODE",
    "SLURM_NNODES",
    "SLURM_JOB_NUM_NODES",
    "SLURM_STEP_NUM_NODES",
}


def shim_lines(ctx: LaunchContext, extra_names=(), srun: SrunCall | None = None) -> list[str]:
    from translator.plan import prologue

    names = [n for n in ALWAYS]
    for n in extra_names:
        if n not in names and n not in _SET_BY_RANKS:
            names.append(n)
    lines = prologue.prologue_lines(names, ctx.job, ctx.shape, export=True)
    lines[0] = "# slurm2kf: per-process Slurm variables from torchrun's RANK/LOCAL_RANK/WORLD_SIZE/GROUP_RANK"
    lines += RANK_EXPORTS
    per_task = ctx.job.fields.gpus_per_task
    step_value = common._int((srun.options.get("gpus-per-task") or "").split(":")[-1]) if srun is not None else None
    if step_value:
        per_task = step_value  # `srun --gpus-per-task=G`: the step binds G GPUs to each task
    if per_task:
        # --gpus-per-task binds each task to its own GPUs: task i sees GPUs i*G … i*G+G-1 as 0 … G-1
        lines.append(
            f"_s2k_g=$(( LOCAL_RANK * {int(per_task)} )); "
            f'export CUDA_VISIBLE_DEVICES="$(seq -s, "$_s2k_g" "$(( _s2k_g + {int(per_task)} - 1 ))")"'
        )
    return lines


def matches(ctx: LaunchContext, toks: list[Tok], srun: SrunCall | None) -> bool:
    w0 = common.basename(toks[0].value)
    return common.multi_task_step(ctx, srun) and (common.is_python(w0) or common.is_shell(w0))


def _slurm_names(ctx: LaunchContext) -> list[str]:
    """The SLURM_*/SLURMD_* names the script text mentions (the shim sets each of them)."""
    return common.slurm_names(getattr(ctx.script, "text", "") or "")


def build(ctx: LaunchContext, toks: list[Tok], srun: SrunCall | None, line: int) -> LaunchIntent:
    script_slurm_names = _slurm_names(ctx)
    step = common.step_shape(ctx.shape, srun)
    if srun is not None:
        common.check_batch_expansion(ctx, toks, line)
    program = common.resolve_static(ctx, toks)
    tpn = step.tasks_per_node
    shim = shim_lines(ctx, script_slurm_names, srun)
    head = [
        Tok.gen("torchrun"),
        Tok.gen("--nproc-per-node"),
        Tok.gen(str(tpn)),
        Tok.gen("--no-python"),
        Tok.gen("bash"),
        Tok.gen("-c"),
    ]
    port = common.static_value(ctx, Tok("$MASTER_PORT", "$MASTER_PORT", False))
    if port is not None and port.isascii() and port.isdigit() and port != "29500":
        # the program read MASTER_PORT=port on Slurm; torchrun gives its workers its own --master-port
        head[3:3] = [Tok.gen("--master-port"), Tok.gen(port)]
    if common.all_literal(program):
        text = "\n".join(shim + ['exec "$@"'])
        args = tuple(t.value for t in head[1:]) + (text, SHIM_NAME) + tuple(t.value for t in program)
        shell = False
    else:
        parts = [common.word_text(ctx, t) for t in program]
        pre = common.shell_preamble(ctx, [t.raw for t in program if not t.literal], export_slurm=True, has_base=True)
        user = "\n".join(pre + [" ".join(parts)])
        text = "\n".join(shim + pre + ["exec " + " ".join(parts)])
        args = tuple(t.value for t in head[1:]) + (text,) + common.script_args_tail(ctx, user, line)
        shell = True
    if step.total_tasks != step.nodes * tpn:
        ctx.add(
            WARNING,
            "L305",
            f"{step.total_tasks} tasks do not fill {step.nodes} nodes evenly; the TrainJob runs {tpn} "
            f"processes on each of {step.nodes} nodes ({tpn * step.nodes} in all)",
            line,
            "make --ntasks a multiple of the node count",
        )
    ctx.add(
        INFO,
        "L304",
        f"srun started {tpn} task(s) per node; on Kubeflow torchrun starts {tpn} process(es) per node and a "
        "shim maps RANK/LOCAL_RANK/WORLD_SIZE/GROUP_RANK to SLURM_PROCID/SLURM_LOCALID/SLURM_NTASKS/"
        "SLURM_NODEID (and defines SLURM_JOB_NODELIST from the TrainJob's pod names)",
        line,
    )
    return LaunchIntent(
        family=SRUN_TASKS,
        framework="torch",
        command=("torchrun",),
        args=args,
        line=line,
        proc_per_node=tpn,
        runtime="torch-distributed",
        num_nodes=step.nodes,
        uses_shell=shell,
    )
