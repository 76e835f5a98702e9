"""Shared pieces of the launcher modules: command words, the job's shape, srun options, shell text.

A launch line is a list of `Tok`s: the user's words (value, raw text, whether the shell would expand
them) and words we generate (always literal). When every word is literal the TrainJob gets them as a
plain argv; when a word needs the shell (`$DATA`, `"${ARGS[@]}"`), the command becomes `bash -c` with
the user's raw text after a preamble that defines what it refers to (see `shell_launch`).
"""

from __future__ import annotations

import math
import re
import shlex
from dataclasses import dataclass, field
from typing import TYPE_CHECKING
from collections.abc import Iterable, Sequence

from translator.diagnostics import Finding, INFO, WARNING
from translator.read.ast import Assignment, Word
from translator.read.words import _expansion
from translator.records import FrozenRecord
from translator.slurm.values import to_int
from translator.tables import keep

if TYPE_CHECKING:
    from translator.read.ast import Script
    from translator.slurm.job import SlurmJob


@dataclass(frozen=True)
class Tok:
    """One word of a launch command."""

    value: str
    raw: str
    literal: bool = True
    deferred: bool = False  # inside a single-quoted `bash -c '…'`: expanded by each task, not the batch shell

    def __init__(self, value: str, raw: str, literal: bool = True, deferred: bool = False):
        # what the generated __init__ of a frozen dataclass does (object.__setattr__ per field), written
        # into the instance's dict directly: a launch line makes a few dozen Toks
        d = self.__dict__
        d["value"] = value
        d["raw"] = raw
        d["literal"] = literal
        d["deferred"] = deferred

    @classmethod
    def gen(cls, value: str) -> Tok:
        return cls(value, shlex.quote(value), True)

    @classmethod
    def of(cls, word: Word) -> Tok:
        return cls(word.value, word.raw, bool(word.literal))

    def shell(self) -> str:
        """Shell source that yields this word: normalised quoting for literals, the raw text otherwise."""
        return shlex.quote(self.value) if self.literal else self.raw


def toks_of(words: Iterable[Word]) -> list[Tok]:
    return [Tok(w.value, w.raw, bool(w.literal)) for w in words]  # (Tok.of, without its call per word)


def all_literal(toks: Sequence[Tok]) -> bool:
    return all(t.literal for t in toks)


_VAR_REF = re.compile(r"\$(?:\{[#!]?([A-Za-z_][A-Za-z0-9_]*)|([A-Za-z_][A-Za-z0-9_]*))")


_VAR_REFS_MEMO: dict[str, tuple[str, ...]] = {}  # text -> its names: launch lines and values repeat (bounded)


def var_refs(text: str) -> list[str]:
    """Names of shell variables referenced in `text` ($NAME, ${NAME...}), in order, no duplicates (a new
    list on each call: callers extend it)."""
    known = _VAR_REFS_MEMO.get(text)
    if known is None:
        if "$" not in text:  # (every reference starts with one)
            return []
        known = tuple(dict.fromkeys(m.group(1) or m.group(2) for m in _VAR_REF.finditer(text)))
        keep(_VAR_REFS_MEMO, text, known, 4096)
    return list(known)


_IFS_BLANKS = re.compile(r"[ \t\n]+")


def ifs_split(text: str) -> list[str]:
    """Field splitting with bash's default IFS (space, tab, newline only; str.split() would also cut at
    U+00A0, U+2028, form feed...)."""
    return [w for w in _IFS_BLANKS.split(text) if w]


def basename(word: str) -> str:
    return word[word.rfind("/") + 1 :] if word else word  # os.path.basename for a str, without its checks


# ---- whole-word searches over long shell text ---------------------------------------------------------
#
# A pattern that starts with `\b` (or a look-behind) has no literal prefix, so the regex engine tries it at
# every character of a script body. These helpers search for the literal part (which the engine, or
# str.find, skips to directly) and check the character before it by hand; they give exactly what the
# `\b…\b` pattern gives (`\b` is Unicode-aware: a word character is one for which str.isalnum() holds,
# or `_`).


def _is_word_char(ch: str) -> bool:
    return ch == "_" or ch.isalnum()


def has_word(text: str, word: str) -> bool:
    r"""`re.search(rf"\b{word}\b", text)` for a `word` of word characters."""
    n = len(word)
    i = text.find(word)
    while i >= 0:
        end = i + n
        if (i == 0 or not _is_word_char(text[i - 1])) and (end == len(text) or not _is_word_char(text[end])):
            return True
        i = text.find(word, i + 1)
    return False


_SLURM_NAME_TAIL = re.compile(r"SLURMD?_[A-Z0-9_]+\b")


def slurm_names(text: str) -> list[str]:
    r"""The names matched by `\b(SLURMD?_[A-Z0-9_]+)\b` in `text`, in order of first use, no duplicates."""
    if "SLURM" not in text:
        return []
    names: dict[str, None] = {}
    for m in _SLURM_NAME_TAIL.finditer(text):
        name = m.group()
        if name in names:  # (already found where it is a whole word: its place in the order is taken)
            continue
        start = m.start()
        # `XSLURM_A`: no word boundary before it. (No match of the full pattern can start inside a refused
        # one: every character there is a word character.) _is_word_char, written out.
        if not start or ((ch := text[start - 1]) != "_" and not ch.isalnum()):
            names[name] = None
    return list(names)


_PROLOGUE: list = []  # translator.plan.prologue, once loaded (not at import: `inspect` does not need it)


