"""Launch-line analysis: Script + SlurmJob -> LaunchIntent (how the training starts, per node).

`detect` finds the launch lines of the body (inside blocks too), picks the one that starts the
training, and hands it to the module of its family:

  torchrun.py     torchrun / python -m torch.distributed.run|launch (alone or under srun)
  srun_tasks.py   srun python train.py, one task per process
  accelerate.py   accelerate launch
  deepspeed.py    deepspeed
  mpi.py          mpirun / mpiexec / srun --mpi / srun of a compiled program
  jax.py          python programs using jax.distributed
  python.py       a program run once (plain python)
  container.py    apptainer/singularity exec, pyxis --container-image (wrapping any of the above)
  script.py       anything else: the body under bash -c with a Slurm-compatibility prologue
"""
from __future__ import annotations

import dataclasses
import re
from typing import List, Optional, Tuple

from translator.diagnostics import INFO, WARNING
from translator.launchers import common
from translator.launchers.common import LaunchContext, SrunCall, Tok
from translator.launchers.intent import LaunchIntent
from translator.read.ast import Assignment, Block, Command, LAUNCH, PIP

LAUNCHERS = {"srun", "torchrun", "mpirun", "mpiexec", "orterun", "deepspeed", "accelerate", "apptainer",
             "singularity"}
# srun steps that only print information; dropped (with a finding) when a training launch follows.
AUX_PROGRAMS = {"hostname", "nvidia-smi", "echo", "date", "env", "printenv", "uname", "ls", "free", "lscpu",
                "which", "true", "sleep", "nproc", "ibstat", "ibv_devinfo", "rocm-smi", "df", "id", "whoami"}


def _walk(statements, block: Optional[str] = None):
    """Yield (statement, enclosing block kind or None) for commands and assignments, in order."""
    for st in statements:
        if isinstance(st, Block):
            kind = block or st.kind
            if st.command is not None:
                # a command reading a here-document keeps its input: it counts as a block of its own
                yield st.command, kind if st.kind != "heredoc" else (block or "here-document")
            yield from _walk(st.children, kind if st.kind != "heredoc" else block)
        else:
            yield st, block


_ENV_MODULES = ("venv", "virtualenv", "pip", "ensurepip", "site", "conda", "uv")


def is_env_setup(cmd: Command) -> bool:
    """`python -m venv DIR` and friends: creating the software environment, not a launch."""
    words = [w.value for w in cmd.words]
    return (len(words) >= 3 and common.is_python(words[0]) and words[1] == "-m" and words[2] in _ENV_MODULES)


def is_launch(cmd: Command) -> bool:
    if not cmd.words or cmd.kind == PIP or is_env_setup(cmd):
        return False
    w0 = common.basename(cmd.words[0].value)
    return cmd.kind == LAUNCH or w0 in LAUNCHERS or common.is_python(w0)


def is_aux(cmd: Command) -> bool:
    words = [w.value for w in cmd.words]
    if common.is_python(words[0]) and len(words) > 1 and words[1] in ("-c", "--version", "-V"):
        return True
    if common.basename(words[0]) == "srun":
        inner = common.parse_srun(cmd.words).command
        if not inner:
            return False
        stripped, _ = strip_wrappers(None, inner, cmd.line)
        if not stripped:                       # `srun env`: prints the environment
            return True
        return common.basename(stripped[0].value) in AUX_PROGRAMS
    return False


