"""The script AST: what the reader produces. Frozen records (frozen dataclasses, translator/records.py),
every node with 1-based lines.

The header is read exactly as sbatch reads it (see docs/sbatch-semantics in shared docs):
`Directive` for every `#SBATCH`/`#SLURM` line sbatch applies, `IgnoredLine` for lines that look like
directives but that sbatch does not apply (with the reason), `ForeignDirective` for `#PBS`/`#BSUB`.
The body is a sequence of `Statement`s; what the body grammar does not model is an opaque `Command`
with kind OTHER, never a parse failure.
"""

from __future__ import annotations

from dataclasses import dataclass

from translator.diagnostics import Diagnostic
from translator.records import FrozenRecord, _set


@dataclass(init=False, repr=False, eq=False)
class Directive(FrozenRecord):
    """One `#SBATCH` (or `#SLURM`) line that sbatch applies."""

    line: int
    text: str  # the raw line, without the line break
    prefix: str  # "#SBATCH" or "#SLURM"
    words: tuple[str, ...]  # argv words, tokenized as sbatch's get_argument does (quotes removed, no expansion)
    component: int = 0  # hetjob component index (0 before the first `#SBATCH hetjob`)

    def __init__(self, line: int, text: str, prefix: str, words: tuple[str, ...], component: int = 0):
        d = self.__dict__  # frozen: the fields are written once, here (as _set would; one per #SBATCH line)
        d["line"] = line
        d["text"] = text
        d["prefix"] = prefix
        d["words"] = words
        d["component"] = component


@dataclass(init=False, repr=False, eq=False)
class IgnoredLine(FrozenRecord):
    """A line that looks like a directive but that sbatch does not apply."""

    line: int
    text: str
    reason: str  # a diagnostic code, e.g. R120 (after first command), R121 (`# SBATCH`)
    explanation: str  # human sentence


@dataclass(init=False, repr=False, eq=False)
class ForeignDirective(FrozenRecord):
    """A `#PBS` / `#BSUB` line, which sbatch translates into options (translator/slurm/foreign.py)."""

    line: int
    text: str
    family: str  # "PBS" or "BSUB"


# ---- body -------------------------------------------------------------------------------------

# Command kinds (classification done by the reader; interpretation done by launchers/plan).
MODULE = "module"  # module load/purge/use/swap, ml
SOURCE = "source"  # source FILE / . FILE (not venv/conda activation)
CONDA = "conda"  # conda/mamba/micromamba activate, source activate ENV
VENV = "venv"  # source PATH/bin/activate
PIP = "pip"  # pip/pip3/python -m pip install ...
CD = "cd"
EXPORT = "export"  # export with no plain assignment form (e.g. `export -f`, `export VAR` alone)
LAUNCH = "launch"  # srun, torchrun, python -m torch.distributed.*, mpirun/mpiexec, deepspeed,
# accelerate launch, python/python3 SCRIPT|-m MOD|-c, apptainer/singularity exec
SBATCH = "sbatch"  # nested sbatch submission
OTHER = "other"  # anything else, kept verbatim


@dataclass(init=False, repr=False, eq=False)
class Word(FrozenRecord):
    """One shell word of a command."""

    raw: str  # as written, with quotes and escapes
    value: str  # quotes removed and escapes resolved; `$VAR`, `$(..)`, backticks kept literally
    literal: bool  # True when the word contains no expansion that the shell would perform
    # (no unquoted/double-quoted `$` or backtick, no unquoted glob or `~`)

    def __init__(self, raw: str, value: str, literal: bool):
        _set(self, "raw", raw)
        _set(self, "value", value)
        _set(self, "literal", literal)


@dataclass(init=False, repr=False, eq=False)
class Assignment(FrozenRecord):
    """`NAME=value` or `export NAME=value` (also `declare -x`), on its own or as command prefix."""

    line: int
    name: str
    value: Word
    exported: bool

    def __init__(self, line: int, name: str, value: Word, exported: bool):
        _set(self, "line", line)
        _set(self, "name", name)
        _set(self, "value", value)
        _set(self, "exported", exported)


@dataclass(init=False, repr=False, eq=False)
class Command(FrozenRecord):
    """A simple command. `kind` classifies it; `words[0]` is the command name (after prefixes)."""

    line: int
    end_line: int
    text: str  # source text of this command (continuations joined with spaces)
    words: tuple[Word, ...]
    kind: str = OTHER
    prefix_assignments: tuple[Assignment, ...] = ()  # `VAR=x cmd ...`
    background: bool = False  # ends with `&`
    connector: str = ""  # operator joining it to the previous command on the line:
    # "" (new statement), ";", "&&", "||", "|"
    redirections: tuple[str, ...] = ()  # e.g. (">log.txt", "2>&1"), kept verbatim

    def __init__(
        self,
        line: int,
        end_line: int,
        text: str,
        words: tuple[Word, ...],
        kind: str = OTHER,
        prefix_assignments: tuple[Assignment, ...] = (),
        background: bool = False,
        connector: str = "",
        redirections: tuple[str, ...] = (),
    ):
        _set(self, "line", line)
        _set(self, "end_line", end_line)
        _set(self, "text", text)
        _set(self, "words", words)
        _set(self, "kind", kind)
        _set(self, "prefix_assignments", prefix_assignments)
        _set(self, "background", background)
        _set(self, "connector", connector)
        _set(self, "redirections", redirections)

    @property
    def argv(self) -> tuple[str, ...]:
        return tuple(w.value for w in self.words)


