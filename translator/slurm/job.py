"""The Slurm job as sbatch resolves it, and its `inspect --json` contract form."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, Optional, Tuple

from translator.diagnostics import Diagnostic
from translator.records import FrozenRecord, _set

# The `job` keys of the `inspect --json` contract, in order.
JOB_FIELDS = (
    "job_name", "partition", "account", "qos", "nodes_min", "nodes_max", "ntasks", "ntasks_per_node",
    "cpus_per_task", "gpus_per_node", "gpus_per_task", "gpus_total", "gpu_type", "mem_per_node_mb",
    "mem_per_cpu_mb", "mem_per_gpu_mb", "time_limit_seconds", "array", "array_throttle", "dependency",
    "exclusive", "constraint", "output", "error", "chdir", "requeue", "signal", "export", "comment",
)


@dataclass(init=False, repr=False, eq=False)
class JobFields(FrozenRecord):
    """Resolved values of one job component. None = not set by the script (job_name excepted)."""

    job_name: str = ""
    partition: Optional[str] = None
    account: Optional[str] = None
    qos: Optional[str] = None
    nodes_min: Optional[int] = None
    nodes_max: Optional[int] = None
    ntasks: Optional[int] = None
    ntasks_per_node: Optional[int] = None
    cpus_per_task: Optional[int] = None
    gpus_per_node: Optional[int] = None
    gpus_per_task: Optional[int] = None
    gpus_total: Optional[int] = None       # what --gpus/-G asked for (not derived)
    gpu_type: Optional[str] = None
    mem_per_node_mb: Optional[int] = None  # 0 = whole node
    mem_per_cpu_mb: Optional[int] = None
    mem_per_gpu_mb: Optional[int] = None
    time_limit_seconds: Optional[int] = None  # 0 = explicitly unlimited; rounded up to minutes as sbatch
    array: Optional[str] = None            # the spec before `%`
    array_throttle: Optional[int] = None
    dependency: Optional[str] = None
    exclusive: Optional[bool] = None       # True for any --exclusive form
    constraint: Optional[str] = None
    output: Optional[str] = None           # raw pattern
    error: Optional[str] = None            # raw pattern
    chdir: Optional[str] = None
    requeue: Optional[bool] = None
    signal: Optional[str] = None
    export: Optional[str] = None
    comment: Optional[str] = None

    def to_json(self) -> dict:
        return {name: getattr(self, name) for name in JOB_FIELDS}


@dataclass(init=False, repr=False, eq=False)
class OptionSetting(FrozenRecord):
    """Where a merged option value came from (for the line-by-line explanation and the report)."""

    name: str            # canonical long name
    value: str           # value string as merged ("" for flags)
    source: str          # "directive" | "env" | "cli"
    line: Optional[int]  # directive line, when source == "directive"
    written: str         # as written (e.g. "-N2", "--part=gpu", "SBATCH_PARTITION=gpu")

    def __init__(self, name: str, value: str, source: str, line: Optional[int], written: str):
        _set(self, "name", name)
        _set(self, "value", value)
        _set(self, "source", source)
        _set(self, "line", line)
        _set(self, "written", written)


@dataclass(init=False, repr=False, eq=False)
class JobComponent(FrozenRecord):
    """One hetjob component (a plain job has exactly one)."""

    index: int
    options: Dict[str, str]                     # canonical long name -> merged value string
    settings: Tuple[OptionSetting, ...]         # every application, in order (last wins)
    fields: JobFields


@dataclass(init=False, repr=False, eq=False)
class SlurmJob(FrozenRecord):
    """What sbatch would submit. `components[0]` is the job for non-het scripts."""

    path: str
    components: Tuple[JobComponent, ...]
    diagnostics: Tuple[Diagnostic, ...]         # reader + option diagnostics, in line order
    sbatch_accepts: bool
    script_args: Tuple[str, ...] = ()           # arguments after the script on the sbatch command line

    @property
    def main(self) -> JobComponent:
        return self.components[0]

    @property
    def fields(self) -> JobFields:
        return self.components[0].fields

    @property
    def options(self) -> Dict[str, str]:
        return self.components[0].options

    def to_json(self) -> dict:
        """The `inspect --json` contract object."""
        out = {
            "path": self.path,
            "sbatch_accepts": self.sbatch_accepts,
            "diagnostics": [d.to_json() for d in self.diagnostics],
            "options": dict(self.options),
            "job": self.fields.to_json(),
        }
        if len(self.components) > 1:
            out["components"] = [
                {"index": c.index, "options": dict(c.options), "job": c.fields.to_json()} for c in self.components
            ]
        return out
