"""Kubernetes' own expansion in container command, args and env values.

The kubelet expands `$(VAR_NAME)` in `command`, `args` and env `value`s when VAR_NAME is defined in
the container's environment, and turns every `$$` into `$` (core/v1 Container docs; the kubelet's
third_party/forked/golang/expansion/expand.go). It walks the UTF-8 bytes: after a `$` it looks at ONE
byte, and for anything but `$` or `(` it writes `$` plus that byte converted to a rune (Go's
`string(input[0])`), so a `$` before a non-ASCII character turns the character's first byte into
a two-byte character (`$é` -> `$Ã` + a stray byte): the text is corrupted.
Text copied from a Slurm script can hold all three (`$$` is bash's PID, `$(NCCL_DEBUG)` is rare but
possible, `$` before a non-ASCII letter in a message or a heredoc), so exactly those spots are
escaped: `$$` -> `$$$$`; `$(NAME)` with NAME a variable name (or holding a `$`) -> `$$(NAME)`; and
`$` followed by a non-ASCII character -> `$$`. Other `$(` forms (`$(hostname -s)`, `$((1+2))`) can
never match a variable the container defines — every name in the TrainJob env and the
runtime-injected env is an identifier — and are left as written, as are `$` before any other ASCII
character and a `$` at the end, which the kubelet copies unchanged. So the process receives exactly
the text we meant and the YAML stays readable.
"""

from __future__ import annotations

import re

# The spots whose `$` is doubled, as the kubelet's expansion reads the text left to right: `$$` (consumed as a
# pair, as the kubelet does), `$` + a non-ASCII character, and `$(` when what follows up to the first `)` is
# a variable name (`$(NAME)`) or holds a `$` -- the kubelet copies an unresolved `$(…)` verbatim (no `$$`
# reduction inside it), so it is escaped when it could name a variable or when it holds a `$` that is
# escaped itself. The second `$(` case also needs a `)` after it (escape checks that). Each look-ahead stops
# at the next `$` or `)`, so no character is looked at for two spots: linear. Every other `$` (`$(hostname
# -s)`, `$((1+2))`, `$X`, a `$` at the end) is left as written.
_CHANGED = re.compile(r"\$(?:\$|(?=[\x80-\U0010ffff])|\((?=[A-Za-z_][A-Za-z0-9_]*\)|[^)$]*\$))")


def escape(text: str) -> str:
    if "$" not in text:  # the common case: nothing to escape
        return text
    out = []
    pos = 0
    last_close = -2  # position of the last `)`, found on the first `$(` spot
    for m in _CHANGED.finditer(text):
        start = m.start()
        end = m.end()
        if end - start == 2 and text[start + 1] == "(":
            if last_close == -2:
                last_close = text.rfind(")")
            if last_close < end:  # no `)` closes it: the kubelet copies it
                continue
        out.append(text[pos:start])
        out.append(text[start:end] if text[start + 1 : end] == "$" else "$")  # `$$` -> `$$$$`, `$`/`$(` -> `$$`/`$$(`
        pos = start
    if not out:
        return text
    out.append(text[pos:])
    return "".join(out)


def expand(text: str, env=None) -> str:
    """What the kubelet makes of `text` given the container env (for tests and reports).

    Byte for byte as expand.go does it: the text is UTF-8, and a `$` before a byte other than `$`
    or `(` is written with that byte turned into the rune of the same number (bytes that come out
    invalid are kept as surrogate escapes, so a corrupted string never equals the original)."""
    env = env or {}
    data = text.encode("utf-8", "surrogatepass")
    out = bytearray()
    i = 0
    n = len(data)
    while i < n:
        b = data[i]
        if b == 0x24 and i + 1 < n:  # `$`
            nxt = data[i + 1]
            if nxt == 0x24:
                out += b"$"
                i += 2
                continue
            if nxt == 0x28:  # `(`
                close = data.find(b")", i + 2)
                if close != -1:
                    name = data[i + 2 : close].decode("utf-8", "surrogateescape")
                    out += env[name].encode("utf-8", "surrogatepass") if name in env else data[i : close + 1]
                    i = close + 1
                    continue
                out += b"$("
                i += 2
                continue
            out += b"$" + chr(nxt).encode("utf-8")  # Go: string(operator) + string(input[0])
            i += 2
            continue
        out.append(b)
        i += 1
    return bytes(out).decode("utf-8", "surrogateescape")
