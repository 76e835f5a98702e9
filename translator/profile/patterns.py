"""Name patterns used by profile rules: exact names, shell globs, and `re:` regular expressions.

A key such as `gpu` matches the name `gpu` exactly; `gpu-*` or `a100_[12]g*` is a shell glob
(fnmatch, case-sensitive); `re:^h100(-.*)?$` is a Python regular expression that must match the whole
name (`re.fullmatch`).
"""
from __future__ import annotations

import fnmatch
import re
from dataclasses import dataclass
from typing import Optional, Pattern as RePattern

REGEX_PREFIX = "re:"
_GLOB_CHARS = set("*?[")


class PatternError(ValueError):
    """The pattern text does not compile."""


@dataclass(frozen=True)
class NamePattern:
    text: str                       # as written in the profile
    kind: str                       # "exact" | "glob" | "regex"
    regex: Optional[RePattern] = None

    def matches(self, name: Optional[str]) -> bool:
        if name is None:
            return False
        if self.kind == "exact":
            return name == self.text
        return self.regex.fullmatch(name) is not None

    def __str__(self) -> str:
        return self.text


def compile_pattern(text: str) -> NamePattern:
    """Compile one profile pattern; raises PatternError with a readable reason."""
    if not isinstance(text, str) or text == "":
        raise PatternError("a pattern must be a non-empty string")
    if text.startswith(REGEX_PREFIX):
        body = text[len(REGEX_PREFIX):]
        if body == "":
            raise PatternError("`re:` is followed by no regular expression")
        try:
            return NamePattern(text, "regex", re.compile(body))
        except re.error as exc:
            raise PatternError(f"regular expression does not compile: {exc}") from None
    if any(c in _GLOB_CHARS for c in text):
        if text.count("[") != text.count("]"):
            raise PatternError("glob has an unbalanced `[`/`]`")
        try:
            return NamePattern(text, "glob", re.compile(fnmatch.translate(text)))
        except re.error as exc:  # pragma: no cover - fnmatch.translate escapes what it cannot use
            raise PatternError(f"glob does not compile: {exc}") from None
    return NamePattern(text, "exact")
