"""Finding the launch line and dispatching it to its family (see registry.py for the families)."""

from __future__ import annotations

import re
import shlex as _shlex

from translator.diagnostics import INFO, WARNING
from translator.launchers import common, container, indirect, registry
from translator.launchers import script as script_family
from translator.launchers.common import LaunchContext, SrunCall, Tok
from translator.launchers.intent import LaunchIntent
from translator.launchers.intent import replace as intent_replace
from translator.read.ast import Assignment, Block, Command, Comment, LAUNCH, PIP, Word
from translator.slurm.values import to_int

# first words that make a command a launch candidate (srun, wrappers, the families' programs)
LAUNCHERS = registry.PROGRAMS
# srun steps that only print information; dropped (with a finding) when a training launch follows.
AUX_PROGRAMS = {
    "hostname",
    "nvidia-smi",
    "echo",
    "date",
    "env",
    "printenv",
    "uname",
    "ls",
    "free",
    "lscpu",
    "which",
    "true",
    "sleep",
    "nproc",
    "ibstat",
    "ibv_devinfo",
    "rocm-smi",
    "df",
    "id",
    "whoami",
}


def _walk(statements, block: str | None = None):
    """Yield (statement, enclosing block kind or None) for commands and assignments, in order."""
    return iter(entries(statements) if block is None else _collect(statements, block, []))


def _collect(statements, block: str | None, out: list) -> list:
    append = out.append
    for st in statements:
        cls = st.__class__
        if cls is Command or cls is Assignment or cls is Comment:  # (most statements: no isinstance call)
            append((st, block))
        elif isinstance(st, Block):
            kind = block or st.kind
            if st.kind == "heredoc":
                if st.command is not None:
                    # a command reading a here-document keeps its input: it counts as a block of its own
                    out.append((st.command, block or "here-document"))
                if st.children:
                    _collect(st.children, block, out)
            else:
                if st.command is not None:
                    out.append((st.command, kind))
                if st.children:
                    _collect(st.children, kind, out)
        else:
            out.append((st, block))
    return out


_ENTRIES_MEMO: tuple = (None, ())  # (statements, their entries) of the last call: detect, the script
# fallback and the plan builder each walk the same body in turn (one tuple, read and replaced whole)


def entries(statements) -> tuple:
    """The (statement, enclosing block kind or None) pairs of _walk(statements), as a tuple (the last body's
    is kept: the records are frozen, and the memo holds the body, so its identity cannot be reused)."""
    global _ENTRIES_MEMO
    memo = _ENTRIES_MEMO
    if memo[0] is statements:
        return memo[1]
    out = tuple(_collect(statements, None, []))
    if type(statements) is tuple:  # (a list could change between calls)
        _ENTRIES_MEMO = (statements, out)
    return out


_SRUN_MEMO: tuple = (None, ())  # (statements, their srun commands): detect finds them, the script fallback reads


def srun_commands(statements) -> tuple:
    """The commands of entries(statements) whose program is srun (common.basename of the first word), in
    order. detect() records them as it walks the body; another body is walked here."""
    memo = _SRUN_MEMO
    if memo[0] is statements:
        return memo[1]
    out = []
    for st, _ in entries(statements):
        if st.__class__ is Command or isinstance(st, Command):
            words = st.words
            if words and ((v := words[0].value) == "srun" or v.endswith("/srun")):  # basename == "srun"
                out.append(st)
    return tuple(out)


_ENV_MODULES = ("venv", "virtualenv", "pip", "ensurepip", "site", "conda", "uv")


def is_env_setup(cmd: Command) -> bool:
    """`python -m venv DIR` and friends: creating the software environment, not a launch."""
    words = cmd.words
    return (
        len(words) >= 3
        and words[1].value == "-m"
        and words[2].value in _ENV_MODULES
        and common.is_python(words[0].value)
    )


