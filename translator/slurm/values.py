"""Value grammars of sbatch 22.05 options, with the validation sbatch itself performs.

Each parser takes the option's argument string and returns the parsed value, or raises
`InvalidValue` with the message sbatch prints. Rules were checked one by one against real
sbatch 22.05.8 (the slurm-oracle), not only against the man page: e.g. `--gres=gres/gpu:2` and a
node size list `1,2,4` are refused by 22.05, `--mem=2gb` is accepted, `--no-kill=on` is refused.

Checks that slurmctld (not sbatch) performs are separate `*_problems` helpers: they return
warnings, because sbatch itself accepts the script (e.g. `--array=0-1001` with the default
MaxArraySize=1001, `--dependency=foo:1`).
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass

from translator.records import FrozenRecord

NO_LIMIT = 0  # time_limit_seconds for an explicitly unlimited job
MAX_ARRAY_SIZE = 1001  # slurm.conf MaxArraySize default


class InvalidValue(ValueError):
    """sbatch refuses the value; the message is sbatch's own wording."""


# ---- integers --------------------------------------------------------------------------------

# C's isspace() and isdigit() in the "C" locale: ASCII only. Python's str.isdigit(), str.strip(),
# int() and an un-flagged `\d`/`\s` also accept other Unicode digits and spaces ('٣', '²', U+00A0),
# which sbatch refuses, so every pattern here is compiled with re.ASCII and these helpers are used
# instead of the str methods.
C_SPACE = " \t\n\v\f\r"
_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")
_UPPER = str.maketrans("abcdefghijklmnopqrstuvwxyz", "ABCDEFGHIJKLMNOPQRSTUVWXYZ")


def is_digits(s: str) -> bool:
    """Non-empty and only ASCII 0-9 (C isdigit on every character)."""
    return bool(s) and all("0" <= ch <= "9" for ch in s)


# strtol/strtoul clamp anything beyond 64 bits, so a decimal text with more significant digits than this
# can be read as +-10**40 (clamped the same way by wrap_long); Python's int() refuses texts over 4300
# digits (ValueError) and takes quadratic time on longer ones.
_MAX_SIGNIFICANT_DIGITS = 40


def to_int(text: str) -> int:
    """int() of a decimal text already matched as `[blanks][+-]digits`, in time linear in its length."""
    s = text.strip(C_SPACE)
    sign = -1 if s[:1] == "-" else 1
    digits = (s[1:] if s[:1] in "+-" else s).lstrip("0")
    if len(digits) > _MAX_SIGNIFICANT_DIGITS:
        return sign * 10**_MAX_SIGNIFICANT_DIGITS
    return sign * int(digits or "0")


def c_strip(s: str) -> str:
    return s.strip(C_SPACE)


def c_lower(s: str) -> str:
    """tolower()/strcasecmp in the C locale: only A-Z change (Python's lower() also folds e.g.
    U+212A KELVIN SIGN to 'k')."""
    return s.translate(_LOWER)


def wrap_long(n: int, clamp: bool = True) -> int:
    """A 64-bit C long: strtol clamps an out-of-range value; arithmetic on it wraps around."""
    if clamp:
        return max(min(n, 2**63 - 1), -(2**63))
    return ((n + 2**63) % 2**64) - 2**63


def wrap_int(n: int) -> int:
    """A value stored in a 32-bit C int (sbatch's option fields): 2**32 -> 0, 2**32 - 1 -> -1."""
    return ((n + 2**31) % 2**32) - 2**31


_INT_RE = re.compile(r"^\s*[+-]?\d+\Z", re.ASCII)
_NODE_NUMBER_RE = re.compile(r"^\s*([+-]?\d+)([kKmM]?)(.*)$", re.ASCII | re.DOTALL)


def parse_count(value: str, option: str, allow_zero: bool = False) -> int:
    """parse_int(..., positive=true): a whole decimal number > 0 (>= 0 with allow_zero).

    The check is made on the 64-bit value; the result is then stored in a C int, so values above
    2**31 wrap around as in sbatch (99999999999 -> 1215752191). A value strtol clamps to LONG_MAX
    is refused ("Numeric argument (9223372036854775807) to big")."""
    if not _INT_RE.match(value or ""):
        raise InvalidValue(f'Invalid numeric value "{value}" for --{option}.')
    n = wrap_long(to_int(value))  # strtol clamps
    if n < 0 or (n == 0 and not allow_zero):
        raise InvalidValue(f'Invalid numeric value "{value}" for --{option}.')
    if n == 2**63 - 1:  # strtol's LONG_MAX: sbatch refuses
        raise InvalidValue(f"Numeric argument ({n}) to big for --{option}.")
    return wrap_int(n)


NICE_LIMIT = 2**31 - 3  # NICE_OFFSET - 3


def parse_nice(value: str | None) -> int:
    """--nice[=adj]: no value means 100; the value is read with strtoll (garbage gives 0) and must
    stay within +/- 2147483645."""
    if value is None or value == "":
        return 100
    m = re.match(r"(?a)^\s*([+-]?\d+)", value)
    n = wrap_long(to_int(m.group(1))) if m else 0
    # llabs(LLONG_MIN) overflows and stays negative in C, so a value strtoll clamps to LLONG_MIN passes the
    # range check and is stored in an int as 0 (checked against real sbatch 22.05: --nice=-99…9 is nice 0)
    if n != -(2**63) and abs(n) > NICE_LIMIT:
        raise InvalidValue(f"Invalid --nice value, out of range (+/- {NICE_LIMIT})")
    return wrap_int(n)


