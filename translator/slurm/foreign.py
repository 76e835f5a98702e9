"""`#PBS` and `#BSUB` lines, translated as sbatch's wrapper translation does (sbatch xlate).

sbatch scans the whole script (not only the header; it gives up after 100 lines that do not start
with `#`), uses `#BSUB` lines if there are any and `#PBS` lines otherwise, and applies the
translated options AFTER the `#SBATCH` directives and before the `SBATCH_*` environment, so they
override `#SBATCH`. `--ignore-pbs` (command line or `#SBATCH` line) or `SBATCH_IGNORE_PBS` in the
environment turns this off. Checked against sbatch 22.05.8 with the slurm-oracle.

The result is a list of applications (canonical sbatch option, value) for the resolver, plus the
problems sbatch reports. Only what sbatch itself translates is translated; the rest of the
PBS/BSUB options are ignored by sbatch and reported as such.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from collections.abc import Sequence

from translator.slurm.values import _LOWER, _UPPER, is_digits as _is_digits, to_int

PBS, BSUB = "PBS", "BSUB"


@dataclass(frozen=True)
class Translated:
    option: str  # canonical sbatch option
    value: str | None
    line: int
    written: str  # the PBS/BSUB text it came from
    validate: bool = True  # False: sbatch stores the value without its usual checks
    append: bool = False  # append to the current value with "," (e.g. PBS -v, naccelerators)


@dataclass
class Translation:
    family: str | None = None
    applied: list[Translated] = field(default_factory=list)
    errors: list[tuple[int, str]] = field(default_factory=list)  # sbatch exits
    ignored: list[tuple[int, str]] = field(default_factory=list)  # options sbatch ignores


def split_words(text: str) -> list[str]:
    """Words of a wrapper line, split as sbatch's get_argument splits `#SBATCH` lines."""
    words: list[str] = []
    i, n = 0, len(text)
    while i < n:
        while i < n and text[i].isspace():
            i += 1
        if i >= n:
            break
        buf: list[str] = []
        quote = ""
        got = False
        while i < n and (quote or not text[i].isspace()):
            ch = text[i]
            if ch == "\\" and i + 1 < n:
                buf.append(text[i + 1])
                i += 2
                got = True
                continue
            if quote:
                if ch == quote:
                    quote = ""
                    i += 1
                    continue
            elif ch in "\"'":
                quote = ch
                i += 1
                continue
            elif ch == "#":
                i = n
                break
            buf.append(ch)
            got = True
            i += 1
        if not got:
            break
        words.append("".join(buf))
    return words


def _getopt(words: Sequence[tuple[str, int]], optstring: str, longs: dict):
    """Small getopt_long for the wrapper option sets (leading `+`: stop at a non-option)."""
    takes = {}
    i = 0
    while i < len(optstring):
        ch = optstring[i]
        if i + 1 < len(optstring) and optstring[i + 1] == ":":
            takes[ch] = True
            i += 2
        else:
            takes[ch] = False
            i += 1
    out: list[tuple[str, str | None, int, str]] = []  # (option letter, value, line, as written)
    errors: list[tuple[int, str]] = []
    k = 0
    while k < len(words):
        w, line = words[k]
        if not w.startswith("-") or w == "-":
            errors.append((line, f"Invalid argument: {w}"))
            break
        if w == "--":
            k += 1
            if k < len(words):
                errors.append((words[k][1], f"Invalid argument: {words[k][0]}"))
            break
        if w.startswith("--"):
            name, eq, val = w[2:].partition("=")
            cands = [n for n in longs if n == name] or [n for n in longs if n.startswith(name)]
            if len({longs[c] for c in cands}) != 1:
                errors.append((line, f"Unrecognized command line parameter {w}"))
                k += 1
                continue
            ch = longs[cands[0]]
            if takes.get(ch):
                if not eq:
                    if k + 1 >= len(words):
                        errors.append((line, f"option '{w}' requires an argument"))
                        break
                    k += 1
                    val = words[k][0]
                out.append((ch, val, line, w if eq else f"{w} {val}"))
            else:
                out.append((ch, None, line, w))
            k += 1
            continue
        j = 1
        consumed = False
        while j < len(w):
            ch = w[j]
            if ch not in takes:
                errors.append((line, f"Unrecognized command line parameter {ch}"))
                j += 1
                continue
            if takes[ch]:
                rest = w[j + 1 :]
                if rest:
                    out.append((ch, rest, line, w))
                elif k + 1 < len(words):
                    out.append((ch, words[k + 1][0], line, f"{w} {words[k + 1][0]}"))
                    consumed = True
                else:
                    errors.append((line, f"option requires an argument -- '{ch}'"))
                break
            out.append((ch, None, line, f"-{ch}"))
            j += 1
        k += 2 if consumed else 1
    return out, errors


