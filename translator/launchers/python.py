"""Plain `python train.py` (or any program) run once: `torch-distributed` with one node, the plain command.

The runtime's torch policy only adds PET_* variables, which a plain program ignores; the command is the
user's own (their interpreter word, their script), so nothing is hard-coded.
"""

from __future__ import annotations


from translator.diagnostics import WARNING
from translator.launchers import common
from translator.launchers.common import LaunchContext, SrunCall, Tok
from translator.launchers.intent import PYTHON, LaunchIntent


def matches(ctx: LaunchContext, toks: list[Tok], srun: SrunCall | None) -> bool:
    return True  # the last family: whatever no other family claimed runs once


def build(ctx: LaunchContext, toks: list[Tok], srun: SrunCall | None, line: int) -> LaunchIntent:
    program = common.resolve_static(ctx, toks)
    command, args, shell = common.plain_or_shell(ctx, program)
    if ctx.shape.nodes > 1:
        ctx.add(
            WARNING,
            "L318",
            f"the job asks for {ctx.shape.nodes} nodes but `{toks[0].value}` runs once, on the first node; the "
            "TrainJob uses one node",
            line,
            "use torchrun or srun to run on every node, or ask for one node",
        )
    return LaunchIntent(
        family=PYTHON,
        framework="torch",
        command=command,
        args=args,
        line=line,
        proc_per_node=None,
        runtime="torch-distributed",
        num_nodes=1,
        uses_shell=shell,
    )