def parse_priority(value: str) -> str:
    """--priority: TOP, or a number read with strtoll that must be >= 0 and below NO_VAL
    (4294967294); sbatch's merged options show it as a C int (2147483648 -> -2147483648)."""
    s = value or ""
    if not _INT_RE.match(s):
        return s  # TOP, or text strtoll reads as 0 (rendered as written)
    n = wrap_long(to_int(s))
    if n < 0:
        raise InvalidValue("Priority must be >= 0")
    if n >= 0xFFFFFFFE:
        raise InvalidValue("Priority must be < 4294967294")
    return str(wrap_int(n))


# ---- time ------------------------------------------------------------------------------------


def _valid_timespec(s: str) -> bool:
    dash = colon = 0
    for ch in s:
        if "0" <= ch <= "9":
            continue
        if ch == "-":
            if colon:
                return False
            dash += 1
        elif ch == ":":
            colon += 1
        else:
            return False
    return dash <= 1 and colon <= 2


def _c_int(digits: str) -> int:
    """A decimal field as sscanf("%d") stores it: strtol (clamped to a C long), then cast to int."""
    return wrap_int(wrap_long(to_int(digits))) if digits else 0


def _time_spec_seconds(s: str, option: str) -> int:
    """time_str2secs on a valid spec (not -1/INFINITE/UNLIMITED, not `-D`): the seconds as a C int.

    Slurm computes in int, so huge fields wrap around (2147483647 minutes is -60 s)."""
    fields = s.partition("-")[2].split(":") if "-" in s else s.split(":")
    if ("-" in s and s.partition("-")[2] and any(f == "" for f in fields)) or (
        "-" not in s and any(f == "" for f in fields)
    ):
        raise InvalidValue(f"Invalid --{option} specification")  # `1::0`, `:30`, `1:`, `1-2:`
    days = hours = minutes = seconds = 0
    if "-" in s:
        d, _, rest = s.partition("-")
        days = _c_int(d)
        nums = [_c_int(p) for p in rest.split(":")] if rest else []
        if len(nums) >= 1:
            hours = nums[0]
        if len(nums) >= 2:
            minutes = nums[1]
        if len(nums) >= 3:
            seconds = nums[2]
    else:
        nums = [_c_int(p) for p in s.split(":")]
        if len(nums) == 1:
            minutes = nums[0]
        elif len(nums) == 2:
            minutes, seconds = nums
        else:
            hours, minutes, seconds = nums
    return wrap_int(((days * 24 + hours) * 60 + minutes) * 60 + seconds)


def _negative_days_seconds(digits: str, option: str) -> int:
    """Seconds of a `-D` time value (D days back), as the C int sbatch computes them."""
    if not is_digits(digits):
        raise InvalidValue(f"Invalid --{option} specification")
    days = wrap_int(wrap_long(-to_int(digits)))
    return wrap_int(days * 86400)


def _is_unlimited_word(s: str) -> bool:
    return c_lower(c_strip(s)) in ("-1", "infinite", "unlimited")


