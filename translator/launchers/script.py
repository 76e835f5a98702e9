"""Batch mode: anything the launcher families do not cover (loops over srun steps, several steps, shell logic).

Slurm runs the batch script once, on the first node of the allocation; only `srun` starts work on the
other nodes, as a job step. The TrainJob does the same (docs/batch-mode.md): the script body runs once
under `bash -c`, after a Slurm-compatibility prologue (translator/plan/batch_prologue.py) that defines the
batch step's SLURM_* variables and `srun`/`scontrol` as bash functions. A multi-node job runs on a
TrainingRuntime of the Trainer's MPI policy (translator/plan/batch_runtime.py): the launcher pod is the
batch host and `srun` starts a step's tasks on the pods with Open MPI's mpirun over ssh. A single-node job
keeps one pod, where `srun` starts the tasks as local processes.
"""

from __future__ import annotations

import re
import shlex

from translator.diagnostics import INFO, WARNING
from translator.launchers import common
from translator.launchers.common import LaunchContext
from translator.launchers.intent import SCRIPT, LaunchIntent
from translator.plan import batch_prologue, batch_runtime, prologue

_SLURM_NAME = re.compile(r"\b(SLURMD?_[A-Z0-9_]+)\b")  # what common.slurm_names finds
# `set -e` / `set -o errexit` at the start of a line (after blanks): `(^|\n)\s*set\s+(-[a-zA-Z]*e|-o\s+errexit)`,
# searched from its literal part (see _sets_errexit)
_SET_ERREXIT = re.compile(r"set\s+(?:-[a-zA-Z]*e|-o\s+errexit)")
_TTY = re.compile(r"(^|[\s;&|(`])(clear|tput|reset)(?=[\s;&|)`]|$)")  # what _tty_commands finds
_TTY_BEFORE = frozenset(";&|(`")
_TTY_AFTER = frozenset(";&|)`")
_SHIFT = re.compile(r"(^|[;&|\s])shift(\s|;|$)")
_ENV_TOOLS = re.compile(r"\b(module|ml|conda)\b")
#: what sbatch and slurmd give every batch step (sbatch(1) OUTPUT ENVIRONMENT VARIABLES): programs the script
#: starts read them (Lightning, submitit, MPI libraries), whether or not the script names them; those the
#: job's options leave unset stay unset
BATCH_STEP_NAMES = (
    "SLURM_JOB_ID",
    "SLURM_JOBID",
    "SLURM_JOB_NAME",
    "SLURM_JOB_NODELIST",
    "SLURM_NODELIST",
    "SLURM_JOB_NUM_NODES",
    "SLURM_NNODES",
    "SLURM_NTASKS",
    "SLURM_NPROCS",
    "SLURM_NTASKS_PER_NODE",
    "SLURM_TASKS_PER_NODE",
    "SLURM_CPUS_PER_TASK",
    "SLURM_CPUS_ON_NODE",
    "SLURM_JOB_CPUS_PER_NODE",
    "SLURM_GPUS_ON_NODE",
    "SLURM_GPUS_PER_NODE",
    "SLURM_GPUS_PER_TASK",
    "SLURM_GPUS",
    "SLURM_MEM_PER_NODE",
    "SLURM_MEM_PER_CPU",
    "SLURM_MEM_PER_GPU",
    "SLURM_JOB_PARTITION",
    "SLURM_JOB_ACCOUNT",
    "SLURM_JOB_QOS",
    "SLURM_SUBMIT_DIR",
    "SLURM_SUBMIT_HOST",
    "SLURMD_NODENAME",
    "SLURM_TOPOLOGY_ADDR",
    "SLURM_NODEID",
    "SLURM_PROCID",
    "SLURM_LOCALID",
    "SLURM_GTIDS",
    "SLURM_CLUSTER_NAME",
    "SLURM_RESTART_COUNT",
    "SLURM_ARRAY_JOB_ID",
)
BATCH_ARGV0 = "slurm_script"  # $0 of the batch script on Slurm is the spooled copy `slurm_script`

_STUBS = [
    "module() { echo \"slurm2kf: 'module $*' skipped; the image provides the software\" >&2; }",
    'ml() { module "$@"; }',
    "command -v conda >/dev/null 2>&1 || conda() { echo \"slurm2kf: 'conda $*' skipped; the image provides "
    'the environment" >&2; }',
]


def body_text(script) -> str:
    start = script.body_start_line
    if not start:
        return ""
    # bash ends lines at `\n` only (not at form feed, NEL, U+2028...): str.splitlines() would cut there.
    # The text after the (start-1)th `\n` ("\n".join of the lines from `start` on): what is left after that
    # many splits (only the header's lines are cut out).
    text = script.text or ""
    if start < 1:
        return text
    parts = text.split("\n", start - 1)
    return parts[-1] if len(parts) == start else ""  # (fewer lines than that: "")