_PBS_OPTS = "a:A:c:C:e:hIj:J:k:l:m:M:N:o:p:q:r:S:t:u:v:VW:z"
_PBS_LONG = {
    "start_time": "a",
    "account": "A",
    "checkpoint": "c",
    "working_dir": "C",
    "error": "e",
    "hold": "h",
    "interactive": "I",
    "join": "j",
    "job_array": "J",
    "keep": "k",
    "resource_list": "l",
    "mail_options": "m",
    "mail_user_list": "M",
    "job_name": "N",
    "out": "o",
    "priority": "p",
    "destination": "q",
    "rerunable": "r",
    "script_path": "S",
    "array": "t",
    "running_user": "u",
    "variable_list": "v",
    "all_env": "V",
    "attributes": "W",
    "no_std": "z",
}
_BSUB_OPTS = "c:e:J:m:M:n:o:q:W:x"
_BSUB_LONG = {
    "cwd": "c",
    "error_file": "e",
    "job_name": "J",
    "hostname": "m",
    "memory_limit": "M",
    "output_file": "o",
    "queue_name": "q",
    "time": "W",
    "exclusive": "x",
}


def translate(lines: Sequence[tuple[int, str]], family: str) -> Translation:
    """Translate the `#PBS` or `#BSUB` lines (line number, full text) of one family."""
    tr = Translation(family=family)
    magic = "#" + family
    words: list[tuple[str, int]] = []
    for number, text in lines:
        for w in split_words(text[len(magic) :]):
            if family == BSUB and w == "-cwd":
                w = "-c"
            words.append((w, number))
    if family == PBS:
        opts, errors = _getopt(words, _PBS_OPTS, _PBS_LONG)
    else:
        opts, errors = _getopt(words, _BSUB_OPTS, _BSUB_LONG)
    tr.errors.extend(errors)
    for ch, val, line, written in opts:
        if family == PBS:
            _pbs_option(tr, ch, val, line, f"#PBS {written}")
        else:
            _bsub_option(tr, ch, val, line, f"#BSUB {written}")
    return tr


def _add(tr: Translation, option: str, value: str | None, line: int, written: str, **kw) -> None:
    tr.applied.append(Translated(option, value, line, written, **kw))


def _pbs_option(tr: Translation, ch: str, val: str | None, line: int, written: str) -> None:
    if ch == "a":
        _add(tr, "begin", val, line, written)
    elif ch == "A":
        _add(tr, "account", val, line, written)
    elif ch in ("e", "o"):
        out = "/dev/null" if (val or "").translate(_LOWER) == "none" else val
        _add(tr, "error" if ch == "e" else "output", out, line, written)
    elif ch == "h":
        _add(tr, "hold", None, line, written)
    elif ch in ("J", "t"):
        _add(tr, "array", val, line, written, validate=False)
    elif ch == "l":
        _pbs_resources(tr, val or "", line, written)
    elif ch == "m":
        v = val or ""
        types = []
        if re.search(r"(?a)[bB]", v):
            types.append("BEGIN")
        if re.search(r"(?a)[eE]", v):
            types.append("END")
        if re.search(r"(?a)[aA]", v):
            types.append("FAIL")
        if re.search(r"(?a)[nN]", v):
            types = ["NONE"]
        elif not types:
            tr.errors.append((line, f"-m={v} invalid"))
            return
        _add(tr, "mail-type", ",".join(types), line, written)
    elif ch == "M":
        _add(tr, "mail-user", val, line, written)
    elif ch == "N":
        _add(tr, "job-name", val, line, written)
    elif ch == "p":
        _add(tr, "nice", val, line, written, validate=False)
    elif ch == "q":
        _add(tr, "partition", val, line, written)
    elif ch == "v":
        _add(tr, "export", val, line, written, append=True)
    elif ch == "W":
        v = val or ""
        if v.translate(_LOWER).startswith("depend="):
            _add(tr, "dependency", v[7:], line, written)
        elif not v.translate(_LOWER).startswith("umask="):
            tr.ignored.append((line, f"`{written}`: sbatch ignores PBS attributes {v}"))
    else:
        tr.ignored.append((line, f"`{written}`: sbatch ignores this PBS option"))


def _value(rl: str, i: int, sep: str) -> tuple[str, int]:
    j = i
    while j < len(rl) and rl[j] != sep:
        j += 1
    return rl[i:j], (j + 1 if j < len(rl) else j)


def _skip_option(rl: str, i: int) -> int:
    while i < len(rl) and rl[i] != ",":
        i += 1
    return i + 1 if i < len(rl) else i


