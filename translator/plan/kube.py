"""Kubernetes' own expansion in container command, args and env values.

The kubelet expands `$(VAR_NAME)` in `command`, `args` and env `value`s and turns `$$` into `$`
(core/v1 Container docs). Shell text copied from a Slurm script is full of `$(…)` and `$$`, so every
`$` that is followed by `(` or `$` is doubled: the process then receives exactly the text we meant.
Plans hold these API values, so YAML and SDK code write the same strings.
"""
from __future__ import annotations


def escape(text: str) -> str:
    out = []
    n = len(text)
    for i, ch in enumerate(text):
        out.append(ch)
        if ch == "$" and i + 1 < n and text[i + 1] in "($":
            out.append("$")
    return "".join(out)


def unescape(text: str) -> str:
    """What the container receives (for tests and reports)."""
    out = []
    i = 0
    while i < len(text):
        ch = text[i]
        if ch == "$" and i + 1 < len(text) and text[i + 1] == "$":
            out.append("$")
            i += 2
            continue
        out.append(ch)
        i += 1
    return "".join(out)
