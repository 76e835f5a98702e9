"""The `#SBATCH` header, read exactly as sbatch reads it (Slurm 22.05 `src/sbatch/opt.c`).

* `_opt_batch_script`: a line is a directive only when it starts, at column 0 and case-sensitively,
  with `#SBATCH` (or `#SLURM`, accepted with a complaint). No blank is needed after the magic word.
  Scanning goes on over blank lines and lines whose first non-blank character is `#`, and stops at
  the first other line (the first command).
* `get_argument`: the tokenizer of a directive line (see `tokenize_directive`).
* heterogeneous jobs: a directive whose text (after optional blanks) starts with `hetjob` or
  `packjob` (any case) followed by a blank or the end of the line separates components; the rest
  of that line is ignored. The same word later in a line ends that line (checked against real
  Slurm 22.05: `#SBATCH -N 2 packjob -t 4` sets only `-N 2`).
* `#BSUB`/`#PBS` lines (xlate.c): sbatch translates them and applies them after `#SBATCH`; the scan
  does not stop at the first command but gives up after 100 lines not starting with `#`.

Lines that look like directives but are not applied are kept as `IgnoredLine`s with a reason code.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from translator.diagnostics import Diagnostic, ERROR, INFO, WARNING
from translator.read.ast import Directive, ForeignDirective, IgnoredLine
from translator.records import Record
from translator.tables import keep

R120_AFTER_FIRST_COMMAND = "R120"
R121_SPACE_AFTER_HASH = "R121"
R122_DOUBLE_HASH = "R122"
R123_INDENTED = "R123"
R124_WRONG_CASE = "R124"
R125_TYPO = "R125"
R126_SHEBANG_LIKE = "R126"
R127_SLURM_PREFIX = "R127"
R128_FOREIGN = "R128"
R129_IN_HEREDOC = "R129"
R130_UNMATCHED_QUOTE = "R130"
R131_LEADING_COLON = "R131"
R132_HASH_ENDS_LINE = "R132"
R133_ESCAPED_BLANK = "R133"
R134_HETJOB_WORD = "R134"
R135_HETJOB_SEPARATOR = "R135"
R136_EMPTY_WORD = "R136"
R137_UNICODE_BLANK = "R137"

# C isspace() in the "C" locale
_C_SPACE = " \t\n\v\f\r"
_NEEDS_SLOW_PATH = re.compile(r"['\"\\#]")
_C_WORD = re.compile(r"[^ \t\n\v\f\r]+")
_PLAIN_RUN = re.compile(r"[^ \t\n\v\f\r\\'\"#]+")
_WORD_STARTS_WITH_COLON = re.compile(r"(?:^|[ \t\n\v\f\r]):")


@dataclass(init=False, repr=False, eq=False)
class TokenizedLine(Record):
    words: list[str]
    error: tuple[str, str] | None = None  # (code, message): sbatch would stop with a fatal error
    notes: list[tuple[str, str, str]] = field(default_factory=list)  # (severity, code, message)
    hetjob_separator: bool = False

    def __init__(
        self,
        words: list[str],
        error: tuple[str, str] | None = None,
        notes: list[tuple[str, str, str]] | None = None,
        hetjob_separator: bool = False,
    ):
        self.words = words
        self.error = error
        self.notes = [] if notes is None else notes
        self.hetjob_separator = hetjob_separator


def clip(text: str, limit: int = 100) -> str:
    """Text shown in a message: at most `limit` characters."""
    return text if len(text) <= limit else text[:limit] + "..."


def _het_word_at(text: str, i: int) -> bool:
    for word in ("hetjob", "packjob"):
        end = i + len(word)
        if text[i:end].lower() == word and (end == len(text) or text[end] in _C_SPACE):
            return True
    return False


def tokenize_directive(text: str) -> TokenizedLine:
    """Split the text after `#SBATCH` into argv words as sbatch's `get_argument` does.

    Blanks separate words; `'...'` and `"..."` group and are removed (they may start mid-word); a
    backslash takes the next character literally anywhere, even inside single quotes, but an
    unquoted blank still ends the word (`a\\ b` gives `a`, then `b`); an unquoted `#` ends the line,
    even mid-word; an empty word (`""`) ends the line; a word starting with `:` is fatal; an
    unmatched quote is fatal; no expansion.
    """
    words = _plain_words(text)
    return tokenize_directive_stepwise(text) if words is None else TokenizedLine(words)


def _plain_words(text: str) -> list[str] | None:
    """The words of a directive text that sbatch reads without a note, an error or a separator, when
    they are the blank-separated runs: no quote, escape, separator word or word starting with `:`
    before the end of the line or a `#` that starts a word (which ends the line silently, as in
    `--time=10   # ten minutes`). None: tokenize_directive_stepwise decides."""
    if _NEEDS_SLOW_PATH.search(text):
        end = text.find("#")
        if end < 0 or (end and text[end - 1] not in _C_SPACE) or _NEEDS_SLOW_PATH.search(text, 0, end):
            return None
        text = text[:end]  # get_argument reaches this `#` between words: the line ends there
    low = text.lower()
    if "hetjob" in low or "packjob" in low:
        return None
    if ":" in text and _WORD_STARTS_WITH_COLON.search(text):
        return None
    return _C_WORD.findall(text)


def tokenize_directive_stepwise(text: str) -> TokenizedLine:
    """The character-by-character form of get_argument (tokenize_directive's general path)."""
    out = TokenizedLine([])
    n = len(text)
    i = 0
    first = True
    while True:
        while i < n and text[i] in _C_SPACE:
            i += 1
        if i >= n:
            break
        c = text[i]
        if c == ":":
            out.error = (
                R131_LEADING_COLON,
                f"unexpected `:` in [{clip(text)}]: a word starting with `:` is the hetjob separator of "
                "the command line, sbatch refuses it in a script",
            )
            break
        if _het_word_at(text, i):
            if first:
                out.hetjob_separator = True
                het_rest = text[i:].split(None, 1)
                if len(het_rest) > 1 and het_rest[1].strip() and not het_rest[1].lstrip().startswith("#"):
                    out.notes.append(
                        (
                            WARNING,
                            R134_HETJOB_WORD,
                            f"the text after `{het_rest[0]}` on this line is ignored by sbatch: "
                            f"`{clip(het_rest[1].strip())}`",
                        )
                    )
            else:
                out.notes.append(
                    (
                        WARNING,
                        R134_HETJOB_WORD,
                        f"the word `{text[i:].split(None, 1)[0]}` ends this directive line "
                        f"for sbatch; it and everything after it are ignored: `{clip(text[i:].strip())}`",
                    )
                )
            break
        if c == "#":
            break
        first = False
        start = i
        buf: list[str] = []
        quote = ""
        escaped = False
        hash_cut = False
        while i < n:
            ch = text[i]
            if not quote and ch in _C_SPACE:
                if escaped:
                    out.notes.append(
                        (
                            WARNING,
                            R133_ESCAPED_BLANK,
                            f"`\\` before a blank does not join words in a directive: "
                            f"sbatch ends the word `{clip(''.join(buf))}` there; quote the value instead",
                        )
                    )
                break
            if escaped:
                escaped = False
                buf.append(ch)
                i += 1
                continue
            if ch == "\\":
                escaped = True
                i += 1
                continue
            if quote:
                if ch == quote:
                    quote = ""
                else:
                    buf.append(ch)
                i += 1
                continue
            if ch == '"' or ch == "'":
                quote = ch
                i += 1
                continue
            if ch == "#":
                hash_cut = True
                break
            m = _PLAIN_RUN.match(text, i)
            if m:
                buf.append(m.group())
                i = m.end()
            else:  # pragma: no cover - every other char is handled above
                buf.append(ch)
                i += 1
        if quote:
            out.error = (R130_UNMATCHED_QUOTE, f"unmatched `{quote}` in [{clip(text)}]; sbatch refuses the script")
            break
        word = "".join(buf)
        if not word:
            # get_argument returns nothing for an empty word, which ends the line (checked with Slurm 22.05:
            # `--comment=x "" -N 3` does not set -N; `-J "" -N 3` makes -J take the next line's first word)
            rest = text[start:].strip()
            out.notes.append(
                (WARNING, R136_EMPTY_WORD, f"an empty word ends the directive line for sbatch; ignored: `{clip(rest)}`")
            )
            break
        out.words.append(word)
        if hash_cut:
            rest = text[i:]
            out.notes.append(
                (
                    INFO,
                    R132_HASH_ENDS_LINE,
                    f"the unquoted `#` ends the directive after `{clip(word)}`; ignored: `{clip(rest)}`"
                    + (" (quote or escape `#` to keep it)" if word and not rest.startswith("# ") else ""),
                )
            )
            break
    return out


# ---- look-alikes ---------------------------------------------------------------------------------

_LOOKALIKE = re.compile(r"^([ \t]*)(#+)(!?)([ \t]*)([A-Za-z]+)(.*)$")
_OPTION_AFTER = re.compile(r"[ \t]*-")


def _distance(a: str, b: str, limit: int = 2) -> int:
    """Optimal string alignment distance (Damerau-Levenshtein with adjacent transpositions)."""
    if abs(len(a) - len(b)) > limit:
        return limit + 1
    prev2 = None
    prev = list(range(len(b) + 1))
    for i in range(1, len(a) + 1):
        cur = [i] + [0] * len(b)
        for j in range(1, len(b) + 1):
            cost = 0 if a[i - 1] == b[j - 1] else 1
            cur[j] = min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + cost)
            if prev2 is not None and i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                cur[j] = min(cur[j], prev2[j - 2] + 1)
        prev2, prev = prev, cur
    return prev[len(b)]