def _pbs_resources(tr: Translation, rl: str, line: int, written: str) -> None:
    i = 0
    gpus = 0
    pro_flag = 0
    ncpus = mpiprocs = None
    skip = ("arch=", "host=", "opsys=", "other=", "pmem=", "pvmem=", "software=", "vmem=")
    while i < len(rl):
        rest = rl[i:]
        low = rest.translate(_LOWER)
        if low.startswith("accelerator="):
            i += 12
            if rl[i : i + 4].translate(_LOWER) == "true" and gpus < 1:
                gpus = 1
        elif rest.startswith(("cput=", "pcput=", "walltime=")):
            i += rest.index("=") + 1
            v, i = _value(rl, i, ",")
            _add(tr, "time", v, line, written, validate=True)
        elif rest.startswith("file="):
            v, i = _value(rl, i + 5, ",")
            if v[-1:].translate(_UPPER) == "B":
                v = v[:-1]
            _add(tr, "tmp", v, line, written)
        elif rest.startswith("mem="):
            v, i = _value(rl, i + 4, ",")
            if v[-1:].translate(_UPPER) == "B":
                v = v[:-1]
            _add(tr, "mem", v, line, written)
        elif low.startswith("mpiprocs="):
            v, i = _value(rl, i + 9, ":")
            pro_flag |= 4
            mpiprocs = v
            _add(tr, "ntasks-per-node", v, line, written)
        elif low.startswith("naccelerators="):
            v, i = _value(rl, i + 14, ",")
            if _is_digits(v) and to_int(v) > 0:
                gpus = to_int(v)
            else:
                tr.errors.append((line, f'Invalid numeric value "{v}" for naccelerators.'))
        elif low.startswith("ncpus="):
            v, i = _value(rl, i + 6, ":")
            pro_flag |= 2
            ncpus = v
            _add(tr, "mincpus", v, line, written)
        elif rest.startswith("nice="):
            v, i = _value(rl, i + 5, ",")
            _add(tr, "nice", v, line, written, validate=False)
        elif rest.startswith("nodes="):
            v, i = _value(rl, i + 6, ",")
            _pbs_nodes(tr, v, line, written)
        elif rest.startswith("proc="):
            v, i = _value(rl, i + 5, ",")
            i = _skip_option(rl, i)
            _add(tr, "constraint", v, line, written, append=True)
        elif low.startswith("select="):
            v, i = _value(rl, i + 7, ":")
            pro_flag |= 1
            _add(tr, "nodes", v, line, written)
        elif rest.startswith(skip):
            i = _skip_option(rl, i + rest.index("=") + 1)
        else:
            i += 1
    if (
        pro_flag == 7
        and ncpus
        and mpiprocs
        and _is_digits(ncpus)
        and _is_digits(mpiprocs)
        and to_int(mpiprocs)
        and to_int(ncpus) > to_int(mpiprocs)
    ):
        _add(tr, "cpus-per-task", str(to_int(ncpus) // to_int(mpiprocs)), line, written)
    if gpus > 0:
        _add(tr, "gres", f"gpu:{gpus}", line, written, append=True)


def _pbs_nodes(tr: Translation, spec: str, line: int, written: str) -> None:
    node_cnt = ppn = 0
    hosts: list[str] = []
    gpus = None
    for part in re.split(r"(?a)[+:]", spec):
        if part.startswith("ppn="):
            m = re.match(r"(?a)\d+", part[4:])
            ppn += to_int(m.group(0)) if m else 0
        elif part.startswith("gpus="):  # Torque: GPUs per node
            m = re.match(r"(?a)\d+", part[5:])
            gpus = (gpus or 0) + (to_int(m.group(0)) if m else 0)
        elif (m := re.match(r"(?a)\d+", part)) is not None:  # a count first: the node count
            node_cnt += to_int(m.group(0))
        elif part[:1].isascii() and part[:1].isalpha():
            hosts.append(part)
    if node_cnt:
        _add(tr, "nodes", str(node_cnt), line, written)
    if ppn:
        _add(tr, "ntasks", str(ppn * (node_cnt or 1)), line, written)
    if hosts:
        _add(tr, "nodelist", ",".join(hosts), line, written)
    if gpus:
        _add(tr, "gpus-per-node", str(gpus), line, written)


def _bsub_option(tr: Translation, ch: str, val: str | None, line: int, written: str) -> None:
    if ch == "c":
        _add(tr, "chdir", val, line, written)
    elif ch in ("e", "o"):
        out = "/dev/null" if ch == "e" and (val or "").translate(_LOWER) == "none" else val
        _add(tr, "error" if ch == "e" else "output", out, line, written)
    elif ch == "J":
        _add(tr, "job-name", val, line, written)
    elif ch == "m":
        _add(tr, "nodelist", (val or "").replace(" ", ","), line, written)
    elif ch == "M":
        # the LSF memory limit is in KiB; sbatch stores it per CPU in MiB, rounded up
        m = re.match(r"(?a)\s*\+?(\d+)", val or "")
        kib = to_int(m.group(1)) if m else 0
        _add(tr, "mem-per-cpu", str((kib + 1023) // 1024), line, written)
    elif ch == "n":
        v = val or ""
        if "," in v:
            v = v.split(",", 1)[1]
            if not v:
                tr.errors.append((line, f"#BSUB -n format not correct given: '{val}'"))
                return
        _add(tr, "ntasks", v, line, written)
    elif ch == "q":
        _add(tr, "partition", val, line, written)
    elif ch == "W":
        # read with sbatch's own time grammar: `-W 2:30` is 2 min 30 s (LSF meant 2.5 hours)
        _add(tr, "time", val, line, written)
    elif ch == "x":
        _add(tr, "exclusive", None, line, written)
