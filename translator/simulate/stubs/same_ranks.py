"""When the tasks of one launch provably behave alike: one run stands for all (stdlib only; used by sim_stub).

A launcher (srun, torchrun) starts the same command once per task; the tasks' environments differ only in a few
variables (RANK, SLURM_PROCID, CUDA_VISIBLE_DEVICES, the host name, ...: the *varying* names). Running a shell
per task costs a bash and a Python stub each, which is what made a 512-rank job take over a minute.

The command is `bash -c TEXT [ARG...]` (or `sh -c`), the common shape of a task wrapper. If TEXT

- reads a varying variable only by copying it whole into another variable (`export SLURM_PROCID="$RANK"`)
  that TEXT never reads again,
- reads it otherwise only as a whole argument of a `python` command (`--rank "$SLURM_PROCID"`, a value
  without spaces or glob characters),
- runs only shell builtins, functions it defines, text utilities that ignore the environment, `python`
  and a few stubs that only record (`module`, `mkdir`), and
- has no construct that reads variables by a computed name (`eval`, `source`, `${!x}`, `declare`, ...),

then bash takes the same path for every task, and what differs between the tasks' outputs, records and the
environment of the program it finally runs is exactly the varying values, carried verbatim. One run with a
unique *sentinel* in place of each varying value, with the sentinels then replaced by each task's values,
gives what every task's own run would give. Whether the program TEXT finally runs is itself alike for every
task is checked on that run's records (`records_alike`): only plain program starts qualify.
"""

from __future__ import annotations

import re

# Builtins and keywords that neither read variables by a computed name nor run another program.
SHELL_WORDS = {
    "if",
    "then",
    "else",
    "elif",
    "fi",
    "for",
    "in",
    "do",
    "done",
    "while",
    "until",
    "case",
    "esac",
    "function",
    "return",
    "local",
    "export",
    "shift",
    "unset",
    "true",
    "false",
    "test",
    "[",
    "[[",
    "echo",
    "printf",
    "exec",
    "cd",
    "pwd",
    ":",
    "break",
    "continue",
    "{",
    "}",
    "!",
    "umask",
    "ulimit",
}
# Real text utilities of the sandbox that only read their input and arguments, never the environment.
BLIND_TOOLS = {"paste", "cut", "tr", "head", "tail", "sort", "uniq", "wc", "basename", "dirname", "seq", "cat", "rev"}
DYNAMIC = re.compile(r"\$\{!|\beval\b|\bsource\b|(?:^|[\s;&|(])\.\s|\bdeclare\b|\btypeset\b|\bcompgen\b|\bRANDOM\b")
_FUNC_DEF = re.compile(r"(?:^|[\s;{(])(?:function\s+)?([A-Za-z_][\w-]*)\s*\(\)")
_SEPARATORS = re.compile(r"\$\(|`|&&|\|\||[;|&(){}\n]|\b(?:then|do|else|elif)\b")
_ASSIGN = re.compile(r"[A-Za-z_]\w*=\S*$")
SHELLS = ("bash", "sh")


def sentinel(name: str) -> str:
    return f"@s2k@{name}@"


def shell_text(argv) -> str | None:
    """TEXT of `bash -c TEXT ...` / `sh -c TEXT ...`, else None."""
    if len(argv) >= 3 and argv[0].rsplit("/", 1)[-1] in SHELLS and argv[1] == "-c":
        return argv[2]
    return None


def varying(envs) -> set[str]:
    """The names whose value is not the same in every task's environment."""
    names = set().union(*(e.keys() for e in envs))
    return {n for n in names if len({e.get(n) for e in envs}) > 1}


def _copies(text: str, name: str) -> list[tuple[int, int, str]]:
    """Spans of `X="$NAME"`, `X=$NAME`, `X=${NAME}` (the whole value a copy): (start, end, X)."""
    rx = re.compile(r"(?<![\w$])([A-Za-z_]\w*)=(\"?)\$(\{?)" + re.escape(name) + r"(\}?)\2(?=[\s;]|$)")
    return [(m.start(), m.end(), m.group(1)) for m in rx.finditer(text) if bool(m.group(3)) == bool(m.group(4))]


def _copy_only(text: str, name: str) -> bool:
    """Every mention of `name` in text is a whole-value copy into a name text never mentions again, or a
    whole argument of a `python` command (`--rank "$SLURM_PROCID"`): carried verbatim either way."""
    copies = _copies(text, name)
    mentions = len(re.findall(r"(?<![\w])" + re.escape(name) + r"(?!\w)", text))
    if mentions != len(copies) + _python_arguments(text, name):
        return False
    return all(len(re.findall(r"(?<![\w])" + re.escape(x) + r"(?!\w)", text)) == 1 for _, _, x in copies)