def _prologue():
    """The module translator.plan.prologue (a function-level import statement costs more on every call)."""
    if not _PROLOGUE:
        from translator.plan import prologue

        _PROLOGUE.append(prologue)
    return _PROLOGUE[0]


_ONCE_MEMO: dict[str, tuple[str, frozenset[str], tuple[str, ...]]] = {}
_ONCE_MEMO_SIZE = 4096


def batch_once(text: str) -> tuple[str, frozenset[str], tuple[str, ...]]:
    """prologue.batch_once(text), remembered per process: it depends on the text alone, and the same values
    (`$(scontrol show hostnames …)`, `$(date +%s)`) come back script after script. The helpers and the
    per-run forms are returned as a frozenset and a tuple, so that no caller can change a remembered answer."""
    known = _ONCE_MEMO.get(text)
    if known is None:
        new, need, unfixable = _prologue().batch_once(text)
        known = (new, frozenset(need), tuple(unfixable))
        keep(_ONCE_MEMO, text, known, _ONCE_MEMO_SIZE)
    return known


# ---- the job's shape ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Shape:
    """Nodes, tasks and GPUs of the job (or of one srun step), as Slurm lays them out."""

    nodes: int = 1
    tasks_per_node: int = 1
    total_tasks: int = 1
    gpus_per_node: int = 0
    cpus_per_task: int | None = None
    nodes_given: bool = False
    tasks_given: bool = False  # -n or --ntasks-per-node given (Slurm then sets SLURM_NTASKS)
    gpus_uneven: bool = False  # --gpus total not divisible by the node count

    def __init__(
        self,
        nodes: int = 1,
        tasks_per_node: int = 1,
        total_tasks: int = 1,
        gpus_per_node: int = 0,
        cpus_per_task: int | None = None,
        nodes_given: bool = False,
        tasks_given: bool = False,
        gpus_uneven: bool = False,
    ):
        # (the generated __init__, as for Tok: step_shape makes one per family asked about an srun step)
        d = self.__dict__
        d["nodes"] = nodes
        d["tasks_per_node"] = tasks_per_node
        d["total_tasks"] = total_tasks
        d["gpus_per_node"] = gpus_per_node
        d["cpus_per_task"] = cpus_per_task
        d["nodes_given"] = nodes_given
        d["tasks_given"] = tasks_given
        d["gpus_uneven"] = gpus_uneven

    def batch_node_only(self) -> Shape:
        """The layout of a launcher started in the batch step (no srun): node 0 only, its own tasks."""
        return Shape(
            nodes=1,
            tasks_per_node=self.tasks_per_node,
            total_tasks=self.tasks_per_node,
            gpus_per_node=self.gpus_per_node,
            cpus_per_task=self.cpus_per_task,
            nodes_given=self.nodes_given,
            tasks_given=self.tasks_given,
        )


# (fields, shape) of the last call: the launch detector and the plan builder ask in turn (one tuple, read and
# replaced whole)
_SHAPE_MEMO: tuple = (None, None)


def job_shape(fields) -> Shape:
    """Derive the layout from resolved JobFields (sbatch-semantics §6 'Derived shape rules').

    JobFields and Shape are frozen, so the last answer is reused for the same fields."""
    global _SHAPE_MEMO
    memo = _SHAPE_MEMO
    if memo[0] is fields:
        return memo[1]
    shape = _job_shape(fields)
    if isinstance(fields, FrozenRecord):  # (not a mutable stand-in a caller may change between calls)
        _SHAPE_MEMO = (fields, shape)
    return shape


def _job_shape(fields) -> Shape:
    nodes = fields.nodes_min or None  # 0 is refused by sbatch; never divide by it here
    tpn = fields.ntasks_per_node or None
    ntasks = fields.ntasks or None
    nodes_given = nodes is not None
    if nodes is None:
        nodes = math.ceil(ntasks / tpn) if (ntasks and tpn) else 1
    nodes = max(1, int(nodes))
    if ntasks and tpn:
        tpn = min(tpn, math.ceil(ntasks / nodes))
    elif ntasks:
        tpn = math.ceil(ntasks / nodes)
    tpn = max(1, int(tpn or 1))
    total = int(ntasks) if ntasks else nodes * tpn
    gpus = 0
    uneven = False
    if fields.gpus_per_node:
        gpus = max(0, int(fields.gpus_per_node))
    elif fields.gpus_per_task:
        gpus = int(fields.gpus_per_task) * tpn
    elif fields.gpus_total:
        gpus = math.ceil(fields.gpus_total / nodes)
        uneven = fields.gpus_total % nodes != 0
    return Shape(
        nodes=nodes,
        tasks_per_node=tpn,
        total_tasks=total,
        gpus_per_node=gpus,
        cpus_per_task=fields.cpus_per_task,
        nodes_given=nodes_given,
        tasks_given=bool(fields.ntasks or fields.ntasks_per_node),
        gpus_uneven=uneven,
    )


# ---- srun ---------------------------------------------------------------------------------------

