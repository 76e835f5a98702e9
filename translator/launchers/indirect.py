"""Launch commands kept in variables: `CMD="$LAUNCHER $SCRIPT $ARGS"; srun $CMD`, `srun bash -c "$LAUNCHER …"`.

Hugging Face's and many site templates build the launch line in variables. When a word of the launch
line is exactly an unquoted `$NAME`/`${NAME}` (the shell splits its value into words), or the string
of `bash -c "…"`, and NAME has one top-level assignment before the launch line, the assignment's text
is substituted and split into words again, recursively. Substitutions inside the values (`$((…))`,
`$head`) stay shell words for the launcher modules to resolve or drop. Anything else is left alone.
"""

from __future__ import annotations

import re

from translator.launchers.common import LaunchContext, Tok, ifs_split

_REF = re.compile(r"^\$(?:\{([A-Za-z_][A-Za-z0-9_]*)\}|([A-Za-z_][A-Za-z0-9_]*))$")
MAX_DEPTH = 8


def split_shell_words(text: str) -> list[Tok] | None:
    """Split shell text into words (quotes, `$(…)`, `$((…))`, `${…}`, backslashes); None for shell logic."""
    text = text.replace("\\\n", " ")  # line continuations are blanks
    words: list[Tok] = []
    i, n = 0, len(text)
    while i < n:
        while i < n and text[i] in " \t\n":
            if text[i] == "\n":
                return None
            i += 1
        if i >= n:
            break
        start = i
        value = []
        literal = True
        while i < n and text[i] not in " \t\n":
            ch = text[i]
            if ch in ";&|<>()`":
                return None
            if ch == "\\" and i + 1 < n:
                if text[i + 1] == "\n":
                    i += 2
                    continue
                value.append(text[i + 1])
                i += 2
            elif ch == "'":
                end = text.find("'", i + 1)
                if end < 0:
                    return None
                value.append(text[i + 1 : end])
                i = end + 1
            elif ch == '"':
                j = i + 1
                while j < n and text[j] != '"':
                    if text[j] == "\\" and j + 1 < n:
                        j += 2
                        continue
                    if text[j] in "$`":
                        literal = False
                    j += 1
                if j >= n:
                    return None
                value.append(text[i + 1 : j].replace('\\"', '"').replace("\\\\", "\\"))
                i = j + 1
            elif ch == "$" and i + 1 < n and text[i + 1] in "({":
                close = "}" if text[i + 1] == "{" else ")"
                opener = text[i + 1]
                depth, j = 0, i + 1
                while j < n:
                    if text[j] == opener:
                        depth += 1
                    elif text[j] == close:
                        depth -= 1
                        if depth == 0:
                            break
                    j += 1
                if j >= n:
                    return None
                value.append(text[i : j + 1])
                literal = False
                i = j + 1
            else:
                if ch == "$" or ch in "*?[" or (ch == "~" and i == start):
                    literal = False
                value.append(ch)
                i += 1
        raw = text[start:i]
        words.append(Tok("".join(value), raw, literal))
    return words


def _assignment(ctx: LaunchContext, name: str):
    if name in ctx.block_assigned:
        return None
    return ctx.last_assignment(name)


def expand(ctx: LaunchContext, toks: list[Tok], depth: int = 0) -> list[Tok]:
    """Replace unquoted `$NAME` words by the words of NAME's assigned text (recursively)."""
    if depth > MAX_DEPTH:
        return toks
    out: list[Tok] = []
    changed = False
    for t in toks:
        m = None if t.literal or t.raw != t.value else _REF.match(t.raw)
        a = _assignment(ctx, m.group(1) or m.group(2)) if m else None
        if a is not None and not a.value.literal:
            text = a.value.raw
            if len(text) >= 2 and text[0] == '"' and text[-1] == '"':
                text = text[1:-1]
            parts = split_shell_words(text)
            if parts is not None:
                out.extend(parts)
                changed = True
                continue
        elif (
            a is not None
            and a.value.literal
            and len(ifs_split(a.value.value)) != 1
            and not any(ch in a.value.value for ch in "*?[")
        ):  # globbed words are left to bash
            # unquoted expansion of a plain string: split on blanks, no quote removal (IFS splitting)
            out.extend(Tok.gen(w) for w in ifs_split(a.value.value))
            changed = True
            continue
        out.append(t)
    return expand(ctx, out, depth + 1) if changed else out


def bash_c_words(ctx: LaunchContext, tok: Tok) -> list[Tok] | None:
    """The words of the string given to `bash -c` (double-quoted: its variables expanded as above)."""
    if tok.literal:
        parts = split_shell_words(tok.value)
        if parts is None:
            return None
        return [Tok(p.value, p.raw, p.literal, True) for p in parts]
    text = tok.raw
    if len(text) >= 2 and text[0] == '"' and text[-1] == '"':
        text = text[1:-1]
    parts = split_shell_words(text)
    if parts is None:
        return None
    return expand(ctx, parts)
