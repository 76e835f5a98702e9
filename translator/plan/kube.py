"""Kubernetes' own expansion in container command, args and env values.

The kubelet expands `$(VAR_NAME)` in `command`, `args` and env `value`s when VAR_NAME is defined in
the container's environment, and turns every `$$` into `$` (core/v1 Container docs; expansion.go).
Text copied from a Slurm script can hold both (`$$` is bash's PID, `$(NCCL_DEBUG)` is rare but
possible), so exactly those spots are escaped: `$$` -> `$$$$`, and `$(NAME)` with NAME a variable name
(or holding a `$`) -> `$$(NAME)`. Other `$(` forms (`$(hostname)`, `$((1+2))`) can never match a variable the container
defines — every name in the TrainJob env and the runtime-injected env is an identifier — and are left
as written, so the process receives exactly the text we meant and the YAML stays readable.
"""
from __future__ import annotations

import re

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


def escape(text: str) -> str:
    if "$" not in text:                                  # the common case: nothing to escape
        return text
    out = []
    i = 0
    n = len(text)
    close = -2          # position of the next `)` at or after the current one; -1: there is none left
    while i < n:
        ch = text[i]
        if ch == "$" and i + 1 < n and text[i + 1] == "$":
            out.append("$$$$")
            i += 2
            continue
        if ch == "$" and i + 1 < n and text[i + 1] == "(":
            if close != -1 and close < i + 2:          # `)` positions only move forward: linear overall
                close = text.find(")", i + 2)
            # the kubelet copies an unresolved `$(…)` verbatim (no `$$` reduction inside it), so it is
            # escaped when it could name a variable or when it holds a `$` that is escaped itself
            if close != -1 and (_NAME.match(text, i + 2, close) or text.find("$", i + 2, close) != -1):
                out.append("$$")
                i += 1
                continue
        out.append(ch)
        i += 1
    return "".join(out)


def expand(text: str, env=None) -> str:
    """What the kubelet makes of `text` given the container env (for tests and reports)."""
    env = env or {}
    out = []
    i = 0
    n = len(text)
    while i < n:
        ch = text[i]
        if ch == "$" and i + 1 < n:
            nxt = text[i + 1]
            if nxt == "$":
                out.append("$")
                i += 2
                continue
            if nxt == "(":
                close = text.find(")", i + 2)
                if close != -1:
                    name = text[i + 2:close]
                    out.append(env[name] if name in env else text[i:close + 1])
                    i = close + 1
                    continue
        out.append(ch)
        i += 1
    return "".join(out)
