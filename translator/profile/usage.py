"""What a script uses that a site profile can map: partitions, QoS, accounts, GPU types, constraint
features, modules and environments, container images, and file-system paths.

Shared by `apply_profile` (one script) and `slurm2kf profile init` (a whole repository).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from collections.abc import Iterable

from translator.read.ast import CONDA, MODULE, VENV, Block, Script
from translator.read.walk import assignments_in, commands_in
from translator.slurm.job import SlurmJob

# Module subcommands (Lmod and Environment Modules) that load the modules named after them.
_MODULE_LOADERS = {"load", "add", "try-load", "try-add", "load-any"}
_MODULE_SUBCOMMANDS = _MODULE_LOADERS | {
    "unload",
    "rm",
    "del",
    "purge",
    "list",
    "avail",
    "av",
    "spider",
    "use",
    "unuse",
    "save",
    "restore",
    "show",
    "display",
    "help",
    "swap",
    "switch",
    "sw",
    "keyword",
    "whatis",
    "reset",
    "refresh",
    "update",
    "describe",
    "savelist",
    "disable",
    "is-loaded",
    "is-avail",
    "initadd",
    "initrm",
    "--version",
}
_CONTAINER_SUFFIXES = (".sif", ".simg", ".sqsh", ".squashfs")
_CONTAINER_TOOLS = {"apptainer", "singularity"}
_CONTAINER_SUBCOMMANDS = {"exec", "run", "shell", "test"}
# apptainer/singularity options that take a value as the next word.
_CONTAINER_VALUE_OPTS = {
    "-B",
    "--bind",
    "--env",
    "--env-file",
    "-H",
    "--home",
    "-W",
    "--workdir",
    "--pwd",
    "-o",
    "--overlay",
    "--mount",
    "-S",
    "--scratch",
    "--security",
    "--app",
    "--network",
    "--network-args",
    "--hostname",
    "--apply-cgroups",
    "--cwd",
}

# System directories whose paths are not site data (not reported as unmapped file systems).
SYSTEM_DIRS = {
    "/usr",
    "/bin",
    "/sbin",
    "/etc",
    "/dev",
    "/proc",
    "/sys",
    "/tmp",
    "/var",
    "/lib",
    "/lib64",
    "/run",
    "/opt",
    "/boot",
    "/root",
    "/srv",
    "/mnt",
}

_ABS_PATH = re.compile(r"(?:(?<=^)|(?<=[\s=:'\"(,@<>|;]))(/[A-Za-z0-9._+-]+)(?=/|$|[\s'\",:;)|&<>])")
_VAR_PREFIX = re.compile(r"(?:(?<=^)|(?<=[\s=:'\"(]))\$\{?([A-Za-z_][A-Za-z0-9_]*)\}?(?=/)")
_TILDE_PREFIX = re.compile(r"(?:(?<=^)|(?<=[\s=:'\"]))~/")
# `_ABS_PATH` and `_VAR_PREFIX` (group 1) with the boundary test after the first character: a pattern that
# starts with a literal is searched for that character first, about seven times faster on long texts. (A
# `/` or `$` not preceded by a character outside the class: the start of the text, or one of the class.)
_ABS_TOP = re.compile(r"/(?<![^\s=:'\"(,@<>|;]/)[A-Za-z0-9._+-]+(?=/|$|[\s'\",:;)|&<>])")
_VAR_NAME = re.compile(r"\$(?<![^\s=:'\"(]\$)\{?([A-Za-z_][A-Za-z0-9_]*)\}?(?=/)")
_VAR_PATH = re.compile(r"\$\{?([A-Za-z_][A-Za-z0-9_]*)\}?(?=/|$|[^A-Za-z0-9_])")


@dataclass(frozen=True)
class EnvItem:
    """A software environment the script activates: kind is module | conda | venv | container."""

    kind: str
    name: str
    line: int | None  # None for the plan's own image (no script line names it)


@dataclass(frozen=True)
class Text:
    """A string from the script that may name paths (a word, an assignment value, a directive value)."""

    value: str
    line: int | None


def option_line(job: SlurmJob, name: str) -> int | None:
    """Line of the `#SBATCH` directive that set option `name` last (None for env/CLI or unset)."""
    line = None
    for setting in job.main.settings:
        if setting.name == name:
            line = setting.line if setting.source == "directive" else None
    return line


def _option_words(words: list[str], start: int) -> list[str]:
    return [w for w in words[start:] if not w.startswith("-")]


def _module_names(argv: tuple[str, ...]) -> list[str]:
    if not argv:
        return []
    tool = argv[0].rsplit("/", 1)[-1]
    words = list(argv[1:])
    if tool == "ml":
        if not words:
            return []
        if words[0] in _MODULE_LOADERS:
            return _option_words(words, 1)
        if words[0] in _MODULE_SUBCOMMANDS:
            return []
        return [w for w in words if not w.startswith("-")]
    # module [options] subcommand args
    i = 0
    while i < len(words) and words[i].startswith("-"):
        i += 1
    if i >= len(words):
        return []
    sub = words[i]
    if sub in _MODULE_LOADERS:
        return _option_words(words, i + 1)
    if sub in ("swap", "switch", "sw"):
        names = _option_words(words, i + 1)
        return names[-1:]
    return []


def _conda_env(argv: tuple[str, ...]) -> str | None:
    words = list(argv)
    if "activate" not in words:
        return None
    rest = words[words.index("activate") + 1 :]
    names = []
    skip = False
    for w in rest:
        if skip:
            names.append(w)
            skip = False
            continue
        if w in ("-n", "--name", "-p", "--prefix"):
            skip = True
            continue
        if w.startswith("-"):
            continue
        names.append(w)
    return names[-1] if names else "base"


def _venv_path(argv: tuple[str, ...]) -> str | None:
    for w in argv[1:]:
        if w.endswith("/activate"):
            path = w[: -len("/activate")]
            if path.endswith("/bin"):
                path = path[: -len("/bin")]
            return path or None
    return None


def _may_name_container(argv: tuple[str, ...]) -> bool:
    """False when _containers(argv) is surely empty: not a container tool, no `--container-image` and no
    word ending in an image suffix (one search over the joined words instead of a loop per word)."""
    if not argv:
        return False
    if argv[0].rsplit("/", 1)[-1] in _CONTAINER_TOOLS:
        return True
    joined = "\0".join(argv) + "\0"
    return "--container-image" in joined or any(s + "\0" in joined for s in _CONTAINER_SUFFIXES)


def _containers(argv: tuple[str, ...]) -> list[str]:
    found: list[str] = []
    tool = argv[0].rsplit("/", 1)[-1] if argv else ""
    if tool in _CONTAINER_TOOLS and len(argv) > 2 and argv[1] in _CONTAINER_SUBCOMMANDS:
        i = 2
        while i < len(argv):
            w = argv[i]
            if w.startswith("-"):
                if w in _CONTAINER_VALUE_OPTS:
                    i += 1
                i += 1
                continue
            if "://" not in w:
                found.append(w)
            break
    for i, w in enumerate(argv):
        if w.startswith("--container-image="):
            ref = w.split("=", 1)[1]
        elif w == "--container-image" and i + 1 < len(argv):
            ref = argv[i + 1]
        else:
            ref = w
            if not ref.endswith(_CONTAINER_SUFFIXES):
                continue
        if ref.endswith(_CONTAINER_SUFFIXES) or ref.startswith(("/", "./", "../")):
            if ref not in found:
                found.append(ref)
    return found


def environment_items(script: Script) -> list[EnvItem]:
    """Modules, conda/venv environments and local container images, in script order (repeats kept once)."""
    items: list[EnvItem] = []
    seen = set()

    def add(kind, name, line):
        if name and (kind, name) not in seen:
            seen.add((kind, name))
            items.append(EnvItem(kind, name, line))

    for cmd in commands_in(script.body):
        argv = cmd.argv
        if cmd.kind == MODULE or (argv and argv[0] in ("module", "ml")):
            for name in _module_names(argv):
                add("module", name, cmd.line)
        elif cmd.kind == CONDA:
            add("conda", _conda_env(argv), cmd.line)
        elif cmd.kind == VENV:
            add("venv", _venv_path(argv), cmd.line)
        if _may_name_container(argv):
            for ref in _containers(argv):
                add("container", ref, cmd.line)
    return items


# what `_may_name_container` needs to see in a command's words joined by newlines (a cheaper test first:
# every image suffix starts with `.s`, and a container tool's name ends the first word)
_CONTAINER_TOOL_ENDINGS = tuple(_CONTAINER_TOOLS)


def needs_scan(script: Script, job: SlurmJob | None) -> tuple[list[EnvItem], str]:
    """`environment_items(script)`, and the texts of `script_texts(script, job, "/")` joined by newlines (in
    that order, texts without a `/` possibly among them), from one walk over the commands: what the review
    report reads (translator/report/build.py). Each command's words are read once; a command's words go in
    as one text joined by newlines (a path found by `path_tops`/`variable_names` never crosses a newline,
    and a newline counts as the start and the end of a text for their patterns), a here-document as its
    whole body."""
    items: list[EnvItem] = []
    seen: set = set()

    def add(kind, name, line):
        if name and (kind, name) not in seen:
            seen.add((kind, name))
            items.append(EnvItem(kind, name, line))

    texts: list[str] = []
    ta = texts.append
    for cmd in commands_in(script.body):
        vals = [w.value for w in cmd.words]
        joined = "\n".join(vals)
        if vals:
            kind = cmd.kind
            first = vals[0]
            if kind == MODULE or first == "module" or first == "ml":
                for name in _module_names(tuple(vals)):
                    add("module", name, cmd.line)
            elif kind == CONDA:
                add("conda", _conda_env(tuple(vals)), cmd.line)
            elif kind == VENV:
                add("venv", _venv_path(tuple(vals)), cmd.line)
            if ".s" in joined or "--container-image" in joined or first.endswith(_CONTAINER_TOOL_ENDINGS):
                argv = tuple(vals)
                if _may_name_container(argv):
                    for ref in _containers(argv):
                        add("container", ref, cmd.line)
            if "/" in joined:
                ta(joined)
        for r in cmd.redirections:
            r = r.lstrip("0123456789<>&|")
            if "/" in r:
                ta(r)
    for a in assignments_in(script.body):
        v = a.value.value
        if "/" in v:
            ta(v)
    _heredoc_bodies(script.body, texts)
    if job is not None:
        fields = job.fields
        for name in ("chdir", "output", "error"):
            value = getattr(fields, name, None)
            if value and "/" in value:
                ta(value)
    return items, "\n".join(texts)


def _heredoc_bodies(statements, out: list[str]) -> None:
    """The bodies of the here-documents holding a `/`, in order (`_heredoc_texts` keeps their lines)."""
    for st in statements:
        if isinstance(st, Block):
            body = st.heredoc_body
            if body and "/" in body:
                out.append(body)
            if st.children:
                _heredoc_bodies(st.children, out)


def path_tops(text: str) -> set[str]:
    """The `absolute_prefixes` of texts (their tops), from the texts joined by newlines (`needs_scan`)."""
    tops = set(_ABS_TOP.findall(text))
    tops.discard("/.")  # `cd /..`, `/./x`: the root again, not a file system
    tops.discard("/..")
    return tops


def variable_names(text: str) -> set[str]:
    """The names `variable_prefixes` can report (before the script's own assignments are excluded), from the
    texts joined by newlines (`needs_scan`); `~/` is not looked for (the report never lists `$HOME`)."""
    if "$" not in text:
        return set()
    return {
        n
        for n in _VAR_NAME.findall(text)
        if not n.startswith(("SLURM_", "PET_", "OMPI_")) and n != "PWD" and n != "OLDPWD"
    }


def _heredoc_texts(statements, out: list[Text], containing: str) -> None:
    """The lines of every here-document body, in order (a module function: a recursive closure would
    be a reference cycle that keeps each script's texts alive until the garbage collector runs)."""
    for st in statements:
        if isinstance(st, Block):
            if st.heredoc_body and containing in st.heredoc_body:
                doc = st.heredoc_body[:-1] if st.heredoc_body.endswith("\n") else st.heredoc_body
                for i, text in enumerate(doc.split("\n")):  # lines end at `\n` only, as in bash
                    if containing in text:
                        out.append(Text(text, st.line + 1 + i))
            _heredoc_texts(st.children, out, containing)


def script_texts(script: Script, job: SlurmJob | None, containing: str = "") -> list[Text]:
    """Every string in which the script can name a path: command words, assignment values, here-document
    bodies, and the --chdir/--output/--error directive values. `containing`: only the strings that
    contain it (e.g. "/" for callers that look for paths only)."""
    out: list[Text] = []
    for cmd in commands_in(script.body):
        for w in cmd.words:
            if containing in w.value:
                out.append(Text(w.value, cmd.line))
        for r in cmd.redirections:
            r = r.lstrip("0123456789<>&|")
            if containing in r:
                out.append(Text(r, cmd.line))
    for a in assignments_in(script.body):
        if containing in a.value.value:
            out.append(Text(a.value.value, a.line))

    _heredoc_texts(script.body, out, containing)
    if job is not None:
        for name in ("chdir", "output", "error"):
            value = getattr(job.fields, name, None)
            if value and containing in value:
                out.append(Text(value, option_line(job, name)))
    return out


def uses_prefix(texts: Iterable[Text], prefix: str) -> Text | None:
    """The first text that uses path `prefix` (`/scratch` or `$SCRATCH`) at a path boundary."""
    if prefix.startswith("$"):
        name = prefix[1:]
        rx = re.compile(r"\$\{?" + re.escape(name) + r"\}?(?![A-Za-z0-9_])")
        if name == "HOME":
            rx = re.compile(r"\$\{?HOME\}?(?![A-Za-z0-9_])|(?:(?<=^)|(?<=[\s=:'\"]))~(?=/|$|\s)")
    else:
        rx = re.compile(r"(?:(?<=^)|(?<=[\s=:'\"(,@<>|;]))" + re.escape(prefix) + r"(?=/|$|[\s'\",:;)|&<>])")
    for t in texts:
        if rx.search(t.value):
            return t
    return None


def absolute_prefixes(texts: Iterable[Text]) -> list[tuple[str, Text]]:
    """Top-level directories (`/scratch`) of absolute paths in texts, first use of each, in order."""
    seen = {}
    for t in texts:
        if "/" not in t.value:  # most words: no path at all
            continue
        for m in _ABS_PATH.finditer(t.value):
            top = m.group(1)
            if top in ("/.", "/.."):  # `cd /..`, `/./x`: the root again, not a file system
                continue
            if top not in seen:
                seen[top] = t
    return list(seen.items())


def variable_prefixes(texts: Iterable[Text], assigned: Iterable[str] = ()) -> list[tuple[str, Text]]:
    """`$VAR` used as the start of a path (`$SCRATCH/data`, `${WORK}/x`), excluding Slurm/Kubeflow
    variables and variables the script assigns itself."""
    assigned = set(assigned)
    seen = {}
    for t in texts:
        value = t.value
        if "/" not in value:  # both forms are followed by a `/`
            continue
        for m in _VAR_PREFIX.finditer(value) if "$" in value else ():
            name = m.group(1)
            if name.startswith(("SLURM_", "PET_", "OMPI_")) or name in assigned or name in ("PWD", "OLDPWD"):
                continue
            key = "$" + name
            if key not in seen:
                seen[key] = t
        if "~/" in value and "$HOME" not in seen and _TILDE_PREFIX.search(value):
            seen["$HOME"] = t
    return list(seen.items())


def assigned_names(script: Script) -> list[str]:
    return [a.name for a in assignments_in(script.body)]


def constraint_features(expr: str | None) -> tuple[tuple[str, ...], bool]:
    """Feature names in a `--constraint` expression and whether it only ANDs them (`a&b`, `a,b`).

    `a|b`, `[a|b]` and counts (`a*2`) make it more than a plain conjunction.
    """
    if not expr:
        return (), True
    plain_and = not any(c in expr for c in "|[]*()")
    names = tuple(n for n in re.split(r"[&|,\[\]()*]+", expr) if n and not n.isdigit())
    return names, plain_and