# word of 4-8 ASCII letters -> its distance to SBATCH (comment lines repeat their words); per process, bounded
_TYPO_DISTANCES: dict[str, int] = {}


def _typo_distance(word: str) -> int:
    got = _TYPO_DISTANCES.get(word)
    if got is None:
        got = _distance(word, "SBATCH")
        keep(_TYPO_DISTANCES, word, got, 4096)
    return got


def classify_lookalike(line: str) -> tuple[str, str] | None:
    """If `line` (a comment line, not a directive) looks like a directive, return (code, explanation)."""
    m = _LOOKALIKE.match(line)
    if m is None:
        return None
    indent, hashes, bang, space, word, rest = m.groups()
    if word[:6] == "SBATCH" and len(word) > 6:  # `##SBATCHhetjob`, `  #SBATCH--x`: the magic word glued to text
        word = "SBATCH"
    upper = word.upper()
    exact = word in ("SBATCH", "SLURM")
    near = upper in ("SBATCH", "SLURM")
    if not exact:
        # case variants and misspellings count only when an option follows (`# sbatch job.sh` is prose)
        if not _OPTION_AFTER.match(rest):
            return None
        if not near and not (4 <= len(upper) <= 8 and _typo_distance(upper) <= 2):
            return None
    shown = f"{hashes}{bang}{space}{word}"
    if not near:
        return R125_TYPO, f"`{shown}` looks like a misspelt `#SBATCH`; sbatch reads it as a comment"
    if indent and hashes == "#" and not bang and not space and exact:
        return R123_INDENTED, (
            f"`{shown}` is indented; sbatch only reads `#{word}` at column 0, so this line is a comment"
        )
    if bang:
        return R126_SHEBANG_LIKE, f"`{shown}` is not `#SBATCH`; sbatch reads it as a comment"
    if len(hashes) > 1:
        return R122_DOUBLE_HASH, (
            f"`{shown}` starts with `{hashes}`; sbatch reads it as a comment "
            "(often a directive switched off on purpose)"
        )
    if space:
        return R121_SPACE_AFTER_HASH, (
            f"`{shown}` has a blank after `#`; sbatch only reads `#SBATCH` with no blank, so this line is a comment"
        )
    if not exact:
        return (
            R124_WRONG_CASE,
            f"`#{word}` is not `#SBATCH`: the magic word is case-sensitive, so this line is a comment",
        )
    return None


