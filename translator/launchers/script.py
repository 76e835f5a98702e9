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

from translator.diagnostics import INFO, WARNING
from translator.launchers import common
from translator.launchers.common import LaunchContext
from translator.launchers.intent import SCRIPT, LaunchIntent
from translator.plan import prologue
from translator.read.ast import Assignment, Block, Command, Comment

_SLURM_NAME = re.compile(r"\b(SLURMD?_[A-Z0-9_]+)\b")  # what common.slurm_names finds
# `set -e` / `set -o errexit` at the start of a line (after blanks): `(^|\n)\s*set\s+(-[a-zA-Z]*e|-o\s+errexit)`,
# searched from its literal part (see _sets_errexit)
_SET_ERREXIT = re.compile(r"set\s+(?:-[a-zA-Z]*e|-o\s+errexit)")
_TTY = re.compile(r"(^|[\s;&|(`])(clear|tput|reset)(?=[\s;&|)`]|$)")  # what _tty_commands finds
_TTY_BEFORE = frozenset(";&|(`")
_TTY_AFTER = frozenset(";&|)`")
_SHIFT = re.compile(r"(^|[;&|\s])shift(\s|;|$)")
_ENV_TOOLS = re.compile(r"\b(module|ml|conda)\b")
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
    script, job = ctx.script, ctx.job
    body = body_text(script)
    names: list[str] = common.slurm_names(body)
    functions = [f for f in ("srun", "scontrol", "sbatch") if common.has_word(body, f)]
    pro = prologue.prologue_lines(names, job, ctx.shape, export=True, functions=functions)
    uses_env_tools = _ENV_TOOLS.search(body) is not None
    text_lines = pro + (_STUBS if uses_env_tools else [])
    end = script.line_count
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
            num_nodes=ctx.shape.nodes,
        )
    body, helpers = _batch_once_body(ctx, script, body)
    text_lines += prologue.batch_once_lines(helpers, job)
    opts = _shebang_options(script)
    if opts:
        text_lines.append("set " + " ".join(opts) + "  # slurm2kf: options of the #! line")
        ctx.add(INFO, "L344", f"the options of the #! line ({' '.join(opts)}) are kept with `set`", 1)
    errexit = (
        any(o.startswith("-") and "e" in o and o != "-o" for o in opts) or ("errexit" in opts) or _sets_errexit(body)
    )
    tty = _tty_commands(body)
    if tty and errexit:
        text_lines.append("clear() { :; }; tput() { :; }; reset() { :; }  # slurm2kf: no terminal in a pod")
        ctx.add(
            WARNING,
            "L345",
            f"`{'`, `'.join(tty)}` need a terminal (TERM), which a pod does not have; under "
            "`set -e` the failing command would stop the script, so they do nothing here",
            script.body_start_line,
            "remove terminal commands from batch scripts",
        )
    for call, cline in _srun_calls(script):
        for opt in ("nodelist", "exclude", "w", "x"):
            if opt in call.options and "$" not in call.options[opt] and "`" not in call.options[opt]:
                ctx.add(
                    WARNING,
                    "L347",
                    f"`srun {'-' if len(opt) == 1 else '--'}{opt} {call.options[opt]}` names "
                    "Slurm nodes, which do not exist on Kubernetes: the step runs on the first "
                    "node(s) of the TrainJob",
                    cline,
                    "use --relative=N (node index in the job) or drop the node names",
                )
                break
    text_lines.append(f"# ---- batch script body, lines {script.body_start_line}-{end} ----")
    text = "\n".join(text_lines) + "\n" + body + ("\n" if body and not body.endswith("\n") else "")
    has_definition = [prologue.definition(n, job, ctx.shape) is not None for n in names]
    defined = [n for n, known in zip(names, has_definition) if known]
    undefined = [n for n, known in zip(names, has_definition) if not known]
    why = "; ".join(reasons) if reasons else "no launch line of a known family"
    ctx.add(
        WARNING,
        "L330",
        f"the script body runs under bash -c on every node ({why}); on Slurm it ran once and only srun "
        "fanned out, so commands outside srun now run on each node",
        line or script.body_start_line,
        'guard steps that must run once with `if [ "$SLURM_NODEID" = 0 ]; then …; fi`',
    )
    if defined or functions:
        ctx.add(
            INFO,
            "L331",
            "the Slurm-compatibility prologue defines " + ", ".join(defined + [f + "()" for f in functions]),
            script.body_start_line,
        )
    for n in undefined:
        ctx.add(
            WARNING,
            "L325",
            f"the script uses {n}, which this job does not define on Kubernetes (and Slurm may "
            "not have set it either); it expands to an empty string",
            None,
            f"replace ${n} with a literal value",
        )
    if script.shell not in ("bash", "sh", "unknown"):
        ctx.add(
            WARNING,
            "L332",
            f"the script is written for {script.shell}; the TrainJob runs it with bash",
            1,
            "rewrite the body for bash",
        )
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
    args = (text, BATCH_ARGV0) + given
    return LaunchIntent(
        family=SCRIPT,
        framework="torch",
        command=("bash", "-c"),
        args=args,
        line=line,
        runtime="torch-distributed",
        num_nodes=ctx.shape.nodes,
        uses_shell=True,
    )


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


def _batch_once_body(ctx, script, body: str):
    """Top-level assignments computing a value once on node 0 (hostname, $RANDOM) rewritten so every pod
    computes the same value; per-run values (date, $$) reported."""
    lines: list[str] | None = None  # the body's lines, split when an assignment needs rewriting or a finding
    start = script.body_start_line
    helpers: set[str] = set()
    changed = False
    others = (Command, Comment, Block)  # (the other statement classes: no isinstance call for them)
    for st in [
        s for s in script.body if (c := s.__class__) is Assignment or (c not in others and isinstance(s, Assignment))
    ]:
        if st.value.literal:
            continue
        raw = st.value.raw
        # batch_once depends on the text alone: asked first, the line is looked at only when it has an answer
        new, need, unfixable = common.batch_once(raw)
        if not (need or unfixable):
            continue
        if lines is None:
            lines = body.split("\n")
        i = st.line - start
        if not (0 <= i < len(lines)) or raw not in lines[i]:
            continue
        if need:
            lines[i] = lines[i].replace(raw, new, 1)
            changed = True
            helpers |= need
            ctx.add(
                INFO,
                "L346",
                f"`{st.name}={st.value.raw}` was computed once by the batch shell on node 0; every "
                "pod now computes node 0's value ("
                + ", ".join(
                    {"batch_host": "the rank-0 pod's host name", "random": "one $RANDOM for the job"}[h]
                    for h in sorted(need)
                )
                + ")",
                st.line,
            )
        if unfixable:
            ctx.add(
                WARNING,
                "L346",
                f"`{st.name}={st.value.raw}` was computed once on Slurm but now on every pod, and "
                f"{', '.join(unfixable)} differs between pods",
                st.line,
                f"compute {st.name} from something all pods share (the job name, SLURM_JOB_ID), or write it on "
                "rank 0 only",
            )
    return ("\n".join(lines) if changed and lines is not None else body), helpers
