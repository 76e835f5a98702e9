"""Name patterns used by profile rules: exact names, shell globs, and `re:` regular expressions.

A key such as `gpu` matches the name `gpu` exactly; `gpu-*` or `a100_[12]g*` is a shell glob
(fnmatch, case-sensitive); `re:^h100(-.*)?$` is a Python regular expression that must match the whole
name (`re.fullmatch`).
"""

from __future__ import annotations

import fnmatch
import re
import sys
from dataclasses import dataclass
from re import Pattern as RePattern

REGEX_PREFIX = "re:"
_GLOB_CHARS = set("*?[")


class PatternError(ValueError):
    """The pattern text does not compile."""


@dataclass(frozen=True)
class NamePattern:
    text: str  # as written in the profile
    kind: str  # "exact" | "glob" | "regex"
    regex: RePattern | None = None

    def matches(self, name: str | None) -> bool:
        if name is None:
            return False
        if self.kind == "exact":
            return name == self.text
        assert self.regex is not None, self  # glob and regex patterns are built compiled
        return self.regex.fullmatch(name) is not None

    def __str__(self) -> str:
        return self.text


def compile_pattern(text: str) -> NamePattern:
    """Compile one profile pattern; raises PatternError with a readable reason."""
    if not isinstance(text, str) or text == "":
        raise PatternError("a pattern must be a non-empty string")
    if text.startswith(REGEX_PREFIX):
        body = text[len(REGEX_PREFIX) :]
        if body == "":
            raise PatternError("`re:` is followed by no regular expression")
        try:
            compiled = re.compile(body)
        except re.error as exc:
            raise PatternError(f"regular expression does not compile: {exc}") from None
        nested = _nested_repeat(body)
        if nested:
            raise PatternError(
                f"regular expression repeats a repeated part ({nested}): it can take exponential "
                "time on some names (catastrophic backtracking); write it without nesting, "
                "e.g. `(ab)+` or `a+`"
            )
        return NamePattern(text, "regex", compiled)
    if any(c in _GLOB_CHARS for c in text):
        if text.count("[") != text.count("]"):
            raise PatternError("glob has an unbalanced `[`/`]`")
        try:
            return NamePattern(text, "glob", re.compile(fnmatch.translate(text)))
        except re.error as exc:  # pragma: no cover - fnmatch.translate escapes what it cannot use
            raise PatternError(f"glob does not compile: {exc}") from None
    return NamePattern(text, "exact")


def _nested_repeat(body: str) -> str:
    """Text describing a repeat inside a repeat (`(a+)+`, `(a*)*`, `(\\w+-?)*`), "" when there is none.

    Such nesting lets the regex engine try exponentially many ways to split a non-matching name.
    Python's `re` has no time limit, so these patterns are refused up front (F553)."""
    if sys.version_info >= (3, 11):
        from re import _parser as sre_parse
    else:  # pragma: no cover
        import sre_parse
    repeats = {sre_parse.MAX_REPEAT, sre_parse.MIN_REPEAT}
    poss = getattr(sre_parse, "POSSESSIVE_REPEAT", None)
    if poss is not None:
        repeats.add(poss)
    atomic = getattr(sre_parse, "ATOMIC_GROUP", None)  # Python 3.11+

    def walk(items, inside: bool) -> str:
        for op, av in items:
            if op in repeats:
                lo, hi, sub = av
                many = hi is sre_parse.MAXREPEAT or hi > 1
                if many and inside:
                    return "a quantifier inside a repeated group"
                found = walk(sub, inside or many)
                if found:
                    return found
            elif op is sre_parse.SUBPATTERN:
                found = walk(av[-1], inside)
                if found:
                    return found
            elif op is sre_parse.BRANCH:
                for alt in av[1]:
                    found = walk(alt, inside)
                    if found:
                        return found
            elif op in (sre_parse.ASSERT, sre_parse.ASSERT_NOT):
                found = walk(av[1], inside)
                if found:
                    return found
            elif atomic is not None and op is atomic:
                continue  # atomic groups do not backtrack
        return ""

    try:
        return walk(sre_parse.parse(body), False)
    except Exception:  # the compile above succeeded; a parser difference must not block the profile
        return ""