# ---- the scan ------------------------------------------------------------------------------------


@dataclass(init=False, repr=False, eq=False)
class Header(Record):
    directives: list[Directive]
    ignored: list[IgnoredLine]
    foreign: list[ForeignDirective]
    body_start_line: int | None
    components: int
    diagnostics: list[Diagnostic]
    sbatch_refuses: bool
    hetjob_separators: list[int]

    def __init__(
        self,
        directives: list[Directive],
        ignored: list[IgnoredLine],
        foreign: list[ForeignDirective],
        body_start_line: int | None,
        components: int,
        diagnostics: list[Diagnostic],
        sbatch_refuses: bool,
        hetjob_separators: list[int],
    ):
        self.directives = directives
        self.ignored = ignored
        self.foreign = foreign
        self.body_start_line = body_start_line
        self.components = components
        self.diagnostics = diagnostics
        self.sbatch_refuses = sbatch_refuses
        self.hetjob_separators = hetjob_separators


def _is_command_line(line: str) -> bool:
    """Whether the first character that is not a C blank exists and is not `#`."""
    rest = line.lstrip(_C_SPACE)
    return rest != "" and rest[0] != "#"


# A comment line that has no `SBATCH`/`SLURM` in any case can only be a look-alike (classify_lookalike)
# when an option follows its first word: `# sbatch job.sh` and `# train the model` are prose. (The
# letters run is greedy, so a shorter run cannot end before the `-`.)
_LOOKALIKE_WITH_OPTION = re.compile(r"[ \t]*#+!?[ \t]*[A-Za-z]+[ \t]*-")

