"""`slurm2kf profile init`: survey a repository of job scripts for what a site profile must map.

Every job script (a `#!` first line and an `#SBATCH`/`#SLURM` header line) is read and resolved by the
same stages `convert` uses; the survey counts, per script, each partition, QoS, account, GPU type,
constraint feature, module, environment, container image and path prefix it uses.
"""

from __future__ import annotations

import os
import re
from collections import OrderedDict
from dataclasses import dataclass, field

from translator.profile.usage import (
    SYSTEM_DIRS,
    absolute_prefixes,
    assigned_names,
    constraint_features,
    environment_items,
    script_texts,
    variable_prefixes,
)

MAX_SCRIPT_BYTES = 1 << 20
F_UNREADABLE_FILE = "F528"  # profile init: a file under DIR cannot be read (warning)
_SKIP_DIRS = {".git", ".hg", ".svn", "__pycache__", "node_modules", ".venv", "venv", ".tox"}
_HEADER_DIRECTIVE = re.compile(rb"^[ \t]*#(?:SBATCH|SLURM)\b", re.M)


@dataclass
class Tally:
    """How many scripts use a name, and the first few of them."""

    count: int = 0
    examples: list[str] = field(default_factory=list)
    notes: dict[str, int] = field(default_factory=dict)  # e.g. {"--exclusive": 3}

    def add(self, rel: str) -> None:
        self.count += 1
        if len(self.examples) < 3:
            self.examples.append(rel)

    def note(self, what: str) -> None:
        self.notes[what] = self.notes.get(what, 0) + 1


@dataclass
class RepoUsage:
    root: str
    scripts: int = 0
    unreadable: list[str] = field(default_factory=list)
    unreadable_files: list[tuple[str, str]] = field(default_factory=list)  # (rel path, reason): not read
    partitions: dict[str, Tally] = field(default_factory=OrderedDict)
    qos: dict[str, Tally] = field(default_factory=OrderedDict)
    accounts: dict[str, Tally] = field(default_factory=OrderedDict)
    gpu_types: dict[str, Tally] = field(default_factory=OrderedDict)
    features: dict[str, Tally] = field(default_factory=OrderedDict)
    environments: dict[tuple[str, str], Tally] = field(default_factory=OrderedDict)  # (kind, name)
    paths: dict[str, Tally] = field(default_factory=OrderedDict)  # /scratch, $SCRATCH
    launchers: dict[tuple[str, str], Tally] = field(default_factory=OrderedDict)  # (family, runtime)
    no_partition: int = 0

    def tally(self, table: dict, key, rel: str) -> Tally:
        t = table.get(key)
        if t is None:
            t = table[key] = Tally()
        t.add(rel)
        return t


def looks_like_job_script(data: bytes) -> bool:
    return data.startswith(b"#!") and b"\0" not in data[:8192] and _HEADER_DIRECTIVE.search(data[:65536]) is not None


def iter_job_scripts(root: str, unreadable: list[tuple[str, str]] | None = None):
    """(relative path, absolute path, bytes) of every job script under root, in sorted order.

    Files are read with the shared guard (no symlink followed, only regular files, size cap); a file
    that cannot be read is added to `unreadable` as (relative path, reason)."""
    from translator.fsio import SPECIAL, SYMLINK, TOO_LARGE, UserFileError, read_user_file

    root = os.path.abspath(root)
    for directory, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d not in _SKIP_DIRS and not d.startswith("."))
        for name in sorted(files):
            path = os.path.join(directory, name)
            rel = os.path.relpath(path, root).replace(os.sep, "/")
            try:
                data = read_user_file(path, MAX_SCRIPT_BYTES, follow_symlinks=False)
            except UserFileError as exc:
                if exc.kind not in (SYMLINK, SPECIAL, TOO_LARGE) and unreadable is not None:
                    why = exc.message[len(path) + 2 :] if exc.message.startswith(path + ": ") else exc.message
                    unreadable.append((rel, why))
                continue
            if looks_like_job_script(data):
                yield rel, path, data


def _read(path: str, data: bytes):
    """(Script, SlurmJob or None) through the converter's own stages."""
    from translator.read import read_script

    script = read_script(data, path)
    try:
        from translator.slurm.resolve import resolve
    except ImportError:
        return script, None
    try:
        return script, resolve(script, env={}, cli_args=())
    except Exception:  # a resolver bug must not stop the survey of a whole repository
        return script, None