def is_launch(cmd: Command) -> bool:
    words = cmd.words
    if not words or cmd.kind == PIP:
        return False
    v0 = words[0].value
    w0 = v0[v0.rfind("/") + 1 :] if "/" in v0 else v0  # common.basename (called for every command of the body)
    if "python" in w0 and w0.startswith("python") and common.is_python(w0):
        # is_env_setup, which only a python command can be
        return not (len(words) >= 3 and words[1].value == "-m" and words[2].value in _ENV_MODULES)
    return cmd.kind == LAUNCH or w0 in LAUNCHERS


def is_aux(cmd: Command) -> bool:
    words = cmd.words
    w0 = common.basename(words[0].value)
    if len(words) > 1 and words[1].value in ("-c", "--version", "-V") and common.is_python(w0):
        return True
    if w0 == "srun":
        inner = common.parse_srun(cmd.words).command
        if not inner:
            return False
        stripped, _ = strip_wrappers(None, inner, cmd.line)
        if not stripped:  # `srun env`: prints the environment
            return True
        return common.basename(stripped[0].value) in AUX_PROGRAMS
    return False


def dispatch(ctx: LaunchContext, toks: list[Tok], srun: SrunCall | None, line: int) -> LaunchIntent:
    """The intent for one command (already stripped of `srun` when srun is given).

    Structural wrappers are unwrapped here (container wrappers, `env A=B`, `bash -c`); the command
    inside goes to the first family of registry.FAMILIES that matches it."""
    if not toks:
        return script_family.build(ctx, line, ["the launch line has no command"])
    if srun is not None and "multi-prog" in srun.options:
        return script_family.build(ctx, line, [f"`srun --multi-prog` on line {line} runs a program per task"])
    if not toks[0].literal:
        program = common.static_value(ctx, toks[0])
        if program is None:
            return script_family.build(
                ctx, line, [f"the program `{toks[0].raw}` on line {line} is computed by the shell"]
            )
        toks = [Tok(program, toks[0].raw, True)] + list(toks[1:])
    w0 = common.basename(toks[0].value)
    if w0 in container.APPTAINER:
        return container.apptainer(ctx, toks, srun, line, dispatch)
    if w0 in container.OTHER_WRAPPERS:
        return container.other(ctx, toks, srun, line, dispatch)
    if w0 == "env" or _NAME_VALUE.match(toks[0].value):
        # `srun env A=B prog`, `bash -c 'A=B prog'`: look through to the program (A=B becomes env)
        words, wenv = _strip_env_toks(ctx, toks, line)
        if words and words != list(toks):
            intent = dispatch(ctx, words, srun, line)
            return intent_replace(intent, env=tuple(intent.env) + tuple(wenv)) if wenv else intent
    if w0 in ("bash", "sh") and len(toks) >= 3 and toks[1].value == "-c":
        inner = indirect.bash_c_words(ctx, toks[2])
        if not inner:
            return script_family.build(ctx, line, [f"line {line} runs shell logic under `{w0} -c`"])
        return dispatch(ctx, inner, srun, line)
    for family, module in _family_modules():
        if module is None:  # (a Family of another kind: asked through its own methods)
            if family.matches(ctx, toks, srun):
                return family.build(ctx, toks, srun, line)
        elif module.matches(ctx, toks, srun):  # what Family.matches/build do, without loading it each time
            return module.build(ctx, toks, srun, line)
    return script_family.build(ctx, line, [f"no launcher family converts `{toks[0].raw}` on line {line}"])


_FAMILY_MODULES: tuple = (None, ())  # (registry.FAMILIES, ((family, its module), ...)) when last asked


def _family_modules() -> tuple:
    """The families of registry.FAMILIES with their modules, loaded once per table (a test may swap it)."""
    global _FAMILY_MODULES
    families = registry.FAMILIES
    memo = _FAMILY_MODULES
    if memo[0] is families:
        return memo[1]
    pairs = tuple((f, f.load() if type(f) is registry.Family else None) for f in families)
    _FAMILY_MODULES = (families, pairs)
    return pairs


