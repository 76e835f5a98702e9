"""Bounded per-process tables.

Many stages keep answers that depend only on a short text (a line, a word, a directive, a patch) in a
module-level dict, so that scripts repeating it (most real scripts do) pay for it once per process. Every
such table is bounded the same way: when it holds `limit` entries it is emptied before the next one is
stored. Emptying is O(1) amortised and keeps the hot path to one `dict.get`; the tables are refilled by
the scripts that follow. Values must be immutable (or never changed by their readers): one object is
shared by every script that finds it.
"""

from __future__ import annotations

from typing import TypeVar

V = TypeVar("V")


def keep(table: dict, key: object, value: V, limit: int) -> V:
    """Store `value` under `key` (emptying `table` first when it holds `limit` entries) and return it."""
    if len(table) >= limit:
        table.clear()
    table[key] = value
    return value
