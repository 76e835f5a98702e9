"""Option values: one parser per value kind of the option table (`OptionSpec.value` in options.py).

A parser validates a value as sbatch 22.05 does and returns `(text, parsed)`: the value string
sbatch records (what its option dump shows) and the parsed value the job fields are built from. It
raises `values.InvalidValue` with sbatch's message for a value sbatch refuses. `note(message)`
reports a value sbatch accepts but ignores (O224).

Adding a value kind: write its parser below, add it to `PARSERS`, and name the kind in the
option's `_o(...)` entry in options.py (a test checks that every kind of the table has a parser).
A parser that calls `note` must also be named in `_NOTING_KINDS` (accepted values are cached per
process, and a cached value would not report again).
"""

from __future__ import annotations

from collections.abc import Callable

from translator.slurm import values as V
from translator.tables import keep

Parsed = tuple[str | None, object]
Note = Callable[[str], None]
ValueParser = Callable[[str | None, str, Note], Parsed]


def _as_written(value, name, note) -> Parsed:
    return value, value


def _kept(parse):
    """A kind whose parsed value is also the recorded text."""

    def kept(value, name, note) -> Parsed:
        v = parse(value)
        return v, v

    return kept


def _checked(parse):
    """A kind recorded as written once `parse` accepts it."""

    def checked(value, name, note) -> Parsed:
        return value, parse(value)

    return checked


def _flag(value, name, note) -> Parsed:
    return value, True


def _count(value, name, note) -> Parsed:
    n = V.parse_count(value, name)
    return str(n), n


def _core_spec(value, name, note) -> Parsed:
    # one 16-bit field: bit 15 (CORE_SPEC_THREAD) marks a thread count. A --core-spec with that bit
    # set (32768, 65535, or -1 after wrapping) reads back as unset
    n = V.parse_count(value, name, allow_zero=True)
    return ("unset" if n & 0x8000 else str(n)), n


def _thread_spec(value, name, note) -> Parsed:
    # the same field as --core-spec: --thread-spec reads back without bit 15 (-1 -> -32769)
    n = V.parse_count(value, name)
    return str(n & ~0x8000), n


def _time(value, name, note) -> Parsed:
    t = V.parse_time(value, name)
    return V.format_time(t), t


def _mem(value, name, note) -> Parsed:
    return V.c_strip(value or "").lstrip("+"), V.parse_mem(value, name)


def _nodes(value, name, note) -> Parsed:
    lo, hi = V.parse_nodes(value)
    return V.format_nodes(lo, hi), (lo, hi)


def _signal(value, name, note) -> Parsed:
    sig = V.parse_signal(value)
    return V.format_signal(sig, value), sig


def _yes_no(value, name, note) -> Parsed:
    v = V.parse_yes_no(value, name)
    return v, v


def _no_kill(value, name, note) -> Parsed:
    v = V.parse_no_kill(value)
    return ("set" if v else "unset"), v


def _number(parse):
    """A kind recorded as the number `parse` returns."""

    def number(value, name, note) -> Parsed:
        v = parse(value)
        return str(v), v

    return number


def _extra_node_info(value, name, note) -> Parsed:
    counts = V.parse_extra_node_info(value)
    parts = (value or "").split(":")
    if all(V._INT_RE.match(p) for p in parts):  # plain numbers read back as ints ("+4" -> 4)
        return ":".join(str(n) for n in counts), counts
    return value, counts


def _propagate(value, name, note) -> Parsed:
    v = value or "ALL"
    return v, v


def _power(value, name, note) -> Parsed:
    v, ok = V.parse_power(value)
    if not ok:
        note(f"--power={value}: sbatch ignores an unrecognized power option")
    return v, v


def _begin(value, name, note) -> Parsed:
    if not V.begin_is_valid(value):
        raise V.InvalidValue(f"Invalid --{name} specification")
    return value, value


#: value kind (options.py) -> parser
PARSERS: dict[str, ValueParser] = {
    "string": _as_written,
    "array": _as_written,  # checked by slurmctld after submission (resolve.py, O209)
    "dependency": _as_written,  # likewise
    "export": _as_written,
    "flag": _flag,
    "count": _count,
    "core_spec": _core_spec,
    "thread_spec": _thread_spec,
    "time": _time,
    "mem": _mem,
    "nodes": _nodes,
    "gres": _checked(V.parse_gres),
    "gpus": _checked(V.parse_gpus),
    "signal": _signal,
    "exclusive": _kept(V.parse_exclusive),
    "open_mode": _kept(V.parse_open_mode),
    "yes_no": _yes_no,
    "no_kill": _no_kill,
    "nice": _number(V.parse_nice),
    "wait_all_nodes": _number(V.parse_wait_all_nodes),
    "gres_flags": _checked(V.parse_gres_flags),
    "mail_type": _checked(V.parse_mail_type),
    "hint": _checked(V.parse_hint),
    "extra_node_info": _extra_node_info,
    "priority": _kept(V.parse_priority),
    "propagate": _propagate,
    "delay_boot": _kept(V.parse_delay_boot),
    "profile": _kept(V.parse_profile),
    "cpu_freq": _kept(V.parse_cpu_freq),
    "power": _power,
    "switches": _kept(V.parse_switches),
    "mem_bind": _checked(V.parse_mem_bind),
    "gpu_bind": _checked(V.parse_gpu_bind),
    "acctg_freq": _checked(V.parse_acctg_freq),
    "begin": _begin,
    "distribution": _kept(V.parse_distribution),
}


# Parsers are pure functions of (value, name) and their results immutable (str, int, tuples, frozen records),
# and scripts repeat the same option values (`--nodes=1`, `--gres=gpu:4`): accepted values are kept per
# process (bounded). Not kept: refused values (the exception is raised each time), the kinds that report
# through `note`, and the kinds kept as written (_KEPT_AS_WRITTEN).
_NOTING_KINDS = frozenset(("power",))
_PARSED: dict[tuple[str, str | None, str], Parsed] = {}
_PARSED_LIMIT = 8192


# kinds whose parser costs less than a look-up in the table (values kept as written: job names, paths, ...,
# often unique to one script); not kept, so they do not push the other values out of the table
_KEPT_AS_WRITTEN = frozenset(kind for kind, parser in PARSERS.items() if parser in (_as_written, _flag))


def parse(kind: str, value: str | None, name: str, note: Note) -> Parsed:
    """Validate `value` of option `--name` (value kind `kind`) as sbatch does: (text, parsed)."""
    if kind in _KEPT_AS_WRITTEN:
        return PARSERS[kind](value, name, note)
    key = (kind, value, name)
    got = _PARSED.get(key)
    if got is None:
        got = PARSERS[kind](value, name, note)
        if kind not in _NOTING_KINDS and (value is None or len(value) <= 256):
            keep(_PARSED, key, got, _PARSED_LIMIT)
    return got