def dispatch(ctx: LaunchContext, toks: List[Tok], srun: Optional[SrunCall], line: int) -> LaunchIntent:
    """The intent for one command (already stripped of `srun` when srun is given)."""
    from translator.launchers import (accelerate, container, deepspeed, jax, mpi, python, script, srun_tasks,
                                      torchrun)

    if not toks:
        return script.build(ctx, line, ["the launch line has no command"])
    if not toks[0].literal:
        program = common.static_value(ctx, toks[0])
        if program is None:
            return script.build(ctx, line, [f"the program `{toks[0].raw}` on line {line} is computed by the shell"])
        toks = [Tok(program, toks[0].raw, True)] + list(toks[1:])
    w0 = common.basename(toks[0].value)
    step = common.step_shape(ctx.shape, srun)
    if w0 in container.APPTAINER:
        return container.apptainer(ctx, toks, srun, line, dispatch)
    if torchrun.is_torchrun(toks):
        return torchrun.build(ctx, toks, srun, line)
    if w0 == "accelerate" and len(toks) > 1 and toks[1].value == "launch":
        return accelerate.build(ctx, toks, srun, line)
    if w0 == "deepspeed":
        return deepspeed.build(ctx, toks, srun, line)
    if w0 in mpi.MPI_TOOLS:
        return mpi.build(ctx, toks, srun, line)
    if w0 in ("bash", "sh") and len(toks) >= 3 and toks[1].value == "-c":
        from translator.launchers import indirect
        inner = indirect.bash_c_words(ctx, toks[2])
        if not inner:
            return script.build(ctx, line, [f"line {line} runs shell logic under `{w0} -c`"])
        return dispatch(ctx, inner, srun, line)
    if common.is_python(w0):
        if len(toks) > 2 and toks[1].value == "-m" and toks[2].value.split(".")[0] == "mpi4py" and (
                srun is not None and step.total_tasks > 1):
            return mpi.build(ctx, toks, srun, line)
        if jax.uses_jax(ctx, toks):
            return jax.build(ctx, toks, srun, line)
        if srun is not None and (step.total_tasks > 1 or step.nodes > 1):
            return srun_tasks.build(ctx, toks, srun, line, _slurm_names(ctx))
        return python.build(ctx, toks, srun, line)
    if srun is not None and (step.total_tasks > 1 or step.nodes > 1):
        if w0 in ("bash", "sh") or w0.endswith(".sh"):
            return srun_tasks.build(ctx, toks, srun, line, _slurm_names(ctx))
        return mpi.build(ctx, toks, srun, line)
    return python.build(ctx, toks, srun, line)


def _slurm_names(ctx: LaunchContext) -> List[str]:
    return list(dict.fromkeys(m.group(1) for m in re.finditer(r"\b(SLURMD?_[A-Z0-9_]+)\b",
                                                                getattr(ctx.script, "text", "") or "")))


_NAME_VALUE = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)=(.*)$", re.S)


def strip_wrappers(ctx: Optional[LaunchContext], words, line: int):
    """Drop command wrappers that do not change what runs (`time`, `exec`, `nohup`, `stdbuf -oL`, `env A=B`).

    Returns (remaining words, [(name, value)] environment the wrappers set).
    """
    words = list(words)
    env = []
    while words:
        w0 = common.basename(words[0].value)
        if w0 in ("exec", "nohup", "command", "builtin"):
            words = words[1:]
            while words and w0 == "exec" and words[0].value in ("-c", "-l"):
                words = words[1:]
        elif w0 == "time":
            words = words[1:]
            while words and words[0].value in ("-p", "--portability", "-v", "--verbose"):
                words = words[1:]
        elif w0 == "stdbuf":
            words = words[1:]
            while words and words[0].value.startswith("-"):
                opt = words[0].value
                words = words[2:] if opt in ("-i", "-o", "-e") else words[1:]
        elif w0 == "env":
            words = words[1:]
            while words:
                v = words[0].value
                m = _NAME_VALUE.match(v)
                if m and words[0].literal:
                    env.append((m.group(1), m.group(2)))
                    words = words[1:]
                elif m:
                    if ctx is not None:
                        ctx.add(WARNING, "L327", f"`env {words[0].raw}` needs the shell; it is not carried", line,
                            "give the variable a literal value")
                    words = words[1:]
                elif v in ("-i", "--ignore-environment"):
                    words = words[1:]
                elif v in ("-u", "--unset"):
                    words = words[2:]
                else:
                    break
        else:
            break
    return tuple(words), env


def _dispatch_top(ctx: LaunchContext, cmd: Command) -> LaunchIntent:
    intent_env = []
    for a in cmd.prefix_assignments:
        if a.value.literal:
            intent_env.append((a.name, a.value.value))
        else:
            ctx.add(WARNING, "L327", f"`{a.name}={a.value.raw}` before the launch command needs the shell; it is "
                                     "not carried", cmd.line, "give the variable a literal value")
    from translator.launchers import indirect
    toks = common.shell_word_expansions(ctx, common.toks_of(cmd.words), cmd.line)
    words, wrapper_env = strip_wrappers(ctx, indirect.expand(ctx, toks), cmd.line)
    intent = _dispatch_words(ctx, words, cmd.line) if words else dispatch(ctx, [], None, cmd.line)
    extra = tuple(intent_env + wrapper_env)
    return dataclasses.replace(intent, env=tuple(intent.env) + extra) if extra else intent


