"""Expansion of sbatch `--output`/`--error`/`--input` filename patterns (expand_stdio_fields).

Rules (Slurm 22.05, src/common/fname.c and print_fields):
- a pattern containing any backslash is not expanded at all; the backslashes are removed;
- `%%` is a literal `%`; an unknown `%X` is kept as written;
- digits between `%` and the letter zero-pad numeric fields to that width (`%4j` -> `0042`);
  widths above 10 are capped at 10;
- tokens: %A array master job id (the job id when not an array), %a array index, %b index mod 10,
  %j job id, %J job id (and `.step` for steps; the batch script has none), %s step (`batch`),
  %N short host name, %n node index (0 for the batch script), %t task rank (0), %r restart count,
  %u user name, %x job name.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from translator.slurm.values import to_int

#: %a of a job that is not an array: Slurm expands NO_VAL (0xfffffffe)
NO_VAL = 4294967294


@dataclass(frozen=True)
class PatternContext:
    """Values of the expansion tokens. Defaults describe the batch script of a plain job."""

    job_id: int = 0
    job_name: str = ""
    user: str = ""
    node: str = ""                      # %N
    array_job_id: Optional[int] = None  # %A (None: the job id)
    array_task_id: Optional[int] = None  # %a (None: not an array -> NO_VAL)
    step: Optional[int] = None          # None: the batch step
    node_index: int = 0                 # %n
    task: int = 0                       # %t
    restart_count: int = 0              # %r


MAX_WIDTH = 10


def has_expansion(pattern: str) -> bool:
    """True when the pattern contains a token Slurm would replace."""
    if "\\" in pattern:
        return False
    i = 0
    while i < len(pattern):
        if pattern[i] == "%" and i + 1 < len(pattern):
            j = i + 1
            while j < len(pattern) and "0" <= pattern[j] <= "9":
                j += 1
            if j < len(pattern) and pattern[j] in "AabjJsNntrux%":
                return True
            i = j
        else:
            i += 1
    return False


def expand_pattern(pattern: str, ctx: PatternContext) -> str:
    """The file name Slurm derives from `pattern` for the job described by `ctx`."""
    if "\\" in pattern:
        return pattern.replace("\\", "")
    out = []
    i = 0
    n = len(pattern)
    while i < n:
        ch = pattern[i]
        if ch != "%" or i + 1 >= n:
            out.append(ch)
            i += 1
            continue
        j = i + 1
        while j < n and "0" <= pattern[j] <= "9":
            j += 1
        width = min(to_int(pattern[i + 1:j]), MAX_WIDTH) if j > i + 1 else 0
        if j >= n:
            out.append(pattern[i:])
            break
        tok = pattern[j]
        value = _token(tok, ctx)
        if tok == "%":
            out.append("%")
        elif value is None:
            out.append(pattern[i:j + 1])      # unknown token: kept as written
        elif isinstance(value, int):
            out.append(str(value).zfill(width) if width else str(value))
        else:
            out.append(value)
        i = j + 1
    return "".join(out)


def _token(tok: str, ctx: PatternContext):
    array_id = ctx.array_task_id if ctx.array_task_id is not None else NO_VAL
    if tok == "A":
        return ctx.array_job_id if ctx.array_job_id is not None else ctx.job_id
    if tok == "a":
        return array_id
    if tok == "b":
        return array_id % 10
    if tok == "j":
        return ctx.job_id
    if tok == "J":
        return ctx.job_id if ctx.step is None else f"{ctx.job_id}.{ctx.step}"
    if tok == "s":
        return "batch" if ctx.step is None else ctx.step
    if tok == "N":
        return ctx.node
    if tok == "n":
        return ctx.node_index
    if tok == "t":
        return ctx.task
    if tok == "r":
        return ctx.restart_count
    if tok == "u":
        return ctx.user
    if tok == "x":
        return ctx.job_name
    if tok == "%":
        return "%"
    return None


def default_output_pattern(is_array: bool) -> str:
    """sbatch's default stdout/stderr file when no -o/-e is given."""
    return "slurm-%A_%a.out" if is_array else "slurm-%j.out"