# srun options that take a value (srun.1, Slurm 22.05; pyxis adds the --container-* ones).
_SRUN_SHORT_VALUE = set("ABbCcDdeGiJLMmNnopqrSTtwWx")
_SRUN_LONG_FLAGS = {
    "exclusive",
    "overlap",
    "exact",
    "label",
    "unbuffered",
    "verbose",
    "quiet",
    "pty",
    "no-kill",
    "overcommit",
    "oversubscribe",
    "spread-job",
    "test-only",
    "usage",
    "help",
    "disable-status",
    "kill-on-bad-exit",
    "multi-prog",
    "preserve-env",
    "quit-on-interrupt",
    "contiguous",
    "hold",
    "no-allocate",
    "reboot",
    "container-remap-root",
    "no-container-remap-root",
    "container-mount-home",
    "no-container-mount-home",
    "container-writable",
    "container-readonly",
    "no-container-entrypoint",
    "container-entrypoint",
    "container-env",
    "whole",
    "x11",
    "cpu-freq",
    "send-libs",
}
_SRUN_SHORT_FLAGS = set("EHhIKklOQsuvXZ")  # everything else short takes a value


@dataclass(frozen=True)
class SrunCall:
    options: dict[str, str]  # canonical long name (or short letter) -> value ("" for flags)
    written: tuple[str, ...]  # the option words as written
    command: tuple[Word, ...]  # the command srun runs

    def __init__(self, options: dict[str, str], written: tuple[str, ...], command: tuple[Word, ...]):
        d = self.__dict__  # (the generated __init__, as for Tok)
        d["options"] = options
        d["written"] = written
        d["command"] = command


_SHORT_TO_LONG = {
    "N": "nodes",
    "n": "ntasks",
    "c": "cpus-per-task",
    "G": "gpus",
    "w": "nodelist",
    "x": "exclude",
    "J": "job-name",
    "o": "output",
    "e": "error",
    "p": "partition",
    "t": "time",
    "m": "distribution",
    "D": "chdir",
    "A": "account",
    "l": "label",
    "u": "unbuffered",
    "K": "kill-on-bad-exit",
    "r": "relative",
    "W": "wait",
}


def parse_srun(words: Sequence[Word]) -> SrunCall:
    """Split `srun [options] command...` (words[0] is srun)."""
    opts: dict[str, str] = {}
    written: list[str] = []
    i = 1
    while i < len(words):
        w = words[i].value
        if w == "--":
            written.append(w)
            i += 1
            break
        if w.startswith("--") and len(w) > 2:
            name, eq, val = w[2:].partition("=")
            written.append(w)
            if eq:
                opts[name] = val
            elif name in _SRUN_LONG_FLAGS or i + 1 >= len(words):
                opts[name] = ""
            else:
                opts[name] = words[i + 1].value
                written.append(words[i + 1].value)
                i += 1
            i += 1
            continue
        if w.startswith("-") and len(w) > 1:
            written.append(w)
            j = 1
            while j < len(w):
                ch = w[j]
                long = _SHORT_TO_LONG.get(ch, ch)
                if ch in _SRUN_SHORT_VALUE:
                    rest = w[j + 1 :]
                    if rest:
                        opts[long] = rest
                    elif i + 1 < len(words):
                        opts[long] = words[i + 1].value
                        written.append(words[i + 1].value)
                        i += 1
                    else:
                        opts[long] = ""
                    break
                opts[long] = ""
                j += 1
            i += 1
            continue
        break
    return SrunCall(options=opts, written=tuple(written), command=tuple(words[i:]))


def _int(value: str | None) -> int | None:
    text = str(value).strip()
    if not (text.isascii() and text.lstrip("+-").isdigit()):  # C parsing: ASCII digits only
        return None
    return to_int(text)


_STEP_MEMO: tuple = (None, None, None)  # (job shape, srun call, step shape) of the last call: the families
# ask in turn about the same step (matches, then build)


def step_shape(job: Shape, srun: SrunCall | None) -> Shape:
    """The layout of one srun step: srun's -N/-n/--ntasks-per-node override the job's."""
    if srun is None:
        return job
    memo = _STEP_MEMO
    if memo[0] is job and memo[1] is srun and memo[2] is not None:
        return memo[2]
    step = _step_shape(job, srun)
    _remember_step(job, srun, step)
    return step


def _remember_step(job: Shape, srun: SrunCall, step: Shape) -> None:
    global _STEP_MEMO
    # (parse_srun's calls are not changed after it made them; a stand-in of another type is not remembered)
    _STEP_MEMO = (job, srun, step) if type(srun) is SrunCall else (None, None, None)


def _step_shape(job: Shape, srun: SrunCall) -> Shape:
    nodes = _int(srun.options.get("nodes", "").split("-")[0]) or job.nodes
    nodes = min(nodes, job.nodes) if job.nodes_given else nodes
    ntasks = _int(srun.options.get("ntasks"))
    if ntasks and not srun.options.get("nodes"):
        nodes = max(1, min(nodes, ntasks))  # `srun -n1` uses one node
    tpn = _int(srun.options.get("ntasks-per-node"))
    if ntasks and not tpn:
        tpn = math.ceil(ntasks / nodes)
    if tpn is None:
        tpn = job.tasks_per_node
    total = ntasks or nodes * tpn
    return Shape(
        nodes=nodes,
        tasks_per_node=max(1, tpn),
        total_tasks=total,
        gpus_per_node=job.gpus_per_node,
        cpus_per_task=_int(srun.options.get("cpus-per-task")) or job.cpus_per_task,
        nodes_given=job.nodes_given,
        tasks_given=job.tasks_given,
        gpus_uneven=job.gpus_uneven,
    )