def _dispatch_words(ctx: LaunchContext, words, line: int) -> LaunchIntent:
    from translator.launchers import container, mpi

    if common.basename(words[0].value) == "srun":
        call = common.parse_srun(words)
        inner = common.toks_of(call.command)
        if call.options.get("container-image"):
            return container.pyxis(ctx, call, inner, line, dispatch)
        mpi_kind = call.options.get("mpi")
        if mpi_kind and mpi_kind != "none" and inner:
            return mpi.build(ctx, inner, call, line)
        inner_words, wrapper_env = strip_wrappers(ctx, call.command, line)
        intent = dispatch(ctx, common.toks_of(inner_words), call, line)
        return dataclasses.replace(intent, env=tuple(intent.env) + tuple(wrapper_env)) if wrapper_env else intent
    return dispatch(ctx, common.toks_of(words), None, line)


def _assignment_lines(ctx: LaunchContext, cmd: Command) -> Tuple[int, ...]:
    """Lines of the top-level assignments the launch line refers to, directly or through other variables."""
    last = {}
    for a in ctx.assignments:
        last[a.name] = a
    lines, seen = [], set()
    pending = common.var_refs(cmd.text)
    while pending:
        name = pending.pop(0)
        if name in seen or name not in last:
            continue
        seen.add(name)
        a = last[name]
        lines.append(a.line)
        pending.extend(common.var_refs(a.value.raw))
    return tuple(sorted(set(lines)))


def detect(script, job) -> LaunchIntent:
    """Choose the launch line and convert it with its family's module."""
    from translator.launchers import script as script_family

    shape = common.job_shape(job.fields)
    entries = list(_walk(script.body))
    launches: List[Tuple[Command, Optional[str]]] = []
    aux: List[Command] = []
    for st, block in entries:
        if isinstance(st, Command) and is_launch(st):
            if is_aux(st):
                aux.append(st)
            else:
                launches.append((st, block))
    block_assigned = frozenset(st.name for st, block in entries if isinstance(st, Assignment) and block)

    def context_for(line: int) -> LaunchContext:
        top = tuple(st for st, block in entries if isinstance(st, Assignment) and block is None and st.line < line)
        return LaunchContext(script=script, job=job, shape=shape, assignments=top, block_assigned=block_assigned)

    reasons: List[str] = []
    if len(launches) == 1:
        cmd, block = launches[0]
        if block is not None:
            reasons.append(f"the launch on line {cmd.line} is inside a {block} block")
        elif cmd.background:
            reasons.append(f"the launch on line {cmd.line} runs in the background")
        elif cmd.connector in ("&&", "||", "|"):
            reasons.append(f"the launch on line {cmd.line} is part of a `{cmd.connector}` list")
    elif len(launches) > 1:
        reasons.append("launch lines " + ", ".join(str(c.line) for c, _ in launches) + " run as several steps")
    if len(launches) != 1 or reasons:
        ctx = context_for(launches[0][0].line if launches else (script.body_start_line or 1))
        if not launches:
            reasons.append("no launch line (srun, torchrun, mpirun, deepspeed, accelerate, python) was found")
        intent = script_family.build(ctx, launches[0][0].line if launches else None, reasons)
        return dataclasses.replace(intent, findings=tuple(ctx.findings))
    cmd, _ = launches[0]
    ctx = context_for(cmd.line)
    intent = _dispatch_top(ctx, cmd)
    redirs = [r for r in cmd.redirections if not r.startswith("<<")]
    if redirs and intent.family != "script":
        ctx.add(INFO, "L334", f"redirection `{' '.join(redirs)}` of the launch line is not carried; the output "
                              "goes to the pod logs (`kubectl logs`)", cmd.line)
    if intent.family == "script":
        return dataclasses.replace(intent, findings=tuple(ctx.findings))
    for a in aux:
        ctx.add(INFO, "L326", f"informational step `{a.text.strip()}` is not part of the TrainJob", a.line)
    consumed = tuple(sorted(set(range(cmd.line, (cmd.end_line or cmd.line) + 1)) | set(_assignment_lines(ctx, cmd))))
    return dataclasses.replace(intent, findings=tuple(ctx.findings), consumed_lines=consumed)
