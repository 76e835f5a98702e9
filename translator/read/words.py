"""Shell words: raw text (as written) -> ast.Word(raw, value, literal).

`value` is the word after quote removal with escapes resolved as bash resolves them: outside quotes
`\\c` gives `c`; inside double quotes a backslash only escapes `$`, backquote, `"`, `\\` and a
newline; inside single quotes nothing is special; `$'...'` is decoded exactly as bash decodes it
(`ansi_c_string`), and `$"..."` is read as `"..."` (no message catalog in a container).
Expansions (`$VAR`, `${...}`, `$(...)`, backquotes, `$((...))`) are kept literally in `value`.
`literal` is False when the shell would expand something: an unquoted or double-quoted `$`
expansion or backquote, an unquoted glob character, or a leading unquoted `~`.
"""

from __future__ import annotations

import re

from translator.read.ast import Assignment, Word
from translator.tables import keep

_SIMPLE = re.compile(r"[^'\"\\$`*?\[~{]*\Z")
_DQ_ESCAPABLE = '$`"\\\n'
_TILDE_AFTER_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=(?:[^'\"\\\\:]*:)*~")
_DQ_RUN = re.compile(r'[^"\\$`]+')  # inside double quotes: up to the next quote, escape or expansion
_PLAIN_RUN = re.compile(r"[^'\"\\$`*?\[{]+")  # unquoted: up to a quote, escape, expansion, glob or brace
_ASSIGN = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)(\[[^\]]*\])?(\+?=)")
_PARAMETER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*|[0-9@*#?$!-]").match  # after `$`: a name or a special parameter


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
    nxt = raw[i + 1 : i + 2]
    if nxt == "(":
        return _skip_balanced(raw, i + 1, "(", ")")
    if nxt == "{":
        return _skip_balanced(raw, i + 1, "{", "}")
    m = _PARAMETER(raw, i + 1)
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
    keep(_CACHE, raw, w, _CACHE_LIMIT)
    return w


def _expansion(raw: str, i: int) -> tuple[int, bool]:
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
    if raw.startswith("~") or _TILDE_AFTER_NAME.match(raw):
        literal = False  # tilde expansion (also after `name=` and `:` in assignment-like words)
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
            out.append(raw[i + 1 : k])
            i = k + 1
            continue
        if c == "$" and raw[i + 1 : i + 2] == "'":
            k = i + 2
            while k < n and raw[k] != "'":
                k += 2 if raw[k] == "\\" else 1
            decoded = ansi_c_string(raw[i + 2 : min(k, n)])
            if decoded is None:  # the bytes depend on the locale or are not UTF-8: bash decodes them
                literal = False
                out.append(raw[i : k + 1])
            else:
                out.append(decoded)
            i = k + 1
            continue
        if c == "$" and raw[i + 1 : i + 2] == '"':
            i += 1  # $"...": translated by the locale's catalog; none in a container: "..."
            continue
        if c == '"':
            i += 1
            while i < n and raw[i] != '"':
                m = _DQ_RUN.match(raw, i)
                if m is not None:  # a run of characters with no meaning inside "…"
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
        if m is not None:  # a run of ordinary characters
            out.append(m.group())
            i = m.end()
            continue
        if c in "*?[":
            literal = False
        elif c == "{" and "}" in raw[i:] and ("," in raw[i:] or ".." in raw[i:]):
            literal = False  # brace expansion {a,b}, {1..4}
        out.append(c)
        i += 1
    return Word(raw, "".join(out), literal)


# ---- ANSI-C quoting: $'...' (bash manual, "ANSI-C Quoting"; checked byte by byte against bash 5.2) ------

_ANSI_SIMPLE = {
    ord(k): ord(v)
    for k, v in {
        "a": "\a",
        "b": "\b",
        "e": "\x1b",
        "E": "\x1b",
        "f": "\f",
        "n": "\n",
        "r": "\r",
        "t": "\t",
        "v": "\v",
        "\\": "\\",
        "'": "'",
        '"': '"',
        "?": "?",
    }.items()
}
_HEX = b"0123456789abcdefABCDEF"


def _hex_run(src: bytes, i: int, limit: int) -> tuple[int, int, int]:
    """(value, digits read, offset after them) of at most `limit` hex digits at src[i:]."""
    value = digits = 0
    while digits < limit and i < len(src) and src[i] in _HEX:
        value = value * 16 + int(chr(src[i]), 16)
        digits += 1
        i += 1
    return value, digits, i


def _bash_utf8(value: int) -> bytes:
    """bash's own UTF-8 writer (u32toutf8): up to six bytes, nothing above 0x7FFFFFFF."""
    if value < 0x80:
        return bytes((value,))
    for limit, count, lead in (
        (0x800, 2, 0xC0),
        (0x10000, 3, 0xE0),
        (0x200000, 4, 0xF0),
        (0x4000000, 5, 0xF8),
        (0x80000000, 6, 0xFC),
    ):
        if value < limit:
            tail = [0x80 | ((value >> (6 * k)) & 0x3F) for k in range(count - 1)]
            return bytes([lead | (value >> (6 * (count - 1)))] + tail[::-1])
    return b""


def ansi_c_string(body: str) -> str | None:
    r"""The text between `$'` and `'` after bash's ANSI-C decoding, or None when bash's result depends on the
    locale (`\u`/`\U` above U+007F) or is not valid UTF-8 (e.g. `\351` alone).

    \a \b \e \E \f \n \r \t \v \\ \' \" \? ; \nnn (1-3 octal digits, a byte); \xHH (1-2 hex digits) and
    \x{H...} (a byte); \uHHHH / \UHHHHHHHH (1-4 / 1-8 hex digits, a character); \cX (control-X: upper-cased,
    & 0x1F; `\c?` is DEL). Any other escape keeps its backslash. A NUL byte ends the string (C string).
    """
    src = body.encode("utf-8", "surrogateescape")
    if b"\\" not in src:
        return body
    out = bytearray()
    i, n = 0, len(src)
    locale_dependent = False
    while i < n:
        c = src[i]
        if c != 0x5C or i + 1 >= n:
            out.append(c)
            i += 1
            continue
        e = src[i + 1]
        i += 2
        if e in _ANSI_SIMPLE:
            out.append(_ANSI_SIMPLE[e])
        elif 0x30 <= e <= 0x37:  # \nnn
            value, k = e - 0x30, 0
            while k < 2 and i < n and 0x30 <= src[i] <= 0x37:
                value = value * 8 + src[i] - 0x30
                i += 1
                k += 1
            out.append(value & 0xFF)
        elif e == 0x78:  # \xHH, \x{H...}
            if i < n and src[i] == 0x7B:
                value, _k, i = _hex_run(src, i + 1, n)
                if i < n and src[i] == 0x7D:
                    i += 1
                out.append(value & 0xFF)
            else:
                value, k, i = _hex_run(src, i, 2)
                out.extend(bytes((value,)) if k else b"\\x")
        elif e in (0x75, 0x55):  # \uHHHH, \UHHHHHHHH
            value, k, i = _hex_run(src, i, 4 if e == 0x75 else 8)
            if not k:
                out.extend(bytes((0x5C, e)))
            else:
                locale_dependent = locale_dependent or 0x80 <= value <= 0x7FFFFFFF
                out.extend(_bash_utf8(value))
        elif e == 0x63:  # \cX
            if i >= n:
                out.extend(b"\\c")
                continue
            x = src[i]
            if x == 0x5C and i + 1 < n and src[i + 1] == 0x5C:
                i += 1
            i += 1
            out.append(0x7F if x == 0x3F else (x - 32 if 0x61 <= x <= 0x7A else x) & 0x1F)
        else:
            out.extend(bytes((0x5C, e)))
    nul = out.find(0)
    if nul >= 0:
        del out[nul:]
    if locale_dependent:
        return None
    try:
        return out.decode("utf-8")
    except UnicodeDecodeError:
        return None


def split_assignment(raw: str) -> tuple[str, str] | None:
    """`NAME=value` (also `NAME+=`, `NAME[i]=`) -> (NAME, raw value); None when not an assignment."""
    m = _ASSIGN.match(raw)
    if m is None:
        return None
    return m.group(1), raw[m.end() :]


# raw word -> (NAME, Word of the value), or None when it is not an assignment; per process, bounded
_ASSIGNMENTS: dict[str, tuple[str, Word] | None] = {}
_UNSEEN = object()


def assignment_parts(raw: str) -> tuple[str, Word] | None:
    """`NAME=value` (also `NAME+=`, `NAME[i]=`) -> (NAME, Word of the value); None when not an assignment."""
    parts = _ASSIGNMENTS.get(raw, _UNSEEN)
    if parts is not _UNSEEN:
        return parts  # type: ignore[return-value]
    m = _ASSIGN.match(raw)
    parts = None if m is None else (m.group(1), make_word(raw[m.end() :]))
    if len(raw) <= 256:
        keep(_ASSIGNMENTS, raw, parts, _CACHE_LIMIT)
    return parts


def make_assignment(raw: str, line: int, exported: bool) -> Assignment | None:
    parts = assignment_parts(raw)
    if parts is None:
        return None
    return Assignment(line, parts[0], parts[1], exported)