def _srun_step_options(ctx: LaunchContext, call: SrunCall, line: int):
    """srun options that change what the tasks get: `--export=ALL,A=B` adds A=B to their environment
    (carried as env); `--export=NONE`/a name list and `--chdir` have no TrainJob equivalent (L353)."""
    env = []
    export = call.options.get("export")
    if export is not None:
        items = [i for i in export.split(",") if i]
        if items and items[0].upper() == "ALL":
            for item in items[1:]:
                name, eq, value = item.partition("=")
                if eq and "$" not in value and "`" not in value:
                    env.append((name, value))
                elif eq:
                    ctx.add(
                        WARNING,
                        "L327",
                        f"`--export={export}` sets {name} from the shell; it is not carried",
                        line,
                        "give the variable a literal value",
                    )
        else:
            ctx.add(
                WARNING,
                "L353",
                f"`srun --export={export}`: on Slurm the tasks got only "
                + ("the SLURM_* variables" if export.upper().startswith("NONE") else "the named variables and SLURM_*")
                + " of the batch environment; in the "
                "TrainJob they see the whole container environment",
                line,
                "check that the program does not depend on missing variables",
            )
    chdir = call.options.get("chdir") or call.options.get("D")
    if chdir:
        ctx.add(
            WARNING,
            "L353",
            f"`srun --chdir={chdir}`: the tasks ran in {chdir} on Slurm; a TrainJob runs in the "
            "image's working directory",
            line,
            "use absolute paths, or cd in the command",
        )
    return env


def _strip_env_toks(ctx: LaunchContext, toks: list[Tok], line: int):
    """`env A=B prog` / `A=B prog` inside srun or `bash -c`: (program words, [(name, value)])."""
    env = []
    rest = list(toks)
    if rest and common.basename(rest[0].value) == "env":
        words, wenv = strip_wrappers(ctx, [_TokWord(t) for t in rest], line)
        return [w.tok for w in words], wenv
    while rest and (m := _NAME_VALUE.match(rest[0].value)) and not rest[0].value.startswith("-"):
        if rest[0].literal:
            env.append((m.group(1), m.group(2)))
        else:
            ctx.add(
                WARNING,
                "L327",
                f"`{rest[0].raw}` before the program needs the shell; it is not carried",
                line,
                "give the variable a literal value",
            )
        rest = rest[1:]
    return rest, env


class _TokWord:
    """A Tok seen through the Word interface strip_wrappers reads (value, raw, literal)."""

    def __init__(self, tok: Tok):
        self.tok, self.value, self.raw, self.literal = tok, tok.value, tok.raw, tok.literal


_NAME_VALUE = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)=(.*)$", re.S)


_WRAPPER_NAMES = frozenset(("exec", "nohup", "command", "builtin", "time", "stdbuf", "env"))  # strip_wrappers drops


