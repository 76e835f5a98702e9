"""glibc `getopt_long` as sbatch calls it, over the words of the `#SBATCH` lines.

sbatch builds its option string with a leading `+`, so parsing stops at the first word that is
not an option; sbatch then refuses the script with "Invalid directive found in batch script: X".
Long options may be abbreviated to any unique prefix of the whole table (an exact name always
wins; prefixes naming entries that differ are ambiguous; aliases with the same meaning are not).
Each word keeps the line it came from, so an option and its value may sit on different lines and
every error names the line of the offending word.
"""

from __future__ import annotations

from dataclasses import dataclass
from collections.abc import Sequence

from translator.records import FrozenRecord, _set
from translator.slurm.options import LONG_OPTIONS, NONE, OPTIONAL, REQUIRED, SHORT_OPTIONS, SPANK_OPTIONS, OptionSpec


@dataclass(init=False, repr=False, eq=False)
class ParsedOption(FrozenRecord):
    """One option occurrence as getopt returned it."""

    spec: OptionSpec | None  # None for a recognised SPANK plugin option
    value: str | None  # None when no argument was given
    line: int | None  # line of the option word
    written: str  # the option as written, value included ("-N2", "--nodes 2")
    spank: tuple[str, str] | None = None  # (plugin, option name) for plugin options

    def __init__(
        self,
        spec: OptionSpec | None,
        value: str | None,
        line: int | None,
        written: str,
        spank: tuple[str, str] | None = None,
    ):
        _set(self, "spec", spec)
        _set(self, "value", value)
        _set(self, "line", line)
        _set(self, "written", written)
        _set(self, "spank", spank)

    @property
    def key(self) -> str:
        if self.spec:
            return self.spec.key
        assert self.spank is not None, self.written  # no spec: a SPANK plugin option
        return self.spank[1]


@dataclass(init=False, repr=False, eq=False)
class GetoptError(FrozenRecord):
    kind: str  # "unknown" | "ambiguous" | "missing-argument" | "unexpected-argument"
    # | "stray-word" | "spank"
    message: str  # as sbatch prints it (without the program name)
    line: int | None
    word: str
    spank: tuple[str, str] | None = None


@dataclass(init=False, repr=False, eq=False)
class GetoptResult(FrozenRecord):
    options: tuple[ParsedOption, ...]
    errors: tuple[GetoptError, ...]
    rest: tuple[tuple[str, int | None], ...]  # words left after parsing stopped

    def __init__(
        self,
        options: tuple[ParsedOption, ...],
        errors: tuple[GetoptError, ...],
        rest: tuple[tuple[str, int | None], ...],
    ):
        _set(self, "options", options)
        _set(self, "errors", errors)
        _set(self, "rest", rest)


def match_long(name: str) -> tuple[OptionSpec | None, list[OptionSpec]]:
    """(entry, candidates): exact match, else the unique prefix match; candidates when ambiguous."""
    exact = LONG_OPTIONS.get(name)
    if exact is not None:
        return exact, []
    cands = [o for n, o in LONG_OPTIONS.items() if n.startswith(name)]
    if not cands:
        return None, []
    first = cands[0]
    # glibc: several prefix matches are ambiguous unless they are the same option (same
    # has_arg and val), e.g. an alias and its canonical name.
    if all(c.key == first.key and c.arg == first.arg for c in cands):
        return first, []
    return None, cands


def _match_spank(name: str) -> str | None:
    if name in SPANK_OPTIONS:
        return name
    cands = [n for n in SPANK_OPTIONS if n.startswith(name)]
    return cands[0] if len(cands) == 1 else None


def getopt_long(words: Sequence[tuple[str, int | None]]) -> GetoptResult:
    """Parse (word, line) pairs the way sbatch parses its directive argv."""
    opts: list[ParsedOption] = []
    errs: list[GetoptError] = []
    i = 0
    n = len(words)
    while i < n:
        word, line = words[i]
        if word == "--":
            i += 1
            break
        if not word.startswith("-") or word == "-":
            break
        if word.startswith("--"):
            body = word[2:]
            name, eq, inline = body.partition("=")
            spec_, cands = match_long(name)
            if spec_ is None:
                if cands:
                    poss = " ".join(f"'--{c.name}'" for c in cands)
                    errs.append(
                        GetoptError("ambiguous", f"option '--{name}' is ambiguous; possibilities: {poss}", line, word)
                    )
                    i += 1
                    continue
                sp = _match_spank(name)
                if sp is not None:
                    plugin, kind = SPANK_OPTIONS[sp]
                    value = inline if eq else None
                    written = word
                    if kind == REQUIRED and not eq and i + 1 < n:
                        value = words[i + 1][0]
                        written = f"{word} {value}"
                        i += 1
                    errs.append(GetoptError("spank", f"unrecognized option '{word}'", line, word, (plugin, sp)))
                    opts.append(ParsedOption(None, value, line, written, (plugin, sp)))
                    i += 1
                    continue
                errs.append(GetoptError("unknown", f"unrecognized option '{word}'", line, word))
                i += 1
                continue
            if spec_.arg == NONE:
                if eq:
                    errs.append(
                        GetoptError(
                            "unexpected-argument", f"option '--{spec_.name}' doesn't allow an argument", line, word
                        )
                    )
                else:
                    opts.append(ParsedOption(spec_, None, line, word))
                i += 1
                continue
            if spec_.arg == OPTIONAL:
                opts.append(ParsedOption(spec_, inline if eq else None, line, word))
                i += 1
                continue
            # required argument
            if eq:
                opts.append(ParsedOption(spec_, inline, line, word))
                i += 1
                continue
            if i + 1 >= n:
                errs.append(
                    GetoptError("missing-argument", f"option '--{spec_.name}' requires an argument", line, word)
                )
                i += 1
                continue
            value, vline = words[i + 1]
            written = f"{word} {value}" if vline == line else f"{word} (line {line}) {value} (line {vline})"
            opts.append(ParsedOption(spec_, value, line, written))
            i += 2
            continue
        # short option cluster: -abc, -N2, -N 2
        j = 1
        consumed_next = False
        while j < len(word):
            ch = word[j]
            spec_ = SHORT_OPTIONS.get(ch)
            if spec_ is None:
                errs.append(GetoptError("unknown", f"invalid option -- '{ch}'", line, word))
                j += 1
                continue
            if spec_.arg == NONE:
                opts.append(ParsedOption(spec_, None, line, f"-{ch}"))
                j += 1
                continue
            rest = word[j + 1 :]
            if rest:
                opts.append(ParsedOption(spec_, rest, line, f"-{ch}{rest}"))
                break
            if spec_.arg == OPTIONAL:
                opts.append(ParsedOption(spec_, None, line, f"-{ch}"))
                break
            if i + 1 >= n:
                errs.append(GetoptError("missing-argument", f"option requires an argument -- '{ch}'", line, word))
                break
            value, vline = words[i + 1]
            written = f"-{ch} {value}" if vline == line else f"-{ch} (line {line}) {value} (line {vline})"
            opts.append(ParsedOption(spec_, value, line, written))
            consumed_next = True
            break
        i += 2 if consumed_next else 1
    leftover = tuple(words[i:])
    if leftover:
        word, line = leftover[0]
        errs.append(GetoptError("stray-word", f"Invalid directive found in batch script: {word}", line, word))
    return GetoptResult(tuple(opts), tuple(errs), leftover)