# directive text after the prefix -> its words (tokenize_directive is pure in the text, and a repository's
# scripts repeat their directives); per process, bounded (8192 texts of <= 512 characters)
_TOKENIZED: dict[str, TokenizedLine] = {}
# a whole `#SBATCH` line that sbatch reads without a note, an error or a component separator -> its words,
# the common case, which then costs one look-up; per process, bounded like _TOKENIZED
_PLAIN_LINES: dict[str, tuple[str, ...]] = {}


def read_header(lines: list[str]) -> Header:
    """Scan `lines` (no line breaks) as sbatch scans them."""
    directives: list[Directive] = []
    ignored: list[IgnoredLine] = []
    diags: list[Diagnostic] = []
    refuses = False
    component = 0
    separators: list[int] = []
    body_start: int | None = None
    plain_lines = _PLAIN_LINES

    for number, line in enumerate(lines, 1):
        words = plain_lines.get(line)
        if words is not None:
            directives.append(Directive(number, line, "#SBATCH", words, component))
            continue
        if line.startswith("#SBATCH"):
            prefix = "#SBATCH"
        elif line.startswith("#SLURM"):
            prefix = "#SLURM"
            diags.append(
                Diagnostic(
                    WARNING,
                    R127_SLURM_PREFIX,
                    '`#SLURM` is accepted by sbatch with an error message ("Change '
                    'from #SLURM to #SBATCH in your script")',
                    number,
                    "write `#SBATCH`",
                )
            )
        else:
            if _is_command_line(line):
                body_start = number
                if line.strip().startswith("#"):
                    odd = next(ch for ch in line if ch not in _C_SPACE)
                    diags.append(
                        Diagnostic(
                            WARNING,
                            R137_UNICODE_BLANK,
                            f"line {number} looks like a comment, but it starts "
                            f"with U+{ord(odd):04X}, which sbatch does not treat as a blank: for sbatch it is "
                            "the first command, and no directive after it is read",
                            number,
                            "remove the invisible character",
                        )
                    )
                break
            upper = line.upper()
            if "SBATCH" in upper or "SLURM" in upper or _LOOKALIKE_WITH_OPTION.match(line):
                found = classify_lookalike(line)
                if found is not None:
                    code, why = found
                    ignored.append(IgnoredLine(number, line, code, why))
                    diags.append(
                        Diagnostic(
                            WARNING,
                            code,
                            f"ignored `{line.strip()[:80]}`: {why}",
                            number,
                            "write `#SBATCH` at column 0 if this option is meant",
                        )
                    )
            continue
        rest = line[len(prefix) :]
        tok = _TOKENIZED.get(rest)  # read only here: a shared TokenizedLine is never changed
        if tok is None and prefix == "#SBATCH":
            plain = _plain_words(rest)
            if plain is not None:  # a plain line seen for the first time
                words = tuple(plain)
                if len(line) <= 512:
                    keep(plain_lines, line, words, 8192)
                directives.append(Directive(number, line, prefix, words, component))
                continue
        if tok is None:
            tok = tokenize_directive(rest)
            if len(rest) <= 512:
                keep(_TOKENIZED, rest, tok, 8192)
        if prefix == "#SBATCH" and not tok.notes and tok.error is None and not tok.hetjob_separator:
            words = tuple(tok.words)
            if len(line) <= 512:
                keep(plain_lines, line, words, 8192)
            directives.append(Directive(number, line, prefix, words, component))
            continue
        for severity, code, message in tok.notes:
            diags.append(Diagnostic(severity, code, message, number))
        if tok.error is not None:
            code, message = tok.error
            diags.append(
                Diagnostic(
                    ERROR,
                    code,
                    message,
                    number,
                    "close the quote or escape it with `\\`" if code == R130_UNMATCHED_QUOTE else None,
                )
            )
            refuses = True
        if tok.hetjob_separator:
            component += 1
            separators.append(number)
            diags.append(
                Diagnostic(
                    INFO,
                    R135_HETJOB_SEPARATOR,
                    f"`{clip(line.strip())}` starts heterogeneous job component {component}",
                    number,
                )
            )
            continue
        directives.append(Directive(number, line, prefix, tuple(tok.words), component))

    return Header(directives, ignored, [], body_start, component + 1, diags, refuses, separators)