def strip_wrappers(ctx: LaunchContext | None, words, line: int):
    """Drop command wrappers that do not change what runs (`time`, `exec`, `nohup`, `stdbuf -oL`, `env A=B`).

    Returns (remaining words, [(name, value)] environment the wrappers set).
    """
    if words.__class__ in (tuple, list) and words:  # (any other iterable: the general path)
        v0 = words[0].value
        if v0[v0.rfind("/") + 1 :] not in _WRAPPER_NAMES:  # (common.basename) no wrapper: the words as they are
            return tuple(words), []
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
                        ctx.add(
                            WARNING,
                            "L327",
                            f"`env {words[0].raw}` needs the shell; it is not carried",
                            line,
                            "give the variable a literal value",
                        )
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
            ctx.add(
                WARNING,
                "L327",
                f"`{a.name}={a.value.raw}` before the launch command needs the shell; it is not carried",
                cmd.line,
                "give the variable a literal value",
            )
    toks = common.toks_of(cmd.words)
    if toks and toks[0].value == "eval" and len(toks) > 1:
        # eval joins its arguments with blanks and runs the result as shell text
        text = " ".join(_eval_text(ctx, t) for t in toks[1:])
        parts = indirect.split_shell_words(text) if text is not None else None
        if parts is None:
            return script_family.build(ctx, cmd.line, [f"`eval` on line {cmd.line} runs shell logic"])
        ctx.add(
            INFO,
            "L342",
            "the launch is run through `eval`; the text it evaluates is converted: " + " ".join(p.raw for p in parts),
            cmd.line,
        )
        toks = parts
    elif toks and not toks[0].literal and _REF_WORD.match(toks[0].raw):
        ctx.add(INFO, "L342", f"the launch command is the value of `{toks[0].raw}`; that value is converted", cmd.line)
    toks = common.shell_word_expansions(ctx, toks, cmd.line)
    words, wrapper_env = strip_wrappers(ctx, indirect.expand(ctx, toks), cmd.line)
    intent = _dispatch_words(ctx, words, cmd.line) if words else dispatch(ctx, [], None, cmd.line)
    extra = tuple(intent_env + wrapper_env)
    return intent_replace(intent, env=tuple(intent.env) + extra) if extra else intent


def _eval_text(ctx: LaunchContext, tok: Tok) -> str:
    """The text one argument of `eval` contributes: its value, with a variable it consists of replaced by
    the variable's known text (`eval "$CMD"`)."""
    if tok.literal:
        return tok.value
    m = _REF_WORD.match(tok.raw)
    if m:
        name = m.group(1) or m.group(2)
        found = [a for a in ctx.assignments if a.name == name]
        if found and name not in ctx.block_assigned:
            a = found[-1]
            if a.value.literal:
                return a.value.value
            text = a.value.raw
            return text[1:-1] if len(text) >= 2 and text[0] == text[-1] == '"' else text
    return tok.raw


def _as_toks(words) -> list[Tok]:
    """common.toks_of(words), without copying words that are already such Toks (the words _dispatch_top
    passes on are: toks_of would only make equal copies of them)."""
    out = list(words)
    for w in out:
        if w.__class__ is not Tok or w.deferred or w.literal.__class__ is not bool:
            return common.toks_of(out)
    return out


_ARRAY_ALL = re.compile(r'^"\$\{([A-Za-z_][A-Za-z0-9_]*)\[[@*]\]\}"$')


def _expand_arrays(ctx: LaunchContext, words) -> list:
    """`"${NAME[@]}"` words of the launch line (`CONTAINER=(--container-image=IMG …); srun "${CONTAINER[@]}"
    cmd`) replaced by the elements of NAME's top-level `NAME=(…)` assignment, one word each (as bash
    expands a quoted `[@]`). Anything else (an unknown array, elements with shell logic) is left as is."""
    out = []
    for w in words:
        m = None if w.literal else _ARRAY_ALL.match(w.raw)
        a = ctx.last_assignment(m.group(1)) if m and m.group(1) not in ctx.block_assigned else None
        raw = a.value.raw if a is not None else ""
        parts = indirect.split_shell_words(raw[1:-1]) if raw.startswith("(") and raw.endswith(")") else None
        if parts is None:
            out.append(w)
        else:
            out.extend(parts)
    return out


def _dispatch_words(ctx: LaunchContext, words, line: int) -> LaunchIntent:
    if common.basename(words[0].value) == "srun":
        if any('[@]}"' in w.raw or '[*]}"' in w.raw for w in words):
            words = _expand_arrays(ctx, words)
        call = common.parse_srun(words)
        common.check_inherited_ntasks(ctx, call, line)
        if call.options.get("container-image") or ctx.job_image_option:
            return container.pyxis(ctx, call, _as_toks(call.command), line, dispatch)
        inner_words, wrapper_env = strip_wrappers(ctx, call.command, line)
        intent = dispatch(ctx, _as_toks(inner_words), call, line)
        wrapper_env = list(wrapper_env) + _srun_step_options(ctx, call, line)
        return intent_replace(intent, env=tuple(intent.env) + tuple(wrapper_env)) if wrapper_env else intent
    return dispatch(ctx, _as_toks(words), None, line)


