"""Slurm job name -> TrainJob metadata.name: an RFC 1035 label (`[a-z]([-a-z0-9]*[a-z0-9])?`, <= 63).

Deterministic: the same job name always gives the same TrainJob name. When the name had to change
(case, characters, length, leading digit) a short hash of the original is appended, so two Slurm names
that sanitize alike ("Train_A" / "train-a") do not collide. The original name and the source path
are kept in annotations.
"""

from __future__ import annotations

import re

MAX = 63
ANNOTATION_JOB_NAME = "slurm2kf.io/job-name"
ANNOTATION_SOURCE = "slurm2kf.io/source"
ANNOTATION_ARRAY_INDEX = "slurm2kf.io/array-index"
_VALID = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")


def _hash(text: str) -> str:
    import hashlib  # only for names that must be shortened (OpenSSL's module is slow to load)

    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:6]


def is_valid(name: str) -> bool:
    return len(name) <= MAX and bool(_VALID.match(name))


_MEMO: list = [None, ""]  # ((job_name, suffix), name) of the last call: the plan asks twice per job


def trainjob_name(job_name: str, suffix: str = "") -> str:
    """The TrainJob name for a Slurm job name; `suffix` (e.g. an array index) is appended after a dash."""
    key = (job_name, suffix)
    if _MEMO[0] == key:
        return _MEMO[1]
    name = _trainjob_name(job_name, suffix)
    _MEMO[:] = [key, name]
    return name


def _trainjob_name(job_name: str, suffix: str) -> str:
    tail = f"-{suffix}" if suffix else ""
    if is_valid(job_name + tail):
        return job_name + tail
    s = job_name.lower()
    s = re.sub(r"[^a-z0-9-]+", "-", s)
    s = re.sub(r"-{2,}", "-", s).strip("-")
    s = re.sub(r"^[^a-z]+", "", s)
    if not s:
        s = "slurm-job"
    tag = "-" + _hash(job_name)
    if s == job_name:
        tag = ""
    room = MAX - len(tag) - len(tail)
    if len(s) > room:
        s = s[:room].rstrip("-")
        tag = "-" + _hash(job_name)
        room = MAX - len(tag) - len(tail)
        s = s[:room].rstrip("-")
    return s + tag + tail
