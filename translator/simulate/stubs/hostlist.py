"""Slurm hostlists: `node[01-04,07],gpu5` <-> a list of names (stdlib only: the stubs import it too).

Expansion follows `scontrol show hostnames` (src/common/hostlist.c): a bracket holds comma-separated
numbers or ranges; a range keeps the zero padding of its lower bound. Compression groups names that
share a prefix and a numeric suffix width, in order, as `scontrol show hostlist` does.
"""

from __future__ import annotations

import re


class HostlistError(ValueError):
    pass


def _split_top(text: str) -> list[str]:
    """Split at commas that are not inside brackets."""
    parts: list[str] = []
    depth = 0
    cur: list[str] = []
    for ch in text:
        if ch == "[":
            depth += 1
        elif ch == "]":
            depth -= 1
            if depth < 0:
                raise HostlistError(f"unbalanced ']' in {text!r}")
        if ch == "," and depth == 0:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    if depth:
        raise HostlistError(f"unbalanced '[' in {text!r}")
    parts.append("".join(cur))
    return [p for p in (x.strip() for x in parts) if p]


def _expand_one(item: str) -> list[str]:
    m = re.search(r"\[([^\[\]]*)\]", item)
    if not m:
        return [item]
    prefix, inner, suffix = item[: m.start()], m.group(1), item[m.end() :]
    out: list[str] = []
    for rng in inner.split(","):
        rng = rng.strip()
        if not rng:
            continue
        lo, dash, hi = rng.partition("-")
        if not lo.isdigit() or (dash and not hi.isdigit()):
            raise HostlistError(f"bad range {rng!r} in {item!r}")
        width = len(lo)
        a, b = int(lo), int(hi) if dash else int(lo)
        if b < a or b - a > 65536:
            raise HostlistError(f"bad range {rng!r} in {item!r}")
        for n in range(a, b + 1):
            for rest in _expand_one(suffix):
                out.append(f"{prefix}{n:0{width}d}{rest}")
    return out


def expand(text: str) -> list[str]:
    """`node[01-03],gpu5` -> ['node01', 'node02', 'node03', 'gpu5'] (duplicates kept, as scontrol does)."""
    names: list[str] = []
    for item in _split_top(text.replace(" ", ",")):
        names.extend(_expand_one(item))
    return names


def compress(names: list[str]) -> str:
    """['node01', 'node02', 'node04'] -> 'node[01-02,04]'."""
    groups: list[list] = []  # [prefix, width, [numbers]] or [name, None, None]
    for name in names:
        m = re.match(r"^(.*?)(\d+)$", name)
        if not m:
            groups.append([name, None, None])
            continue
        prefix, digits = m.group(1), m.group(2)
        last = groups[-1] if groups else None
        if last is not None and last[1] == len(digits) and last[0] == prefix:
            last[2].append(int(digits))
        else:
            groups.append([prefix, len(digits), [int(digits)]])
    out = []
    for prefix, width, nums in groups:
        if width is None:
            out.append(prefix)
            continue
        if len(nums) == 1:
            out.append(f"{prefix}{nums[0]:0{width}d}")
            continue
        ranges, start, prev = [], nums[0], nums[0]
        for n in nums[1:] + [None]:
            if n is not None and n == prev + 1:
                prev = n
                continue
            ranges.append(f"{start:0{width}d}" if start == prev else f"{start:0{width}d}-{prev:0{width}d}")
            if n is not None:
                start = prev = n
        out.append(f"{prefix}[{','.join(ranges)}]")
    return ",".join(out)


def counts_form(counts: list[int]) -> str:
    """Per-node counts in Slurm's `2(x3),1` form (SLURM_TASKS_PER_NODE, SLURM_JOB_CPUS_PER_NODE)."""
    out, i = [], 0
    while i < len(counts):
        j = i
        while j + 1 < len(counts) and counts[j + 1] == counts[i]:
            j += 1
        n = j - i + 1
        out.append(f"{counts[i]}(x{n})" if n > 1 else str(counts[i]))
        i = j + 1
    return ",".join(out)


def parse_counts_form(text: str) -> list[int]:
    out: list[int] = []
    for part in text.split(","):
        m = re.match(r"^\s*(\d+)(?:\(x(\d+)\))?\s*$", part)
        if not m:
            raise HostlistError(f"bad count list {text!r}")
        out.extend([int(m.group(1))] * int(m.group(2) or 1))
    return out