def check_inherited_ntasks(ctx: LaunchContext, srun: SrunCall | None, line: int) -> None:
    """`srun --ntasks-per-node=K cmd` in a job that set -n/--ntasks-per-node: srun also reads -n from the
    inherited SLURM_NTASKS (srun(1) INPUT ENVIRONMENT VARIABLES), so K does not decide the task count."""
    if srun is None or not ctx.shape.tasks_given:
        return
    o = srun.options
    k = _int(o.get("ntasks-per-node"))
    if k is None or o.get("ntasks") or o.get("n") or o.get("nodes") or o.get("N"):
        return
    total = ctx.shape.total_tasks
    if k * ctx.shape.nodes == total:
        return
    ctx.add(
        WARNING,
        "L352",
        f"`srun --ntasks-per-node={k}` without -n/-N inherits -n {total} from the job "
        f"(SLURM_NTASKS): Slurm either ignores --ntasks-per-node and starts {total} tasks or "
        f"refuses the step, not {k} per node as the TrainJob does",
        line,
        f"write `srun -N {ctx.shape.nodes} --ntasks-per-node={k}` (or `-n {k * ctx.shape.nodes}`)",
    )


# ---- context handed to every launcher -------------------------------------------------------------


@dataclass
class LaunchContext:
    script: Script
    job: SlurmJob
    shape: Shape
    assignments: tuple[Assignment, ...] = ()  # top-level assignments before the launch line, in order
    block_assigned: frozenset = frozenset()  # names assigned inside blocks (values not known statically)
    findings: list[Finding] = field(default_factory=list)
    nesting: int = 0  # containers inside containers (launchers/container.py)
    _last: dict[str, Assignment] | None = field(default=None, repr=False, compare=False)
    # the fields of the findings, which equal Findings have (a tuple hashes without a Python-level __hash__)
    _seen: set[tuple] | None = field(default=None, repr=False, compare=False)
    # name -> _static_name's answer: what it reads (the assignments, the job, its shape) is fixed for a context
    _static: dict[str, str | None] | None = field(default=None, repr=False, compare=False)

    def last_assignment(self, name: str) -> Assignment | None:
        """The last top-level assignment of `name` before the launch line (an index built once: a script with
        thousands of assignments and a launch line naming thousands of variables stays linear)."""
        if self._last is None:
            self._last = {a.name: a for a in self.assignments}
        return self._last.get(name)

    launch_line: int | None = None  # line of the launch command being converted
    once_helpers: set[str] = field(default_factory=set)  # batch-once helpers the command text needs
    positional: tuple[str, ...] | None = None  # the script's arguments after `set --`/`shift` (replayed)
    wrapper_env: list[tuple[str, str]] = field(default_factory=list)  # `--env A=B` of a container (wrapper_env.py)

    @property
    def job_image_option(self) -> bool:
        """The job sets pyxis's `--container-image` itself (`#SBATCH --container-image=…`)."""
        from translator.launchers.container import job_plugin_option

        return job_plugin_option(self.job, "container-image") is not None

    def add(self, severity: str, code: str, message: str, line: int | None, suggestion: str | None = None):
        key = (severity, code, message, line, suggestion)
        seen = self._seen
        if seen is None or len(seen) != len(self.findings):  # (findings may also be appended directly)
            seen = self._seen = {(f.severity, f.code, f.message, f.line, f.suggestion) for f in self.findings}
        if key not in seen:
            seen.add(key)
            self.findings.append(Finding(severity, code, message, line, suggestion))


# Slurm variables that differ per task; the batch shell expands them to the batch task's values.
PER_TASK_VARS = ("SLURM_NODEID", "SLURM_PROCID", "SLURM_LOCALID")


def check_batch_expansion(ctx: LaunchContext, toks: Sequence[Tok], line: int) -> None:
    """`srun cmd --rank=$SLURM_PROCID` is expanded once by the batch shell: every task got the batch values."""
    for t in toks:
        if t.literal or t.deferred:
            continue
        for name in var_refs(t.raw):
            if name in PER_TASK_VARS:
                ctx.add(
                    WARNING,
                    "L302",
                    f"`{t.raw}` is expanded by the batch shell before srun starts the tasks, so on Slurm every "
                    f"task received the batch script's value of {name} (0), not its own",
                    line,
                    "the converted job gets per-node values from the Kubeflow runtime; check that the "
                    "original job really did what was intended",
                )


# ---- shell text ----------------------------------------------------------------------------------


def _assignment_text(a: Assignment) -> str:
    return f"{'export ' if a.exported else ''}{a.name}={a.value.raw}"