def _python_arguments(text: str, name: str) -> int:
    """How many times `$NAME` / `"${NAME}"` is a whole argument of a command whose program is python."""
    arg = re.compile(r"(?<=\s)(\"?)\$(\{?)" + re.escape(name) + r"(\}?)\1(?=[\s;&|)]|$)")
    n = 0
    for line in text.splitlines():
        for seg in re.split(r"&&|\|\||[;|]", line):
            toks = seg.split()
            while toks and _ASSIGN.match(toks[0]):
                toks.pop(0)
            if toks and is_python(toks[0]):
                n += sum(1 for m in arg.finditer(seg) if bool(m.group(2)) == bool(m.group(3)))
    return n


def is_python(word: str) -> bool:
    """python, python3, python3.11 (by name or path)"""
    base = word.rsplit("/", 1)[-1]
    return base.startswith("python") and all(c in "0123456789." for c in base[6:])


def plain_value(value: str) -> bool:
    """A value that an unquoted `$NAME` passes on as one word, unchanged (no spaces, no glob characters)."""
    return all(c.isalnum() or c in "._,:/@+-=%" for c in value)


HOST_TOOLS = {"hostname", "uname"}  # stubs that read only the node's identity
# Stubs that record a call and do nothing the environment could change (module/ml are no-ops on Slurm;
# mkdir/touch act in the working directory, the same for every task).
RECORDED_TOOLS = {"module", "ml", "mkdir", "touch", "sleep"}
_PARAM = re.compile(r"\$\{[^{}]*\}")
_ARITH = re.compile(r"\$?\(\((?:[^()]|\([^()]*\))*\)\)")


def _uncommented(text: str) -> str:
    """Comment lines dropped, and a trailing ` # ...` when no quote comes before it on the line."""
    out = []
    for line in text.splitlines():
        m = re.search(r"(?:^|\s)#", line)
        if m and not re.search(r"[\"']", line[: m.start()]):
            line = line[: m.start()]
        out.append(line)
    return "\n".join(out)


def _flattened(text: str) -> str | None:
    """Single-quoted strings, `${...}` and `((...))` written as plain words, so that the separators inside them
    do not look like commands; None when one of them hides a command substitution."""
    text = re.sub(r"'[^']*'", "''", text)
    for rx in (_PARAM, _ARITH):
        while True:
            m = rx.search(text)
            if not m:
                break
            if "$(" in m.group(0) or "`" in m.group(0):
                return None
            text = text[: m.start()] + "$X" + text[m.end() :]
    return text


def _command_words(text: str) -> list[str]:
    words = []
    for line in text.splitlines():
        for seg in _SEPARATORS.split(line):
            toks = seg.split()
            while toks and _ASSIGN.match(toks[0]):
                toks.pop(0)
            if toks:
                words.append(toks[0])
    return words


def _word_ok(w: str, funcs, host_varies: bool) -> bool:
    bare = w.strip("\"'")
    if not bare or bare in funcs or bare in SHELL_WORDS or bare in BLIND_TOOLS or bare in ("$@", "]]", "]"):
        return True
    if bare in RECORDED_TOOLS or is_python(bare):  # stubs: what they do is in the run's records (records_alike)
        return True
    return bare in HOST_TOOLS and not host_varies


def text_alike(text: str, names, host_varies: bool = True) -> bool:
    """Whether bash runs `text` the same way whatever the values of `names` (see the module docstring)."""
    text = _uncommented(text)
    flat = _flattened(text)
    if flat is None or DYNAMIC.search(text):
        return False
    funcs = set(_FUNC_DEF.findall(flat))
    if not all(_word_ok(w, funcs, host_varies) for w in _command_words(flat)):
        return False
    return all(_copy_only(text, n) for n in names if n.isidentifier())


def substitute(obj, pairs):
    """`obj` (records: dicts, lists, strings) with each sentinel replaced by its value."""
    if isinstance(obj, str):
        for s, v in pairs:
            if s in obj:
                obj = obj.replace(s, v)
        return obj
    if isinstance(obj, list):
        return [substitute(x, pairs) for x in obj]
    if isinstance(obj, dict):
        return {substitute(k, pairs): substitute(v, pairs) for k, v in obj.items()}
    return obj


def records_alike(records) -> bool:
    """The run started only plain programs (a `process` record each: `python train.py`, the user's binary)
    and stubs that ignore the environment: nothing whose behaviour could depend on a varying value other
    than by carrying it. (`python -c`, a nested launcher, `nvidia-smi` record a call of their own: not alike.)"""
    return all(
        r.get("kind") == "process" or (r.get("kind") == "call" and r.get("name") in RECORDED_TOOLS) for r in records
    )