def build(ctx: LaunchContext, line, reasons: list[str]) -> LaunchIntent:
    """Batch mode: the script runs once on the batch pod (Slurm's node 0) and each srun is a step that
    starts its tasks on the pods of the allocation (docs/batch-mode.md)."""
    script, job = ctx.script, ctx.job
    body = body_text(script)
    multi_node = ctx.shape.nodes > 1
    runtime = batch_runtime.FRAMEWORK if multi_node else "torch-distributed"
    framework = "mpi" if multi_node else "torch"
    if not body.strip():
        ctx.add(
            WARNING,
            "L333",
            "the script has no commands; the TrainJob runs `true`",
            None,
            "check that this is the script you meant to convert",
        )
        return LaunchIntent(
            family=SCRIPT,
            framework="torch",
            command=("true",),
            args=(),
            line=None,
            runtime="torch-distributed",
            num_nodes=1,
        )
    names = list(dict.fromkeys(common.slurm_names(body) + list(BATCH_STEP_NAMES)))
    functions = [f for f in ("srun", "scontrol", "sbatch") if common.has_word(body, f)]
    text_lines = batch_prologue.batch_prologue_lines(job, ctx.shape, names=names, functions=functions)
    if _ENV_TOOLS.search(body) is not None:
        text_lines += _STUBS
    text_lines += _shell_options(ctx, script, body)
    _node_name_findings(ctx, script)
    if multi_node:
        _step_findings(ctx, script)
    end = script.line_count
    text_lines.append(f"# ---- batch script body, lines {script.body_start_line}-{end} ----")
    text = "\n".join(text_lines) + "\n" + body + ("\n" if body and not body.endswith("\n") else "")
    why = "; ".join(reasons) if reasons else "no launch line of a known family"
    if multi_node:
        ctx.add(
            INFO,
            "L366",
            f"batch mode ({why}): the script runs once, on the launcher pod, which is Slurm's node 0 of the "
            f"{ctx.shape.nodes} nodes; each srun starts its tasks on the pods with mpirun over ssh, as srun "
            "started them on the allocation's nodes; files the script writes reach the other pods only through a "
            "shared volume (site profile filesystems), as on Slurm's shared file systems",
            line or script.body_start_line,
        )
        ctx.add(
            WARNING,
            "L367",
            "the image must provide bash, an sshd binary and Open MPI (mpirun, orted) on the default PATH: the "
            "node pods run sshd and the steps reach them with mpirun; the TrainingRuntime written beside the "
            "TrainJob runs this image on every pod",
            script.body_start_line,
            "build the image FROM your training image with openssh-server and openmpi-bin added, then pass --image",
        )
    else:
        ctx.add(
            INFO,
            "L368",
            f"batch mode ({why}): the script runs once in the job's one pod, and each srun starts its tasks "
            "there as local processes with the Slurm variables of each task",
            line or script.body_start_line,
        )
    if functions:
        ctx.add(
            INFO,
            "L331",
            "the Slurm-compatibility prologue defines " + ", ".join(f + "()" for f in functions),
            script.body_start_line,
        )
    _undefined_names(ctx, common.slurm_names(body))  # only what the script itself reads
    if script.shell not in ("bash", "sh", "unknown"):
        ctx.add(
            WARNING,
            "L332",
            f"the script is written for {script.shell}; the TrainJob runs it with bash",
            1,
            "rewrite the body for bash",
        )
    given = _script_arguments(ctx, script, job, body)
    return LaunchIntent(
        family=SCRIPT,
        framework=framework,
        command=("bash", "-c"),
        args=(text, BATCH_ARGV0) + given,
        line=line,
        runtime=runtime,
        num_nodes=ctx.shape.nodes,
        uses_shell=True,
    )


def _shell_options(ctx: LaunchContext, script, body: str) -> list[str]:
    """`set` lines for the #! line's options, and the terminal commands made harmless under errexit."""
    lines = []
    opts = _shebang_options(script)
    if opts:
        lines.append("set " + " ".join(opts) + "  # slurm2kf: options of the #! line")
        ctx.add(INFO, "L344", f"the options of the #! line ({' '.join(opts)}) are kept with `set`", 1)
    errexit = (
        any(o.startswith("-") and "e" in o and o != "-o" for o in opts) or ("errexit" in opts) or _sets_errexit(body)
    )
    tty = _tty_commands(body)
    if tty and errexit:
        lines.append("clear() { :; }; tput() { :; }; reset() { :; }  # slurm2kf: no terminal in a pod")
        ctx.add(
            WARNING,
            "L345",
            f"`{'`, `'.join(tty)}` need a terminal (TERM), which a pod does not have; under "
            "`set -e` the failing command would stop the script, so they do nothing here",
            script.body_start_line,
            "remove terminal commands from batch scripts",
        )
    return lines


def _node_name_findings(ctx: LaunchContext, script) -> None:
    for call, cline in _srun_calls(script):
        for opt in ("nodelist", "exclude", "w", "x"):
            if opt in call.options and "$" not in call.options[opt] and "`" not in call.options[opt]:
                ctx.add(
                    WARNING,
                    "L347",
                    f"`srun {'-' if len(opt) == 1 else '--'}{opt} {call.options[opt]}` names "
                    "Slurm nodes, which do not exist on Kubernetes: the step takes as many of the TrainJob's "
                    "pods, in node order",
                    cline,
                    "use --relative=N (node index in the job), or names from `scontrol show hostnames`",
                )
                break