def shell_preamble(
    ctx: LaunchContext, texts: Sequence[str], export_slurm: bool = False, has_base: bool = False
) -> list[str]:
    """Lines that define what `texts` (shell source) refer to: earlier assignments and Slurm variables.

    Exported literal assignments become TrainJob env (plan/env.py) and need nothing here.
    """
    prologue = _prologue()

    needed: list[Assignment] = []
    slurm: list[str] = []
    seen: set[str] = set()
    pending = [n for t in texts for n in var_refs(t)]
    uses_scontrol = any("scontrol" in t for t in texts)
    next_pending = 0
    while next_pending < len(pending):
        name = pending[next_pending]
        next_pending += 1
        if name in seen:
            continue
        seen.add(name)
        a = ctx.last_assignment(name)
        if a is not None:
            if a.exported and a.value.literal:
                continue
            needed.append(a)
            pending.extend(var_refs(a.value.raw))
            uses_scontrol = uses_scontrol or "scontrol" in a.value.raw
        elif (name.startswith("SLURM_") or name.startswith("SLURMD_")) and not prologue.from_env(name):
            slurm.append(name)
    lines: list[str] = []
    if slurm or uses_scontrol:
        lines.extend(
            prologue.prologue_lines(
                slurm, ctx.job, ctx.shape, export=export_slurm, functions=("scontrol",) if uses_scontrol else ()
            )
        )
        unknown = [n for n in slurm if prologue.definition(n, ctx.job, ctx.shape) is None]
        for n in unknown:
            ctx.add(
                WARNING,
                "L325",
                f"the launch line uses {n}, which this job does not define on Kubernetes (and Slurm may not have set it either); it expands to an empty string",
                None,
                f"replace ${n} with a literal value",
            )
    order = {id(a): i for i, a in enumerate(ctx.assignments)}
    helpers: set[str] = set()
    body: list[str] = []
    for a in sorted(needed, key=lambda a: order.get(id(a), 0)):
        text = _assignment_text(a)
        if not a.value.literal:
            new, need, unfixable = batch_once(text)
            if need:
                ctx.add(
                    INFO,
                    "L346",
                    f"`{a.name}={a.value.raw}` was computed once by the batch shell on node 0; "
                    "every process now computes node 0's value",
                    a.line,
                )
                helpers |= need
                text = new
            if unfixable:
                ctx.add(
                    WARNING,
                    "L346",
                    f"`{a.name}={a.value.raw}` was computed once on Slurm but now by every "
                    f"process, and {', '.join(unfixable)} differs between them",
                    a.line,
                    f"compute {a.name} from something all pods share (the job name, SLURM_JOB_ID)",
                )
        body.append(text)
    ctx.once_helpers |= helpers
    if ctx.once_helpers:  # the helpers, before the assignments and words that call them
        if not (has_base or any(ln.startswith("_s2k_hosts()") for ln in lines)):
            lines.extend(prologue.prologue_lines([], ctx.job, ctx.shape))
        lines.extend(prologue.batch_once_lines(ctx.once_helpers, ctx.job))
    return lines + body


def word_text(ctx: LaunchContext, t: Tok) -> str:
    """Shell text of a launch word; what the batch shell evaluated once on node 0 (`$(hostname)`,
    `$RANDOM`) is made node 0's value on every pod. Words inside a single-quoted `bash -c '…'` are
    expanded by each task on Slurm too, so they are left alone."""
    text = t.shell()
    if t.literal or t.deferred:
        return text
    new, need, unfixable = batch_once(text)
    if need:
        ctx.once_helpers |= need
        ctx.add(
            INFO,
            "L346",
            f"`{t.raw}` was expanded once by the batch shell on node 0; every process now gets node 0's value",
            ctx.launch_line,
        )
    if unfixable:
        ctx.add(
            WARNING,
            "L346",
            f"`{t.raw}` was expanded once on Slurm but now by every process, and "
            f"{', '.join(unfixable)} differs between them",
            ctx.launch_line,
            "compute it from something all pods share (the job name, SLURM_JOB_ID)",
        )
    return new


_POSITIONAL = re.compile(r"(?<!\$)\$(?:\{#?[0-9@*#]|[0-9@*#])")
_POSITIONAL_TAIL = re.compile(r"\$(?:\{#?[0-9@*#]|[0-9@*#])")  # _POSITIONAL without its look-behind
BATCH_ARGV0 = "slurm_script"  # $0 of the batch script on Slurm is the spooled copy `slurm_script`


def uses_positional(text: str) -> bool:
    """`$1`, `${2}`, `$@`, `$*`, `$#` in shell text: the batch script's arguments.

    Same answer as `_POSITIONAL.search(text)`; the look-behind is checked by hand so that the engine can
    skip to each `$` (a pattern starting with a look-behind is tried at every character)."""
    search = _POSITIONAL_TAIL.search
    pos = 0
    while (m := search(text, pos)) is not None:
        start = m.start()
        if start and text[start - 1] == "$":
            pos = start + 1
            continue
        return True
    return False


def script_args_tail(ctx: LaunchContext, user_text: str, line: int | None) -> tuple[str, ...]:
    """Arguments after a `bash -c TEXT` whose user text reads the batch script's arguments: $0 and the
    arguments sbatch gave the script (`--script-args`); a finding either way."""
    if not uses_positional(user_text):
        return ()
    given = tuple(getattr(ctx.job, "script_args", ()) or ())
    line = line if line is not None else ctx.launch_line
    if ctx.positional is not None:
        ctx.add(
            INFO,
            "L340",
            "the launch reads the script's arguments as `set --`/`shift` left them; the TrainJob "
            "passes: " + " ".join(shlex.quote(a) for a in ctx.positional),
            line,
        )
        return (BATCH_ARGV0,) + tuple(ctx.positional)
    if given:
        ctx.add(
            INFO,
            "L340",
            "the launch reads the batch script's arguments; the TrainJob passes the ones given "
            "with --script-args: " + " ".join(shlex.quote(a) for a in given),
            line,
        )
    else:
        ctx.add(
            WARNING,
            "L339",
            "the launch reads the batch script's arguments ($1, $@, ...), which sbatch passes "
            "after the script name; none are known, so they expand empty",
            line,
            "pass them with `slurm2kf convert --script-args '...'`",
        )
    return (BATCH_ARGV0,) + given