def parse_time(value: str, option: str = "time") -> int:
    """Time limit in seconds, as sbatch stores it: whole minutes (seconds rounded UP).

    Forms: M, M:S, H:M:S, D-H, D-H:M, D-H:M:S; -1/INFINITE/UNLIMITED and 0 mean no limit (0 is
    returned for both). Like time_str2mins, the arithmetic is C int arithmetic and the minutes
    are stored unsigned: 35791395 minutes is 4259175904 minutes, 71582788 minutes is 0 (no limit),
    and a value that lands on INFINITE (2147483646 minutes) is no limit as well.
    """
    s = value or ""
    if _is_unlimited_word(s):
        return NO_LIMIT
    if not s or not _valid_timespec(s):
        raise InvalidValue(f"Invalid --{option} specification")
    before, dash, after = s.partition("-")
    if dash and not before:
        # `-D`: 22.05 reads -D days (strtol, clamped, then a C int) and computes seconds in C int arithmetic;
        # the minutes are then rounded and stored unsigned like any other value (checked on the oracle:
        # -1 day is 2982615-04:17:00, -2147483647 days is 1-00:00:00, -2147483648 days is no limit)
        secs = _negative_days_seconds(after, option)
    else:
        secs = _time_spec_seconds(s, option)
    rounded = wrap_int(secs + 59)
    minutes = (abs(rounded) // 60) * (1 if rounded >= 0 else -1)  # C division truncates
    stored = minutes % 2**32
    if stored == 0xFFFFFFFE:  # NO_VAL
        raise InvalidValue(f"Invalid --{option} specification")
    if stored == 0xFFFFFFFF:  # INFINITE
        return NO_LIMIT
    return stored * 60


def format_seconds(seconds: int) -> str:
    """secs2time_str: `HH:MM:SS` or `D-HH:MM:SS` (seconds kept)."""
    d, rem = divmod(seconds, 86400)
    h, rem = divmod(rem, 3600)
    m, sec = divmod(rem, 60)
    return f"{d}-{h:02d}:{m:02d}:{sec:02d}" if d else f"{h:02d}:{m:02d}:{sec:02d}"


# ---- memory ----------------------------------------------------------------------------------

_MEM_RE = re.compile(r"(?a)^\s*\+?(\d+)([kKmMgGtT]?)([bB]?)\Z")


def parse_mem(value: str, option: str = "mem") -> int:
    """str_to_mbytes: MiB; default unit M; binary K/M/G/T (K rounds up); optional trailing B.

    Integers only; 0 means all the memory of the node (--mem) / no per-CPU limit. The number is
    read with strtoll: one beyond the C long long range is refused; a unit multiplies in 64 bits
    (wrapping around as C does) and the result is stored unsigned.
    """
    m = _MEM_RE.match((value or "").rstrip(C_SPACE))
    if not m or (m.group(3) and not m.group(2)):
        raise InvalidValue(f"Invalid --{option} specification")
    n = to_int(m.group(1))
    if n >= 2**63:  # strtoll: ERANGE
        raise InvalidValue(f"Invalid --{option} specification")
    unit = m.group(2).translate(_UPPER)
    if unit == "K":
        n = (n + 1023) // 1024
    elif unit == "G":
        n = wrap_long(n * 1024, clamp=False)
    elif unit == "T":
        n = wrap_long(n * 1024 * 1024, clamp=False)
    return n % 2**64  # (uint64_t) result


# ---- nodes -----------------------------------------------------------------------------------


def _node_number(s: str) -> tuple[int, str]:
    """_str_to_nodes: strtol (clamped to the C long range), a k or m suffix multiplies (in a C long,
    which wraps), and the result is cast to a C int: 4294967296 -> 0, 3000000000 -> -1294967296."""
    m = _NODE_NUMBER_RE.match(s)
    if not m:
        return -1, c_strip(s)
    n = wrap_long(to_int(m.group(1)))  # strtol clamps
    if m.group(2) in ("k", "K"):
        n = wrap_long(n * 1024, clamp=False)
    elif m.group(2) in ("m", "M"):
        n = wrap_long(n * 1048576, clamp=False)
    return wrap_int(n), c_strip(m.group(3))


def parse_nodes(value: str) -> tuple[int, int]:
    """verify_node_count: `N` or `min-max` (k/m suffixes); returns (min, max), max=min for N.

    22.05 has no node size lists (`1,2,4` and `1-4:2` are refused). An empty minimum (`-3`)
    reads as 1; an empty maximum (`2-`) is refused.
    """
    s = value or ""
    if "-" in s[1:] or (s.startswith("-") and s.count("-") == 1 and len(s) > 1):
        idx = s.index("-", 0)
        lo_s, hi_s = s[:idx], s[idx + 1 :]
        lo, left = _node_number(lo_s) if c_strip(lo_s) else (-1, "")
        if left:
            raise InvalidValue(f'"{lo_s}" is not a valid node count')
        lo = lo if lo >= 0 else 1  # an empty or negative minimum reads as 1 (before the check)
        hi, left = _node_number(hi_s) if c_strip(hi_s) else (-1, "")
        if left:
            raise InvalidValue(f'"{hi_s}" is not a valid node count')
        if hi != 0 and hi < lo:
            raise InvalidValue(f"Maximum node count {hi} is less than minimum node count {lo}")
        return lo, hi
    n, left = _node_number(s)
    if left or not c_strip(s) or n < 0:
        raise InvalidValue(f'"{s}" is not a valid node count')
    return n, n


def format_nodes(lo: int, hi: int) -> str:
    return str(lo) if lo == hi else f"{lo}-{hi}"


# ---- GPUs and GRES ---------------------------------------------------------------------------

_SUFFIX = {"k": 1024, "m": 1024**2, "g": 1024**3, "t": 1024**4, "p": 1024**5}


_GRES_COUNT_RE = re.compile(r"^[ \t\n\v\f\r]*([+-]?)(\d+)([kKmMgGtTpP]?)\Z", re.ASCII)


def _gres_count(s: str) -> int | None:
    """A GRES count as Slurm reads it (strtoull, then an optional k/m/g/t/p suffix), or None when
    the text is not a count (it is then a type or a GRES name). strtoull skips leading blanks and
    takes a sign: " 4" and "+4" are 4, "-0" is 0, "-4" is 2**64 - 4; a trailing blank makes it a
    type. Checked on the oracle with `--gpus-per-node=X --gpus=8`."""
    m = _GRES_COUNT_RE.match(s)
    if not m:
        return None
    n = to_int(m.group(2))
    if n >= 2**64:
        return n  # beyond 64 bits: kept as written (slurmctld refuses the TRES)
    if m.group(1) == "-":
        n = (2**64 - n) % 2**64  # strtoull negates in unsigned arithmetic
    return (n * _SUFFIX.get(m.group(3).translate(_LOWER), 1)) % 2**64


@dataclass(init=False, repr=False, eq=False)
class GresItem(FrozenRecord):
    name: str
    type: str | None
    count: int


def parse_gres(value: str) -> tuple[GresItem, ...]:
    """`--gres=name[[:type]:count][,...]` per node; `none` = no GRES. Count suffixes k/m/g/t/p.

    22.05 refuses the `gres/` prefix and a name given both with and without a type.
    """
    s = value or ""
    if s.strip(C_SPACE).translate(_LOWER) == "none" or s == "":
        return ()  # an empty --gres= passes sbatch (slurmctld then refuses the empty TRES)
    items: list[GresItem] = []
    for part in s.split(","):
        if not part or "/" in part.split(":")[0]:
            raise InvalidValue("Invalid generic resource (gres) specification")
        fields = part.split(":")
        name = fields[0]
        typ: str | None = None
        count = 1
        if len(fields) == 2:
            c = _gres_count(fields[1])
            if c is None:
                typ = fields[1]
            else:
                count = c
        elif len(fields) == 3:
            typ = fields[1]
            c = _gres_count(fields[2])
            if c is None:
                raise InvalidValue("Invalid generic resource (gres) specification")
            count = c
        elif len(fields) > 3:
            raise InvalidValue("Invalid generic resource (gres) specification")
        if not name or (typ is not None and not typ):
            raise InvalidValue("Invalid generic resource (gres) specification")
        items.append(GresItem(name, typ, count))
    _check_typed_mix(items)
    return tuple(items)


def _check_typed_mix(items) -> None:
    by_name: dict[str, set[bool]] = {}  # GRES name -> {written without a type?}
    for it in items:
        by_name.setdefault(it.name, set()).add(it.type is None)
    if any(len(v) > 1 for v in by_name.values()):
        raise InvalidValue("Invalid GRES specification (with and without type identification)")


def parse_gpus(value: str) -> tuple[GresItem, ...]:
    """`--gpus`/`--gpus-per-*`: `[type:]N[,type:N...]`; a bare word is a type with count 1."""
    items: list[GresItem] = []
    if not value:
        return ()  # `--gpus=`: no GPU request (sbatch accepts it)
    for part in value.split(","):
        fields = part.split(":")
        if not part or len(fields) > 2:
            raise InvalidValue("Invalid generic resource (gres) specification")
        if len(fields) == 1:
            c = _gres_count(fields[0])
            items.append(GresItem("gpu", None, c) if c is not None else GresItem("gpu", fields[0], 1))
        else:
            c = _gres_count(fields[1])
            if c is None or not fields[0]:
                raise InvalidValue("Invalid generic resource (gres) specification")
            items.append(GresItem("gpu", fields[0], c))
    _check_typed_mix(items)
    return tuple(items)


def gpu_count_and_type(items) -> tuple[int | None, str | None]:
    """(count, type) of the first GPU item, as Slurm reports a multi-type request (per node 2 for
    `a100:2,v100:1`, type a100)."""
    gpus = [i for i in items if i.name == "gpu"]
    if not gpus:
        return None, None
    return gpus[0].count, gpus[0].type


def lenient_gpu_spec(value: str) -> tuple[int, str | None]:
    """Best-effort (count, type) of a GPU request sbatch refuses, for reporting what was asked:
    the last `:` field is the count, what comes before (after `gres:`/`gpu:`) the type."""
    s = value or ""
    for prefix in ("gres:", "gres/", "gpu:"):
        if s.startswith(prefix):
            s = s[len(prefix) :]
    head, colon, tail = s.rpartition(":")
    if colon:
        c = _gres_count(tail)
        return (c, head or None) if c is not None else (1, s)
    c = _gres_count(s)
    return (c, None) if c is not None else (1, s or None)


def format_signal(sig: SignalSpec, written: str) -> str:
    """The signal as sbatch renders it: flags, then the name (or the number if given as one)."""
    body = written.split(":", 1)[1] if ":" in written else written
    name_part = body.split("@", 1)[0]
    name = str(sig.number) if _INT_RE.match(name_part) else sig.name
    text = (sig.flags_written + ":" if sig.flags_written else "") + name
    return text + (f"@{sig.seconds}" if "@" in body else "")


def format_time(seconds: int) -> str:
    """mins2time_str: `UNLIMITED`, `HH:MM:SS` or `D-HH:MM:SS`."""
    if seconds == NO_LIMIT:
        return "UNLIMITED"
    minutes = seconds // 60
    d, rem = divmod(minutes, 1440)
    h, m = divmod(rem, 60)
    return f"{d}-{h:02d}:{m:02d}:00" if d else f"{h:02d}:{m:02d}:00"


# ---- arrays ----------------------------------------------------------------------------------


def split_array(value: str) -> tuple[str, int | None]:
    """(spec before the first `%`, throttle after it or None). A trailing comma is tolerated."""
    spec, pct, thr = (value or "").partition("%")
    if not pct:
        return spec.rstrip(","), None
    m = re.match(r"(?a)^\s*([+-]?\d+)", thr)
    rest = thr[m.end() :] if m else thr
    if rest.startswith(","):  # `1-3:2%1,5`: what follows the throttle still lists indexes
        spec += rest
    # strtol into a C int: a throttle that is not positive there (%-1, %2147483648) is no limit
    throttle = wrap_int(wrap_long(to_int(m.group(1)))) if m else 0
    return spec.rstrip(","), max(throttle, 0)


MAX_REPORTED_PROBLEMS = 3  # a spec of thousands of bad items gets the first few and a count


def array_indexes(spec: str, max_size: int = MAX_ARRAY_SIZE) -> tuple[list[int], list[str]]:
    """Expand an array spec; (sorted unique indexes, problems slurmctld would refuse).

    Time and memory are linear in the length of the text: valid indexes are below `max_size`, so they
    are marked in a table of that size (ranges are never listed), and problems are summarised: the
    first MAX_REPORTED_PROBLEMS, then one "and N more" line."""
    problems: list[str] = []
    more = 0
    seen = bytearray(max_size)
    s = spec.strip(C_SPACE)
    if s.startswith("["):
        s = s[1:]
    if s.endswith("]"):
        s = s[:-1]

    def problem(text: str) -> None:
        nonlocal more
        if len(problems) < MAX_REPORTED_PROBLEMS:
            problems.append(text)
        else:
            more += 1

    for tok in s.rstrip(",").split(","):
        m = _ARRAY_ITEM.fullmatch(tok.strip(C_SPACE))
        if not m:
            problem(f"'{clip_text(tok)}' is not an index, a range N-M or a stepped range N-M:S")
            continue
        lo = to_int(m.group(1))
        hi = to_int(m.group(2)) if m.group(2) is not None else lo
        step = to_int(m.group(3)) if m.group(3) is not None else 1
        if hi < lo:
            problem(f"range '{clip_text(tok)}' ends before it starts")
            continue
        if step <= 0 or step >= max_size:
            problem(f"step of '{clip_text(tok)}' must be between 1 and {max_size - 1}")
            continue
        if hi >= max_size:
            problem(
                f"index {clip_text(str(hi) if hi < 10**40 else (m.group(2) or m.group(1)))} is not below MaxArraySize={max_size} "
                "(Slurm default)"
            )
            continue
        count = (hi - lo) // step + 1
        seen[lo : hi + 1 : step] = b"\x01" * count
    if more:
        problems.append(f"and {more} more item(s) like these")
    return list(itertools.compress(range(len(seen)), seen)), problems


_ARRAY_ITEM = re.compile(r"(?a)(\d+)(?:-(\d+)(?::(\d+))?)?")


def clip_text(text: str, limit: int = 40) -> str:
    return text if len(text) <= limit else text[:limit] + "..."


# ---- dependency ------------------------------------------------------------------------------

DEPENDENCY_TYPES = (
    "after",
    "afterany",
    "afterburstbuffer",
    "aftercorr",
    "afternotok",
    "afterok",
    "singleton",
    "expand",
)


def dependency_problems(value: str) -> list[str]:
    """What slurmctld would refuse in a dependency expression (sbatch itself accepts any text).

    Summarised like array problems: the first MAX_REPORTED_PROBLEMS (quoting clipped text), then a count."""
    problems: list[str] = []
    more = 0

    def problem(text: str) -> None:
        nonlocal more
        if len(problems) < MAX_REPORTED_PROBLEMS:
            problems.append(text)
        else:
            more += 1

    s = value or ""
    if "," in s and "?" in s:
        problem("mixes ',' (all) and '?' (any) separators")
    for clause in re.split(r"(?a)[,?]", s):
        if not clause:
            problem("empty clause")
            continue
        typ, colon, ids = clause.partition(":")
        if typ == "singleton" and not colon:
            continue
        if typ not in DEPENDENCY_TYPES or not colon:
            if _BARE_JOB_ID.fullmatch(clause):
                continue  # a bare job id means afterany
            problem(f"'{clip_text(clause)}' is not type:jobid[:jobid...]")
            continue
        for jid in ids.split(":"):
            if not _JOB_ID.fullmatch(jid):
                problem(f"'{clip_text(jid)}' in '{clip_text(clause)}' is not a job id")
    if more:
        problems.append(f"and {more} more item(s) like these")
    return problems


_BARE_JOB_ID = re.compile(r"(?a)\d+(_\d+)?")
_JOB_ID = re.compile(r"(?a)\d+(_(\d+|\*))?(\+\d+)?")


# ---- signal ----------------------------------------------------------------------------------

SIGNALS = {
    "HUP": 1,
    "INT": 2,
    "QUIT": 3,
    "ILL": 4,
    "TRAP": 5,
    "ABRT": 6,
    "BUS": 7,
    "FPE": 8,
    "KILL": 9,
    "USR1": 10,
    "SEGV": 11,
    "USR2": 12,
    "PIPE": 13,
    "ALRM": 14,
    "TERM": 15,
    "STKFLT": 16,
    "CHLD": 17,
    "CONT": 18,
    "STOP": 19,
    "TSTP": 20,
    "TTIN": 21,
    "TTOU": 22,
    "URG": 23,
    "XCPU": 24,
    "XFSZ": 25,
    "VTALRM": 26,
    "PROF": 27,
    "WINCH": 28,
    "IO": 29,
    "PWR": 30,
    "SYS": 31,
}


@dataclass(init=False, repr=False, eq=False)
class SignalSpec(FrozenRecord):
    flags: str  # "" or a combination of "R" and "B"
    number: int
    seconds: int  # default 60
    flags_written: str = ""

    @property
    def name(self) -> str:
        for k, v in SIGNALS.items():
            if v == self.number:
                return k
        return str(self.number)


def parse_signal(value: str) -> SignalSpec:
    """get_signal_opts: `[{R|B}...:]sig[@secs]`; sig a number or a name (SIG prefix optional)."""
    s = value or ""
    flags = ""
    if ":" in s:
        flags, _, s = s.partition(":")
        if not flags or any(c not in "RB" for c in flags.translate(_UPPER)):
            raise InvalidValue("Invalid --signal specification")
        written_flags = flags.translate(_UPPER)
        flags = "".join(sorted(set(written_flags), key="RB".index))
    sig, at, secs = s.partition("@")
    if _INT_RE.match(sig):  # strtol: blanks and a sign allowed; kept in 16 bits (-1 is 65535)
        num = wrap_long(to_int(sig)) & 0xFFFF
    else:
        up = sig.translate(_UPPER)
        if up.startswith("SIG"):
            up = up[3:]
        num = SIGNALS.get(up, 0)
    if num <= 0:
        raise InvalidValue("Invalid --signal specification")
    seconds = 60
    if at:
        if not _INT_RE.match(secs) or not 0 <= wrap_long(to_int(secs)) <= 0xFFFF:
            raise InvalidValue("Invalid --signal specification")
        seconds = to_int(secs)
    return SignalSpec(flags, num, seconds, written_flags if flags else "")


# ---- enumerations ----------------------------------------------------------------------------

MAIL_TYPES = (
    "NONE",
    "BEGIN",
    "END",
    "FAIL",
    "REQUEUE",
    "ALL",
    "INVALID_DEPEND",
    "STAGE_OUT",
    "TIME_LIMIT",
    "TIME_LIMIT_90",
    "TIME_LIMIT_80",
    "TIME_LIMIT_50",
    "ARRAY_TASKS",
)
MAIL_ALL = ("INVALID_DEPEND", "BEGIN", "END", "FAIL", "REQUEUE", "STAGE_OUT")


def parse_mail_type(value: str) -> tuple[str, ...]:
    """Comma list, case-insensitive. ALL expands. NONE makes the whole value empty and ends the
    reading of it (`ALL,NONE` and `NONE,bogus` are NONE). Across occurrences types accumulate."""
    out: list[str] = []
    for part in (value or "").split(","):
        up = part.strip(C_SPACE).translate(_UPPER)
        if up == "NONE":
            return ()
        if up not in MAIL_TYPES:
            raise InvalidValue("Invalid --mail-type specification")
        if up == "ALL":
            out.extend(MAIL_ALL)
        else:
            out.append(up)
    return tuple(dict.fromkeys(out))


def parse_exclusive(value: str | None) -> str:
    """--exclusive[=user|mcs]: "exclusive", "user" or "mcs" (22.05 has no `topo`)."""
    if value is None or value == "":
        return "exclusive"
    low = value.translate(_LOWER)
    if low in ("user", "mcs"):
        return low
    raise InvalidValue("Invalid --exclusive specification")


def parse_open_mode(value: str) -> str:
    """First letter decides: a/A append, t/T truncate."""
    if value and value[0] in "aA":
        return "append"
    if value and value[0] in "tT":
        return "truncate"
    raise InvalidValue("Invalid --open-mode specification")


def parse_yes_no(value: str, option: str) -> str:
    low = (value or "").translate(_LOWER)
    if low in ("yes", "no"):
        return low
    raise InvalidValue(f"Invalid --{option} specification")


def parse_no_kill(value: str | None) -> bool:
    if value is None or value.translate(_LOWER) == "set":
        return True
    if value.translate(_LOWER) in ("off", "no"):
        return False
    raise InvalidValue("Invalid --no-kill specification")


def parse_wait_all_nodes(value: str) -> int:
    """parse_int (negative and LONG_MAX refused), kept in 16 bits, then 0 or 1 only:
    4294967296 is 0, 4294967295 (65535) is refused."""
    n = parse_count(value, "wait-all-nodes", allow_zero=True) & 0xFFFF
    if n in (0, 1):
        return n
    raise InvalidValue("Invalid --wait-all-nodes specification")


GRES_FLAGS = ("enforce-binding", "disable-binding")


def parse_gres_flags(value: str) -> str:
    low = (value or "").translate(_LOWER)
    if low in GRES_FLAGS:
        return low
    raise InvalidValue("Invalid --gres-flags specification")


HINTS = ("compute_bound", "memory_bound", "multithread", "nomultithread", "help")


def parse_hint(value: str) -> str:
    for part in (value or "").split(","):
        if part.translate(_LOWER) not in HINTS:
            raise InvalidValue(f'unrecognized --hint argument "{value}", see --hint=help')
    return value


_DIST_NODE = ("block", "cyclic", "arbitrary", "plane", "*")
_DIST_SOCK = ("block", "cyclic", "fcyclic", "*")


def parse_distribution(value: str) -> str:
    s = value or ""
    base, _, flag = s.partition(",")
    if flag and flag.translate(_LOWER) not in ("pack", "nopack"):
        raise InvalidValue("Invalid --distribution specification")
    levels = base.split(":")
    first = levels[0]
    if first.startswith("plane="):
        # the plane size is read with strtol into an int and must be positive ("plane=+4" is 4)
        size = wrap_int(wrap_long(to_int(first[6:]))) if _INT_RE.match(first[6:]) else 0
        if size <= 0 or len(levels) > 1:
            raise InvalidValue("Invalid --distribution specification")
        return f"plane={size}" + (f",{flag}" if flag else "")
    if first not in _DIST_NODE or len(levels) > 3 or any(lv not in _DIST_SOCK for lv in levels[1:]):
        raise InvalidValue("Invalid --distribution specification")
    return ":".join("block" if lv == "*" else lv for lv in levels) + (f",{flag}" if flag else "")  # `*` = default


def plane_size(distribution: str) -> int | None:
    m = re.match(r"(?a)plane=(\d+)", distribution or "")
    return to_int(m.group(1)) if m else None


_UNIT_SECONDS = {
    "": 60,
    "s": 1,
    "sec": 1,
    "second": 1,
    "seconds": 1,
    "m": 60,
    "min": 60,
    "minute": 60,
    "minutes": 60,
    "h": 3600,
    "hr": 3600,
    "hour": 3600,
    "hours": 3600,
    "d": 86400,
    "day": 86400,
    "days": 86400,
    "w": 604800,
    "week": 604800,
    "weeks": 604800,
}


def relative_seconds(value: str) -> int | None:
    """Seconds from now of a `now[+N[unit]]` time (minutes when no unit), else None."""
    m = re.fullmatch(r"(?a)now(?:\+(\d+)([a-z]*))?", (value or "").strip(C_SPACE).translate(_LOWER))
    if not m or (m.group(2) or "") not in _UNIT_SECONDS:
        return None
    return to_int(m.group(1) or "0") * _UNIT_SECONDS[m.group(2) or ""]


def parse_extra_node_info(value: str) -> tuple[int | None, ...]:
    """-B/--extra-node-info `S[:C[:T]]`: each part a count, `min-max` or `*` (the minimum counts)."""
    parts = (value or "").split(":")
    names = ("first", "second", "third")
    if len(parts) > 3:
        raise InvalidValue(f'Invalid numeric value "{value}" for -B.')
    out: list[int | None] = []
    for i, part in enumerate(parts):
        if part == "*":
            out.append(None)
            continue
        out.append(_resource_range_min(part, f"{names[i]} arg of -B"))
    return tuple(out)


_RANGE_RE = re.compile(r"^\s*([+-]?\d+)([kKmM]?)(.*)\Z", re.ASCII | re.DOTALL)


def _resource_range_min(part: str, what: str) -> int:
    """get_resource_arg_range: strtol (k/m suffixes), then `-max` may follow; a negative value is
    invalid and one above INT_MAX is "to big"."""
    m = _RANGE_RE.match(part)
    if not m or (m.group(3) and not m.group(3).startswith("-")):
        raise InvalidValue(f'Invalid numeric value "{part}" for {what}.')
    n = wrap_long(to_int(m.group(1)))
    n = wrap_long(n * {"": 1, "k": 1024, "m": 1048576}[m.group(2).translate(_LOWER)], clamp=False)
    if n < 0:
        raise InvalidValue(f'Invalid numeric value "{part}" for {what}.')
    if n > 2**31 - 1:
        raise InvalidValue(f"Numeric argument ({n}) to big for {what}.")
    rest = m.group(3)[1:] if m.group(3) else None
    if rest is not None and rest != "*" and not re.fullmatch(r"(?a)\d+", rest):
        raise InvalidValue(f'Invalid numeric value "{part}" for {what}.')
    return n


# ---- less common options, rendered as sbatch merges them ------------------------------------


def parse_delay_boot(value: str) -> str:
    """--delay-boot: time_str2secs (time grammar, seconds kept, C int arithmetic), stored unsigned
    and rendered D-HH:MM:SS; -1/INFINITE/UNLIMITED is UNLIMITED (checked on the oracle)."""
    s = value or ""
    if _is_unlimited_word(s):
        return "UNLIMITED"
    if not s or not _valid_timespec(s):
        raise InvalidValue("Invalid --delay-boot specification")
    try:
        if s.startswith("-"):  # -D days: seconds in C int arithmetic, stored unsigned (oracle: -2 is 49708-06:28:16)
            stored = _negative_days_seconds(s[1:], "delay-boot") % 2**32
        else:
            stored = _time_spec_seconds(s, "delay-boot") % 2**32
    except InvalidValue:
        raise InvalidValue("Invalid --delay-boot specification") from None
    if stored == 0xFFFFFFFE:
        raise InvalidValue("Invalid --delay-boot specification")
    return "UNLIMITED" if stored == 0xFFFFFFFF else format_seconds(stored)


_PROFILE = ("energy", "lustre", "network", "task")


def parse_profile(value: str) -> str:
    """--profile=all|none|[energy[,lustre[,network[,task]]]]; rendered as acct_gather names."""
    parts = [p.strip(C_SPACE).translate(_LOWER) for p in (value or "").split(",")]
    if parts == ["none"]:
        return "None"
    chosen: set[str] = set()
    for p in parts:
        if p == "all":
            chosen.update(_PROFILE)
        elif p in _PROFILE:
            chosen.add(p)
        else:
            raise InvalidValue(f"invalid --profile={value} option")
    return ",".join(p.capitalize() for p in _PROFILE if p in chosen)


_CPU_FREQ = {"low": "Low", "medium": "Medium", "high": "High", "highm1": "HighM1"}
_CPU_GOV = {
    "conservative": "Conservative",
    "ondemand": "OnDemand",
    "performance": "Performance",
    "powersave": "PowerSave",
    "userspace": "UserSpace",
    "schedutil": "SchedUtil",
}


def parse_cpu_freq(value: str) -> str:
    """--cpu-freq=p1[-p2[:gov]] or a governor; rendered as Slurm names it."""

    def one(tok):
        low = tok.translate(_LOWER)
        if low in _CPU_FREQ:
            return _CPU_FREQ[low]
        if is_digits(low):
            return tok
        raise InvalidValue(f'unrecognized --cpu-freq argument "{tok}"')

    s = value or ""
    if s.translate(_LOWER) in _CPU_GOV:
        return _CPU_GOV[s.translate(_LOWER)]
    rng, colon, gov = s.partition(":")
    lo, dash, hi = rng.partition("-")
    out = one(lo) + (f"-{one(hi)}" if dash else "")
    if colon:
        if gov.translate(_LOWER) not in _CPU_GOV:
            raise InvalidValue(f'unrecognized --cpu-freq argument "{gov}"')
        out += ":" + _CPU_GOV[gov.translate(_LOWER)]
    return out


def parse_power(value: str) -> tuple[str, bool]:
    """--power=level: ("LEVEL", True); other words are ignored by sbatch with an error message."""
    if (value or "").strip(C_SPACE).translate(_LOWER) == "level":
        return "LEVEL", True
    return "unset", False


def parse_switches(value: str) -> str:
    """--switches=count[@max-time]: rendered count@HH:MM:SS."""
    count, at, wait = (value or "").partition("@")
    n = parse_count(count, "switches", allow_zero=True)  # a C int: 4294967296 is 0
    text = "unset" if n == -1 else str(n)  # -1 (4294967295) reads back as unset
    if not at:
        return text
    secs = parse_time(wait, "switches")
    return f"{text}@{format_time(secs) if secs else '00:00:00'}"


_MEM_BIND_WORDS = ("none", "no", "local", "rank", "sort", "nosort", "prefer", "verbose", "v", "quiet", "q", "help")


def parse_mem_bind(value: str) -> str:
    for tok in (value or "").split(","):
        low = tok.translate(_LOWER)
        if low in _MEM_BIND_WORDS or re.fullmatch(r"(?a)(map_mem|mask_mem|map_ldom|mask_ldom)[:=].+", low):
            continue
        raise InvalidValue(f'unrecognized --mem-bind argument "{value}"')
    return value


def parse_gpu_bind(value: str) -> str:
    s = value or ""
    rest = s[8:] if s.translate(_LOWER).startswith("verbose,") else s
    low = rest.translate(_LOWER)
    if low in ("closest", "none") or re.fullmatch(r"(?a)(map_gpu|mask_gpu):.+|(single|per_task):\d+", low):
        return s
    raise InvalidValue(f"Invalid --gpu-bind argument: gpu:{s}")


def parse_acctg_freq(value: str) -> str:
    s = value or ""
    for tok in s.split(","):
        if re.fullmatch(r"(?a)\d+", tok) or re.fullmatch(
            r"(?a)(task|energy|network|filesystem)=\d+", tok.translate(_LOWER)
        ):
            continue
        raise InvalidValue(f"Invalid --acctg-freq specification: {s}")
    return s


_BEGIN_WORDS = ("now", "today", "tomorrow", "midnight", "noon", "elevenses", "fika", "teatime")
_BEGIN_UNITS = (
    "seconds",
    "minutes",
    "hours",
    "days",
    "weeks",
    "second",
    "minute",
    "hour",
    "day",
    "week",
    "sec",
    "min",
    "hr",
    "s",
    "m",
    "h",
    "d",
    "w",
    "",
)


def begin_is_valid(value: str) -> bool:
    """parse_time's grammar for --begin/--deadline (absolute dates, HH:MM[:SS][AM|PM], now+N[units],
    and the words today, tomorrow, midnight, noon, elevenses, fika, teatime)."""
    s = (value or "").strip(C_SPACE).translate(_LOWER)
    if not s:
        return False
    m = re.fullmatch(r"(?a)now(?:\+(\d+)([a-z]*))?", s)
    if m:
        return m.group(1) is None or m.group(2) in _BEGIN_UNITS
    if s in _BEGIN_WORDS:
        return True
    if re.fullmatch(r"(?a)\d{4}-\d{1,2}-\d{1,2}(t\d{1,2}:\d{2}(:\d{2})?)?", s):
        return True
    if re.fullmatch(r"(?a)\d{1,2}:\d{2}(:\d{2})?(am|pm)?", s):
        return True
    if re.fullmatch(r"(?a)\d{1,2}/\d{1,2}(/\d{2,4})?(-\d{1,2}:\d{2}(:\d{2})?)?", s):
        return True
    return False


def normalise_dependency(value: str) -> str:
    """The dependency as slurmctld records it: a clause that is only a job id means afterany."""
    sep = "?" if "?" in (value or "") and "," not in (value or "") else ","
    out = []
    for clause in (value or "").split(sep):
        if re.fullmatch(r"(?a)\d+(_\d+)?", clause):
            clause = f"afterany:{clause}"
        out.append(clause)
    return sep.join(out)