def _step_findings(ctx: LaunchContext, script) -> None:
    """What a step does differently when Open MPI starts its tasks on the pods (several nodes only)."""
    from translator.launchers.launchline import srun_commands

    background: list[int] = []
    for st in srun_commands(script.body):
        call = common.parse_srun(st.words)
        if "mpi" in call.options:
            ctx.add(
                WARNING,
                "L308",
                f"`srun --mpi={call.options['mpi']}` started its tasks through Slurm's PMI; in batch mode Open MPI's "
                "mpirun starts them, so the program must be built against Open MPI (an MPICH, Intel MPI or Cray "
                "MPICH build would start as separate one-rank runs)",
                st.line,
                "use an image whose MPI is Open MPI",
            )
        placed = any(o in call.options for o in ("w", "nodelist", "r", "relative"))
        if st.background and not placed:
            background.append(st.line)
    if background:
        ctx.add(
            WARNING,
            "L369",
            "steps started in the background (line "
            + ", ".join(str(n) for n in sorted(set(background))[:8])
            + "): Slurm places concurrent steps on the CPUs and GPUs still free (and queues those that do not "
            "fit); here each starts at once on the first node(s) of the job, and a step's --gpus/--gres does not "
            "give it GPUs of its own",
            background[0],
            "place each step with -w or --relative, and set CUDA_VISIBLE_DEVICES per step",
        )


def _undefined_names(ctx: LaunchContext, names: list[str]) -> None:
    for n in names:
        if prologue.definition(n, ctx.job, ctx.shape) is None:
            ctx.add(
                WARNING,
                "L325",
                f"the script uses {n}, which this job does not define on Kubernetes (and Slurm may "
                "not have set it either); it expands to an empty string",
                None,
                f"replace ${n} with a literal value",
            )


def _script_arguments(ctx: LaunchContext, script, job, body: str) -> tuple[str, ...]:
    given = tuple(getattr(job, "script_args", ()) or ())
    if common.uses_positional(body) or ("shift" in body and _SHIFT.search(body)):
        if given:
            ctx.add(
                INFO,
                "L340",
                "the script reads its arguments; the TrainJob passes the ones given with "
                "--script-args: " + " ".join(shlex.quote(a) for a in given),
                script.body_start_line,
            )
        else:
            ctx.add(
                WARNING,
                "L339",
                "the script reads its arguments ($1, $@, shift, ...), which sbatch passes after "
                "the script name; none are known, so they expand empty",
                script.body_start_line,
                "pass them with `slurm2kf convert --script-args '...'`",
            )
    return given


def _sets_errexit(body: str) -> bool:
    r"""`(^|\n)\s*set\s+(-[a-zA-Z]*e|-o\s+errexit)` found in `body`: a `set` turning on errexit with only
    blanks before it on its line. The engine skips to each `set`; the blanks before it are checked here,
    back to a newline or the start (each run of blanks is read once: linear in the body)."""
    search = _SET_ERREXIT.search
    pos = 0
    while (m := search(body, pos)) is not None:
        start = m.start()
        k = start - 1
        while k >= 0:
            ch = body[k]
            if ch == "\n":
                return True
            if not ch.isspace():  # \s is str.isspace() for a str pattern
                break
            k -= 1
        else:
            return True  # only blanks back to the start of the body
        pos = start + 1
    return False


def _tty_commands(body: str) -> list[str]:
    """The terminal commands (clear, tput, reset) used as words in `body`, sorted: the names _TTY finds.

    Each name is found by str.find and the characters around it checked here: before it a blank, `;&|(`, a
    backquote or the start; after it a blank, `;&|)`, a backquote or the end. (_TTY consumes the character
    before a name, never the one after, so its matches cannot hide one another.)"""
    found = []
    end_of_body = len(body)
    for name in ("clear", "reset", "tput"):  # (sorted)
        i = body.find(name)
        while i >= 0:
            end = i + len(name)
            if (i == 0 or body[i - 1] in _TTY_BEFORE or body[i - 1].isspace()) and (
                end == end_of_body or body[end] in _TTY_AFTER or body[end].isspace()
            ):
                found.append(name)
                break
            i = body.find(name, i + 1)
    return found


def _shebang_options(script) -> list[str]:
    """Options on the #! line (`#!/bin/bash -e`, `#!/bin/bash -ex`) that `set` can apply (not -l, -i)."""
    words = (script.shebang or "")[2:].split()
    if words and words[0].endswith("/env"):
        words = words[1:]
    opts = []
    for w in words[1:]:
        if re.fullmatch(r"-[euxvfhBCHPT]+", w):
            opts.append(w)
        elif re.fullmatch(r"[-+]o", w):
            opts.append(w)
        elif opts and opts[-1] in ("-o", "+o") and re.fullmatch(r"[a-z]+", w):
            opts.append(w)
    if opts and opts[-1] in ("-o", "+o"):
        opts.pop()
    return opts


def _srun_calls(script):
    from translator.launchers.launchline import srun_commands

    return [(common.parse_srun(st.words), st.line) for st in srun_commands(script.body)]