def shell_launch(
    ctx: LaunchContext, head: str, toks: Sequence[Tok], argv0: str, export_slurm: bool = False
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """`bash -c` running `head` (trusted generated shell code) followed by the user's words.

    All-literal words are passed as positional parameters (`"$@"`): no user text in shell code.
    Otherwise the user's raw words follow `head` after a preamble defining what they refer to.
    """
    if all_literal(toks):
        return ("bash", "-c"), (f'exec {head} "$@"', argv0, *[t.value for t in toks])
    text_parts = [word_text(ctx, t) for t in toks]
    pre = shell_preamble(ctx, [t.raw for t in toks if not t.literal], export_slurm=export_slurm)
    body = "\n".join(pre + [f"exec {head} " + " ".join(text_parts)])
    return ("bash", "-c"), (body,) + script_args_tail(ctx, "\n".join(pre + text_parts), None)


def plain_or_shell(ctx: LaunchContext, toks: Sequence[Tok]) -> tuple[tuple[str, ...], tuple[str, ...], bool]:
    """The user's command as argv when literal, else `bash -c` with a preamble. Returns (command, args, shell)."""
    if all_literal(toks):
        return (toks[0].value,), tuple(t.value for t in toks[1:]), False
    parts = [word_text(ctx, t) for t in toks]
    pre = shell_preamble(ctx, [t.raw for t in toks if not t.literal])
    user = pre + [" ".join(parts)]
    body = "\n".join(pre + ["exec " + " ".join(parts)])
    return ("bash", "-c"), (body,) + script_args_tail(ctx, "\n".join(user), None), True


# ---- generic option scanning for launchers ---------------------------------------------------------


def split_option(tok: Tok) -> tuple[str, str | None]:
    """`--flag=value` -> ("--flag", "value"); `--flag` -> ("--flag", None)."""
    if tok.value.startswith("--") and "=" in tok.value:
        name, _, val = tok.value.partition("=")
        return name, val
    return tok.value, None


def norm(opt: str) -> str:
    """Option spelling without the `_`/`-` difference: `--node_rank` == `--node-rank`."""
    return opt.replace("_", "-")


def norm_long(opt: str) -> str:
    """norm() for `--long` options only (`-H` stays as written)."""
    return norm(opt) if opt.startswith("--") else opt


@dataclass(frozen=True)
class Option:
    """One option of a launcher's command line, with the value words it takes."""

    tok: Tok  # the option word (`--nproc_per_node=8` or `--nproc_per_node`)
    name: str  # its name as written, before any `=`
    key: str  # the name as the launcher compares it (see scan_options' key)
    inline: str | None  # the value after `=`, when written `--opt=value`
    group: tuple[Tok, ...]  # the option word and its separate value words

    def __init__(self, tok: Tok, name: str, key: str, inline: str | None, group: tuple[Tok, ...]):
        d = self.__dict__  # (the generated __init__, as for Tok)
        d["tok"] = tok
        d["name"] = name
        d["key"] = key
        d["inline"] = inline
        d["group"] = group

    @property
    def value(self) -> Tok | None:
        """The separate value word (`--opt value`), or None."""
        return self.group[1] if len(self.group) > 1 else None


def scan_options(toks: Sequence[Tok], arity, key=norm) -> tuple[list[Option], int]:
    """The leading options of a launcher's words (after the launcher's name) and the index of the first
    word that is not one (the program). `arity(key)` gives how many separate value words an option written
    without `=` takes (0 for a flag); `key(name)` the spelling the launcher compares. A word that does not
    start with `-`, or is `-` alone, ends the options; an option missing its value at the end takes what is
    there."""
    options: list[Option] = []
    j = 0
    while j < len(toks):
        t = toks[j]
        if not t.value.startswith("-") or t.value == "-":
            break
        name, inline = split_option(t)
        k = key(name)
        n = 0 if inline is not None else arity(k)
        group = tuple(toks[j : j + 1 + n])
        options.append(Option(t, name, k, inline, group))
        j += len(group)
    return options, j


_SINGLE_REF = re.compile(r"^\$(?:\{([A-Za-z_][A-Za-z0-9_]*)\}|([A-Za-z_][A-Za-z0-9_]*))$")


def static_value(ctx: LaunchContext, tok: Tok) -> str | None:
    """The value of a word that is exactly one variable reference, when it is known at conversion time.

    Known: a literal top-level assignment before the launch line (not reassigned inside a block), or a
    Slurm variable whose value follows from the job's options (e.g. SLURM_GPUS_ON_NODE).
    """
    if tok.literal:
        return tok.value
    raw = tok.raw
    # (the unquoted text takes its characters from the raw text: without these it has none of them)
    if ("*" in raw or "?" in raw or "[" in raw or "~" in raw or "{" in raw) and _expanded_by_bash(raw):
        return None  # bash expands these at run time (or into several words)
    m = _SINGLE_REF.match(tok.value)
    if not m:
        value = static_text(ctx, tok.value) if "'" not in tok.raw and "\\" not in tok.raw else None
    else:
        value = _static_name(ctx, m.group(1) or m.group(2))
    if value is not None and tok.raw == tok.value and (_has_glob(value) or ifs_split(value) != [value]):
        return None  # an unquoted expansion is split into words and globbed by bash
    return value


def _expanded_by_bash(raw: str) -> bool:
    """A glob, a tilde or braces outside the quotes of `raw`: bash expands them at run time."""
    unquoted = _unquoted_text(raw)
    return _has_glob(unquoted) or _has_tilde(raw, unquoted) or ("{" in unquoted and "}" in unquoted)


_ANY_REF = re.compile(r"\$(?:\{([A-Za-z_][A-Za-z0-9_]*)\}|([A-Za-z_][A-Za-z0-9_]*))")


def static_text(ctx: LaunchContext, text: str) -> str | None:
    """`text` with every `$NAME`/`${NAME}` replaced by its known value; None if any is unknown or the text
    has other expansions (command substitution, arithmetic, parameter operators, globs)."""
    if "`" in text or "$(" in text:
        return None
    out = []
    pos = 0
    for m in _ANY_REF.finditer(text):
        value = _static_name(ctx, m.group(1) or m.group(2))
        if value is None:
            return None
        out.append(text[pos : m.start()])
        out.append(value)
        pos = m.end()
    rest = text[pos:]
    out.append(rest)
    if "$" in _ANY_REF.sub("", text):  # `${X:-d}`, `$1`, `$$`: not resolved here
        return None
    return "".join(out)


def _static_name(ctx: LaunchContext, name: str) -> str | None:
    known = ctx._static
    if known is None:
        known = ctx._static = {}
    elif name in known:
        return known[name]
    value = known[name] = _static_name_of(ctx, name)
    return value


def _static_name_of(ctx: LaunchContext, name: str) -> str | None:
    last = ctx.last_assignment(name)
    if last is not None:
        return last.value.value if last.value.literal and name not in ctx.block_assigned else None
    if name in ctx.block_assigned:
        return None
    return _prologue().static_value(name, ctx.job, ctx.shape)


def resolve_static(ctx: LaunchContext, toks: Sequence[Tok]) -> list[Tok]:
    """Replace words that are a single variable with a known value by that value (as a literal word)."""
    out = []
    for t in toks:
        if t.literal:
            out.append(t)
            continue
        v = static_value(ctx, t)
        out.append(Tok(v, t.raw, True, t.deferred) if v is not None else t)
    return out


_PYTHON = re.compile(r"^python(\d+(\.\d+)?)?$")


_IS_PYTHON: dict[str, bool] = {}  # word -> is_python(word): the first words of commands repeat (bounded)


def is_python(word: str) -> bool:
    known = _IS_PYTHON.get(word)
    if known is not None:
        return known
    answer = bool(_PYTHON.match(basename(word)))
    if len(_IS_PYTHON) < 4096:
        _IS_PYTHON[word] = answer
    return answer


# ---- tilde, globs and brace expansion in launch words ------------------------------------------------
#
# bash expands an unquoted word in this order (bash manual, "Shell Expansions"): braces, tilde, parameters
# and substitutions, word splitting, pathname expansion (globs). Brace expansion is purely textual, so a
# plain word like `--seed={1..3}` is expanded here exactly as bash would; a tilde names the home directory
# and a glob the files present at run time, which differ between the cluster and the container: those
# words stay for bash to expand in the container, and a finding names them.

BRACE_LIMIT = 1000  # more words than this are left to bash (with a finding)
_BRACE_SAFE = re.compile(r"[A-Za-z0-9_./:=+%@,{}\-]+\Z")
_SEQ = re.compile(r"(-?[0-9]+|[A-Za-z])\.\.(-?[0-9]+|[A-Za-z])(?:\.\.(-?[0-9]+))?\Z")
_NAME_EQ = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")


class _TooMany(Exception):
    pass


def _matching_brace(s: str, start: int) -> int:
    depth = 0
    for k in range(start, len(s)):
        if s[k] == "{":
            depth += 1
        elif s[k] == "}":
            depth -= 1
            if depth == 0:
                return k
    return -1


def _top_level_split(inner: str) -> list[str] | None:
    parts, depth, last = [], 0, 0
    for k, ch in enumerate(inner):
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(inner[last:k])
            last = k + 1
    if not parts:
        return None
    parts.append(inner[last:])
    return parts


def _sequence(inner: str) -> list[str] | None:
    m = _SEQ.match(inner)
    if not m:
        return None
    a, b, inc = m.group(1), m.group(2), m.group(3)
    step = abs(to_int(inc)) if inc else 1
    step = step or 1  # bash: an increment of 0 counts as 1
    if a.isalpha() != b.isalpha():
        return None
    if a.isalpha():
        if a.islower() != b.islower():  # `{Z..a}` runs through `[\]^_` and the backquote
            return None
        lo, hi = ord(a), ord(b)
        seq = range(lo, hi + 1, step) if lo <= hi else range(lo, hi - 1, -step)
        if len(seq) > BRACE_LIMIT:
            raise _TooMany
        return [chr(c) for c in seq]
    lo, hi = to_int(a), to_int(b)
    seq = range(lo, hi + 1, step) if lo <= hi else range(lo, hi - 1, -step)
    if len(seq) > BRACE_LIMIT:
        raise _TooMany
    padded = any(len(x.lstrip("-")) > 1 and x.lstrip("-").startswith("0") for x in (a, b))
    width = max(len(a), len(b)) if padded else 0
    return [(f"-{str(-n).zfill(width - 1)}" if n < 0 else str(n).zfill(width)) if width else str(n) for n in seq]


def brace_expand(word: str) -> list[str]:
    """bash's brace expansion of a plain word (no quotes, escapes or `$`). Raises _TooMany above BRACE_LIMIT."""
    start = word.find("{")
    while start >= 0:
        end = _matching_brace(word, start)
        if end < 0:  # bash tries the next `{`
            start = word.find("{", start + 1)
            continue
        inner = word[start + 1 : end]
        items = _top_level_split(inner)
        alternatives: list[str] | None = None
        if items is not None:
            alternatives = []
            for item in items:
                alternatives.extend(brace_expand(item))
        else:
            alternatives = _sequence(inner)
        if alternatives is not None:
            pre = word[:start]
            posts = brace_expand(word[end + 1 :])
            out = []
            for alt in alternatives:
                for post in posts:
                    out.append(pre + alt + post)
                    if len(out) > BRACE_LIMIT:
                        raise _TooMany
            return out
        start = word.find("{", start + 1)
    return [word]


_PLAIN_RUN = re.compile(r"[^\\'\"$`]+")  # characters _unquoted_text copies as they are
_DQ_REST = re.compile(r'(?:[^"\\]+|\\[\s\S])*')  # the inside of "…" after its opening quote (escapes skip two)


def _unquoted_text(raw: str) -> str:
    """The characters of `raw` that are outside quotes, escapes and `$`/backquote expansions (each quoted
    part, escape or expansion becomes one blank)."""
    out = []
    i, n = 0, len(raw)
    plain, dq_rest = _PLAIN_RUN.match, _DQ_REST.match
    while i < n:
        c = raw[i]
        if c == "\\":
            out.append(" ")
            i += 2
        elif c == "'":
            k = raw.find("'", i + 1)
            i = n if k < 0 else k + 1
            out.append(" ")
        elif c == '"':
            m = dq_rest(raw, i + 1)  # (always matches) up to the closing quote, the end or a final lone backslash
            k = m.end() if m else n
            i = k + 1 if k < n and raw[k] == '"' else n
            out.append(" ")
        elif c == "$" or c == "`":
            end, _ = _expansion(raw, i)
            i = max(end, i + 1)
            out.append(" ")
        else:
            m = plain(raw, i)  # c is none of the characters the run stops at: a run of at least c
            end = m.end() if m else i + 1
            out.append(raw[i:end])
            i = end
    return "".join(out)


def _has_glob(text: str) -> bool:
    return "*" in text or "?" in text or ("[" in text and "]" in text[text.index("[") :])


def _has_tilde(raw: str, unquoted: str) -> bool:
    if raw.startswith("~"):
        return True
    m = _NAME_EQ.match(raw)  # `name=~/x`, `name=a:~/b` (assignment-like words)
    return m is not None and ("=~" in unquoted[: m.end() + 1] or ":~" in unquoted[m.end() :])


def shell_word_expansions(ctx: LaunchContext, toks: Sequence[Tok], line: int) -> list[Tok]:
    """Brace-expand plain words as bash does; name the words whose tilde or glob bash expands at run time."""
    out: list[Tok] = []
    for t in toks:
        if t.literal or t.deferred:
            out.append(t)
            continue
        raw = t.raw
        # the unquoted text is read only for a tilde or a glob, whose characters it takes from the raw text
        unquoted = _unquoted_text(raw) if ("*" in raw or "?" in raw or "[" in raw or "~" in raw) else ""
        if "{" in t.raw and _BRACE_SAFE.match(t.raw):
            try:
                words = [w for w in brace_expand(t.raw) if w]
            except _TooMany:
                ctx.add(
                    WARNING,
                    "L372",
                    f"`{_clip(t.raw)}` on line {line} brace-expands to more than {BRACE_LIMIT} "
                    "words; it is left to bash",
                    line,
                    "list the values in a file",
                )
                out.append(t)
                continue
            if words != [t.raw]:
                out.extend(Tok.gen(w) for w in words)
                continue
        if _has_tilde(t.raw, unquoted):
            ctx.add(
                WARNING,
                "L370",
                f"`{_clip(t.raw)}` on line {line} starts with `~`: bash expands it to the home "
                "directory, which is the user's cluster home on Slurm but the image's $HOME in the "
                "container",
                line,
                "write the full path, or mount the home directory",
            )
        ref = _SINGLE_REF.match(t.raw)
        via = _static_name(ctx, ref.group(1) or ref.group(2)) if ref else None
        if _has_glob(unquoted) or (via is not None and _has_glob(via)):
            ctx.add(
                WARNING,
                "L371",
                f"`{_clip(t.raw)}` on line {line} is a glob pattern"
                + (f" (`{_clip(via)}`)" if via is not None else "")
                + ": bash expands it to the "
                "matching files when the job starts, which in the container are the image's files "
                "(not the cluster's); with no match the pattern is passed as written",
                line,
                "list the files explicitly, or check that they exist in the image or a mounted volume",
            )
        out.append(t)
    return out


def _clip(text: str, limit: int = 80) -> str:
    return text if len(text) <= limit else text[:limit] + "..."


def srun_mpi(srun: SrunCall | None) -> str | None:
    """The `--mpi=` plugin of an srun call, when it starts an MPI plugin (not `none`)."""
    kind = srun.options.get("mpi") if srun is not None else None
    return kind if kind and kind != "none" else None


def not_mpi(ctx: LaunchContext, srun: SrunCall | None, what: str, line: int) -> None:
    """L336 for a launcher that starts its own processes run under `srun --mpi=…`."""
    mpi_kind = srun_mpi(srun)
    if mpi_kind:
        ctx.add(
            INFO,
            "L336",
            f"`srun --mpi={mpi_kind}` runs `{what}`, which is not an MPI program (it starts its "
            "own processes and rendezvous): the launch is converted as " + what + ", not with mpirun",
            line,
        )


def is_shell(program: str) -> bool:
    """bash, sh or a `*.sh` file."""
    return program in ("bash", "sh") or program.endswith(".sh")


def multi_task_step(ctx: LaunchContext, srun: SrunCall | None) -> bool:
    """An srun step that starts more than one task or spans several nodes."""
    if srun is None:
        return False
    step = step_shape(ctx.shape, srun)
    return step.total_tasks > 1 or step.nodes > 1