def scan_after_header(
    lines: list[str], start: int, heredoc_lines=frozenset()
) -> tuple[list[IgnoredLine], list[Diagnostic]]:
    """Report directive look-alikes at or after line `start` (the first command), which sbatch ignores."""
    ignored: list[IgnoredLine] = []
    diags: list[Diagnostic] = []
    for number, line in enumerate(lines[start:], start + 1):
        if "#" not in line[:16] or not line.lstrip(_C_SPACE).startswith("#"):
            continue
        if line.startswith(("#SBATCH", "#SLURM")):
            found = (R120_AFTER_FIRST_COMMAND, "")
        else:
            upper = line.upper()
            if "SBATCH" not in upper and "SLURM" not in upper and not _LOOKALIKE_WITH_OPTION.match(line):
                continue  # prose (see _LOOKALIKE_WITH_OPTION)
            lookalike = classify_lookalike(line)
            if lookalike is None:
                continue
            found = lookalike
        if number in heredoc_lines:
            why = (
                f"inside a here-document (text the script writes or feeds to a command); sbatch stopped reading "
                f"directives at the first command, line {start}"
            )
            ignored.append(IgnoredLine(number, line, R129_IN_HEREDOC, why))
            diags.append(Diagnostic(INFO, R129_IN_HEREDOC, f"`{line.strip()[:80]}` is {why}", number))
            continue
        why = (
            f"comes after the first command (line {start}: `{lines[start - 1].strip()[:60]}`); sbatch stops reading "
            "directives there"
        )
        if found[0] != R120_AFTER_FIRST_COMMAND:
            why += f"; also {found[1]}"
        ignored.append(IgnoredLine(number, line, R120_AFTER_FIRST_COMMAND, why))
        diags.append(
            Diagnostic(
                WARNING,
                R120_AFTER_FIRST_COMMAND,
                f"ignored `{line.strip()[:80]}`: {why}",
                number,
                "move all #SBATCH lines above the first command",
            )
        )
    return ignored, diags


def scan_foreign(lines: list[str]) -> tuple[list[ForeignDirective], list[Diagnostic]]:
    """`#BSUB`/`#PBS` lines as sbatch's wrapper scan (xlate.c) finds them.

    The scan reads the whole file (it does not stop at the first command) but gives up after 100
    lines that do not start with `#`. `#BSUB` is tried first; only one family is applied. The lines
    of the applied family are reported by the resolve stage, which translates them (O220); here only
    the lines sbatch does not apply get an R128 note.
    """
    found: dict[str, list[ForeignDirective]] = {"BSUB": [], "PBS": []}
    missed: list[tuple[int, str, str]] = []  # (line, text, family) after sbatch stopped scanning
    for family in ("BSUB", "PBS"):
        magic = "#" + family
        non_comments = 0
        stopped_at = None
        for number, line in enumerate(lines, 1):
            if not line.startswith(magic):
                if not line.startswith("#"):
                    non_comments += 1
                    if non_comments > 100:
                        stopped_at = number
                        break
                continue
            found[family].append(ForeignDirective(number, line, family))
        if stopped_at is not None:
            missed.extend(
                (number, line, family)
                for number, line in enumerate(lines[stopped_at:], stopped_at + 1)
                if line.startswith(magic)
            )
    used = "BSUB" if found["BSUB"] else "PBS"
    foreign = sorted(found["BSUB"] + found["PBS"], key=lambda f: f.line)
    diags = []
    for f in foreign:
        if f.family != used:
            diags.append(
                Diagnostic(
                    INFO,
                    R128_FOREIGN,
                    f"`{clip(f.text.strip())}`: sbatch ignores #{f.family} lines when #BSUB lines are present",
                    f.line,
                )
            )
    for number, line, family in missed:
        diags.append(
            Diagnostic(
                INFO,
                R128_FOREIGN,
                f"`{clip(line.strip())}`: sbatch stops looking for #{family} lines after "
                "100 lines that do not start with `#`, so it does not apply this one",
                number,
            )
        )
    return foreign, diags