def _launch_closure(ctx: LaunchContext, cmd: Command) -> tuple[list[str], tuple[int, ...]]:
    """What the launch line reads, directly or through the top-level assignments before it: (the variables
    no such assignment defines, in the order they are met; the lines of the assignments it reads, sorted)."""
    pending = common.var_refs(cmd.text)
    seen: set[str] = set()
    names: list[str] = []
    lines: set[int] = set()
    i = 0
    while i < len(pending):
        n = pending[i]
        i += 1
        if n in seen:
            continue
        seen.add(n)
        a = ctx.last_assignment(n)
        if a is not None:
            lines.add(a.line)
            pending.extend(common.var_refs(a.value.raw))
        else:
            names.append(n)
    return names, tuple(sorted(lines))


_REF_WORD = re.compile(r'^"?\$(?:\{([A-Za-z_][A-Za-z0-9_]*)\}|([A-Za-z_][A-Za-z0-9_]*))"?$')


def _first_word_of(text: str) -> str:
    text = text.strip().strip('"').strip("'").lstrip()
    return text.split()[0] if text.split() else ""


def _indirect_launch(cmd: Command, assigned) -> bool:
    """`$CMD args`, `eval "$CMD"`, `eval torchrun …` where the command text names a launcher."""
    words = cmd.words
    if not words:
        return False
    w0 = words[0]
    if w0.value == "eval" and len(words) > 1:
        w0 = words[1]
        if w0.literal:
            first = _first_word_of(w0.value)
            return _names_launcher(first)
    m = None if w0.literal else _REF_WORD.match(w0.raw)
    if not m:
        return False
    found = [a for a in assigned.get(m.group(1) or m.group(2), ()) if a.line < cmd.line]
    if not found:
        return False
    a = found[-1]
    first = _first_word_of(a.value.value if a.value.literal else a.value.raw)
    return _names_launcher(first)


def _names_launcher(word: str) -> bool:
    w0 = common.basename(word)
    return w0 in LAUNCHERS or common.is_python(w0)


def _top_assignments(script, entries, line: int, launch: Command | None) -> tuple[Assignment, ...]:
    """Top-level assignments in effect before the launch (or before `line`), as bash would have them:
    `NAME+=…` appends to the earlier value, `unset NAME` removes it; an assignment earlier on the launch's
    own line (`A=x; cmd "$A"`) counts."""
    lines: list[str] | None = None  # the script's lines, split when first needed
    out: list[Assignment] = []
    last: dict = {}  # name -> its latest assignment in `out`
    for st, block in entries:
        if launch is not None and st is launch:
            break
        if launch is None and getattr(st, "line", 0) >= line:
            break
        if block is not None:
            continue
        cls = st.__class__
        if cls is Assignment or (cls is not Command and isinstance(st, Assignment)):
            prev = last.get(st.name)
            # `NAME+=` on the assignment's own line: looked for there only when the text has it at all
            if prev is not None and (append := st.name + "+=") in (script.text or ""):
                if lines is None:
                    lines = (script.text or "").split("\n")  # bash ends lines at \n only
                src = lines[st.line - 1] if 0 < st.line <= len(lines) else ""
            else:
                src = ""
            if prev is not None and src and append in src and re.search(rf"(^|[\s;&|]){re.escape(st.name)}\+=", src):
                p, v = prev.value, st.value
                if p.raw.startswith("(") and v.raw.startswith("("):  # array append
                    val = Word(raw=p.raw[:-1] + " " + v.raw[1:], value=p.value[:-1] + " " + v.value[1:], literal=False)
                elif p.literal and v.literal:
                    val = Word(raw=_shlex.quote(p.value + v.value), value=p.value + v.value, literal=True)
                else:
                    val = Word(raw=p.raw + v.raw, value=p.value + v.value, literal=False)
                st = Assignment(st.line, st.name, val, st.exported or prev.exported)
            out.append(st)
            last[st.name] = st
        elif (cls is Command or isinstance(st, Command)) and st.words and st.words[0].value == "unset":
            words = [w.value for w in st.words[1:]]
            if "-f" not in words:
                gone = {w for w in words if not w.startswith("-")}
                out = [a for a in out if a.name not in gone]
                for name in gone:
                    last.pop(name, None)
    return tuple(out)


