"""Shell words: raw text (as written) -> ast.Word(raw, value, literal).

`value` is the word after quote removal with escapes resolved as bash resolves them: outside quotes
`\\c` gives `c`; inside double quotes a backslash only escapes `$`, backquote, `"`, `\\` and a
newline; inside single quotes nothing is special; `$'...'` resolves the common C escapes.
Expansions (`$VAR`, `${...}`, `$(...)`, backquotes, `$((...))`) are kept literally in `value`.
`literal` is False when the shell would expand something: an unquoted or double-quoted `$`
expansion or backquote, an unquoted glob character, or a leading unquoted `~`.
"""
from __future__ import annotations

import re
from typing import Optional, Tuple

from translator.read.ast import Assignment, Word

_SIMPLE = re.compile(r"[^'\"\\$`*?\[~{]*\Z")
_DQ_ESCAPABLE = "$`\"\\\n"
_DQ_RUN = re.compile(r'[^"\\$`]+')               # inside double quotes: up to the next quote, escape or expansion
_PLAIN_RUN = re.compile(r"[^'\"\\$`*?\[{]+")      # unquoted: up to a quote, escape, expansion, glob or brace
_ANSI = {"n": "\n", "t": "\t", "r": "\r", "a": "\a", "b": "\b", "e": "\x1b", "E": "\x1b", "f": "\f", "v": "\v",
         "\\": "\\", "'": "'", '"': '"', "?": "?"}
_ASSIGN = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)(\[[^\]]*\])?(\+?=)")


def _skip_balanced(raw: str, i: int, open_: str, close: str) -> int:
    depth = 0
    n = len(raw)
    while i < n:
        c = raw[i]
        if c == "\\":
            i += 2
            continue
        if c == "'" and open_ == "(":
            k = raw.find("'", i + 1)
            i = n if k < 0 else k + 1
            continue
        if c == open_:
            depth += 1
        elif c == close:
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    return n


def _expansion_end(raw: str, i: int) -> int:
    """i at `$`: end offset of the expansion text (kept verbatim in the value)."""
    nxt = raw[i + 1:i + 2]
    if nxt == "(":
        return _skip_balanced(raw, i + 1, "(", ")")
    if nxt == "{":
        return _skip_balanced(raw, i + 1, "{", "}")
    m = re.compile(r"[A-Za-z_][A-Za-z0-9_]*|[0-9@*#?$!-]").match(raw, i + 1)
    return m.end() if m else i + 1


_CACHE: dict = {}
_CACHE_LIMIT = 65536


def make_word(raw: str) -> Word:
    """Word for `raw`. Words are immutable, so equal raw texts share one Word (bounded cache)."""
    w = _CACHE.get(raw)
    if w is not None:
        return w
    w = _make_word(raw)
    if len(raw) > 256:
        return w
    if len(_CACHE) >= _CACHE_LIMIT:
        _CACHE.clear()
    _CACHE[raw] = w
    return w


def _expansion(raw: str, i: int) -> Tuple[int, bool]:
    """At a `$` or backtick: (end of the expansion, whether the shell expands anything there).
    The text is kept verbatim in Word.value either way; a lone `$` is not an expansion."""
    if raw[i] == "`":
        k = raw.find("`", i + 1)
        return (len(raw) if k < 0 else k + 1), True
    end = _expansion_end(raw, i)
    return end, end > i + 1


def _make_word(raw: str) -> Word:
    if _SIMPLE.match(raw):
        return Word(raw, raw, True)
    out = []
    literal = True
    i = 0
    n = len(raw)
    if raw.startswith("~"):
        literal = False
    while i < n:
        c = raw[i]
        if c == "\\":
            if i + 1 < n:
                if raw[i + 1] != "\n":
                    out.append(raw[i + 1])
                i += 2
            else:
                i += 1
            continue
        if c == "'":
            k = raw.find("'", i + 1)
            if k < 0:
                k = n
            out.append(raw[i + 1:k])
            i = k + 1
            continue
        if c == "$" and raw[i + 1:i + 2] == "'":
            i += 2
            while i < n and raw[i] != "'":
                if raw[i] == "\\" and i + 1 < n:
                    out.append(_ANSI.get(raw[i + 1], "\\" + raw[i + 1]))
                    i += 2
                else:
                    out.append(raw[i])
                    i += 1
            i += 1
            continue
        if c == '"':
            i += 1
            while i < n and raw[i] != '"':
                m = _DQ_RUN.match(raw, i)
                if m is not None:                  # a run of characters with no meaning inside "…"
                    out.append(m.group())
                    i = m.end()
                    continue
                d = raw[i]
                if d == "\\" and i + 1 < n:
                    if raw[i + 1] in _DQ_ESCAPABLE:
                        if raw[i + 1] != "\n":
                            out.append(raw[i + 1])
                    else:
                        out.append("\\" + raw[i + 1])
                    i += 2
                    continue
                if d == "$" or d == "`":
                    end, expands = _expansion(raw, i)
                    literal = literal and not expands
                    out.append(raw[i:end])
                    i = end
                    continue
                out.append(d)
                i += 1
            i += 1
            continue
        if c == "$" or c == "`":
            end, expands = _expansion(raw, i)
            literal = literal and not expands
            out.append(raw[i:end])
            i = end
            continue
        m = _PLAIN_RUN.match(raw, i)
        if m is not None:                          # a run of ordinary characters
            out.append(m.group())
            i = m.end()
            continue
        if c in "*?[":
            literal = False
        elif c == "{" and "," in raw[i:] and "}" in raw[i:]:
            literal = False           # brace expansion {a,b}
        out.append(c)
        i += 1
    return Word(raw, "".join(out), literal)


def split_assignment(raw: str) -> Optional[Tuple[str, str]]:
    """`NAME=value` (also `NAME+=`, `NAME[i]=`) -> (NAME, raw value); None when not an assignment."""
    m = _ASSIGN.match(raw)
    if m is None:
        return None
    return m.group(1), raw[m.end():]


def make_assignment(raw: str, line: int, exported: bool) -> Optional[Assignment]:
    parts = split_assignment(raw)
    if parts is None:
        return None
    name, value = parts
    return Assignment(line, name, make_word(value), exported)