_FALLBACK_OPTS = {
    "-p": "partition",
    "--partition": "partition",
    "-q": "qos",
    "--qos": "qos",
    "-A": "account",
    "--account": "account",
    "-C": "constraint",
    "--constraint": "constraint",
    "--gres": "gres",
    "--gpus": "gpus",
    "-G": "gpus",
    "--gpus-per-node": "gpus",
}


def _fallback_fields(script) -> dict[str, str]:
    """Directive values when the resolver is unavailable: last `--opt=value`/`--opt value`/`-pvalue` wins."""
    out: dict[str, str] = {}
    for d in script.directives:
        words = list(d.words)
        i = 0
        while i < len(words):
            w = words[i]
            name, value = w, None
            if w.startswith("--") and "=" in w:
                name, value = w.split("=", 1)
            elif len(w) > 2 and w[0] == "-" and w[1] != "-" and w[:2] in _FALLBACK_OPTS:
                name, value = w[:2], w[2:]
            if name in _FALLBACK_OPTS:
                if value is None and i + 1 < len(words):
                    i += 1
                    value = words[i]
                if value is not None:
                    out[_FALLBACK_OPTS[name]] = value
            i += 1
    return out


def _launch(script, job) -> tuple[str, str] | None:
    """(launcher family, the runtime the converter picks for it), as `convert` would decide."""
    if job is None:
        return None
    try:
        from translator.pipeline import ConvertSettings
        from translator.plan.build import build_plans

        plans = build_plans(script, job, ConvertSettings())
    except Exception:  # the survey goes on; the script is still counted for everything else
        return None
    return (plans[0].launcher, plans[0].runtime) if plans else None


def _gpu_type_of(spec: str | None) -> str | None:
    """`gpu:a100:4` / `a100:4` / `gpu:a100` -> a100 (the first GPU entry's type)."""
    if not spec:
        return None
    for part in spec.split(","):
        bits = part.split(":")
        if bits[0].startswith("gres/"):
            bits[0] = bits[0][5:]
        if bits[0] == "gpu":
            bits = bits[1:]
        if len(bits) >= 2 or (len(bits) == 1 and not bits[0].isdigit()):
            if bits and not bits[0].isdigit():
                return bits[0]
    return None


def survey(root: str) -> RepoUsage:
    usage = RepoUsage(root=root)
    for rel, path, data in iter_job_scripts(root, usage.unreadable_files):
        try:
            script, job = _read(path, data)
        except Exception:
            usage.unreadable.append(rel)
            continue
        usage.scripts += 1
        if job is not None:
            f = job.fields
            partition, qos, account = f.partition, f.qos, f.account
            gpu_type, constraint = f.gpu_type, f.constraint
            exclusive, whole_mem = bool(f.exclusive), f.mem_per_node_mb == 0
        else:
            ff = _fallback_fields(script)
            partition, qos, account = ff.get("partition"), ff.get("qos"), ff.get("account")
            gpu_type = _gpu_type_of(ff.get("gres")) or _gpu_type_of(ff.get("gpus"))
            constraint, exclusive, whole_mem = ff.get("constraint"), False, False
        if partition:
            for name in dict.fromkeys(p.strip() for p in partition.split(",") if p.strip()):
                t = usage.tally(usage.partitions, name, rel)
                if exclusive:
                    t.note("--exclusive")
                if whole_mem:
                    t.note("--mem=0")
                if gpu_type:
                    t.note(f"GPU type {gpu_type}")
        else:
            usage.no_partition += 1
        if qos:
            usage.tally(usage.qos, qos, rel)
        if account:
            usage.tally(usage.accounts, account, rel)
        if gpu_type:
            usage.tally(usage.gpu_types, gpu_type, rel)
        for feature in dict.fromkeys(constraint_features(constraint)[0]):
            usage.tally(usage.features, feature, rel)
        for item in {(i.kind, i.name): i for i in environment_items(script)}:
            usage.tally(usage.environments, item, rel)
        launch = _launch(script, job)
        if launch is not None:
            usage.tally(usage.launchers, launch, rel)
        texts = script_texts(script, job)
        prefixes = [p for p, _ in absolute_prefixes(texts) if p not in SYSTEM_DIRS]
        # site variables are upper case by convention ($SCRATCH, $WORK); `$rundir/x` is a script's own
        # variable (set in a sourced file or a function), not a file system to mount
        prefixes += [p for p, _ in variable_prefixes(texts, assigned_names(script)) if p[1:].isupper()]
        for prefix in dict.fromkeys(prefixes):
            usage.tally(usage.paths, prefix, rel)
    return usage