# Names bash itself sets (or that every process has); everything else a launch line reads must come from
# the script, Slurm or the submission environment.
_SHELL_NAMES = {
    "PWD",
    "OLDPWD",
    "HOSTNAME",
    "RANDOM",
    "SRANDOM",
    "SECONDS",
    "UID",
    "EUID",
    "PPID",
    "BASHPID",
    "LINENO",
    "IFS",
    "SHELL",
    "BASH",
    "BASH_SOURCE",
    "BASH_VERSION",
    "FUNCNAME",
    "OSTYPE",
    "HOSTTYPE",
    "MACHTYPE",
    "SHLVL",
    "PATH",
    "REPLY",
    "OPTARG",
    "OPTIND",
    "CUDA_VISIBLE_DEVICES",
}
_SETTERS = (
    "unset",
    "read",
    "let",
    "mapfile",
    "readarray",
    "printf",
    "getopts",
    "declare",
    "typeset",
    "local",
    "eval",
    "source",
    ".",
    "export",
)
# first words of the commands before the launch that detect() looks at again: the setters above, and
# `shift`/`set --`, which change the script's arguments
_BEFORE_LAUNCH = frozenset(_SETTERS) | {"shift", "set"}


def _set_by_shell_logic(ctx: LaunchContext, entries, cmd: Command, refs: list[str]) -> str | None:
    """`$X (set inside a case block)` / `$X (set by read …)` when the launch needs such a value.

    `refs`: the variables the launch reads that no top-level assignment defines (_launch_closure); `entries`
    the walk of the body up to the launch (or the commands of it that may set a variable, and the launch)."""
    setters = None  # the setting commands before the launch, found once (not per name)
    for n in refs:
        if n.startswith(("SLURM", "PET_", "_s2k")) or n in _SHELL_NAMES:
            continue
        if n in ctx.block_assigned:
            return f"${n}, which is assigned inside a block (if/case/loop)"
        if setters is None:
            setters = []
            for st, _block in entries:
                if st is cmd:
                    break
                if (
                    isinstance(st, Command)
                    and st.words
                    and st.words[0].value in _SETTERS
                    and st.words[0].value not in ("unset", "export", "local", "declare", "typeset")
                ):
                    setters.append(st)
        for st in setters:
            if re.search(rf"(^|[\s=(-]){re.escape(n)}(\b|=)", st.text):
                return f"${n}, which `{st.words[0].value}` on line {st.line} sets"
    return None