@dataclass(init=False, repr=False, eq=False)
class Comment(FrozenRecord):
    """A comment line of the body."""

    line: int
    text: str

    def __init__(self, line: int, text: str):
        _set(self, "line", line)
        _set(self, "text", text)


@dataclass(init=False, repr=False, eq=False)
class Block(FrozenRecord):
    """A compound construct kept as one block with its position; commands inside are still parsed.

    kind: "heredoc" (a command with a here-document; `body` holds the document text),
          "function", "for", "while", "until", "if", "case", "subshell", "group".
    """

    kind: str
    line: int
    end_line: int
    text: str  # the header line, e.g. `for i in 1 2 3; do`
    children: tuple[Statement, ...] = ()  # parsed statements inside (not for heredoc bodies)
    heredoc_body: str | None = None  # heredoc text (not parsed as commands)
    heredoc_delimiter: str | None = None
    command: Command | None = None  # for heredoc: the command that reads it (e.g. `cat > x`)
    heredoc_body_line: int | None = None  # for heredoc: line of the document's first line in the file
    generated_script: Script | None = None  # for heredoc: the document read as a job script when it starts
    # with `#!` (a script this one writes); its line numbers are
    # relative to the document (add heredoc_body_line - 1). With an
    # unquoted delimiter the shell expands `$x` when it writes the
    # file; the generated script holds the text before expansion.

    def __init__(
        self,
        kind: str,
        line: int,
        end_line: int,
        text: str,
        children: tuple[Statement, ...] = (),
        heredoc_body: str | None = None,
        heredoc_delimiter: str | None = None,
        command: Command | None = None,
        heredoc_body_line: int | None = None,
        generated_script: Script | None = None,
    ):
        _set(self, "kind", kind)
        _set(self, "line", line)
        _set(self, "end_line", end_line)
        _set(self, "text", text)
        _set(self, "children", children)
        _set(self, "heredoc_body", heredoc_body)
        _set(self, "heredoc_delimiter", heredoc_delimiter)
        _set(self, "command", command)
        _set(self, "heredoc_body_line", heredoc_body_line)
        _set(self, "generated_script", generated_script)


Statement = Assignment | Command | Comment | Block


@dataclass(init=False, repr=False, eq=False)
class Script(FrozenRecord):
    """Everything the reader learned from one file."""

    path: str  # as given by the caller
    text: str  # decoded text ('' when undecodable)
    line_count: int
    shebang: str | None  # first line if it starts with `#!`, else None
    shell: str  # "bash", "sh", "zsh", "csh", "tcsh", "unknown" from shebang
    directives: tuple[Directive, ...]
    ignored: tuple[IgnoredLine, ...]
    foreign: tuple[ForeignDirective, ...]
    body: tuple[Statement, ...]
    body_start_line: int | None  # first line sbatch sees as a command (ends the header)
    components: int  # 1 + number of `#SBATCH hetjob` separators
    diagnostics: tuple[Diagnostic, ...] = ()  # reader diagnostics (R1xx)
    sbatch_refuses: bool = False  # True when sbatch would refuse the file itself
    # (no `#!`, CRLF, NUL, empty, unmatched quote in a directive)
    hetjob_separator_lines: tuple[int, ...] = ()  # lines of `#SBATCH hetjob`/`packjob` separators (not Directives)
    latin1_lines: tuple[int, ...] = ()  # lines that were not valid UTF-8 and were decoded as Latin-1

    def __init__(
        self,
        path: str,
        text: str,
        line_count: int,
        shebang: str | None,
        shell: str,
        directives: tuple[Directive, ...],
        ignored: tuple[IgnoredLine, ...],
        foreign: tuple[ForeignDirective, ...],
        body: tuple[Statement, ...],
        body_start_line: int | None,
        components: int,
        diagnostics: tuple[Diagnostic, ...] = (),
        sbatch_refuses: bool = False,
        hetjob_separator_lines: tuple[int, ...] = (),
        latin1_lines: tuple[int, ...] = (),
    ):
        _set(self, "path", path)
        _set(self, "text", text)
        _set(self, "line_count", line_count)
        _set(self, "shebang", shebang)
        _set(self, "shell", shell)
        _set(self, "directives", directives)
        _set(self, "ignored", ignored)
        _set(self, "foreign", foreign)
        _set(self, "body", body)
        _set(self, "body_start_line", body_start_line)
        _set(self, "components", components)
        _set(self, "diagnostics", diagnostics)
        _set(self, "sbatch_refuses", sbatch_refuses)
        _set(self, "hetjob_separator_lines", hetjob_separator_lines)
        _set(self, "latin1_lines", latin1_lines)


def iter_commands(statements):
    """Yield every Command in statements, descending into blocks (heredoc readers included)."""
    for st in statements:
        if isinstance(st, Command):
            yield st
        elif isinstance(st, Block):
            if st.command is not None:
                yield st.command
            yield from iter_commands(st.children)


def iter_generated_scripts(statements):
    """Yield (heredoc Block, Script) for every here-document that is itself a job script (starts with `#!`)."""
    for st in statements:
        if isinstance(st, Block):
            if st.generated_script is not None:
                yield st, st.generated_script
            yield from iter_generated_scripts(st.children)


def iter_assignments(statements):
    for st in statements:
        if isinstance(st, Assignment):
            yield st
        elif isinstance(st, Command):
            yield from st.prefix_assignments
        elif isinstance(st, Block):
            yield from iter_assignments(st.children)
