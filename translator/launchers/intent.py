"""What a launcher module learns from the script: how the training is started, per node."""

from __future__ import annotations

from dataclasses import dataclass, fields

from translator.diagnostics import Finding

# Families (one module each under translator/launchers/).
TORCHRUN = "torchrun"  # torchrun / python -m torch.distributed.run|launch (alone or under srun)
SRUN_TASKS = "srun-tasks"  # srun python train.py, one task per GPU/process (reads SLURM_PROCID ...)
ACCELERATE = "accelerate"
DEEPSPEED = "deepspeed"
COMPOSER = "composer"  # MosaicML Composer's launcher: composer -n N train.py
MPI = "mpi"  # mpirun / mpiexec / srun --mpi=...
JAX = "jax"  # jax.distributed.initialize() relying on Slurm auto-detection
PYTHON = "python"  # plain python on one node
SCRIPT = "script"  # anything else: the body under bash -c with a Slurm-compat prologue


@dataclass(frozen=True)
class LaunchIntent:
    family: str
    framework: str  # runtime ML policy: "torch" | "mpi" | "jax"
    command: tuple[str, ...]  # e.g. ("torchrun",) or ("bash", "-c")
    args: tuple[str, ...]  # e.g. ("--nproc-per-node", "8", "train.py", "--epochs", "10")
    line: int | None = None  # source line of the launch command
    proc_per_node: int | None = None
    image: str | None = None  # from a container wrapper (apptainer/pyxis)
    env: tuple[tuple[str, str], ...] = ()  # extra env the launcher needs (e.g. a shim's settings)
    findings: tuple[Finding, ...] = ()
    consumed_lines: tuple[int, ...] = ()  # body lines folded into the launch (for the report)
    # --- added by the launchers stage (defaults keep older callers working) ---
    runtime: str | None = None  # runtime the launcher needs (None = the framework's default)
    num_nodes: int | None = None  # node count the launch implies when it differs from the job's
    mounts: tuple[tuple[str, str], ...] = ()  # container binds (host path, container path) to map to volumes
    uses_shell: bool = False  # command is `bash -c` around text taken from the script

    def __init__(
        self,
        family: str,
        framework: str,
        command: tuple[str, ...],
        args: tuple[str, ...],
        line: int | None = None,
        proc_per_node: int | None = None,
        image: str | None = None,
        env: tuple[tuple[str, str], ...] = (),
        findings: tuple[Finding, ...] = (),
        consumed_lines: tuple[int, ...] = (),
        runtime: str | None = None,
        num_nodes: int | None = None,
        mounts: tuple[tuple[str, str], ...] = (),
        uses_shell: bool = False,
    ):
        # the generated __init__ of a frozen dataclass sets each field with object.__setattr__; the values
        # are written into the instance dict here, in the same order (as `replace` below does)
        d = self.__dict__
        d["family"] = family
        d["framework"] = framework
        d["command"] = command
        d["args"] = args
        d["line"] = line
        d["proc_per_node"] = proc_per_node
        d["image"] = image
        d["env"] = env
        d["findings"] = findings
        d["consumed_lines"] = consumed_lines
        d["runtime"] = runtime
        d["num_nodes"] = num_nodes
        d["mounts"] = mounts
        d["uses_shell"] = uses_shell


_FIELDS = frozenset(f.name for f in fields(LaunchIntent))


def replace(intent: LaunchIntent, **changes) -> LaunchIntent:
    """`dataclasses.replace(intent, **changes)` without its generic walk over the fields (a quarter of the
    time): LaunchIntent has no __post_init__ and no init-only fields, so the new instance is the old one's
    fields with the changes."""
    if not changes.keys() <= _FIELDS:
        raise TypeError(f"LaunchIntent has no field {sorted(changes.keys() - _FIELDS)[0]!r}")
    new = object.__new__(intent.__class__)
    values = new.__dict__  # (a frozen dataclass refuses attribute assignment, not its instance dict)
    values.update(intent.__dict__)
    values.update(changes)
    return new