def _unset_variables(ctx: LaunchContext, entries, cmd: Command, emitted: str, refs: list[str]) -> None:
    """Variables the launch line reads that have no value the conversion can carry: set by a command
    (`read`, `let`, a loop), or taken from the submission environment. `refs` and `entries` as for
    _set_by_shell_logic."""
    from translator.plan.env import RENDEZVOUS

    for n in refs:
        if (
            ctx.last_assignment(n) is not None
            or n.startswith(("SLURM", "PET_", "OMPI_", "PMI", "_s2k"))
            or n in _SHELL_NAMES
            or n in RENDEZVOUS
            or n in ctx.block_assigned
            or not re.search(rf"\$\{{?{re.escape(n)}(?![A-Za-z0-9_])", emitted)
        ):
            continue  # defined, provided, or not part of the converted command
        setter = None
        for st, _block in entries:
            if st is cmd:
                break
            if (
                isinstance(st, Command)
                and st.words
                and st.words[0].value in _SETTERS
                and re.search(rf"(^|[\s=(-]){re.escape(n)}(\b|=)", st.text)
            ):
                setter = st
        if setter is not None and setter.words[0].value == "unset":
            continue
        if setter is not None:
            ctx.add(
                WARNING,
                "L348",
                f"the launch reads ${n}, which `{setter.text.strip()}` (line {setter.line}) sets; "
                "the TrainJob does not run that command, so it expands empty",
                cmd.line,
                f"give {n} a literal value (`{n}=…`) before the launch",
            )
        else:
            ctx.add(
                WARNING,
                "L348",
                f"the launch reads ${n}, which the script never sets: on Slurm it came from the "
                "submission environment (sbatch exports it); in a pod it is unset or different",
                cmd.line,
                f"set {n} in the script, or add it to the TrainJob env",
            )


def detect(script, job) -> LaunchIntent:
    """Choose the launch line and convert it with its family's module; a script fallback gets its body's
    container wrappers unwrapped (container.fallback_unwrap)."""
    intent = _detect(script, job)
    if intent.family == "script":
        return container.fallback_unwrap(script, job, common.job_shape(job.fields), intent)
    return intent


