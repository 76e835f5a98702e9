"""JAX programs that call `jax.distributed.initialize()` and rely on Slurm auto-detection.

Runtime `jax-distributed`: one process per node, with JAX_COORDINATOR_ADDRESS, JAX_NUM_PROCESSES and
JAX_PROCESS_ID injected by the controller, which `jax.distributed.initialize()` reads when no Slurm
variables are present. The command is the user's own (`python train.py …`); no SLURM_* variable is
defined for it, because a stray SLURM_JOB_ID would make JAX pick its Slurm detector again.
"""

from __future__ import annotations

import os
import re

from translator.diagnostics import INFO, WARNING
from translator.launchers import common
from translator.launchers.common import LaunchContext, SrunCall, Tok
from translator.launchers.intent import JAX, LaunchIntent

_JAX_TEXT = re.compile(r"\bjax\.distributed\.initialize\b|\bimport jax\b|\bfrom jax\b")
_MAX_READ = 1 << 20
_JAX_SCRIPT = re.compile(r"jax\.distributed|\bimport jax\b|\bJAX_|\bXLA_")


def _program_file(ctx: LaunchContext, toks: list[Tok]) -> str | None:
    for t in toks[1:]:
        if t.value.endswith(".py") and t.literal:
            return t.value
    return None


def uses_jax(ctx: LaunchContext, toks: list[Tok]) -> bool:
    """JAX when the program file (read next to the script, if present) or the script itself uses jax."""
    script_text = getattr(ctx.script, "text", "") or ""
    # (the substring test first: the pattern has no literal prefix, so the engine tries every character)
    if ("jax" in script_text or "JAX_" in script_text or "XLA_" in script_text) and _JAX_SCRIPT.search(script_text):
        return True
    name = _program_file(ctx, toks)
    if name:
        base = os.path.dirname(getattr(ctx.script, "path", "") or "")
        chdir = getattr(ctx.job.fields, "chdir", None)
        for d in filter(None, (os.path.join(base, chdir) if chdir else None, base or ".")):
            path = os.path.join(d, name) if not os.path.isabs(name) else name
            try:
                if os.path.isfile(path) and os.path.getsize(path) <= _MAX_READ:
                    with open(path, encoding="utf-8", errors="replace") as fh:
                        if _JAX_TEXT.search(fh.read()):
                            return True
            except OSError:
                continue
    return False


def matches(ctx: LaunchContext, toks: list[Tok], srun: SrunCall | None) -> bool:
    return common.is_python(common.basename(toks[0].value)) and uses_jax(ctx, toks)


def build(ctx: LaunchContext, toks: list[Tok], srun: SrunCall | None, line: int) -> LaunchIntent:
    step = common.step_shape(ctx.shape, srun)
    program = common.resolve_static(ctx, toks)
    command, args, shell = common.plain_or_shell(ctx, program)
    if step.tasks_per_node > 1:
        ctx.add(
            WARNING,
            "L316",
            f"Slurm ran {step.tasks_per_node} JAX processes per node (one per task); the jax-distributed "
            "runtime runs one process per node that sees all of the node's GPUs",
            line,
            "check that the program does not assume one GPU per process",
        )
    ctx.add(
        INFO,
        "L315",
        "jax.distributed.initialize() finds its coordinator through JAX_COORDINATOR_ADDRESS, "
        "JAX_NUM_PROCESSES and JAX_PROCESS_ID, which the jax-distributed runtime sets on every node",
        line,
    )
    return LaunchIntent(
        family=JAX,
        framework="jax",
        command=command,
        args=args,
        line=line,
        runtime="jax-distributed",
        num_nodes=step.nodes,
        uses_shell=shell,
    )
