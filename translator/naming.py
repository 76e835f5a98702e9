"""Slurm job name -> TrainJob metadata.name: an RFC 1035 label short enough for every pod it makes.

The TrainJob CRD accepts names of up to 63 characters, but the JobSet the Trainer controller creates
(named like the TrainJob) is refused by JobSet's validating webhook when its longest pod name would not
be a DNS-1035 label: kubernetes-sigs/jobset pkg/webhooks/jobset_webhook.go (ValidateCreate) checks
``<jobset>-<replicatedJob>-<last job index>-<last pod index>`` plus ``-abcde`` (the 5 random characters
the Job controller appends to a pod name) against 63 characters. The TrainJob is then stored but never
gets a JobSet or pods (trainer #2735). So a name must leave room for ``-<job>-<j>-<p>`` and 6 more
characters: 47 for a 16-node job on torch-distributed (``-node-0-15-abcde``).

Deterministic: the same job name (and room) always gives the same TrainJob name. When the name had to
change (case, characters, length, leading digit) a short hash of the original is appended, so two Slurm
names that sanitize or truncate alike ("Train_A" / "train-a") do not collide. The original name and the
source path are kept in annotations.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

MAX = 63  # a DNS label (RFC 1035 / RFC 1123)
POD_RANDOM = 6  # "-" + the 5 random characters of a pod name (JobSet's webhook checks name + "-abcde")
GENERATED = 5  # characters the API server appends to metadata.generateName
ANNOTATION_JOB_NAME = "slurm2kf.io/job-name"
ANNOTATION_SOURCE = "slurm2kf.io/source"
ANNOTATION_ARRAY_INDEX = "slurm2kf.io/array-index"
_VALID = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")


def _hash(text: str) -> str:
    import hashlib  # only for names that must be shortened (OpenSSL's module is slow to load)

    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:6]


def is_valid(name: str, room: int = MAX) -> bool:
    return len(name) <= min(room, MAX) and bool(_VALID.match(name))


def pod_suffix(job: str, pods: int, replicas: int = 1) -> str:
    """What JobSet adds to the TrainJob name for the last pod of a replicatedJob: ``-node-0-15``."""
    return f"-{job}-{max(replicas, 1) - 1}-{max(pods, 1) - 1}"


def longest_pod_name(name: str, pods_per_job: Mapping[str, int]) -> str:
    """The longest pod name (with JobSet's placeholder ``-abcde`` for the random part) of ``name``'s pods."""
    suffixes = [pod_suffix(job, pods) for job, pods in pods_per_job.items()] or [pod_suffix("node", 1)]
    return name + max(suffixes, key=len) + "-abcde"


def name_room(pods_per_job: Mapping[str, int], *, generated: bool = False) -> int:
    """The longest TrainJob name whose pods all get valid names (``generated``: the length of a
    generateName base, to which the API server appends 5 characters)."""
    room = MAX - (len(longest_pod_name("", pods_per_job)))
    return min(MAX, room) - (GENERATED if generated else 0)


def trainjob_name(job_name: str, suffix: str = "", room: int = MAX) -> str:
    """The TrainJob name for a Slurm job name, at most ``room`` characters; ``suffix`` (e.g. an array
    index) is appended after a dash."""
    room = max(16, min(room, MAX))  # a runtime with very long job names still gets a readable name
    tail = f"-{suffix}" if suffix else ""
    if is_valid(job_name + tail, room):
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
    if len(s) > room - len(tag) - len(tail):
        tag = "-" + _hash(job_name)
        s = s[: room - len(tag) - len(tail)].rstrip("-")
    return s + tag + tail