def _detect(script, job) -> LaunchIntent:
    shape = common.job_shape(job.fields)
    walk = entries(script.body)
    launches: list[tuple[Command, str | None, int]] = []  # (command, enclosing block, index in walk)
    aux: list[Command] = []
    assigned: dict[str, list[Assignment]] = {}
    block_names: set[str] = set()
    # the few statements the later steps look at, with their index in the walk: the top-level assignments
    # and `unset`s (_top_assignments), the commands that may set a variable or the arguments (_SETTERS,
    # `shift`, `set --`)
    top_items: list[tuple[int, tuple]] = []
    special: list[tuple[int, tuple]] = []
    # the commands that may be launches: is_launch, or a first word _indirect_launch looks through (a
    # variable, `eval …`), which is decided once every top-level assignment is known
    maybe: list[tuple[int, tuple, bool]] = []
    sruns: list[Command] = []
    for i, entry in enumerate(walk):
        st, block = entry
        cls = st.__class__
        if cls is Comment:
            continue
        if cls is Assignment or (cls is not Command and isinstance(st, Assignment)):
            if block is None:
                if st.name in assigned:
                    assigned[st.name].append(st)
                else:
                    assigned[st.name] = [st]
                top_items.append((i, entry))
            else:
                block_names.add(st.name)
        elif cls is Command or isinstance(st, Command):
            words = st.words
            if not words:
                continue
            w0 = words[0]
            v0 = w0.value
            if "srun" in v0 and (v0 == "srun" or v0.endswith("/srun")):  # (srun_commands)
                sruns.append(st)
            if is_launch(st):
                maybe.append((i, entry, True))
            elif not w0.literal or v0 == "eval":
                maybe.append((i, entry, False))
            if v0 in _BEFORE_LAUNCH:
                special.append((i, entry))
                if block is None and v0 == "unset":
                    top_items.append((i, entry))
    global _SRUN_MEMO
    if type(script.body) is tuple:  # (as entries: a list could change between calls)
        _SRUN_MEMO = (script.body, tuple(sruns))
    for i, (st, block), launch in maybe:
        if launch or _indirect_launch(st, assigned):
            if is_aux(st):
                aux.append(st)
            else:
                launches.append((st, block, i))
    block_assigned = frozenset(block_names)

    reasons: list[str] = []
    if len(launches) == 1:
        cmd, block, _ = launches[0]
        if block is not None:
            reasons.append(f"the launch on line {cmd.line} is inside a {block} block")
        elif cmd.background:
            reasons.append(f"the launch on line {cmd.line} runs in the background")
        elif cmd.connector in ("&&", "||", "|"):
            reasons.append(f"the launch on line {cmd.line} is part of a `{cmd.connector}` list")
    elif len(launches) > 1:
        reasons.append("launch lines " + ", ".join(str(c[0].line) for c in launches) + " run as several steps")
    if len(launches) != 1 or reasons:
        # the script fallback reads the script, the job and its shape, never the assignments before a line
        # (tests/test_fast_paths_launchers.py checks that it builds the same with and without them)
        ctx = LaunchContext(script=script, job=job, shape=shape, block_assigned=block_assigned)
        if not launches:
            reasons.append("no launch line (srun, torchrun, mpirun, deepspeed, accelerate, python) was found")
        intent = script_family.build(ctx, launches[0][0].line if launches else None, reasons)
        return intent_replace(intent, findings=tuple(ctx.findings))
    cmd, _, index = launches[0]
    # _top_assignments reads only the top-level assignments and unsets before the launch
    top = _top_assignments(script, [e for i, e in top_items if i < index] + [walk[index]], cmd.line, cmd)
    ctx = LaunchContext(script=script, job=job, shape=shape, assignments=top, block_assigned=block_assigned)
    ctx.launch_line = cmd.line
    positional = list(getattr(job, "script_args", ()) or ())
    replayed = True
    # the walk up to the launch, reduced to what the steps below look at (they stop at the launch)
    before = [e for i, e in special if i < index] + [walk[index]]
    for st, block in before:
        if st is cmd:
            break
        if not (
            isinstance(st, Command)
            and st.words
            and (
                st.words[0].value == "shift"
                or (st.words[0].value == "set" and len(st.words) > 1 and st.words[1].value == "--")
            )
        ):
            continue
        words = st.words
        if block is None and all(w.literal for w in words):
            if words[0].value == "set":  # `set -- a b`: the arguments are now a b
                positional = [w.value for w in words[2:]]
                continue
            n = words[1].value if len(words) > 1 else "1"
            if n.isascii() and n.isdigit():
                positional = positional[to_int(n) :] if to_int(n) <= len(positional) else positional
                continue
        replayed = False
        ctx.add(
            WARNING,
            "L341",
            f"`{st.text.strip()}` changes the script's arguments before the launch; the "
            "converted command cannot replay it",
            st.line,
            "write the arguments the launch needs into the launch line (or --script-args)",
        )
    if replayed and positional != list(getattr(job, "script_args", ()) or ()):
        ctx.positional = tuple(positional)
    refs, read_lines = _launch_closure(ctx, cmd)
    state = _set_by_shell_logic(ctx, before, cmd, refs)
    if state:
        # the launch reads a value that only running the script's logic gives (a `read`, a `case`, a
        # loop): the body runs as it is, where bash computes it
        intent = script_family.build(ctx, cmd.line, [f"the launch on line {cmd.line} uses {state}"])
        return intent_replace(intent, findings=tuple(ctx.findings))
    intent = _dispatch_top(ctx, cmd)
    if intent.family != "script":
        _unset_variables(ctx, before, cmd, " ".join(tuple(intent.command) + tuple(intent.args)), refs)
    redirs = [r for r in cmd.redirections if not r.startswith("<<")]
    if redirs and intent.family != "script":
        ctx.add(
            INFO,
            "L334",
            f"redirection `{' '.join(redirs)}` of the launch line is not carried; the output "
            "goes to the pod logs (`kubectl logs`)",
            cmd.line,
        )
    if intent.family == "script":
        return intent_replace(intent, findings=tuple(ctx.findings))
    for a in aux:
        ctx.add(INFO, "L326", f"informational step `{a.text.strip()}` is not part of the TrainJob", a.line)
    consumed = tuple(sorted(set(range(cmd.line, (cmd.end_line or cmd.line) + 1)) | set(read_lines)))
    return intent_replace(intent, findings=tuple(ctx.findings), consumed_lines=consumed)
