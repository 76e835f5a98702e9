"""Fallback: anything the launcher families do not cover (loops over srun steps, several steps, shell logic).

The script body runs under `bash -c` on every node of a `torch-distributed` TrainJob, after a
Slurm-compatibility prologue (translator/plan/prologue.py) that defines the SLURM_* variables the script
uses from PET_* and the job-completion index, and `srun`/`scontrol` as bash functions. The difference
that matters is said in findings: on Slurm the body runs once and only `srun` fans out; here every node
runs the body, so steps outside `srun` need a guard to run once.
"""
from __future__ import annotations

import re
import shlex
from typing import List

from translator.diagnostics import INFO, WARNING
from translator.launchers import common
from translator.launchers.common import LaunchContext
from translator.launchers.intent import SCRIPT, LaunchIntent

_SLURM_NAME = re.compile(r"\b(SLURMD?_[A-Z0-9_]+)\b")
BATCH_ARGV0 = "slurm_script"       # $0 of the batch script on Slurm is the spooled copy `slurm_script`

_STUBS = [
    "module() { echo \"slurm2kf: 'module $*' skipped; the image provides the software\" >&2; }",
    "ml() { module \"$@\"; }",
    "command -v conda >/dev/null 2>&1 || conda() { echo \"slurm2kf: 'conda $*' skipped; the image provides "
    "the environment\" >&2; }",
]


def body_text(script) -> str:
    start = script.body_start_line
    if not start:
        return ""
    lines = (script.text or "").splitlines()
    return "\n".join(lines[start - 1:])


def build(ctx: LaunchContext, line, reasons: List[str]) -> LaunchIntent:
    from translator.plan import prologue

    script, job = ctx.script, ctx.job
    body = body_text(script)
    names: List[str] = []
    for m in _SLURM_NAME.finditer(body):
        if m.group(1) not in names:
            names.append(m.group(1))
    functions = [f for f in ("srun", "scontrol", "sbatch") if re.search(rf"\b{f}\b", body)]
    pro = prologue.prologue_lines(names, job, ctx.shape, export=True, functions=functions)
    uses_env_tools = re.search(r"\b(module|ml|conda)\b", body) is not None
    text_lines = pro + (_STUBS if uses_env_tools else [])
    end = script.line_count
    if not body.strip():
        ctx.add(WARNING, "L333", "the script has no commands; the TrainJob runs `true`", None,
                "check that this is the script you meant to convert")
        return LaunchIntent(family=SCRIPT, framework="torch", command=("true",), args=(), line=None,
                            runtime="torch-distributed", num_nodes=ctx.shape.nodes)
    text_lines.append(f"# ---- batch script body, lines {script.body_start_line}-{end} ----")
    text = "\n".join(text_lines) + "\n" + body + ("\n" if body and not body.endswith("\n") else "")
    defined = [n for n in names if prologue.definition(n, job, ctx.shape) is not None]
    undefined = [n for n in names if prologue.definition(n, job, ctx.shape) is None]
    why = "; ".join(reasons) if reasons else "no launch line of a known family"
    ctx.add(WARNING, "L330",
            f"the script body runs under bash -c on every node ({why}); on Slurm it ran once and only srun "
            "fanned out, so commands outside srun now run on each node", line or script.body_start_line,
            'guard steps that must run once with `if [ "$SLURM_NODEID" = 0 ]; then …; fi`')
    if defined or functions:
        ctx.add(INFO, "L331", "the Slurm-compatibility prologue defines "
                + ", ".join(defined + [f + "()" for f in functions]), script.body_start_line)
    for n in undefined:
        ctx.add(WARNING, "L325", f"the script uses {n}, which this job does not define on Kubernetes (and Slurm may "
                                 "not have set it either); it expands to an empty string", None,
                f"replace ${n} with a literal value")
    if script.shell not in ("bash", "sh", "unknown"):
        ctx.add(WARNING, "L332", f"the script is written for {script.shell}; the TrainJob runs it with bash",
                1, "rewrite the body for bash")
    given = tuple(getattr(job, "script_args", ()) or ())
    if common.uses_positional(body) or re.search(r"(^|[;&|\s])shift(\s|;|$)", body):
        if given:
            ctx.add(INFO, "L340", "the script reads its arguments; the TrainJob passes the ones given with "
                                  "--script-args: " + " ".join(shlex.quote(a) for a in given), script.body_start_line)
        else:
            ctx.add(WARNING, "L339", "the script reads its arguments ($1, $@, shift, ...), which sbatch passes after "
                                     "the script name; none are known, so they expand empty",
                    script.body_start_line, "pass them with `slurm2kf convert --script-args '...'`")
    args = (text, BATCH_ARGV0) + given
    return LaunchIntent(family=SCRIPT, framework="torch", command=("bash", "-c"), args=args, line=line,
                        runtime="torch-distributed", num_nodes=ctx.shape.nodes, uses_shell=True)
