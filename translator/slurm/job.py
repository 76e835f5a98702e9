"""The Slurm job as sbatch resolves it, and its `inspect --json` contract form."""

from __future__ import annotations

from dataclasses import dataclass

from translator.diagnostics import Diagnostic
from translator.records import FrozenRecord

# The `job` keys of the `inspect --json` contract, in order.
JOB_FIELDS = (
    "job_name",
    "partition",
    "account",
    "qos",
    "nodes_min",
    "nodes_max",
    "ntasks",
    "ntasks_per_node",
    "cpus_per_task",
    "gpus_per_node",
    "gpus_per_task",
    "gpus_total",
    "gpu_type",
    "mem_per_node_mb",
    "mem_per_cpu_mb",
    "mem_per_gpu_mb",
    "time_limit_seconds",
    "array",
    "array_throttle",
    "dependency",
    "exclusive",
    "constraint",
    "output",
    "error",
    "chdir",
    "requeue",
    "signal",
    "export",
    "comment",
)


@dataclass(init=False, repr=False, eq=False)
class JobFields(FrozenRecord):
    """Resolved values of one job component. None = not set by the script (job_name excepted)."""

    job_name: str = ""
    partition: str | None = None
    account: str | None = None
    qos: str | None = None
    nodes_min: int | None = None
    nodes_max: int | None = None
    ntasks: int | None = None
    ntasks_per_node: int | None = None
    cpus_per_task: int | None = None
    gpus_per_node: int | None = None
    gpus_per_task: int | None = None
    gpus_total: int | None = None  # what --gpus/-G asked for (not derived)
    gpu_type: str | None = None
    mem_per_node_mb: int | None = None  # 0 = whole node
    mem_per_cpu_mb: int | None = None
    mem_per_gpu_mb: int | None = None
    time_limit_seconds: int | None = None  # 0 = explicitly unlimited; rounded up to minutes as sbatch
    array: str | None = None  # the spec before `%`
    array_throttle: int | None = None
    dependency: str | None = None
    exclusive: bool | None = None  # True for any --exclusive form
    constraint: str | None = None
    output: str | None = None  # raw pattern
    error: str | None = None  # raw pattern
    chdir: str | None = None
    requeue: bool | None = None
    signal: str | None = None
    export: str | None = None
    comment: str | None = None

    def __init__(
        self,
        job_name: str = "",
        partition: str | None = None,
        account: str | None = None,
        qos: str | None = None,
        nodes_min: int | None = None,
        nodes_max: int | None = None,
        ntasks: int | None = None,
        ntasks_per_node: int | None = None,
        cpus_per_task: int | None = None,
        gpus_per_node: int | None = None,
        gpus_per_task: int | None = None,
        gpus_total: int | None = None,
        gpu_type: str | None = None,
        mem_per_node_mb: int | None = None,
        mem_per_cpu_mb: int | None = None,
        mem_per_gpu_mb: int | None = None,
        time_limit_seconds: int | None = None,
        array: str | None = None,
        array_throttle: int | None = None,
        dependency: str | None = None,
        exclusive: bool | None = None,
        constraint: str | None = None,
        output: str | None = None,
        error: str | None = None,
        chdir: str | None = None,
        requeue: bool | None = None,
        signal: str | None = None,
        export: str | None = None,
        comment: str | None = None,
    ):
        d = self.__dict__  # frozen: fields are written once, here (as _set would)
        d["job_name"] = job_name
        d["partition"] = partition
        d["account"] = account
        d["qos"] = qos
        d["nodes_min"] = nodes_min
        d["nodes_max"] = nodes_max
        d["ntasks"] = ntasks
        d["ntasks_per_node"] = ntasks_per_node
        d["cpus_per_task"] = cpus_per_task
        d["gpus_per_node"] = gpus_per_node
        d["gpus_per_task"] = gpus_per_task
        d["gpus_total"] = gpus_total
        d["gpu_type"] = gpu_type
        d["mem_per_node_mb"] = mem_per_node_mb
        d["mem_per_cpu_mb"] = mem_per_cpu_mb
        d["mem_per_gpu_mb"] = mem_per_gpu_mb
        d["time_limit_seconds"] = time_limit_seconds
        d["array"] = array
        d["array_throttle"] = array_throttle
        d["dependency"] = dependency
        d["exclusive"] = exclusive
        d["constraint"] = constraint
        d["output"] = output
        d["error"] = error
        d["chdir"] = chdir
        d["requeue"] = requeue
        d["signal"] = signal
        d["export"] = export
        d["comment"] = comment

    def to_json(self) -> dict:
        return {name: getattr(self, name) for name in JOB_FIELDS}


@dataclass(init=False, repr=False, eq=False)
class OptionSetting(FrozenRecord):
    """Where a merged option value came from (for the line-by-line explanation and the report)."""

    name: str  # canonical long name
    value: str  # value string as merged ("" for flags)
    source: str  # "directive" | "env" | "cli"
    line: int | None  # directive line, when source == "directive"
    written: str  # as written (e.g. "-N2", "--part=gpu", "SBATCH_PARTITION=gpu")

    def __init__(self, name: str, value: str, source: str, line: int | None, written: str):
        d = self.__dict__  # frozen: fields are written once, here (as _set would)
        d["name"] = name
        d["value"] = value
        d["source"] = source
        d["line"] = line
        d["written"] = written


@dataclass(init=False, repr=False, eq=False)
class JobComponent(FrozenRecord):
    """One hetjob component (a plain job has exactly one)."""

    index: int
    options: dict[str, str]  # canonical long name -> merged value string
    settings: tuple[OptionSetting, ...]  # every application, in order (last wins)
    fields: JobFields

    def __init__(self, index: int, options: dict[str, str], settings: tuple[OptionSetting, ...], fields: JobFields):
        d = self.__dict__  # frozen: fields are written once, here (as _set would)
        d["index"] = index
        d["options"] = options
        d["settings"] = settings
        d["fields"] = fields


@dataclass(init=False, repr=False, eq=False)
class SlurmJob(FrozenRecord):
    """What sbatch would submit. `components[0]` is the job for non-het scripts."""

    path: str
    components: tuple[JobComponent, ...]
    diagnostics: tuple[Diagnostic, ...]  # reader + option diagnostics, in line order
    sbatch_accepts: bool
    script_args: tuple[str, ...] = ()  # arguments after the script on the sbatch command line

    def __init__(
        self,
        path: str,
        components: tuple[JobComponent, ...],
        diagnostics: tuple[Diagnostic, ...],
        sbatch_accepts: bool,
        script_args: tuple[str, ...] = (),
    ):
        d = self.__dict__  # frozen: fields are written once, here (as _set would)
        d["path"] = path
        d["components"] = components
        d["diagnostics"] = diagnostics
        d["sbatch_accepts"] = sbatch_accepts
        d["script_args"] = script_args

    @property
    def main(self) -> JobComponent:
        return self.components[0]

    @property
    def fields(self) -> JobFields:
        return self.components[0].fields

    @property
    def options(self) -> dict[str, str]:
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
