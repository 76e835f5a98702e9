"""Classify a simple command (its argv values) into the ast.py command kinds.

Classification looks at the program after transparent prefixes (`time`, `exec`, `nohup`, `stdbuf`,
`env`, `nice`, `timeout`, `command`, `numactl`, `taskset`); the words themselves are kept as written.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from translator.launchers.registry import launch_kind
from translator.read import ast
from translator.tables import keep

_PY = re.compile(r"^python(?:[0-9](?:\.[0-9]+)?)?$")
_ENV_ASSIGN = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")

# prefix programs and the options of theirs that take a separate argument
_PREFIXES = {
    "time": {"-f", "-o", "--format", "--output"},
    "exec": {"-a"},
    "nohup": set(),
    "stdbuf": {"-i", "-o", "-e", "--input", "--output", "--error"},
    "env": {"-u", "--unset", "-C", "--chdir", "-S", "--split-string"},
    "nice": {"-n", "--adjustment"},
    "command": set(),
    "builtin": set(),
    "numactl": {
        "-C",
        "-N",
        "-m",
        "-p",
        "-i",
        "--physcpubind",
        "--cpunodebind",
        "--membind",
        "--preferred",
        "--interleave",
    },
    "taskset": set(),
    "chrt": set(),
    "ionice": {"-c", "-n", "-p"},
}
_TIMEOUT_OPTS = {"-s", "--signal", "-k", "--kill-after"}

MODULE_PROGRAMS = {"module", "ml", "spack"}
_PY_VALUE_OPTS = {"-W", "-X", "-Q"}


def _base(word: str) -> str:
    return word.rsplit("/", 1)[-1]


def program_index(argv: Sequence[str]) -> int:
    """Index of the real program in argv, after transparent prefixes."""
    i = 0
    n = len(argv)
    while i < n:
        prog = _base(argv[i])
        if prog == "timeout":
            i += 1
            while i < n and argv[i].startswith("-"):
                i += 2 if argv[i] in _TIMEOUT_OPTS else 1
            i += 1  # the duration
            continue
        if prog == "taskset":
            i += 1
            while i < n and argv[i].startswith("-"):
                i += 1
            i += 1  # the mask
            continue
        opts = _PREFIXES.get(prog)
        if opts is None:
            return i
        if prog == "command" and i + 1 < n and argv[i + 1] in ("-v", "-V"):
            return n  # `command -v X` looks X up, it does not run it
        i += 1
        while i < n and (argv[i].startswith("-") and argv[i] != "-" or (prog == "env" and _ENV_ASSIGN.match(argv[i]))):
            if argv[i] == "--":
                i += 1
                break
            i += 2 if argv[i] in opts else 1
    return min(i, n)


def _python_kind(args: Sequence[str]) -> str:
    """args after the python program."""
    i = 0
    n = len(args)
    while i < n:
        a = args[i]
        if a == "-m":
            if i + 1 < n and args[i + 1] == "pip":
                return (
                    ast.PIP
                    if any(x in ("install", "uninstall", "download") for x in args[i + 2 : i + 4])
                    else ast.OTHER
                )
            return ast.LAUNCH if i + 1 < n else ast.OTHER
        if a.startswith("-m") and len(a) > 2:
            return ast.PIP if a[2:] == "pip" and "install" in args else ast.LAUNCH
        if a == "-c" or (a.startswith("-c") and len(a) > 2):
            return ast.LAUNCH
        if a in ("-V", "--version", "-h", "--help"):
            return ast.OTHER
        if a in _PY_VALUE_OPTS:
            i += 2
            continue
        if a.startswith("-") and a != "-":
            i += 1
            continue
        return ast.LAUNCH  # a script (or `-` = stdin)
    return ast.OTHER


# classify() is a pure function of argv and scripts repeat their commands (`module load`, `echo`, `srun`...):
# the kinds of recent argvs are kept per process (bounded; argvs with a long word are not kept)
_KINDS: dict[tuple[str, ...], str] = {}
_KINDS_LIMIT = 8192


def classify(argv: Sequence[str]) -> str:
    """The kind of a command (see _classify_argv), cached per process."""
    key = tuple(argv)
    kind = _KINDS.get(key)
    if kind is None:
        kind = _classify_argv(key)
        if len(key) <= 16 and sum(map(len, key)) <= 512:
            keep(_KINDS, key, kind, _KINDS_LIMIT)
    return kind


def _classify_argv(argv: Sequence[str]) -> str:
    """The kind of a command. Wrappers (`conda run`, `uv run`, `poetry run`...) are unwrapped in a loop,
    not by recursion, so `conda run conda run ... python` any number of times is fine."""
    outer_fallback = None
    while True:
        kind, tail = _classify_step(argv)
        if tail is None:
            if outer_fallback is None or kind == ast.LAUNCH:
                return kind
            return outer_fallback
        if outer_fallback is None:
            outer_fallback = kind  # what the outermost wrapper is when it does not launch
        argv = tail


def _classify_step(argv: Sequence[str]):
    """(kind, None) for a plain command; (kind when the wrapped command does not launch, wrapped argv)."""
    kind = _classify_plain(argv)
    if isinstance(kind, _Wrapped):
        return kind.kind, kind.tail
    return kind, None


class _Wrapped:
    __slots__ = ("kind", "tail")

    def __init__(self, kind: str, tail: Sequence[str]):
        self.kind = kind
        self.tail = tail


def _classify_plain(argv: Sequence[str]):
    if not argv:
        return ast.OTHER
    i = program_index(argv)
    if i >= len(argv):
        return ast.OTHER
    prog = _base(argv[i])
    rest = argv[i + 1 :]
    sub = rest[0] if rest else ""

    if prog in MODULE_PROGRAMS:
        if prog == "spack" and sub not in ("load", "unload", "env"):
            return ast.OTHER
        return ast.MODULE
    if prog in ("source", "."):
        if not rest:
            return ast.SOURCE
        target = rest[0]
        if target == "activate" or target.endswith("/activate") and "conda" in target or target == "deactivate":
            return ast.CONDA
        if target.endswith("bin/activate") or target.endswith("bin/activate.sh"):
            return ast.VENV
        return ast.SOURCE
    if prog in ("conda", "mamba", "micromamba"):
        if sub == "run":
            j = 1
            while j < len(rest) and rest[j].startswith("-"):
                j += 2 if rest[j] in ("-n", "--name", "-p", "--prefix") else 1
            return _Wrapped(ast.CONDA, rest[j:])
        return ast.CONDA
    if prog in ("pip", "pip3") or re.match(r"^pip[0-9.]+$", prog):
        return ast.PIP if sub in ("install", "uninstall", "download") else ast.OTHER
    if prog == "uv":
        if sub == "pip":
            return ast.PIP
        if sub == "run":
            j = 1
            while j < len(rest) and rest[j].startswith("-"):
                j += 1
            return _Wrapped(ast.OTHER, rest[j:])
        return ast.OTHER
    if prog in ("cd", "pushd"):
        return ast.CD
    if prog == "export":
        return ast.EXPORT
    if prog == "sbatch":
        return ast.SBATCH
    launch = launch_kind(prog, sub)
    if launch is not None:  # the launcher table (translator/launchers/registry.py)
        return ast.LAUNCH if launch else ast.OTHER
    if _PY.match(prog):
        return _python_kind(rest)
    if prog in ("poetry", "pipenv") and sub == "run":
        return _Wrapped(ast.OTHER, rest[1:])
    return ast.OTHER
